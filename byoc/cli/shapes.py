"""``--shape NAME=D0,D1,...``: static input shapes for models whose inputs have dynamic dimensions.

ONNX inputs may be symbolic (``N``, ``batch``); ``from_onnx`` needs every dimension, so the CLI takes them here and
checks them against the declared inputs first (unknown names, ranks and fixed dimensions), so a mistake is named
at the input rather than deep inside type inference. TFLite inputs are static: ``--shape`` is accepted only when
it repeats the model's shape, and refused otherwise.
"""
from __future__ import annotations

import argparse
import math
from typing import Mapping, Sequence

from ..errors import ModelError

__all__ = ["shape_spec", "shape_dict", "check_static_shapes", "onnx_input_shapes"]

MAX_ELEMENTS = 2**31 - 1  # the importers' limit on any tensor
Shapes = Mapping[str, tuple[int, ...]]


def shape_spec(text: str) -> tuple[str, tuple[int, ...]]:
    """argparse type: ``NAME=D0,D1,...`` (``NAME=`` for a scalar) → (name, dims), each dimension positive."""
    name, eq, dims = text.partition("=")
    name = name.strip()
    if not eq or not name:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=D0,D1,... (e.g. input=1,3,224,224)")
    out = []
    for d in (x.strip() for x in dims.split(",")) if dims.strip() else ():
        try:
            value = int(d, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: dimension {d!r} is not an integer") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"{text!r}: dimension {value} is not positive")
        out.append(value)
    if math.prod(out) > MAX_ELEMENTS:
        raise argparse.ArgumentTypeError(f"{text!r}: {math.prod(out)} elements, over the limit of {MAX_ELEMENTS} "
                                         f"(2**31 - 1)")
    return name, tuple(out)


def shape_dict(specs: Shapes | Sequence[tuple[str, tuple[int, ...]]] | None) -> dict[str, tuple[int, ...]]:
    """The repeated ``--shape`` values as a dict; giving one input two different shapes is a usage error."""
    from .common import UsageError
    pairs = specs.items() if isinstance(specs, Mapping) else (specs or ())
    out: dict[str, tuple[int, ...]] = {}
    for name, dims in pairs:
        dims = tuple(int(d) for d in dims)
        if name in out and out[name] != dims:
            raise UsageError(f"--shape gives input {name!r} two shapes, {list(out[name])} and {list(dims)}")
        out[name] = dims
    return out


def _unknown_names(given: Shapes, inputs: Sequence[str]) -> None:
    from .common import UsageError
    unknown = [n for n in given if n not in inputs]
    if unknown:
        raise UsageError(f"--shape names no input of the model: {', '.join(map(repr, unknown))} "
                         f"(inputs: {', '.join(inputs) or 'none'})")


def check_static_shapes(path: str, func, given: Shapes) -> None:
    """TFLite: ``--shape`` must name inputs of ``func`` and repeat their shapes (byoc does not resize them)."""
    if not given:
        return
    declared = {p.name_hint: tuple(int(d) for d in p.type_annotation.shape) for p in func.params}
    _unknown_names(given, list(declared))
    for name, dims in given.items():
        if dims != declared[name]:
            raise ModelError(f"{path}: TFLite input {name!r} has the static shape {list(declared[name])}; "
                             f"--shape gives {list(dims)}",
                             hint="TFLite inputs are not resized; drop --shape for TFLite models")


def onnx_input_shapes(path: str, model, given: Shapes) -> dict[str, tuple[int, ...]] | None:
    """Check ``--shape`` against the graph inputs of an ONNX ``ModelProto``; returns ``from_onnx``'s ``shape=``.

    A name may be the ONNX input name or its sanitised IR parameter name (what ``byoc import`` prints). Inputs
    left dynamic raise a ModelError whose hint is the ``--shape`` to add."""
    from ..frontend.onnx.importer import _sanitize
    graph = model.graph
    initializers = {t.name for t in graph.initializer}
    inputs = [vi for vi in graph.input if vi.name not in initializers]
    by_ir_name = {_sanitize(vi.name): vi.name for vi in inputs}
    raw = {vi.name for vi in inputs}
    given = {n if n in raw else by_ir_name.get(n, n): d for n, d in given.items()}
    _unknown_names(given, [vi.name for vi in inputs])
    missing = []
    for vi in inputs:
        tt = vi.type.tensor_type
        has_shape = vi.type.HasField("tensor_type") and tt.HasField("shape")
        dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else (d.dim_param or "?")
                for d in tt.shape.dim] if has_shape else None
        if vi.name in given:
            want = given[vi.name]
            if dims is not None and (len(dims) != len(want)
                                     or any(isinstance(d, int) and d != w for d, w in zip(dims, want))):
                raise ModelError(f"{path}: input {vi.name!r} is declared {dims}; --shape gives {list(want)}",
                                 hint="keep the rank and the fixed dimensions; give only the symbolic ones")
        elif dims is None or any(not isinstance(d, int) for d in dims):
            example = ",".join(str(d) if isinstance(d, int) else "1" for d in dims or ["1"])
            missing.append((vi.name, dims, example))
    if missing:
        lines = [f"input {n!r} has dynamic dimensions {d if d is not None else '(unknown rank)'}"
                 for n, d, _ in missing]
        raise ModelError(f"{path}: " + "; ".join(lines),
                         hint="give static shapes: " + " ".join(f"--shape {n}={ex}" for n, _, ex in missing))
    return given or None
