"""The CPU cost model cost-driven placement uses: seconds per LLVM kernel, calibrated on this machine.

A kernel of the LLVM backend is one fused group (``byoc/backend/llvm/fuse_ops.py``). Its time is modelled as

    launch + Σ over its ops  rate[class(op)] × work(op)

with the op classes below (convolution, depthwise, matrix product: work = MACs; pooling: output elements × window
taps; reductions: input elements; table and fixed-point ops (softmax, sigmoid, ...), binary and other elementwise
ops, data movement (pad, concatenate, ...) and reshapes: output elements). The rates are fitted (non-negative least
squares) to the measured wall times of a calibration model's kernels (``calibration_model``: one branch per class at two sizes, built with the LLVM
backend and timed best-of-N, as ``module.profile()`` times kernels), so the model is in the time base of
``runtime/profile.py``'s estimate.

The fitted table is cached per machine: ``$BYOC_CACHE_DIR`` (else ``$XDG_CACHE_HOME/byoc``, else
``~/.cache/byoc``) ``/cpu-cost-<fingerprint>.json``, the fingerprint hashing the LLVM host triple, CPU name and
features, the backend version and byoc's version. Placement given one table is deterministic;
``BYOC_CPU_COST=FILE`` (or ``partition_for(cpu_cost=...)``) pins a table, and ``byoc calibrate`` re-measures.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ByocError

__all__ = ["CpuCostModel", "CLASSES", "op_class", "op_work", "group_seconds", "calls_seconds",
           "machine_fingerprint", "cost_cache_path", "load_or_calibrate", "calibrate", "calibration_model"]

# Op classes with their own rate (seconds per unit of work).
CLASSES = ("conv", "conv_taps", "depthwise", "dense", "avg_pool", "max_pool", "reduce", "table", "binary", "elementwise",
           "copy", "reshape")
RESHAPE_OPS = frozenset({"reshape", "squeeze", "expand_dims"})
COPY_OPS = frozenset({"transpose", "concatenate", "qnn.concatenate",
                      "strided_slice", "split", "nn.pad", "layout_transform", "nn.depth_to_space",
                      "nn.space_to_depth"})
_BINARY_OPS = frozenset({"qnn.add", "qnn.subtract", "qnn.mul", "add", "subtract", "multiply", "divide", "maximum",
                         "minimum", "qnn.squared_difference"})
_TABLE_OPS = frozenset({"qnn.softmax", "qnn.sigmoid", "qnn.tanh", "qnn.hardswish", "qnn.log_softmax", "nn.softmax",
                        "sigmoid", "tanh", "exp", "qnn.rsqrt", "qnn.leaky_relu"})
_REDUCE_OPS = frozenset({"nn.global_avg_pool2d", "nn.global_max_pool2d", "mean", "qnn.mean", "sum", "max", "min",
                         "argmax", "argmin"})
FORMAT = "byoc-cpu-cost-1"
# Measured CPU time runs this much slower than the calibrated estimate when the machine is busy (observed on two
# cores shared by other jobs: MLPerf Tiny models 1.0-1.7x, MobileNetV2 1.4-1.9x). Placement moves work to the CPU
# only when it wins by this share of the moved CPU time; a quiet dedicated machine can lower it in its table.
LOAD_MARGIN = 0.75


def _elements(t) -> int:
    from ..ir.types import TensorType, TupleType
    if isinstance(t, TensorType):
        return int(np.prod([int(d) for d in t.shape], dtype=np.int64))
    if isinstance(t, TupleType):
        return sum(_elements(f) for f in t.fields)
    return 0


def _type_of(e):
    return getattr(e, "_checked_type", None) or getattr(e, "type_annotation", None)


def op_class(call) -> str:
    """The rate class of an op call."""
    name = call.op.name
    if name in RESHAPE_OPS:
        return "reshape"
    if name in COPY_OPS:
        return "copy"
    if name in ("qnn.conv2d", "nn.conv2d", "qnn.conv2d_transpose", "nn.conv2d_transpose"):
        groups = int(getattr(call.attrs, "groups", 1) or 1)
        return "depthwise" if groups > 1 else "conv"
    if name in ("qnn.dense", "nn.dense", "nn.batch_matmul", "qnn.batch_matmul"):
        return "dense"
    if name == "nn.avg_pool2d":
        return "avg_pool"
    if name == "nn.max_pool2d":
        return "max_pool"
    if name in _REDUCE_OPS:
        return "reduce"
    if name in _TABLE_OPS:
        return "table"
    if name in _BINARY_OPS:
        return "binary"
    return "elementwise"


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _mac_shape(call) -> tuple[int, int, int, int]:
    """(output pixels, output channels, kernel taps, reduction per output) of a conv or dense call."""
    from ..ops.macs import macs_of
    t = _type_of(call)
    shape = [int(d) for d in getattr(t, "shape", ())] or [1]
    macs = int(macs_of(call))
    if call.op.name in ("qnn.dense", "nn.dense", "nn.batch_matmul", "qnn.batch_matmul"):
        cout = shape[-1]
        pixels = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
        return pixels, cout, 1, macs // max(1, pixels * cout)
    layout = str(getattr(call.attrs, "out_layout", "") or getattr(call.attrs, "data_layout", "NHWC") or "NHWC")
    cax = layout.index("C") if "C" in layout and len(layout) == len(shape) else len(shape) - 1
    cout = shape[cax]
    pixels = int(np.prod(shape)) // max(1, cout)
    ks = getattr(call.attrs, "kernel_size", None)
    taps = int(np.prod([int(k) for k in ks])) if ks else 1
    return pixels, cout, taps, macs // max(1, pixels * cout)


def op_work(call) -> tuple[str, float] | list[tuple[str, float]]:
    """(class, work) of one op call: MACs for the MAC classes, padded to the LLVM backend's vector blocks (GEMM:
    16 output channels × 4 reduction steps; depthwise: 32 channels), plus one im2col copy per output pixel and
    kernel tap for convolutions (``conv_taps``, returned as a second pair); output elements × window taps for
    pooling, input elements for reductions, output elements otherwise."""
    cls = op_class(call)
    if cls in ("conv", "dense"):
        pixels, cout, taps, red = _mac_shape(call)
        padded = float(pixels * _cdiv(cout, 16) * 16 * _cdiv(red, 4) * 4)
        return [(cls, padded), ("conv_taps", float(pixels * taps))] if cls == "conv" else (cls, padded)
    if cls == "depthwise":
        pixels, cout, taps, red = _mac_shape(call)
        return cls, float(pixels * taps * _cdiv(cout, 32) * 32 * max(1, red // max(1, taps)))
    if cls in ("avg_pool", "max_pool"):
        taps = int(np.prod([int(k) for k in getattr(call.attrs, "pool_size", (1, 1))]))
        return cls, float(_elements(_type_of(call)) * taps)
    if cls == "reduce":
        return cls, float(_elements(_type_of(call.args[0])) if call.args else 0)
    return cls, float(_elements(_type_of(call)))


@dataclass(frozen=True)
class CpuCostModel:
    """Seconds per kernel launch and per unit of work of each class, fitted on one machine."""
    launch_seconds: float
    rates: tuple[tuple[str, float], ...]     # (class, seconds per unit of work), in CLASSES order
    fingerprint: str = ""
    description: str = ""
    samples: tuple[tuple[str, float, float], ...] = field(default=(), compare=False)  # (kernel, measured, fitted)
    resume_seconds: float = 0.0   # extra time of the first CPU kernel after a partition (its caches were evicted)
    load_margin: float = LOAD_MARGIN  # how much slower measured CPU kernels may run when the machine is busy

    @property
    def decision_margin(self) -> float:
        """The share of CPU time a placement decision must win by: the fit error or the load margin."""
        return max(self.relative_error, self.load_margin)

    @property
    def relative_error(self) -> float:
        """The fit's median relative error on its calibration kernels (0 for a table without samples)."""
        errs = [abs(f / m - 1.0) for _, m, f in self.samples if m > 0]
        return float(np.median(errs)) if errs else 0.0

    def rate(self, cls: str) -> float:
        return dict(self.rates).get(cls, dict(self.rates).get("elementwise", 0.0))

    def kernel_seconds(self, calls) -> float:
        """One kernel made of ``calls`` (op calls): launch + the work of each (see ``kernel_work``)."""
        return self.launch_seconds + sum(self.rate(cls) * w for cls, w in kernel_work(calls).items())

    def to_json(self) -> dict:
        return {"format": FORMAT, "fingerprint": self.fingerprint, "description": self.description,
                "launch_seconds": self.launch_seconds, "resume_seconds": self.resume_seconds,
                "load_margin": self.load_margin,
                "rates": {k: v for k, v in self.rates},
                "samples": [list(s) for s in self.samples]}

    @staticmethod
    def from_json(doc: dict, source: str = "a CPU cost table") -> "CpuCostModel":
        try:
            if doc.get("format") != FORMAT:
                raise ValueError(f"format {doc.get('format')!r}, expected {FORMAT!r}")
            rates = doc["rates"]
            launch = float(doc["launch_seconds"])
            resume = float(doc.get("resume_seconds", 0.0))
            margin = float(doc.get("load_margin", LOAD_MARGIN))
            if not (math.isfinite(resume) and resume >= 0 and math.isfinite(margin) and margin >= 0):
                raise ValueError("resume_seconds and load_margin must be finite, non-negative numbers")
            vals = tuple((k, float(rates[k])) for k in CLASSES)
            if not all(math.isfinite(v) and v >= 0 for _, v in vals) or not (math.isfinite(launch) and launch >= 0):
                raise ValueError("rates and launch_seconds must be finite, non-negative numbers")
            samples = tuple((str(a), float(b), float(c)) for a, b, c in doc.get("samples", ()))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CpuCostError(f"{source}: not a CPU cost table ({e})",
                               hint="re-create it with `byoc calibrate --force`") from None
        return CpuCostModel(launch, vals, str(doc.get("fingerprint", "")), str(doc.get("description", "")), samples,
                            resume, margin)

    def table(self) -> str:
        lines = [f"CPU cost model {self.fingerprint or '(unnamed)'}: {self.description}",
                 f"  kernel launch        {self.launch_seconds * 1e6:10.3f} us",
                 f"  resume after NPU     {self.resume_seconds * 1e6:10.3f} us",
                 f"  decision margin      {self.decision_margin * 100:10.1f} % of the CPU time moved (fit error "
                 f"{self.relative_error * 100:.1f}%, load margin {self.load_margin * 100:.0f}%)"]
        unit = {"conv": "MAC", "conv_taps": "pixel tap", "depthwise": "MAC", "dense": "MAC", "avg_pool": "window tap", "max_pool": "window tap",
                "reduce": "input element"}
        for k, v in self.rates:
            lines.append(f"  {k:<20} {v * 1e12:10.3f} ps per {unit.get(k, 'output element')}")
        return "\n".join(lines)


_ANCHOR_CLASSES = frozenset({"conv", "depthwise", "dense", "avg_pool", "max_pool", "reduce"})
_EPILOGUE_CLASSES = frozenset({"elementwise", "binary"})


def kernel_work(calls) -> dict[str, float]:
    """Work per class of one kernel. Elementwise ops in a kernel with an anchor (convolution, matrix product,
    pooling, reduction) are its epilogue, applied to values in registers: their cost is part of the anchor's
    fitted rate, so they add no work of their own."""
    items = []
    for c in calls:
        w = op_work(c)
        items.extend(w if isinstance(w, list) else [w])
    anchored = any(cls in _ANCHOR_CLASSES for cls, _ in items)
    out: dict[str, float] = {}
    for cls, w in items:
        if anchored and cls in _EPILOGUE_CLASSES:
            continue
        out[cls] = out.get(cls, 0.0) + w
    return out


class CpuCostError(ByocError):
    """A CPU cost table that cannot be read."""


def group_seconds(model: CpuCostModel, group) -> float:
    """Modelled time of one fused group of the LLVM backend (``FusedGroup``)."""
    return model.kernel_seconds(group.nodes)


def calls_seconds(model: CpuCostModel, func) -> float:
    """Modelled CPU time of a whole function as the LLVM backend would fuse it (partition calls excluded)."""
    from ..backend.llvm.fuse_ops import fuse_groups
    return sum(group_seconds(model, g) for g in fuse_groups(func))


# ------------------------------------------------------------------------------------------------ cache

def machine_fingerprint() -> tuple[str, str]:
    """(short hash, description) of what CPU kernel times depend on: the host CPU as LLVM sees it (triple, CPU
    name, features), the backend's code generation version and byoc's version."""
    from .. import __version__
    from ..backend.llvm.codegen import BACKEND_VERSION, get_codegen
    cg = get_codegen()
    desc = f"{cg.triple} {cg.cpu_name}, byoc {__version__}, {BACKEND_VERSION}"
    h = hashlib.sha256("\n".join([desc, cg.feature_string]).encode()).hexdigest()[:16]
    return h, desc


def cost_cache_path(fingerprint: str) -> Path | None:
    env = os.environ.get("BYOC_CACHE_DIR")
    if env is not None and env.strip().lower() in ("", "0", "off", "none"):
        return None
    if env:
        root = Path(env)
    elif os.environ.get("XDG_CACHE_HOME"):
        root = Path(os.environ["XDG_CACHE_HOME"]) / "byoc"
    else:
        root = Path.home() / ".cache" / "byoc"
    return root / f"cpu-cost-{fingerprint}.json"


_MEMORY: dict[str, CpuCostModel] = {}


def load_or_calibrate(force: bool = False, progress=None) -> CpuCostModel:
    """This machine's table: ``BYOC_CPU_COST=FILE`` when set, else the cached one, else a fresh calibration
    (a few seconds) written to the cache."""
    pinned = os.environ.get("BYOC_CPU_COST")
    if pinned and not force:
        return read_table(pinned)
    fp, desc = machine_fingerprint()
    if not force and fp in _MEMORY:
        return _MEMORY[fp]
    path = cost_cache_path(fp)
    if not force and path is not None and path.is_file():
        try:
            model = read_table(str(path))
            if model.fingerprint == fp:
                _MEMORY[fp] = model
                return model
        except CpuCostError:
            pass  # a damaged cache entry is measured again
    model = calibrate(progress=progress)
    _MEMORY[fp] = model
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps(model.to_json(), indent=1, sort_keys=True))
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only cache only costs a re-calibration next time
    return model


def read_table(path: str) -> CpuCostModel:
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise CpuCostError(f"cannot read CPU cost table {path!r}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise CpuCostError(f"CPU cost table {path!r} is not JSON: {e}",
                           hint="re-create it with `byoc calibrate --force`") from None
    if not isinstance(doc, dict):
        raise CpuCostError(f"CPU cost table {path!r}: expected a JSON object, found {type(doc).__name__}")
    return CpuCostModel.from_json(doc, path)


# ------------------------------------------------------------------------------------------ calibration

def calibration_model() -> bytes:
    """An int8 TFLite model with one independent branch per op class at two sizes (each branch one kernel on
    the LLVM backend): what ``calibrate`` times."""
    from ..testing.models import _Layers
    from ..testing.tflite_writer import TFLiteWriter
    w = TFLiteWriter()
    L = _Layers(w, np.random.default_rng(0))
    outs = []
    x = w.input("stem", [1, 96, 96, 3], "int8", scale=0.05, zero_point=0)   # shallow, narrow: taps dominate
    outs.append(L.conv(x, 8, 3, 2, "same", "RELU6", "stem_conv"))
    outs.append(L.depthwise(w.input("dw8", [1, 48, 48, 8], "int8", scale=0.05, zero_point=0), 3, 1, "same",
                            "RELU6", "dw8"))
    for i, (h, c) in enumerate(((8, 8), (24, 32))):
        def inp(shape, tag):
            return w.input(f"{tag}{i}", shape, "int8", scale=0.05, zero_point=0)
        outs.append(L.conv(inp([1, h, h, c], "conv"), c, 3, 1, "same", "RELU6", f"conv{i}"))
        outs.append(L.conv(inp([1, h, h, c], "pw"), 2 * c, 1, 1, "same", "NONE", f"pw{i}"))
        outs.append(L.depthwise(inp([1, 2 * h, 2 * h, c], "dw"), 3, 1, "same", "RELU6", f"dw{i}"))
        x = inp([1, 16 * c], "fc")
        q, s = L._weights((16 * c, 16 * c), 16 * c, 0)
        outs.append(w.fully_connected(x, q, L._bias(x, s), weight_scale=s, out_scale=0.1, out_zp=0, name=f"fc{i}"))
        outs.append(w.average_pool2d(inp([1, 2 * h, 2 * h, c], "ap"), (3, 3), (2, 2), "SAME", name=f"avgpool{i}"))
        outs.append(w.max_pool2d(inp([1, 2 * h, 2 * h, c], "mp"), (2, 2), (2, 2), "VALID", name=f"maxpool{i}"))
        outs.append(L.add(inp([1, 2 * h, 2 * h, c], "a"), inp([1, 2 * h, 2 * h, c], "b"), f"add{i}"))
        outs.append(w.quantize(inp([1, 2 * h, 2 * h, c], "rq"), out_scale=0.07, out_zp=3, name=f"requant{i}"))
        outs.append(w.softmax(inp([1, 4 * h * c], "sm"), name=f"softmax{i}"))
        outs.append(w.mean(inp([1, 2 * h, 2 * h, c], "mean"), [1, 2], keep_dims=True, out_scale=0.03, out_zp=0,
                           name=f"mean{i}"))
        outs.append(w.concatenation([inp([1, h, h, c], "ca"), inp([1, h, h, c], "cb")], 3, name=f"concat{i}"))
        outs.append(w.reshape(inp([1, h, h, c], "rs"), [1, h * h * c], name=f"reshape{i}"))
    w.output(*outs)
    return w.finish()


def _nnls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Non-negative least squares (Lawson-Hanson active set) for small systems; deterministic."""
    n = a.shape[1]
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    for _ in range(3 * n + 10):
        r = b - a @ x
        wgrad = a.T @ r
        cand = np.where(~passive & (wgrad > 1e-18 * max(1.0, float(np.abs(wgrad).max(initial=0)))))[0]
        if cand.size == 0:
            break
        passive[cand[np.argmax(wgrad[cand])]] = True
        while True:
            z = np.zeros(n)
            idx = np.where(passive)[0]
            z[idx] = np.linalg.lstsq(a[:, idx], b, rcond=None)[0]
            if np.all(z[idx] > 0):
                x = z
                break
            neg = idx[z[idx] <= 0]
            alpha = np.min(x[neg] / (x[neg] - z[neg]))
            x = x + alpha * (z - x)
            passive &= x > 1e-30
            x[~passive] = 0.0
    return x


def resume_model() -> bytes:
    """A chain of four [convolution (offloaded to ``npu``) → 9x9 average pool (refused by ``npu``: stays on the
    CPU)] pairs: what ``_resume_seconds`` times."""
    from ..testing.models import _Layers
    from ..testing.tflite_writer import TFLiteWriter
    w = TFLiteWriter()
    L = _Layers(w, np.random.default_rng(1))
    x = w.input("x", [1, 16, 16, 16], "int8", scale=0.05, zero_point=0)
    for i in range(4):
        x = L.conv(x, 16, 3, 1, "same", "RELU6", f"conv{i}")
        x = w.average_pool2d(x, (9, 9), (1, 1), "SAME", name=f"pool{i}")
    w.output(x)
    return w.finish()


def _resume_seconds(repeat: int) -> float:
    """How much slower the first CPU kernel after an NPU partition runs in ``module.profile()`` than in a CPU-only
    build (the simulator, running on the host between them, evicts its caches): the median over the kernels
    that follow a partition in ``resume_model``, each kernel matched by its root call's attrs object."""
    from ..backend.llvm.executor import KernelStep
    from ..build import build
    from ..frontend import from_tflite
    from ..interpreter import bind_params
    from ..partition import partition_for
    try:
        mod, params = from_tflite(resume_model())
        cpu = build(bind_params(mod, params), target="llvm")
        mixed = build(partition_for("npu", mod, params), target="npu,llvm")
    except ByocError:
        return 0.0        # no npu target: nothing runs between kernels
    warm = {}
    for st, n in zip(cpu.executable.steps, cpu.profile(None, repeat=repeat).nodes):
        if isinstance(st, KernelStep) and st.group is not None:
            warm[id(st.group.root.attrs)] = n.wall_seconds
    diffs = []
    steps = mixed.executable.steps
    nodes = mixed.profile(None, repeat=repeat).nodes
    for prev, st, n in zip(steps, steps[1:], nodes[1:]):
        if not isinstance(prev, KernelStep) and isinstance(st, KernelStep) and st.group is not None:
            w = warm.get(id(st.group.root.attrs))
            if w is not None:
                diffs.append(n.wall_seconds - w)
    return max(0.0, float(np.median(diffs))) if diffs else 0.0


def calibrate(repeat: int = 30, progress=None) -> CpuCostModel:
    """Build ``calibration_model`` with the LLVM backend, time each kernel as ``module.profile()`` does (best of
    ``repeat`` runs of the whole model) and fit the launch cost and the per-class rates (non-negative least squares, relative errors
    weighted equally)."""
    from ..backend.llvm.executor import KernelStep
    from ..build import build
    from ..frontend import from_tflite
    from ..interpreter import bind_params
    mod, params = from_tflite(calibration_model())
    if progress:
        progress("build")
    exe = build(bind_params(mod, params), target="llvm")
    rng = np.random.default_rng(0)
    from ..cli.common import random_tensor
    inputs = {p.name_hint: random_tensor(rng, tuple(int(d) for d in p.checked_type.shape), p.checked_type.dtype)
              for p in exe.main.params} if hasattr(exe, "main") else None
    if progress:
        progress("time kernels")
    prof = exe.profile(inputs, repeat=repeat)   # module.profile()'s timing: every kernel in graph order
    rows, times, names = [], [], []
    for step, node in zip(exe.executable.steps, prof.nodes):
        if not isinstance(step, KernelStep) or step.group is None:
            continue
        vec = np.zeros(1 + len(CLASSES))
        vec[0] = 1.0
        for cls, work in kernel_work(step.group.nodes).items():
            vec[1 + CLASSES.index(cls)] += work
        rows.append(vec)
        times.append(node.wall_seconds)
        names.append(step.name)
    a = np.array(rows)
    t = np.array(times)
    wts = 1.0 / np.maximum(t, 1e-9)          # relative error: small kernels count as much as big ones
    coef = _nnls(a * wts[:, None], t * wts)
    fp, desc = machine_fingerprint()
    fitted = a @ coef
    if progress:
        progress("time kernels after NPU partitions")
    resume = _resume_seconds(max(5, repeat // 3))
    return CpuCostModel(float(coef[0]), tuple((k, float(coef[1 + i])) for i, k in enumerate(CLASSES)), fp, desc,
                        tuple((n, float(m), float(f)) for n, m, f in zip(names, t, fitted)), resume)
