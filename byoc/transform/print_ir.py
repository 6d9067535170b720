"""PrintIR: a pass that prints the module (TVM's ``tvm.transform.PrintIR(header)``) and returns it unchanged."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .pass_infra import ModulePass

__all__ = ["PrintIR"]


@dataclass(frozen=True)
class PrintIR(ModulePass):
    header: str = ""
    show_meta_data: bool = False

    name: ClassVar[str] = "PrintIR"
    opt_level: ClassVar[int] = 0

    def run(self, mod, ctx):
        print(f"PrintIR({self.header}):\n{mod.astext(show_meta_data=self.show_meta_data)}")
        return mod
