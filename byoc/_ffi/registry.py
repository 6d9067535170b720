"""The global function table behind ``byoc.register_func`` / ``byoc.get_global_func`` (see ``byoc._ffi``)."""
from __future__ import annotations

import sys
from typing import Callable

from ..errors import CodegenError, UnsupportedAPIError

__all__ = ["register_func", "get_global_func", "list_global_func_names", "remove_global_func", "register_object",
           "optimize_pass_for", "_init_api"]

_FUNCS: dict[str, Callable] = {}
_EXT = "relay.ext."
_BUILTINS_LOADED = False


def _funcs() -> dict[str, Callable]:
    """The table, with TVM's C++-side builtins that ported tables call (``tvm_builtins.py``) added on first use."""
    global _BUILTINS_LOADED
    if not _BUILTINS_LOADED:
        _BUILTINS_LOADED = True
        from .tvm_builtins import register_tvm_builtins
        register_tvm_builtins(_FUNCS)
    return _FUNCS


def _codegen_name(name: str) -> str | None:
    """``relay.ext.<compiler>`` → compiler (a codegen registration); None for any other name."""
    if name.startswith(_EXT) and "." not in name[len(_EXT):]:
        return name[len(_EXT):]
    return None


def register_func(func_name, f: Callable | None = None, override: bool = False):
    """``@register_func("name")``, ``register_func("name", f)`` or ``@register_func`` (the function's name)."""
    if callable(func_name) and f is None:
        return register_func(func_name.__name__, func_name, override)
    if not isinstance(func_name, str) or not func_name:
        raise CodegenError(f"register_func needs a non-empty name, got {func_name!r}")

    def register(fn: Callable) -> Callable:
        if not callable(fn):
            raise CodegenError(f"register_func({func_name!r}): {type(fn).__name__} is not callable")
        compiler = _codegen_name(func_name)
        if compiler is not None:
            from ..build import register_codegen
            register_codegen(compiler, fn, override=override)
            return fn
        if func_name in _funcs() and not override:
            raise CodegenError(f"global function {func_name!r} is already registered",
                               hint="pass override=True to replace it")
        _FUNCS[func_name] = fn
        return fn

    return register(f) if f is not None else register


def get_global_func(name: str, allow_missing: bool = False) -> Callable | None:
    """The function registered under ``name`` (a codegen's compile function for ``relay.ext.<compiler>``)."""
    if name in _funcs():
        return _FUNCS[name]
    compiler = _codegen_name(name)
    if compiler is not None:
        from ..build import get_codegen_entry
        entry = get_codegen_entry(compiler)
        if entry is not None:
            return entry.compile
    if allow_missing:
        return None
    raise UnsupportedAPIError(f"global function {name!r}", "nothing is registered under this name (TVM's C++ "
                              "functions are not part of byoc)",
                              hint="register one with byoc.register_func(name, fn); see docs/porting-from-tvm.md")


def remove_global_func(name: str) -> None:
    """Forget a global function or a ``relay.ext.<compiler>`` codegen (tests, reloaded plugins)."""
    _FUNCS.pop(name, None)
    compiler = _codegen_name(name)
    if compiler is not None:
        from ..build import unregister_codegen
        unregister_codegen(compiler)


def list_global_func_names() -> list[str]:
    from ..build import registered_codegens
    return sorted(set(_funcs()) | {_EXT + c for c in registered_codegens()})


def optimize_pass_for(compiler: str) -> Callable | None:
    """The ``relay.ext.<compiler>.optimize`` function, if one is registered."""
    return _FUNCS.get(f"{_EXT}{compiler}.optimize")


def _init_api(namespace: str, target_module_name: str | None = None) -> None:
    """Put the functions registered under ``<namespace>.<name>`` into a module as ``<name>`` (TVM's
    ``_init_api``). Only functions registered before the call are seen, as in TVM."""
    module = sys.modules[target_module_name or namespace]
    prefix = namespace + "."
    for name, fn in list(_funcs().items()):
        if name.startswith(prefix) and "." not in name[len(prefix):]:
            setattr(module, name[len(prefix):], fn)


def register_object(type_key=None):
    """``@register_object("key")`` on a class: classes are plain Python here, so the class is returned as is."""
    if isinstance(type_key, type):
        return type_key
    return lambda cls: cls
