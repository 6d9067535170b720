"""``tvm.instrument`` (also ``tvm.ir.instrument``): pass instruments for ``PassContext(instruments=[...])``.

``@pass_instrument`` turns a plain class with any of ``enter_pass_ctx``, ``exit_pass_ctx``, ``should_run``,
``run_before_pass``, ``run_after_pass`` into an instrument. Ready ones: ``PrintAfterAll`` / ``PrintBeforeAll``
(the IR after / before every pass), ``PassPrintingInstrument`` (before / after named passes) and
``PassTimingInstrument``. Each printer takes an optional ``out`` callable (default ``print``)."""
from __future__ import annotations

import inspect
from typing import Callable

from .errors import PassError
from .transform.pass_infra import PassInfo, PassInstrument, PassTimingInstrument

__all__ = ["PassInstrument", "pass_instrument", "PassTimingInstrument", "PassPrintingInstrument",
           "PrintAfterAll", "PrintBeforeAll"]


def pass_instrument(pi_cls=None):
    """Decorator: ``@pass_instrument class MyInstrument: def run_after_pass(self, mod, info): ...``."""
    def wrap(cls):
        if not inspect.isclass(cls):
            raise PassError(f"pass_instrument decorates a class, got {type(cls).__name__}",
                            hint="@tvm.instrument.pass_instrument\nclass MyInstrument: ...")
        if issubclass(cls, PassInstrument):
            return cls
        wrapped = type(cls.__name__, (cls, PassInstrument), {"__doc__": cls.__doc__, "__module__": cls.__module__,
                                                            "__qualname__": cls.__qualname__})
        return wrapped
    return wrap(pi_cls) if pi_cls is not None else wrap


def _text(mod) -> str:
    return mod.astext(show_meta_data=False)


class PassPrintingInstrument(PassInstrument):
    """Print the IR before the passes named in ``print_before_pass_names`` and after those in
    ``print_after_pass_names``."""

    def __init__(self, print_before_pass_names=(), print_after_pass_names=(), out: Callable[[str], None] = print):
        self.print_before_pass_names = tuple(print_before_pass_names)
        self.print_after_pass_names = tuple(print_after_pass_names)
        self.out = out

    def run_before_pass(self, mod, pass_info: PassInfo):
        if pass_info.name in self.print_before_pass_names:
            self.out(f"Print IR before: {pass_info.name}\n{_text(mod)}\n\n")

    def run_after_pass(self, mod, pass_info: PassInfo):
        if pass_info.name in self.print_after_pass_names:
            self.out(f"Print IR after: {pass_info.name}\n{_text(mod)}\n\n")


class PrintAfterAll(PassInstrument):
    """The pass's name and the IR after every pass that runs."""

    def __init__(self, out: Callable[[str], None] = print):
        self.out = out

    def run_after_pass(self, mod, info: PassInfo):
        self.out(f"After Running Pass: {info.name}\n{_text(mod)}")


class PrintBeforeAll(PassInstrument):
    """The pass's name and the IR before every pass that runs."""

    def __init__(self, out: Callable[[str], None] = print):
        self.out = out

    def run_before_pass(self, mod, info: PassInfo):
        self.out(f"Before Running Pass: {info.name}\n{_text(mod)}")
