"""Checks made before any node is converted, so that a model's problems are reported together:

* the default-domain opset: declared, and within what the installed ``onnx`` package (whose schemas the
  importer checks against) knows;
* attribute-level refusals (features of an otherwise supported op that the importer does not implement), listed
  with the unsupported op types in one ``UnsupportedOpsError``;
* input element types against the op's ONNX schema (an int8 ``Gemm`` is not ONNX, whatever a producer wrote).
"""
from __future__ import annotations

from ...errors import ModelError
from .model import node_attrs, node_label

__all__ = ["check_opset", "attribute_problems", "schema_type_problem", "onnx_type_str"]

_DEFAULT = ("", "ai.onnx")


def check_opset(model) -> int:
    """The model's default-domain opset, checked against the installed onnx package's range."""
    import onnx.defs
    versions = [int(i.version) for i in model.opset_import if i.domain in _DEFAULT]
    if not versions:
        raise ModelError("the model declares no opset for the default ONNX domain",
                         hint="add opset_import {domain: '', version: N} (onnx.helper.make_opsetid('', N))")
    v, top = versions[-1], onnx.defs.onnx_opset_version()
    if not 1 <= v <= top:
        raise ModelError(f"the model's default-domain opset {v} is outside what the importer knows (1..{top})",
                         hint="re-export the model at a released opset, or upgrade the onnx package")
    return v


def attribute_problems(node) -> list[str]:
    """One message per attribute-level feature of ``node`` that the importer refuses."""
    if node.domain not in _DEFAULT:
        return []
    op, a = node.op_type, None
    out = []
    try:
        a = node_attrs(node)
    except ModelError as e:
        return [e.message]
    label = node_label(node)
    if op in ("MaxPool", "AveragePool", "LpPool"):
        k = a.get("kernel_shape", [])
        if len(k) not in (1, 2):
            out.append(f"{label}: {len(k)}-D pooling (only 1-D and 2-D)")
        if op == "MaxPool" and len(node.output) > 1 and node.output[1]:
            out.append(f"{label}: the Indices output of MaxPool")
        if a.get("storage_order", 0):
            out.append(f"{label}: storage_order=1")
    if op in ("Conv", "ConvTranspose") and len(a.get("kernel_shape", [0, 0])) not in (1, 2):
        out.append(f"{label}: {len(a['kernel_shape'])}-D convolution (only 1-D and 2-D)")
    if op == "BatchNormalization" and a.get("training_mode", 0):
        out.append(f"{label}: training_mode=1")
    if op == "Pad" and a.get("mode", "constant") not in ("constant", "reflect", "edge", "wrap"):
        out.append(f"{label}: Pad mode {a['mode']!r}")
    if a.get("auto_pad", "NOTSET") not in ("NOTSET", "", "VALID", "SAME_UPPER", "SAME_LOWER"):
        out.append(f"{label}: auto_pad {a['auto_pad']!r}")
    return out


def onnx_type_str(dtype: str) -> str:
    return {"float32": "tensor(float)", "float64": "tensor(double)"}.get(dtype, f"tensor({dtype})")


def schema_type_problem(node, opset: int, input_dtypes: list[str | None]) -> str | None:
    """A message if an input's element type is not allowed by the op's ONNX schema at ``opset``."""
    if node.domain not in _DEFAULT:
        return None
    import onnx.defs
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, "")
    except Exception:  # noqa: BLE001 - no schema at this opset: the converter decides
        return None
    allowed = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
    formals = list(schema.inputs)
    if not formals:
        return None
    for i, (name, dt) in enumerate(zip(node.input, input_dtypes)):
        if not name or dt is None:
            continue
        f = formals[min(i, len(formals) - 1)]
        ok = allowed.get(f.type_str)
        if ok is not None and onnx_type_str(dt) not in ok:
            names = ", ".join(sorted(t[7:-1] for t in ok))
            return (f"{node_label(node)}: input {f.name} ({name!r}) has element type {dt}, which ONNX's "
                    f"{node.op_type}-{schema.since_version} does not allow ({names})")
    return None
