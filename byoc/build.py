"""``byoc.build(mod, target="llvm", params=None)``: compile a module to something you can ``run``.

The host target is the llvmlite CPU backend (byoc/backend/llvm). Functions that carry a ``Compiler`` attribute
belong to another codegen, looked up by that name in a registry (``register_codegen``), so adding a target
(e.g. ``target="npu,llvm"``) plugs in here without touching the CPU backend.
"""
from __future__ import annotations

from typing import Callable

from .errors import CodegenError
from .interpreter import bind_params
from .ir.expr import Expr, Function
from .ir.module import IRModule

__all__ = ["build", "register_codegen", "registered_codegens", "inline_composites"]

# name -> fn(func: Function, name: str) -> runner(list[np.ndarray]) -> list[np.ndarray]
_CODEGENS: dict[str, Callable] = {}
HOST_TARGETS = ("llvm", "cpu")


def register_codegen(name: str, fn: Callable, *, override: bool = False) -> Callable:
    """Register the codegen for functions whose ``Compiler`` attribute is ``name``.

    ``fn(func, symbol)`` compiles one function and returns a callable taking and returning lists of arrays."""
    if name in _CODEGENS and not override:
        raise CodegenError(f"a codegen named {name!r} is already registered", hint="pass override=True to replace it")
    _CODEGENS[name] = fn
    return fn


def registered_codegens() -> list[str]:
    return sorted(_CODEGENS)


def inline_composites(mod: IRModule) -> IRModule:
    """Replace calls to ``Composite`` function literals (MergeComposite's output) in main by their bodies: the
    host backend runs plain ops. Functions that carry a ``Compiler`` attribute are left to their codegen."""
    from .ir.expr import Call
    from .ir.traversal import rewrite_post_order
    from .transform.bind import bind

    def fn(orig, new):
        if isinstance(new, Call) and isinstance(new.op, Function) and "Composite" in new.op.attrs \
                and "Compiler" not in new.op.attrs:
            return bind(new.op.body, dict(zip(new.op.params, new.args)))
        return None

    main = mod["main"]
    body = main.body
    for _ in range(4):  # composites nested in composites unfold one level per sweep
        new_body = rewrite_post_order(body, fn, enter_functions=False)
        if new_body is body:
            break
        body = new_body
    if body is main.body:
        return mod
    out = mod.copy()
    out["main"] = main.replace(body=body)
    return out


def _parse_target(target) -> list[str]:
    names = [t.strip() for t in (target.split(",") if isinstance(target, str) else list(target)) if t.strip()]
    if not names:
        raise CodegenError("empty target", hint='use target="llvm"')
    unknown = [t for t in names if t not in HOST_TARGETS and t not in _CODEGENS]
    if unknown:
        raise CodegenError(f"unknown target(s) {', '.join(unknown)}",
                           hint=f"known: {', '.join(HOST_TARGETS + tuple(_CODEGENS))}")
    if not any(t in HOST_TARGETS for t in names):
        raise CodegenError(f"target {target!r} has no host target for the graph itself", hint='add "llvm"')
    return names


def build(mod, target="llvm", params: dict | None = None, *, num_threads: int = 1, **options):
    """Compile ``mod`` (an IRModule, Function or expression) for ``target``; returns an executable module with
    ``run(inputs: dict) -> list[numpy.ndarray]``, ``set_input``, ``run()`` and ``get_output``."""
    from .backend.llvm.executor import compile_function
    from .transform.infer_type import InferType

    names = _parse_target(target)
    if isinstance(mod, Expr):
        mod = IRModule.from_expr(mod)
    if not isinstance(mod, IRModule):
        raise CodegenError(f"build expects an IRModule, Function or expression, got {type(mod).__name__}")
    mod = bind_params(mod, params)
    mod = inline_composites(mod)
    mod = InferType()(mod)
    main = mod["main"]
    if not isinstance(main, Function):
        raise CodegenError("module has no main function")
    externs = {n: _CODEGENS[n] for n in names if n in _CODEGENS}
    return compile_function(main, externs=externs, mod=mod, num_threads=num_threads)


class _CallableModule(__import__("types").ModuleType):
    """``byoc.build`` is both this module and its function: importing the submodule rebinds the package
    attribute to the module, so the module itself forwards calls to ``build``."""

    def __call__(self, *args, **kwargs):
        return build(*args, **kwargs)


__import__("sys").modules[__name__].__class__ = _CallableModule
