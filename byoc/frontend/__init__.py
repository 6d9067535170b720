"""Model importers (TVM spelling): ``from_tflite``, ``from_onnx``. Submodules load on first use."""
from __future__ import annotations

__all__ = ["from_onnx", "from_tflite", "cut_before_custom_ops"]

_LAZY = {
    "from_onnx": ("byoc.frontend.onnx", "from_onnx"),
    "from_tflite": ("byoc.frontend.tflite", "from_tflite"),
    "cut_before_custom_ops": ("byoc.frontend.tflite_ops_custom", "cut_before_custom_ops"),
}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        mod_name, attr = _LAZY[name]
        return getattr(importlib.import_module(mod_name), attr)
    raise AttributeError(f"module 'byoc.frontend' has no attribute {name!r}")
