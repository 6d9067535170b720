"""``tvm._ffi``: the global function registry, with BYOC's meaning for ``relay.ext.*`` names.

* ``register_func("relay.ext.<compiler>")(fn)`` registers a codegen: it routes to ``byoc.build.register_codegen``
  and ``fn`` follows that API (``fn(func, symbol[, options])`` returning a runner; docs/architecture.md).
* ``register_func("relay.ext.<compiler>.optimize")(fn)``: ``fn(mod) -> mod`` runs on each ``Compiler="<compiler>"``
  partition (as a module holding it) before its codegen, in ``relay.build``.
* Any other name is a plain global function (``get_global_func``, ``_init_api``).

TVM's own C++ functions are not here: asking for one is an ``UnsupportedAPIError`` naming it.
"""
from .registry import (_init_api, get_global_func, list_global_func_names, optimize_pass_for, register_func,
                       register_object, remove_global_func)

__all__ = ["register_func", "get_global_func", "list_global_func_names", "remove_global_func", "register_object",
           "optimize_pass_for", "_init_api"]
