"""``tvm.relay.backend.te_compiler``: ``get().clear()``, which TVM's tests call before every build.

TVM kept lowered kernels in a per-process cache keyed by the function and target. byoc's CPU kernels are
content-addressed (the symbol is a hash of the kernel's LLVM IR, ``byoc/backend/llvm/codegen.py``), so a
cached kernel is always the one the IR asks for and there is nothing stale to drop: ``clear()`` does nothing.
Lowering to TE (``lower``, ``jit``, ``select_implementation``) has no counterpart."""
from __future__ import annotations

from ...errors import UnsupportedAPIError

__all__ = ["TECompiler", "get"]


class TECompiler:
    def clear(self) -> None:
        """Nothing to invalidate: kernels are looked up by a hash of their IR."""

    def items(self) -> list:
        return []

    def lower(self, source_func, target=None, mod_name: str = "default"):
        raise UnsupportedAPIError("te_compiler.lower", "kernels are generated from Relay ops by the llvmlite "
                                  "backend, not lowered to tensor expressions")

    jit = lower


_COMPILER = TECompiler()


def get() -> TECompiler:
    return _COMPILER
