"""The built-in ``"ccompiler"`` codegen: TVM's canonical BYOC example, on byoc's own CPU backend.

In TVM, functions annotated for ``"ccompiler"`` (``compiler_begin(x, "ccompiler")``, or ``target.ccompiler``
op attributes) went to ``relay.ext.ccompiler``, which printed the partition as C source and compiled it with gcc
into the shared library. byoc has no C compiler in the loop: the same partition's ops are compiled by the
llvmlite CPU backend (``byoc/backend/llvm``) as a module of their own, and run as the partition's runner. The
results are the ones the CPU backend gives for those ops (bit for bit the reference interpreter's), so a
``"ccompiler"`` partition and the rest of the graph agree exactly. Unlike TVM's C codegen, which accepted only a
few elementwise ops, every op the CPU backend lowers is accepted.

Nothing is stored for it in an artifact: ``runtime.load_module`` / ``byoc.load`` compile the partition again
from the stored IR (the kernels come from the object-code cache).
"""
from __future__ import annotations

import numpy as np

from ..build import register_builtin_codegen
from ..errors import CodegenError
from ..ir.expr import Function, Var
from ..ir.module import IRModule

__all__ = ["NAME", "compile_partition", "CCompilerPartition"]

NAME = "ccompiler"
# Attributes that mark the function as a partition; the standalone module is a plain main function.
_PARTITION_ATTRS = ("Compiler", "Primitive", "Inline", "global_symbol")


class CCompilerPartition:
    """One ``"ccompiler"`` partition compiled for the host: ``runner(list of arrays) -> list of arrays``."""

    def __init__(self, symbol: str, module):
        self.symbol = symbol
        self.module = module          # runtime.module.GraphModule of the partition alone
        self._names = list(module.input_names)

    def __call__(self, arrays: list) -> list[np.ndarray]:
        if len(arrays) != len(self._names):
            raise CodegenError(f"ccompiler partition @{self.symbol}: {len(arrays)} input(s) given, "
                               f"{len(self._names)} expected")
        return self.module.run(dict(zip(self._names, arrays)))

    def __repr__(self) -> str:
        return f"CCompilerPartition(@{self.symbol}, {len(self.module.kernel_symbols)} CPU kernels)"


def compile_partition(func: Function, symbol: str) -> CCompilerPartition:
    """``relay.ext.ccompiler``: compile one partition function with the LLVM CPU backend."""
    from ..build import build
    from ..transform.bind import bind
    if not isinstance(func, Function):
        raise CodegenError(f"ccompiler: @{symbol} is a {type(func).__name__}, not a function")
    # Fresh, unique parameter names: the partition's own names may repeat (e.g. two regions' "x").
    params = [Var(f"{symbol}_i{i}", p.type_annotation if p.type_annotation is not None else p._checked_type)
              for i, p in enumerate(func.params)]
    body = bind(func.body, dict(zip(func.params, params)))
    attrs = {k: v for k, v in func.attrs.items() if k not in _PARTITION_ATTRS}
    main = Function(params, body, func.ret_type, attrs=attrs or None)
    return CCompilerPartition(symbol, build(IRModule.from_expr(main), target="llvm"))


register_builtin_codegen(NAME, compile_partition)
