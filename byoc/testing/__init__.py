"""Test helpers: a ``.tflite`` writer and model-zoo builders (MobileNetV2-shaped, ResNet-style)."""
from __future__ import annotations

from .tflite_writer import TensorRef, TFLiteWriter

__all__ = ["TensorRef", "TFLiteWriter"]
