"""``tvm.relay.frontend``: ``from_tflite`` and ``from_onnx`` (``byoc.frontend``), with TVM's signatures.

Other TVM importers (MXNet, PyTorch, TensorFlow, Keras, Caffe, CoreML, Darknet, PaddlePaddle, OneFlow) raise
``UnsupportedAPIError``: convert the model to TFLite or ONNX first (docs/porting-from-tvm.md)."""
from __future__ import annotations

__all__ = ["from_tflite", "from_onnx"]

_OTHER_FRONTENDS = ("from_mxnet", "from_pytorch", "from_tensorflow", "from_keras", "from_caffe", "from_caffe2",
                    "from_coreml", "from_darknet", "from_paddle", "from_oneflow")


def from_tflite(model, shape_dict=None, dtype_dict=None, op_converter=None, **kwargs):
    """``relay.frontend.from_tflite(tflite.Model.GetRootAsModel(buf, 0), shape_dict, dtype_dict)`` → (mod, params)."""
    if op_converter is not None:
        from ...errors import UnsupportedAPIError
        raise UnsupportedAPIError("from_tflite(op_converter=...)", "the TFLite importer's converters are not "
                                  "pluggable classes here")
    from ...frontend.tflite import from_tflite as convert
    return convert(model, shape_dict, dtype_dict, **kwargs)


def from_onnx(model, shape=None, dtype="float32", opset=None, freeze_params=True, convert_config=None,
              export_node_renamed_model_path=None):
    """``relay.frontend.from_onnx(model, shape_dict[, dtype])`` → (mod, params); weights are embedded constants
    (as TVM's ``freeze_params=True``), so ``params`` is empty."""
    from ...frontend.onnx import from_onnx as convert
    return convert(model, shape, dtype, opset=opset, freeze_params=freeze_params)


def __getattr__(name):
    if name in _OTHER_FRONTENDS:
        from ...errors import UnsupportedAPIError
        raise UnsupportedAPIError(f"relay.frontend.{name}", "byoc imports TFLite and ONNX models only; convert "
                                  "the model to one of them first")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
