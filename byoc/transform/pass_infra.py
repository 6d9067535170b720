"""Pass infrastructure: module and function passes, Sequential, PassContext with instruments.

Passes are small declarative objects: options are fields, ``run(mod, ctx)`` does the work. A failure inside a
pass is re-raised with the pass's name and the passes that ran before it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, ClassVar

from ..errors import ByocError, PassError
from ..ir.expr import Function
from ..ir.gc_pause import gc_paused
from ..ir.module import IRModule

__all__ = ["Pass", "ModulePass", "FunctionPass", "Sequential", "PassContext", "PassInstrument",
           "PassTimingInstrument", "PrintAfter", "PrintBefore", "module_pass", "function_pass", "PassInfo"]


@dataclass(frozen=True)
class PassInfo:
    name: str
    opt_level: int = 0
    required: tuple[str, ...] = ()


class PassInstrument:
    """Hooks around every pass (TVM's ``PassInstrument``)."""

    def enter_pass_ctx(self):
        pass

    def exit_pass_ctx(self):
        pass

    def should_run(self, mod: IRModule, info: PassInfo) -> bool:
        return True

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        pass

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        pass


class PassTimingInstrument(PassInstrument):
    """Records wall time per pass; ``render()`` gives a table."""

    def __init__(self):
        self.timings: list[tuple[str, float]] = []
        self._starts: list[float] = []

    def run_before_pass(self, mod, info):
        self._starts.append(time.perf_counter())

    def run_after_pass(self, mod, info):
        self.timings.append((info.name, time.perf_counter() - self._starts.pop()))

    def render(self) -> str:
        return "\n".join(f"{name:<32} {t * 1e3:10.3f} ms" for name, t in self.timings)


class PrintAfter(PassInstrument):
    """Print the module after the named passes (all passes when ``names`` is empty)."""

    def __init__(self, names: tuple[str, ...] = (), out: Callable[[str], None] = print):
        self.names = tuple(names)
        self.out = out

    def run_after_pass(self, mod, info):
        if not self.names or info.name in self.names:
            self.out(f"// after {info.name}\n{mod.astext(show_meta_data=False)}")


class PrintBefore(PrintAfter):
    def run_before_pass(self, mod, info):
        if not self.names or info.name in self.names:
            self.out(f"// before {info.name}\n{mod.astext(show_meta_data=False)}")

    def run_after_pass(self, mod, info):
        pass


class PassContext:
    """``with PassContext(opt_level=3, disabled_pass=[...], instruments=[...]):`` scopes pass configuration."""

    _stack: ClassVar[list["PassContext"]] = []

    def __init__(self, opt_level: int = 2, required_pass=(), disabled_pass=(), instruments=(), config=None):
        self.opt_level = opt_level
        self.required_pass = tuple(required_pass)
        self.disabled_pass = tuple(disabled_pass)
        self.instruments = list(instruments)
        self.config = dict(config or {})
        self.history: list[str] = []

    @classmethod
    def current(cls) -> "PassContext":
        if not cls._stack:
            cls._stack.append(PassContext())
        return cls._stack[-1]

    def __enter__(self):
        PassContext._stack.append(self)
        for inst in self.instruments:
            inst.enter_pass_ctx()
        return self

    def __exit__(self, *exc):
        for inst in self.instruments:
            inst.exit_pass_ctx()
        PassContext._stack.remove(self)
        return False

    def pass_enabled(self, info: PassInfo) -> bool:
        if info.name in self.disabled_pass:
            return False
        if info.name in self.required_pass:
            return True
        return info.opt_level <= self.opt_level


class Pass:
    """Base class: subclasses set ``name`` (and ``opt_level``) and implement ``run``."""

    name: ClassVar[str] = "Pass"
    opt_level: ClassVar[int] = 0

    @property
    def info(self) -> PassInfo:
        return PassInfo(self.name, self.opt_level)

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        raise NotImplementedError

    def __call__(self, mod: IRModule) -> IRModule:
        if not isinstance(mod, IRModule):
            raise PassError(f"pass {self.name} expects an IRModule, got {type(mod).__name__}",
                            hint="wrap an expression with byoc.IRModule.from_expr(expr)")
        return _run_pass(self, mod, PassContext.current())


def _run_pass(p: Pass, mod: IRModule, ctx: PassContext) -> IRModule:
    # As in TVM, opt_level / disabled_pass filter the passes of a Sequential; a pass called directly runs.
    info = p.info
    for inst in ctx.instruments:
        if not inst.should_run(mod, info):
            return mod
    for inst in ctx.instruments:
        inst.run_before_pass(mod, info)
    before = list(ctx.history)
    try:
        with gc_paused():
            out = p.run(mod, ctx)
    except ByocError as e:
        if not isinstance(p, Sequential) and not getattr(e, "_pass_noted", False):
            ran = ", ".join(before[-5:]) or "none"
            e.with_note(f"in pass {info.name} (passes run before it: {ran})")
            e._pass_noted = True  # type: ignore[attr-defined]
        raise
    except RecursionError as e:  # pragma: no cover - a bug, reported with the pass name
        raise PassError(f"pass {info.name} exceeded the recursion limit") from e
    except Exception as e:  # an internal bug: still say which pass failed, keep the cause chained
        if isinstance(p, Sequential):
            raise
        ran = ", ".join(before[-5:]) or "none"
        raise PassError(f"pass {info.name} failed: {type(e).__name__}: {e}",
                        notes=(f"passes run before it: {ran}",),
                        hint="this is a bug in the pass; please report it with the input module") from e
    if not isinstance(p, Sequential):
        ctx.history.append(info.name)
    for inst in ctx.instruments:
        inst.run_after_pass(out, info)
    return out


class ModulePass(Pass):
    pass


class FunctionPass(Pass):
    """Applies ``transform_function`` to every function; functions with ``Compiler`` are left alone."""

    skip_external: ClassVar[bool] = True
    typed: ClassVar[bool] = False    # True: types are inferred before (the rewrite reads them) and after

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        raise NotImplementedError

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        if self.typed:
            from .infer_type import infer_module
            return infer_module(self._transform_all(infer_module(mod), ctx))
        return self._transform_all(mod, ctx)

    def _transform_all(self, mod: IRModule, ctx: PassContext) -> IRModule:
        out = mod.copy()
        for gv, func in mod.items():
            if self.skip_external and any(k in func.attrs for k in ("Compiler", "Extern", "SkipOptimization")):
                continue
            out[gv] = self.transform_function(func, mod, ctx)
        return out


@dataclass
class Sequential(Pass):
    passes: list = field(default_factory=list)
    opt_level_: int = 0
    name_: str = "sequential"

    name: ClassVar[str] = "sequential"

    def __init__(self, passes=None, opt_level: int = 0, name: str = "sequential", required=None):
        if passes is not None and not isinstance(passes, (list, tuple)):
            raise PassError(f"Sequential({name!r}) takes a list of passes, got {type(passes).__name__}")
        self.passes = list(passes or [])
        bad = [f"{i}: {type(p).__name__} {p!r}"[:80] for i, p in enumerate(self.passes)
               if not callable(getattr(p, "run", None)) or not hasattr(p, "info")]
        if bad:
            raise PassError(f"Sequential({name!r}): these entries are not passes: {'; '.join(bad)}",
                            hint="entries are pass objects, e.g. relay.transform.InferType()")
        self.opt_level_ = opt_level
        self.name_ = name

    @property
    def info(self) -> PassInfo:
        return PassInfo(self.name_, self.opt_level_)

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        for p in self.passes:
            if not ctx.pass_enabled(p.info):  # a nested Sequential too, as in TVM (e.g. FoldScaleAxis)
                continue
            mod = _run_pass(p, mod, ctx)
        return mod


class _FnPass:
    """A pass made from a plain function by the decorators below: its name and opt level are data."""

    def __init__(self, fn, name, opt_level):
        self.fn = fn
        self._name = name
        self._opt = opt_level

    @property
    def info(self):
        return PassInfo(self._name, self._opt)


class _FnModulePass(_FnPass, ModulePass):
    def run(self, mod, ctx):
        return self.fn(mod, ctx)


class _FnFunctionPass(_FnPass, FunctionPass):
    def transform_function(self, func, mod, ctx):
        return self.fn(func, mod, ctx)


def _class_pass(cls, base, name: str, opt_level: int):
    """TVM's class decoration: ``@function_pass(opt_level=0) class A: def transform_function(self, f, mod, ctx)``
    makes ``A(...)`` a pass object wrapping an ``A`` instance (its attributes stay reachable)."""
    method = "transform_function" if base is FunctionPass else "transform_module"
    if not callable(getattr(cls, method, None)):
        raise PassError(f"class {cls.__name__} decorated as a {'function' if base is FunctionPass else 'module'} "
                        f"pass has no {method} method")

    def __init__(self, *args, **kwargs):
        self.instance = cls(*args, **kwargs)

    def __getattr__(self, attr):
        if attr == "instance":  # not constructed yet
            raise AttributeError(attr)
        return getattr(self.instance, attr)

    def info(self):
        return PassInfo(name, opt_level)

    body = {"__init__": __init__, "__getattr__": __getattr__, "info": property(info), "__doc__": cls.__doc__,
            "__module__": cls.__module__, "__qualname__": cls.__qualname__}
    if base is FunctionPass:
        body["transform_function"] = lambda self, func, mod, ctx: self.instance.transform_function(func, mod, ctx)
    else:
        body["run"] = lambda self, mod, ctx: self.instance.transform_module(mod, ctx)
    return type(cls.__name__, (base,), body)


def module_pass(pass_func=None, opt_level: int = 0, name: str | None = None, required=None):
    """Decorator: ``@module_pass(opt_level=1)`` on ``f(mod, ctx) -> mod``, or on a class with
    ``transform_module(self, mod, ctx)`` (then the class's instances are passes)."""
    def wrap(fn):
        if isinstance(fn, type):
            return _class_pass(fn, ModulePass, name or fn.__name__, opt_level)
        return _FnModulePass(fn, name or fn.__name__, opt_level)
    return wrap(pass_func) if pass_func is not None else wrap


def function_pass(pass_func=None, opt_level: int = 0, name: str | None = None, required=None):
    """Decorator: ``@function_pass(opt_level=1)`` on ``f(func, mod, ctx) -> func``, or on a class with
    ``transform_function(self, func, mod, ctx)`` (then the class's instances are passes)."""
    def wrap(fn):
        if isinstance(fn, type):
            return _class_pass(fn, FunctionPass, name or fn.__name__, opt_level)
        return _FnFunctionPass(fn, name or fn.__name__, opt_level)
    return wrap(pass_func) if pass_func is not None else wrap
