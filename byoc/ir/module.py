"""IRModule: named global functions, ``main`` first."""
from __future__ import annotations

from typing import Iterator

from ..errors import IRError
from .expr import Expr, Function, GlobalVar

__all__ = ["IRModule"]


class IRModule:
    """A mapping of ``GlobalVar`` to ``Function``. Lookup by name or GlobalVar, as in TVM."""

    def __init__(self, functions: dict | None = None):
        self._funcs: dict[str, tuple[GlobalVar, Function]] = {}
        for k, v in (functions or {}).items():
            self[k] = v

    @staticmethod
    def from_expr(expr: Expr, functions: dict | None = None) -> "IRModule":
        from .analysis import free_vars
        mod = IRModule(functions)
        if not isinstance(expr, Function):
            expr = Function(tuple(free_vars(expr)), expr)
        mod["main"] = expr
        return mod

    def _key(self, key) -> str:
        if isinstance(key, GlobalVar):
            return key.name_hint
        if isinstance(key, str):
            return key
        raise IRError(f"module keys are names or GlobalVars, got {type(key).__name__}")

    def __getitem__(self, key) -> Function:
        name = self._key(key)
        if name not in self._funcs:
            known = ", ".join(self._funcs) or "none"
            raise IRError(f"module has no function @{name}", hint=f"functions: {known}")
        return self._funcs[name][1]

    def __setitem__(self, key, func: Function) -> None:
        if not isinstance(func, Function):
            raise IRError(f"module values must be Functions, got {type(func).__name__}")
        name = self._key(key)
        gv = self._funcs[name][0] if name in self._funcs else (key if isinstance(key, GlobalVar) else GlobalVar(name))
        self._funcs[name] = (gv, func)

    def __contains__(self, key) -> bool:
        return self._key(key) in self._funcs

    def __delitem__(self, key) -> None:
        del self._funcs[self._key(key)]

    def __iter__(self) -> Iterator[GlobalVar]:
        return iter(gv for gv, _ in self._funcs.values())

    def __len__(self) -> int:
        return len(self._funcs)

    def get_global_var(self, name: str) -> GlobalVar:
        if name not in self._funcs:
            raise IRError(f"module has no function @{name}")
        return self._funcs[name][0]

    def get_global_vars(self) -> list[GlobalVar]:
        return [gv for gv, _ in self._funcs.values()]

    @property
    def functions(self) -> dict[GlobalVar, Function]:
        return {gv: f for gv, f in self._funcs.values()}

    def items(self):
        return [(gv, f) for gv, f in self._funcs.values()]

    def update_func(self, gv: GlobalVar | str, func: Function) -> None:
        self[gv] = func

    def add(self, gv: GlobalVar | str, func: Function) -> GlobalVar:
        self[gv] = func
        return self.get_global_var(self._key(gv))

    def copy(self) -> "IRModule":
        m = IRModule()
        m._funcs = dict(self._funcs)
        return m

    def with_functions(self, updates: dict) -> "IRModule":
        m = self.copy()
        for k, v in updates.items():
            m[k] = v
        return m

    def sorted_items(self):
        """``main`` first, then the others by name: the deterministic printing order."""
        items = list(self._funcs.values())
        items.sort(key=lambda gf: (gf[0].name_hint != "main", gf[0].name_hint))
        return items

    def astext(self, show_meta_data: bool = True) -> str:
        from ..text.printer import astext
        return astext(self, show_meta_data=show_meta_data)

    def __str__(self) -> str:
        return self.astext(show_meta_data=False)

    def __repr__(self) -> str:
        return f"IRModule({', '.join('@' + n for n in self._funcs)})"
