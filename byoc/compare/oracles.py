"""The outside reference each import semantics must equal, run on the model file itself.

* ``litert``: ai-edge-litert with ``OpResolverType.BUILTIN_REF`` (never the default optimized kernels), every
  tensor preserved;
* ``tflm``: TFLite Micro's interpreter (the ``tflite-micro`` package), every tensor preserved;
* ``onnxruntime``: onnxruntime's CPU execution provider, one thread (outputs only).

``run_oracle`` returns an ``OracleRun`` or ``None`` when the package is not installed; a file the oracle refuses is
an ``ExecutionError`` (the caller reports the oracle as unavailable, naming why).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ..errors import ExecutionError

__all__ = ["OracleRun", "ORACLE_FOR_SEMANTICS", "ORACLE_DESCRIPTIONS", "run_oracle", "litert_refusal",
           "run_tflite_oracle"]

ORACLE_FOR_SEMANTICS = {"litert": "litert", "tflm": "tflm", "onnxruntime": "onnxruntime"}
ORACLE_DESCRIPTIONS = {"litert": "LiteRT reference kernels (BUILTIN_REF)",
                       "tflm": "TFLite Micro reference kernels (tflite_micro runtime)",
                       "onnxruntime": "onnxruntime (CPU execution provider)"}


@dataclass(frozen=True, eq=False)
class OracleRun:
    name: str                                    # "litert" | "tflm" | "onnxruntime"
    description: str
    outputs: tuple[np.ndarray, ...]
    tensors: dict = field(default_factory=dict)  # model tensor name → value (names used by one tensor only)
    note: str = ""


def _first_sentence(msg: str) -> str:
    first = msg.strip().split("\n")[0].split(". ")[0]
    return first if len(first) <= 160 else first[:157] + "..."


def litert_refusal(data: bytes) -> str | None:
    """Why LiteRT's reference interpreter refuses the file, or None (also when LiteRT is not installed)."""
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError:
        return None
    try:
        it = Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        it.allocate_tensors()
    except (ValueError, RuntimeError) as e:
        return _first_sentence(str(e))
    return None


def _tflite_tensor_names(data: bytes) -> tuple[list[str], int]:
    """Every tensor's name by index, and the model's output count."""
    from ..frontend.tflite_reader import read_model
    m = read_model(data)
    return [t.name or f"t{t.index}" for t in m.tensors], len(m.outputs)


def _unique(names: list[str], values: dict[int, np.ndarray]) -> tuple[dict, int]:
    """Values by name, leaving out names two tensors share (the IR only carries the name); and how many left out."""
    counts = Counter(names)
    out = {names[i]: v for i, v in values.items() if i < len(names) and counts[names[i]] == 1}
    return out, sum(1 for i in values if i < len(names) and counts[names[i]] > 1)


def _run_litert(data: bytes, inputs: list[np.ndarray]) -> OracleRun:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    try:
        it = Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                         experimental_preserve_all_tensors=True)
        it.allocate_tensors()
    except (ValueError, RuntimeError) as e:
        raise ExecutionError(f"LiteRT refuses the model: {_first_sentence(str(e))}",
                             hint="--semantics tflm compares against TFLite Micro instead") from None
    for d, v in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], v)
    it.invoke()
    outs = tuple(np.array(it.get_tensor(d["index"])) for d in it.get_output_details())
    names, _ = _tflite_tensor_names(data)
    values = {}
    for d in it.get_tensor_details():
        try:
            values[d["index"]] = np.array(it.get_tensor(d["index"]))
        except ValueError:
            pass
    tensors, shared = _unique(names, values)
    return OracleRun("litert", ORACLE_DESCRIPTIONS["litert"], outs, tensors,
                     f"{shared} tensors share a name with another and are compared with byoc.evaluate only"
                     if shared else "")


def _run_tflm(data: bytes, inputs: list[np.ndarray]) -> OracleRun:
    from tflite_micro.python.tflite_micro import runtime as tflm
    try:
        it = tflm.Interpreter.from_bytes(data, intrepreter_config=tflm.InterpreterConfig.kPreserveAllTensors)
        for i, v in enumerate(inputs):
            it.set_input(v, i)
        it.invoke()
    except (ValueError, RuntimeError) as e:
        raise ExecutionError(f"TFLite Micro refuses the model: {_first_sentence(str(e))}") from None
    names, n_out = _tflite_tensor_names(data)
    outs = tuple(np.array(it.get_output(i)) for i in range(n_out))
    values = {}
    for i in range(len(names)):
        try:
            got = it.GetTensor(i, 0)
        except (RuntimeError, ValueError, IndexError):
            continue
        if isinstance(got, dict) and isinstance(got.get("tensor_data"), np.ndarray):
            values[i] = np.array(got["tensor_data"])
    tensors, shared = _unique(names, values)
    return OracleRun("tflm", ORACLE_DESCRIPTIONS["tflm"], outs, tensors,
                     f"{shared} tensors share a name with another and are compared with byoc.evaluate only"
                     if shared else "")


def _run_onnxruntime(data: bytes, inputs: list[np.ndarray]) -> OracleRun:
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3  # errors only: its warnings (unused initializers, declared shapes) are not ours
    try:
        sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
        feed = {i.name: v for i, v in zip(sess.get_inputs(), inputs)}
        outs = tuple(np.asarray(o) for o in sess.run(None, feed))
    except Exception as e:  # noqa: BLE001 - onnxruntime raises its own exception types
        raise ExecutionError(f"onnxruntime refuses the model: {_first_sentence(str(e))}") from None
    return OracleRun("onnxruntime", ORACLE_DESCRIPTIONS["onnxruntime"], outs, {},
                     "onnxruntime exposes outputs only: intermediate tensors are compared with byoc.evaluate")


_RUNNERS = {"litert": ("ai_edge_litert.interpreter", _run_litert),
            "tflm": ("tflite_micro.python.tflite_micro.runtime", _run_tflm),
            "onnxruntime": ("onnxruntime", _run_onnxruntime)}


def run_oracle(semantics: str, data: bytes, inputs: list[np.ndarray]) -> OracleRun | None:
    """Run the oracle of ``semantics`` ("litert", "tflm", "onnxruntime"); None when its package is missing."""
    import importlib
    name = ORACLE_FOR_SEMANTICS.get(semantics)
    if name is None:
        raise ExecutionError(f"no oracle for semantics {semantics!r}", hint="one of " + ", ".join(_RUNNERS))
    module, run = _RUNNERS[name]
    try:
        importlib.import_module(module)
    except ImportError:
        return None
    return run(data, inputs)


def run_tflite_oracle(data: bytes, inputs: list[np.ndarray], semantics: str = "litert"):
    """``(description, outputs, tensors by name, note)`` of the oracle of ``semantics`` (kept for callers of the
    earlier API); None when it is not installed."""
    r = run_oracle(semantics, data, inputs)
    return None if r is None else (r.description, list(r.outputs), r.tensors, r.note)
