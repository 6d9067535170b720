"""``tvm.relay.build_module``: ``build`` (TVM's signature, returning the graph-executor factory module),
``bind_params_by_name``, ``build_config`` and ``create_executor``, over ``byoc.build``.

``relay.build(mod, target="llvm", params=None)`` runs each registered ``relay.ext.<compiler>.optimize`` function
on the ``Compiler="<compiler>"`` partitions, then TVM's Relay optimization pipeline under the current
``PassContext`` (opt_level, required_pass, disabled_pass, instruments: ``byoc.relay.optimize``), then
``byoc.build``; no partitioning happens here (partition
first, e.g. with a table's ``partition_for_*``). Targets: ``"llvm"``, ``"npu, llvm"``, a ``Target``, or a dict
``{"cpu": ...}`` / a list, whose kinds are joined. ``executor``/``runtime`` objects other than the graph executor
and the C++ runtime are refused."""
from __future__ import annotations

from ..errors import CodegenError, UnsupportedAPIError
from ..ir.expr import Expr, Function
from ..ir.module import IRModule
from ..transform.bind import bind_params_by_name
from ..transform.pass_infra import PassContext

__all__ = ["build", "bind_params_by_name", "build_config", "create_executor", "optimize_partitions", "optimize"]


def optimize(mod: IRModule, homogeneous: bool = True) -> IRModule:
    """TVM's Relay optimization pipeline (``relay.optimize``'s passes) under the current PassContext: see
    ``byoc.relay.optimize``. The CPU backend inlines the fused primitive functions again and does its own fusion."""
    from .optimize import optimize_sequence
    return optimize_sequence(homogeneous)(mod)


def _target_names(target, target_host) -> list[str]:
    from ..target import Target
    if target is None:
        target = "llvm"
    if isinstance(target, dict):
        targets = list(target.values())
    elif isinstance(target, (list, tuple)):
        targets = list(target)
    else:
        targets = [target]
    names: list[str] = []
    for t in targets + ([target_host] if target_host is not None else []):
        names += Target(t).build_target()
    return list(dict.fromkeys(names))


def optimize_partitions(mod: IRModule) -> IRModule:
    """Run ``relay.ext.<compiler>.optimize`` on each partition of that compiler (a module holding it as
    ``main``; the function it returns replaces the partition, its attributes kept)."""
    from .._ffi import optimize_pass_for
    out = None
    for gv, func in list(mod.functions.items()):
        compiler = func.attrs.get("Compiler") if isinstance(func, Function) else None
        fn = optimize_pass_for(str(compiler)) if compiler else None
        if fn is None:
            continue
        result = fn(IRModule({"main": func}))
        if not isinstance(result, IRModule) or "main" not in result:
            raise CodegenError(f"relay.ext.{compiler}.optimize returned {type(result).__name__}, not a module "
                               f"with a main function", hint="return the module it was given, transformed")
        new = result["main"]
        for k, v in func.attrs.items():
            if k not in new.attrs:
                new = new.with_attr(k, v)
        out = out or mod.copy()
        out[gv.name_hint] = new
    return out or mod


def build(ir_mod, target=None, target_host=None, executor=None, runtime=None, workspace_memory_pools=None,
          constant_memory_pools=None, params=None, mod_name: str = "default", **options):
    """Compile ``ir_mod`` (IRModule or Function) and return a ``GraphExecutorFactoryModule``
    (``lib["default"](dev)``, ``get_graph_json()``, ``get_lib()``, ``get_params()``, ``export_library``).
    Extra keyword options go to the codegens (e.g. ``npu_config``)."""
    from ..build import build as byoc_build
    from ..runtime.factory import GraphExecutorFactoryModule
    for what, value, ok in (("executor", executor, "graph"), ("runtime", runtime, "cpp")):
        name = getattr(value, "name", value)
        if value is not None and str(name) != ok:
            raise UnsupportedAPIError(f"relay.build({what}={name!r})", f"only the {ok!r} {what} exists here")
    if workspace_memory_pools is not None or constant_memory_pools is not None:
        raise UnsupportedAPIError("relay.build(memory pools)", "the executor plans its own memory")
    if isinstance(ir_mod, Expr) and not isinstance(ir_mod, IRModule):
        ir_mod = IRModule.from_expr(ir_mod)
    if not isinstance(ir_mod, IRModule):
        raise CodegenError(f"relay.build expects an IRModule or Function, got {type(ir_mod).__name__}")
    names = _target_names(target, target_host)
    mod = optimize(optimize_partitions(ir_mod), homogeneous=len(names) == 1)
    gm = byoc_build(mod, target=",".join(names), params=params, **options)
    return GraphExecutorFactoryModule(gm, mod_name, ir_mod)


def build_config(opt_level: int = 2, required_pass=None, disabled_pass=None, trace=None, **kwargs) -> PassContext:
    """The old spelling of ``PassContext(opt_level=...)``."""
    return PassContext(opt_level=opt_level, required_pass=required_pass or (), disabled_pass=disabled_pass or ())


def create_executor(kind: str = "debug", mod=None, device=None, target="llvm", params=None):
    """``relay.create_executor(kind, mod).evaluate()(*args)``: ``debug`` is the reference interpreter, ``graph``
    builds with ``relay.build``."""
    from ._executor import Executor
    return Executor(kind, mod, target, params)
