"""Loading an ONNX model safely and reading its graph: initializers, attributes, input types.

Loading never executes anything from the file: protobuf parsing only. External tensor data is read only from
files inside the model's own directory (no absolute paths, no ``..``, no symlinks leading out of it).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ...errors import ModelError

__all__ = ["FOUR_BIT", "onnx_type_name", "load_model", "tensor_to_numpy", "node_attrs", "node_label", "ONNX_DTYPES", "input_types",
           "MAX_ATTR_SIZE", "MAX_ELEMENTS", "SIZE_ATTRS", "size_attr_problems", "check_size_values",
           "check_output_size"]

# TensorProto.DataType → numpy dtype name (the ones the IR can hold).
ONNX_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
               10: "float16", 11: "float64", 12: "uint32"}


def onnx_type_name(code: int) -> str:
    """An ONNX element type as its name ('INT4 (22)'), for messages."""
    try:
        from onnx import TensorProto
        return f"{TensorProto.DataType.Name(int(code))} ({int(code)})"
    except (ValueError, ImportError):
        return f"unknown ({code})"


# Import-time sanity limits. Attribute values near 2^31 (a corrupt or hostile file) would otherwise only fail when
# the model runs, after shape arithmetic has already overflowed 32-bit index math in the backends.
MAX_ATTR_SIZE = 1 << 20           # any single pad, stride, dilation or kernel extent
MAX_ELEMENTS = (1 << 31) - 1      # elements in any tensor a node produces (32-bit indexing)
SIZE_ATTRS = ("pads", "strides", "dilations", "kernel_shape", "output_shape", "output_padding")


def _onnx():
    try:
        import onnx
    except ImportError as e:  # pragma: no cover - onnx is a dependency
        raise ModelError("the onnx package is required to import ONNX models", hint="pip install onnx") from e
    return onnx


def load_model(model_or_path):
    """A ``ModelProto`` from a path, bytes or a ``ModelProto``; external data resolved inside the model dir."""
    onnx = _onnx()
    base_dir: Path | None = None
    if isinstance(model_or_path, onnx.ModelProto):
        model = model_or_path
    elif isinstance(model_or_path, (bytes, bytearray)):
        model = _parse(bytes(model_or_path), "<bytes>")
    elif isinstance(model_or_path, (str, os.PathLike)):
        path = Path(model_or_path)
        if not path.is_file():
            raise ModelError(f"ONNX model file {str(path)!r} does not exist or is not a file")
        base_dir = path.resolve().parent
        model = _parse(path.read_bytes(), str(path))
    else:
        raise ModelError(f"from_onnx expects a path, bytes or onnx.ModelProto, got {type(model_or_path).__name__}")
    if not model.HasField("graph"):
        raise ModelError("ONNX model has no graph", hint="is this really an ONNX model file?")
    _load_external_data(model, base_dir)
    return model


def _parse(data: bytes, where: str):
    onnx = _onnx()
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as e:  # protobuf raises DecodeError (and RuntimeWarning-ish errors) on corrupt input
        raise ModelError(f"{where}: not a valid ONNX protobuf ({type(e).__name__}: {e})",
                         hint="the file is truncated or not an ONNX model") from e
    return model


def _external_tensors(model):
    g = model.graph
    stack = [g]
    while stack:
        graph = stack.pop()
        for t in graph.initializer:
            if t.data_location == 1:  # TensorProto.EXTERNAL
                yield t
        for n in graph.node:
            for a in n.attribute:
                if a.HasField("t") and a.t.data_location == 1:
                    yield a.t
                stack.extend(a.graphs)
                if a.HasField("g"):
                    stack.append(a.g)


def _load_external_data(model, base_dir: Path | None) -> None:
    tensors = list(_external_tensors(model))
    if not tensors:
        return
    if base_dir is None:
        raise ModelError(f"tensor {tensors[0].name!r} stores its data in an external file, but the model was "
                         "given in memory", hint="pass the model's path so external data can be found next to it")
    for t in tensors:
        info = {e.key: e.value for e in t.external_data}
        loc = info.get("location", "")
        target = (base_dir / loc).resolve() if loc else None
        if not loc or Path(loc).is_absolute() or target is None or base_dir not in target.parents:
            raise ModelError(f"tensor {t.name!r}: external data location {loc!r} is outside the model directory",
                             hint="external data files must sit in the model's directory")
        if not target.is_file():
            raise ModelError(f"tensor {t.name!r}: external data file {loc!r} not found next to the model")
        try:
            offset = int(info.get("offset", 0))
            length = int(info["length"]) if "length" in info else None
        except ValueError as e:
            raise ModelError(f"tensor {t.name!r}: malformed external data offset/length {info}") from e
        size = target.stat().st_size
        if offset < 0 or offset > size or (length is not None and (length < 0 or offset + length > size)):
            raise ModelError(f"tensor {t.name!r}: external data range offset={offset} length={length} is outside "
                             f"{loc!r} ({size} bytes)")
        with open(target, "rb") as f:
            f.seek(offset)
            t.raw_data = f.read(length if length is not None else size - offset)
        del t.external_data[:]
        t.data_location = 0


# 4-bit integers (packed two to a byte, low nibble first) are held unpacked, one per int8 / uint8 element.
FOUR_BIT = {22: ("int4", "int8", (-8, 7)), 21: ("uint4", "uint8", (0, 15))}


def tensor_to_numpy(t, where: str) -> np.ndarray:
    """An initializer as a read-only numpy array; corrupt tensors raise ``ModelError`` naming them. INT4 / UINT4
    tensors come back unpacked as int8 / uint8 (``FOUR_BIT``)."""
    from onnx import numpy_helper
    if t.data_type not in ONNX_DTYPES and t.data_type not in FOUR_BIT:
        raise ModelError(f"{where}: tensor {t.name!r} has unsupported element type {onnx_type_name(t.data_type)}",
                         hint="supported: " + ", ".join(sorted(set(ONNX_DTYPES.values()) | {"int4", "uint4"})))
    try:
        arr = numpy_helper.to_array(t)
    except Exception as e:
        raise ModelError(f"{where}: tensor {t.name!r} is corrupt ({type(e).__name__}: {e})",
                         hint="its data does not match its declared shape and type") from e
    if t.data_type in FOUR_BIT:
        arr = np.asarray(arr).astype(FOUR_BIT[t.data_type][1])
    arr = np.array(arr, copy=True)
    arr.setflags(write=False)
    return arr


def node_attrs(node) -> dict:
    """Attributes of a node as Python values (ints, floats, strings, lists, numpy tensors)."""
    from onnx import helper
    out = {}
    for a in node.attribute:
        if a.type == 4:  # TENSOR
            out[a.name] = tensor_to_numpy(a.t, node_label(node))
            continue
        try:
            v = helper.get_attribute_value(a)
        except Exception as e:
            raise ModelError(f"{node_label(node)}: attribute {a.name!r} is malformed ({e})") from e
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        elif isinstance(v, list) and v and isinstance(v[0], bytes):
            v = [x.decode("utf-8", "replace") for x in v]
        out[a.name] = v
    return out


def node_label(node) -> str:
    name = node.name or (node.output[0] if len(node.output) else "?")
    return f"node {name!r} ({node.op_type})"


def node_axis(node, attrs: dict, rank: int, default: int) -> int:
    """The node's ``axis`` attribute as a non-negative axis of a rank-``rank`` input."""
    given = int(attrs.get("axis", default))
    axis = given + rank if given < 0 else given
    if not 0 <= axis < rank:
        raise ModelError(f"{node_label(node)}: axis {given} out of range for rank {rank}",
                         hint=f"an axis of a rank-{rank} tensor is in [-{rank}, {rank - 1}]")
    return axis


def input_types(graph, initializer_names, shape_override: dict | None) -> list[tuple[str, tuple[int, ...], str]]:
    """(name, shape, dtype) of every true graph input; unknown dimensions must come from ``shape_override``."""
    shape_override = dict(shape_override or {})
    problems = []
    out = []
    for vi in graph.input:
        if vi.name in initializer_names:
            continue
        tt = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            problems.append(f"input {vi.name!r} is not a tensor")
            continue
        dtype = ONNX_DTYPES.get(tt.elem_type)
        if dtype is None:
            problems.append(f"input {vi.name!r} has unsupported element type {onnx_type_name(tt.elem_type)}")
            continue
        if vi.name in shape_override:
            shape = tuple(int(d) for d in shape_override.pop(vi.name))
        else:
            dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
            if any(d == 0 for d in dims):
                problems.append(f"input {vi.name!r} has a zero-size dimension {dims} (empty tensors are not "
                                "supported)")
                continue
            if not tt.HasField("shape") or any(d is None or d < 0 for d in dims):
                problems.append(f"input {vi.name!r} has unknown dimensions "
                                f"{[d.dim_param or d.dim_value or '?' for d in tt.shape.dim]}")
                continue
            shape = tuple(dims)
        out.append((vi.name, shape, dtype))
    if shape_override:
        problems.append(f"shape= names unknown input(s) {sorted(shape_override)}")
    if problems:
        raise ModelError("cannot type the model inputs: " + "; ".join(problems),
                         hint="pass shape={'input_name': (1, 3, 224, 224), ...} to from_onnx")
    return out


def size_attr_problems(node) -> list[str]:
    """One message per size attribute of ``node`` (see SIZE_ATTRS) whose value exceeds MAX_ATTR_SIZE."""
    out = []
    for a in node.attribute:
        if a.name not in SIZE_ATTRS:
            continue
        values = list(a.ints) if a.type == 7 else [a.i] if a.type == 2 else []  # INTS / INT
        bad = [int(v) for v in values if abs(int(v)) > MAX_ATTR_SIZE]
        if bad:
            out.append(f"{node_label(node)}: attribute {a.name!r} has value {bad[0]}, over the import limit of "
                       f"{MAX_ATTR_SIZE} (2^20)")
    return out


def check_size_values(node, what: str, values) -> None:
    """``values`` (e.g. a Pad node's pads input) must stay within MAX_ATTR_SIZE."""
    bad = [int(v) for v in values if abs(int(v)) > MAX_ATTR_SIZE]
    if bad:
        raise ModelError(f"{node_label(node)}: {what} has value {bad[0]}, over the import limit of {MAX_ATTR_SIZE} "
                         "(2^20)", hint="the model is corrupt or its sizes are not meant for this compiler")


def check_output_size(node, shape: tuple[int, ...]) -> None:
    """A node's output may hold at most MAX_ELEMENTS elements (sizes derived from its attributes and inputs)."""
    n = 1
    for d in shape:
        n *= int(d)
    if n > MAX_ELEMENTS:
        from_attrs = [f"{a.name}={list(a.ints) if a.type == 7 else a.i}" for a in node.attribute
                      if a.name in SIZE_ATTRS]
        raise ModelError(f"{node_label(node)}: output shape {tuple(shape)} has {n} elements, over the import limit of "
                         f"{MAX_ELEMENTS} (2^31 − 1)" + (f" (from {', '.join(from_attrs)})" if from_attrs else ""),
                         hint="check the node's pads, strides and kernel sizes")
