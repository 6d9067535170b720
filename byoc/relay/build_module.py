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
from ..transform.bind import bind_params_by_name as _bind_params_by_name
from ..transform.partition_graph import optimize_partitions
from ..transform.pass_infra import PassContext


def bind_params_by_name(func, params: dict):
    """TVM's ``bind_params_by_name``: values are bound as given (no shape/dtype check here, as in TVM)."""
    return _bind_params_by_name(func, params, strict=False)


__all__ = ["build", "bind_params_by_name", "build_config", "create_executor", "optimize_partitions", "optimize",
           "partition_compilers"]


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
    # As in TVM, a partition's Compiler attribute picks its codegen whatever the target says.
    names = list(dict.fromkeys(partition_compilers(ir_mod) + names))
    # relay.ext.<compiler>.optimize already ran in PartitionGraph, as in TVM
    mod = optimize(ir_mod, homogeneous=len(names) == 1)
    gm = byoc_build(mod, target=",".join(names), params=params, **options)
    return GraphExecutorFactoryModule(gm, mod_name, ir_mod)


def partition_compilers(mod: IRModule) -> list[str]:
    """The ``Compiler`` attributes of the module's functions (global ones and literals in them), in order."""
    from ..ir.traversal import post_order
    found: list[str] = []
    for _, func in mod.sorted_items():
        for node in [func] + [n for n in post_order(func.body) if isinstance(n, Function)]:
            compiler = node.attrs.get("Compiler")
            if compiler is not None and str(compiler) not in found:
                found.append(str(compiler))
    return found


def build_config(opt_level: int = 2, required_pass=None, disabled_pass=None, trace=None, **kwargs) -> PassContext:
    """The old spelling of ``PassContext(opt_level=...)``."""
    return PassContext(opt_level=opt_level, required_pass=required_pass or (), disabled_pass=disabled_pass or ())


def create_executor(kind: str = "debug", mod=None, device=None, target="llvm", params=None):
    """``relay.create_executor(kind, mod).evaluate()(*args)``: ``debug`` is the reference interpreter, ``graph``
    builds with ``relay.build``."""
    from ._executor import Executor
    return Executor(kind, mod, target, params)
