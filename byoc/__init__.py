"""byoc: pattern-based BYOC partitioning for an NPU simulator, with TVM Relay's Python spelling.

Entry points: ``byoc.relay`` (builders, passes, patterns), ``byoc.IRModule``, ``byoc.parse``,
``byoc.evaluate``, ``byoc.structural_equal``, ``byoc.frontend``, ``byoc.partition_for``, ``byoc.build``,
``byoc.load``.
"""
from __future__ import annotations

from .errors import *  # noqa: F401,F403
from .ir.module import IRModule
from .ir.structural import assert_structural_equal, structural_equal, structural_hash
from .interpreter import evaluate

__version__ = "0.1.0"

_LAZY = {
    "relay": ("byoc.relay", None),
    "parse": ("byoc.text.parser", "parse"),
    "frontend": ("byoc.frontend", None),
    "partition_for": ("byoc.partition", "partition_for"),
    "build": ("byoc.build", "build"),
    "load": ("runtime.artifact", "load"),
    "sweep": ("explore", "sweep"),   # design-space sweeps (explore/ sits above runtime and npu_sim)
    "tune": ("explore.tune", "tune"),   # tuning records for the NPU's tile plans (byoc tune)
    "testing": ("byoc.testing", None),
    # kernels for opaque TFLite custom ops (byoc/ops/custom.py)
    "register_custom_kernel": ("byoc.ops.custom", "register_custom_kernel"),
    "unregister_custom_kernel": ("byoc.ops.custom", "unregister_custom_kernel"),
    # TVM's top-level names (``import byoc as tvm``): docs/porting-from-tvm.md
    "transform": ("byoc.transform", None),
    "nd": ("byoc.nd", None),
    "target": ("byoc.target", None),
    "tir": ("byoc.tir", None),
    "script": ("byoc.script", None),
    "runtime": ("byoc.runtime", None),
    "contrib": ("byoc.contrib", None),
    "_ffi": ("byoc._ffi", None),
    "cpu": ("byoc.nd", "cpu"),
    "device": ("byoc.nd", "device"),
    "register_func": ("byoc._ffi", "register_func"),
    "get_global_func": ("byoc._ffi", "get_global_func"),
    "porting": ("byoc.porting", None),
    "ir": ("byoc.ir", None),
    "instrument": ("byoc.instrument", None),
}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        mod_name, attr = _LAZY[name]
        mod = importlib.import_module(mod_name)
        return mod if attr is None else getattr(mod, attr)
    if not name.startswith("__"):
        from .porting import unsupported_reason
        why = unsupported_reason(f"tvm.{name}")
        if why is not None:
            raise UnsupportedAPIError(f"tvm.{name}", why)
    raise AttributeError(f"module 'byoc' has no attribute {name!r}")
