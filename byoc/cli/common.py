"""What every ``byoc`` command shares: exit codes, output (tables, JSON, progress), models and inputs."""
from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..errors import ByocError, ExecutionError, ModelError

__all__ = ["EXIT_OK", "EXIT_MISMATCH", "EXIT_USAGE", "EXIT_BAD_INPUT", "EXIT_INTERNAL", "UsageError", "Output",
           "Progress", "format_table", "LoadedModel", "load_model", "make_inputs", "load_npy", "human"]

EXIT_OK = 0          # success
EXIT_MISMATCH = 1    # a comparison found differences, or a check failed
EXIT_USAGE = 2       # bad command line (argparse uses 2 as well)
EXIT_BAD_INPUT = 3   # a ByocError: bad model, artifact, config or input file
EXIT_INTERNAL = 4    # a bug: an unexpected exception

MAX_RANDOM_ELEMENTS = 2**27  # a random input larger than this (1 GiB as int64 draws) is refused


class UsageError(Exception):
    """A command-line mistake argparse cannot see (e.g. a malformed --input); exits with EXIT_USAGE."""


class Output:
    """Where a command writes: results on stdout (text or one JSON document), progress on stderr."""

    def __init__(self, json_mode: bool, stdout=None, stderr=None):
        self.json_mode = json_mode
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr

    def text(self, s: str = "") -> None:
        if not self.json_mode:
            print(s, file=self.stdout)

    def json(self, doc: dict) -> None:
        if self.json_mode:
            json.dump(_jsonable(doc), self.stdout, indent=2, sort_keys=False)
            self.stdout.write("\n")

    def note(self, s: str) -> None:
        """A human remark (where a file went, what was skipped): stderr, so stdout stays parseable."""
        print(s, file=self.stderr)

    def progress(self, total: int, label: str) -> "Progress":
        live = not self.json_mode and hasattr(self.stderr, "isatty") and self.stderr.isatty()
        return Progress(total, label, self.stderr if live else None)


class Progress:
    """A progress bar (rich) on a terminal's stderr; silent when stderr is not a TTY or output is JSON, so piped
    and captured output stays deterministic."""

    def __init__(self, total: int, label: str, stream=None):
        self.total = max(1, total)
        self.done = 0
        self.label = label
        self.stream = stream
        self._bar = None
        self._task = None

    def _start(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeElapsedColumn
        console = Console(file=self.stream, force_terminal=True, highlight=False)
        self._bar = Bar(TextColumn("{task.fields[label]}"), BarColumn(bar_width=24), MofNCompleteColumn(),
                        TimeElapsedColumn(), TextColumn("{task.description}"), console=console, transient=True)
        self._task = self._bar.add_task("", total=self.total, label=self.label)
        self._bar.start()

    def step(self, what: str) -> None:
        """About to do ``what`` (the bar shows the steps done so far)."""
        if self.stream is None:
            return
        if self._bar is None:
            self._start()
        self._bar.update(self._task, completed=self.done, description=what[:60])
        self.done += 1

    def close(self) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=self.total)
            self._bar.stop()
            self._bar = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _jsonable(v: Any):
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    if isinstance(v, float) and not np.isfinite(v):
        return None
    return v


def human(n: float) -> str:
    """1234567 → '1.23M' (tables stay narrow; JSON keeps exact numbers)."""
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= div:
            return f"{n / div:.2f}{unit}"
    return f"{n:g}" if isinstance(n, float) else str(n)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> str:
    """A plain-text table (rich, no colour, never wrapped: the same text on a terminal, in a pipe or in a test);
    ``align`` is one char per column ('l' or 'r'), numbers default to right."""
    import io

    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text
    cells = [[_cell(v) for v in r] for r in rows]
    if align is None:
        align = "".join("r" if rows and all(isinstance(r[i], (int, float, np.number)) for r in rows) else "l"
                        for i in range(len(headers)))
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1), collapse_padding=True)
    for h, a in zip(headers, align):
        table.add_column(Text(str(h), justify="right" if a == "r" else "left"), justify="right" if a == "r" else "left", no_wrap=True)
    just = ["right" if a == "r" else "left" for a in align]
    for r in cells:
        table.add_row(*(Text(c, justify=j) for c, j in zip(r, just)))
    width = sum(max([len(str(h))] + [len(r[i]) for r in cells]) + 2 for i, h in enumerate(headers)) + 4
    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None, force_terminal=False, highlight=False,
            emoji=False).print(table)
    lines = [line.rstrip() for line in buf.getvalue().splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def _cell(v) -> str:
    if isinstance(v, float):
        return f"{v:.2f}" if abs(v) < 1e6 else human(v)
    return str(v)


# ------------------------------------------------------------------------------------------------- models

@dataclass(frozen=True, eq=False)
class LoadedModel:
    path: str
    kind: str          # "tflite" | "onnx"
    data: bytes
    mod: Any           # IRModule
    params: dict
    semantics: str     # "litert" | "tflm" for TFLite files, "onnxruntime" for ONNX

    @property
    def name(self) -> str:
        return os.path.basename(self.path)


def _sniff(path: str, data: bytes) -> str:
    ext = os.path.splitext(path)[1].lower()
    if ext == ".tflite" or data[4:8] == b"TFL3":
        return "tflite"
    if ext == ".onnx":
        return "onnx"
    raise ModelError(f"{path}: cannot tell the model format (extension {ext or 'none'!r}, no TFLite identifier)",
                     hint="byoc reads .tflite and .onnx files")


def load_model(path: str, semantics: str = "auto", shapes=None, target: str = "", strict: bool = False) -> LoadedModel:
    """Read and import a model file. ``semantics="auto"`` imports a TFLite file with the arithmetic the offload
    ``target`` declares (``patterns.preferred_semantics``: ``ethos-u`` asks for TFLite Micro's, as its hardware
    requantizes in fixed point; a file TFLite Micro's semantics cannot import falls back to LiteRT's), else with
    LiteRT's unless LiteRT refuses the file, in which case TFLite Micro's (whose interpreter is then the oracle). ``shapes``: ``--shape`` values (input name → dims) for inputs with
    dynamic dimensions (``shapes.py``). ``strict`` (``--strict``): refuse TFLite CUSTOM operators without a
    converter instead of importing them as opaque ``tflite.custom`` ops."""
    from .shapes import check_static_shapes, onnx_input_shapes, shape_dict
    shapes = shape_dict(shapes)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ModelError(f"cannot read model {path!r}: {e.strerror or e}", hint="check the path") from None
    kind = _sniff(path, data)
    if kind == "onnx" and semantics not in ("auto", "onnxruntime"):
        raise UsageError(f"--semantics {semantics} applies to TFLite models; {path} is an ONNX model "
                         f"(imported with onnxruntime's semantics)")
    if kind == "onnx":
        from ..frontend import from_onnx
        from ..frontend.onnx.model import load_model as parse_onnx
        proto = parse_onnx(path)  # by path: external data files beside the model are read in
        if proto.ByteSize() != len(data):  # they were: onnxruntime gets the self-contained model
            data = proto.SerializeToString()
        mod, params = from_onnx(proto, shape=onnx_input_shapes(path, proto, shapes))
        return LoadedModel(path, kind, data, mod, params, "onnxruntime")
    from ..frontend import from_tflite
    preferred = ""
    if semantics == "auto" and target:
        from patterns import preferred_semantics
        preferred = preferred_semantics(target) or ""
        semantics = preferred or "auto"
    if semantics == "auto":
        from ..compare import litert_refusal
        refusal = litert_refusal(data)
        # LiteRT lacks a vendor custom op's kernel (TFLite Micro does too): the rest keeps LiteRT's arithmetic
        semantics = "tflm" if refusal and not refusal.startswith("Encountered unresolved custom op") else "litert"
    try:
        mod, params = from_tflite(data, semantics=semantics, strict=strict)
    except ModelError:
        if preferred != "tflm":
            raise
        # TFLite Micro has no kernel for part of the model (uint8 LOGISTIC, quantized detection post-processing,
        # ...): the target's preference yields to LiteRT's semantics, under which the model runs
        semantics = "litert"
        mod, params = from_tflite(data, semantics=semantics, strict=strict)
    check_static_shapes(path, mod["main"], shapes)
    return LoadedModel(path, kind, data, mod, params, semantics)


# ------------------------------------------------------------------------------------------------- inputs

_NPY_MAGIC = b"\x93NUMPY"


def load_npy(path: str) -> np.ndarray:
    """A .npy file, never unpickled."""
    try:
        with open(path, "rb") as f:
            magic = f.read(len(_NPY_MAGIC))
    except OSError as e:
        raise ExecutionError(f"cannot read input file {path!r}: {e.strerror or e}") from None
    if magic != _NPY_MAGIC:  # checked first: numpy would call a text file "pickled data"
        what = ("the file is empty" if not magic else "it is an .npz archive" if magic.startswith(b"PK")
                else "it does not start with numpy's .npy header")
        raise ExecutionError(f"input file {path!r} is not a .npy file: {what}",
                             hint="save each input with numpy.save(path, array)")
    try:
        return np.load(path, allow_pickle=False)
    except OSError as e:
        raise ExecutionError(f"cannot read input file {path!r}: {e.strerror or e}") from None
    except (ValueError, EOFError) as e:
        raise ExecutionError(f"{path}: not a plain .npy array ({e})",
                             hint="save inputs with numpy.save(path, array); object arrays are refused") from None


def _input_types(func) -> list[tuple[str, tuple[int, ...], str]]:
    out = []
    for p in func.params:
        t = p.checked_type if getattr(p, "_checked_type", None) is not None else p.type_annotation
        out.append((p.name_hint, tuple(int(d) for d in t.shape), str(t.dtype)))
    return out


def random_tensor(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(int(info.min), int(info.max) + 1, size=shape, dtype=np.int64).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    return rng.standard_normal(size=shape).astype(dt)


def make_inputs(func, specs: Sequence[str] = (), seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs for ``func``: ``name=file.npy`` (or a bare ``file.npy`` for a one-input model) where given,
    seeded random values of the right shape and dtype for the rest (given inputs are never drawn)."""
    types = _input_types(func)
    names = [n for n, _, _ in types]
    given: dict[str, np.ndarray] = {}
    for spec in specs:
        if "=" in spec:
            name, path = spec.split("=", 1)
        elif len(names) == 1:
            name, path = names[0], spec
        else:
            raise UsageError(f"--input {spec!r}: the model has {len(names)} inputs ({', '.join(names)}); "
                             f"write --input NAME=FILE.npy")
        if name not in names:
            raise UsageError(f"--input {spec!r}: the model has no input {name!r} (inputs: {', '.join(names)})")
        given[name] = load_npy(path)
    problems = [f"input {name!r}: expected {dtype}{list(shape)}, file has {given[name].dtype.name}"
                f"{list(given[name].shape)}" for name, shape, dtype in types
                if name in given and (given[name].shape != shape or given[name].dtype.name != dtype)]
    if problems:
        raise ExecutionError("bad inputs: " + "; ".join(problems), hint="convert the .npy file with numpy first")
    too_big = [f"input {name!r} ({dtype}{list(shape)}, {math.prod(shape)} elements)" for name, shape, dtype in types
               if name not in given and math.prod(shape) > MAX_RANDOM_ELEMENTS]
    if too_big:  # refused before allocating: drawing them would exhaust memory
        raise ExecutionError(f"too large for random values (limit {MAX_RANDOM_ELEMENTS} elements): "
                             + "; ".join(too_big), hint="give these inputs with --input NAME=FILE.npy")
    rng = np.random.default_rng(seed)  # only the inputs not given are drawn, in input order
    return {name: given[name] if name in given else random_tensor(rng, shape, dtype)
            for name, shape, dtype in types}


def describe_error(e: ByocError) -> str:
    return f"error: {e}"
