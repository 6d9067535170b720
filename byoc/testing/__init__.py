"""Test helpers: a ``.tflite`` writer (``TFLiteWriter``) and model-zoo builders (``models.mobilenet_v2``,
``models.resnet``) producing int8 networks that load in LiteRT with BUILTIN_REF."""
from __future__ import annotations

from . import models
from .tflite_writer import TensorRef, TFLiteWriter
from .tvm_asserts import assert_allclose

__all__ = ["TensorRef", "TFLiteWriter", "models", "assert_allclose"]
