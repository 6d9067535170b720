"""``tvm.ir.transform``: the pass infrastructure (``module_pass``, ``Sequential``, ``PassContext``, ...)."""
from ..transform.pass_infra import (FunctionPass, ModulePass, Pass, PassContext, PassInfo, PassInstrument,
                                    Sequential, function_pass, module_pass)

__all__ = ["FunctionPass", "ModulePass", "Pass", "PassContext", "PassInfo", "PassInstrument", "Sequential",
           "function_pass", "module_pass"]
