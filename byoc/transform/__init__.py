"""Passes (``relay.transform``)."""
from .pass_infra import (FunctionPass, ModulePass, Pass, PassContext, PassInfo, PassInstrument, PassTimingInstrument,
                         PrintAfter, PrintBefore, Sequential, function_pass, module_pass)
from .infer_type import InferType
from .bind import bind, bind_params_by_name

__all__ = ["FunctionPass", "ModulePass", "Pass", "PassContext", "PassInfo", "PassInstrument",
           "PassTimingInstrument", "PrintAfter", "PrintBefore", "Sequential", "function_pass", "module_pass",
           "InferType", "bind", "bind_params_by_name"]
