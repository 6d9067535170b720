"""ONNX importer: ``from_onnx(model_or_path, shape=None) -> (IRModule, params)``."""
from .importer import from_onnx

__all__ = ["from_onnx"]
