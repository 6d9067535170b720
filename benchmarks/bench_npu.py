"""NPU simulator vs Arm Vela (ethos-u55-256) on MobileNetV2, person_detect and the MLPerf Tiny models, and the
simulator's host speed.

Runs Vela 5.x (``pip install -e '.[dev]'``) on each .tflite for ethos-u55-256 with its default system
(Ethos_U55_High_End_Embedded, Shared_Sram, Performance mode), partitions the model with the ``ethos-u`` pattern
table (Vela's operator rules), matches layers by OFM tensor name (npu-model.md §6) and operator kind, and reports
per model the network ratio (ours / Vela over the matched layers), how many compute layers (Vela >= 10k cycles)
are within ±10/20/30%, and every layer's cycles. Ours per layer is the layer's exclusive cycles (what it adds to
the network; these sum to the total, as Vela's Op Cycles do). Vela layers that stay on the CPU here are not
matched (listed as such). The U65 presets are compared in both of Vela's U65 memory modes (Dedicated_Sram, its
default, and Shared_Sram). Host speed: compile and simulate of MobileNetV2's NPU partition, best of N in process
CPU time (the host is shared), and their peak traced memory (tracemalloc, a separate run).
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc

import numpy as np

import byoc
from byoc import relay
from byoc.ir.expr import Call, Function, Op, Var
from byoc.ir.traversal import post_order, users_map

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _beside(*parts: str) -> pathlib.Path:
    """A path next to the checkout (/work/main) or next to its worktree folder (/work/wt/NAME)."""
    near = ROOT.parent.joinpath(*parts)
    return near if near.exists() else ROOT.parent.parent.joinpath(*parts)


MODEL = _beside("shared", "models", "mobilenet_v2_quantized_1x3x224x224.tflite")
PRESET = "ethos-u55-256-like"
BIG_LAYER = 10_000           # compute layers with at least this many Vela cycles are scored
LAYER_TOL, TOTAL_TOL = 0.20, 0.10
TARGET = "ethos-u"
TINY = ROOT / "tests" / "data" / "mlcommons_tiny"
MODELS = {   # name → .tflite (unseen models first; MobileNetV2 is the model the preset was first fitted to)
    "vww_96_int8": TINY / "vww_96_int8.tflite",
    "ad01_int8": TINY / "ad01_int8.tflite",
    "kws_ref_model": TINY / "kws_ref_model.tflite",
    "str_ww_ref_model": TINY / "str_ww_ref_model.tflite",
    "pretrainedResnet_quant": TINY / "pretrainedResnet_quant.tflite",
    "pretrainedResnet_large_int8": _beside("ext", "models", "pretrainedResnet_large_int8.tflite"),
    "micro_speech_quantized": _beside("shared", "models", "micro_speech_quantized.tflite"),
    "person_detect": _beside("shared", "models", "person_detect.tflite"),
    "mobilenet_v2": MODEL,
}
# Real models never used for tuning, read from public repositories into /work/ext/unseen (outside the checkout;
# sources and licences in benchmarks/unseen_models.md). Rows for them are skipped when absent.
UNSEEN = _beside("ext", "unseen")
UNSEEN_MODELS = {stem: UNSEEN / f"{stem}.tflite" for stem in (
    "mobilenet_v1_1.0_224_quant", "mobilenet_v2_1.0_224_quant", "model_ToyCar_quant_fullint")}
# google-coral/test_data (uint8 TF1 and int8 TF2 classifiers, DeepLabV3 segmentation, MoveNet pose), in
# /work/ext/unseen/coral; added after the cost model was last fitted.
UNSEEN_MODELS.update({stem: UNSEEN / "coral" / f"{stem}.tflite" for stem in (
    "mobilenet_v1_0.25_128_quant", "mobilenet_v1_0.5_160_quant", "mobilenet_v1_0.75_192_quant",
    "mobilenet_v2_1.0_224_inat_bird_quant", "tf2_mobilenet_v2_1.0_224_ptq", "deeplabv3_mnv2_dm05_pascal_quant",
    "movenet_single_pose_lightning_ptq")})
# google-coral/test_data posenet/ (uint8 PoseNet 353x481 and BodyPix 512x512 MobileNetV1 backbones ending in the
# vendor CUSTOM:PosenetDecoderOp, which byoc imports as an opaque op on the CPU, as Vela leaves it), in
# /work/ext/unseen/more; never used for tuning.
UNSEEN_MODELS.update({stem: UNSEEN / "more" / f"{stem}.tflite" for stem in (
    "posenet_mobilenet_v1_075_353_481_16_quant_decoder", "bodypix_mobilenet_v1_075_512_512_16_quant_decoder")})
MODELS.update(UNSEEN_MODELS)
# Real models surveyed this session (google-coral/test_data, hapv3/neural-compiler's YOLOv8n and MobileNetV2 int8),
# in /work/ext/unseen/more: YOLOv8n and the traffic detector were used to find the mechanisms added with them (row
# matching by what a row writes, channel windows, direct concatenation writes, uint8 LOGISTIC); the others were
# only measured. Timed on ethos-u55-256 only (the acceptance configuration; the cross-configuration runs would
# take Vela several more minutes per model).
U55_256_ONLY = {stem: UNSEEN / "more" / f"{stem}.tflite" for stem in (
    "yolov8n_320_int8", "traffic_model", "deeplabv3_mnv2_pascal_quant", "mobilenet_v2_224_int8",
    "mobilenet_v2_1.0_224_inat_insect_quant", "mobilenet_v1_1.0_224_quant_embedding_extractor")}
UNSEEN_MODELS.update(U55_256_ONLY)
MODELS.update(U55_256_ONLY)
# Integer LSTM models, imported as regor decomposes UNIDIRECTIONAL_SEQUENCE_LSTM (per step: the gates' feature and
# recurrent FCs, gate adds with their activation fused, the cell and hidden state products), their layers named as
# Vela's rows.
LSTM_MODELS = {"micro_speech_lstm": UNSEEN / "more" / "micro_speech_lstm.tflite",
               "dtln_noise_suppression": UNSEEN / "dtln_noise_suppression.tflite",
               "trained_lstm_int8": UNSEEN / "trained_lstm_int8.tflite",
               "keras_lstm_mnist_ptq": UNSEEN / "coral" / "keras_lstm_mnist_ptq.tflite"}
UNSEEN_MODELS.update(LSTM_MODELS)
MODELS.update(LSTM_MODELS)
# Models checked for placement only (no per-layer timing rows): the SVDF and SSD post-processing models (CPU
# operators between NPU parts), and the int16x8 SEANet layers (one single-op file each).
PLACEMENT_ONLY = {stem: UNSEEN / f"{stem}.tflite"
                  for stem in ("detect", "keyword_scrambled", "keyword_scrambled_8bit")}
# Vela's rows of an operator it decomposes into NPU operations of other kinds, named after its internal tensors:
# matched by the operation ("NNG Operator": FullyConnected, Add, Mul, ...) instead of the original operator.
_DECOMPOSED = ("UnidirectionalSequenceLstm",)
PLACEMENT_GROUPS = {"seanet conv (int16x8)": ("seanet", "conv"),
                    "seanet transpose_conv (int16x8)": ("seanet", "transpose_conv")}
# tflite-micro's int16 SEANet single-op files and LiteRT's test models in /work/ext/unseen/misc (int16 LEAKY_RELU,
# PAD, RSQRT, batch-8 elementwise, int16 BATCH_MATMUL), read after the int16 placement survey
_SEANET = "tensorflow_lite_micro_integration_tests_seanet_"
PLACEMENT_GROUPS.update({f"seanet {op} (int16)": ("misc", f"{_SEANET}{op}_{op}") for op in ("leaky_relu", "pad")})
PLACEMENT_ONLY.update({stem[len("litert_test_testdata_"):]: UNSEEN / "misc" / f"{stem}.tflite" for stem in (
    "litert_test_testdata_mul_quant", "litert_test_testdata_simple_quantized_ops", "litert_test_testdata_matmul_quant",
    "litert_test_testdata_single_rsqrt_default_a8w8_recipe_quantized",
    "litert_test_testdata_single_rsqrt_default_a16w8_recipe_quantized")})
# Vela "Original Operator" → our layer kinds that implement it.
_VELA_KINDS = {"Conv2D": ("conv",), "DepthwiseConv2D": ("depthwise", "conv"), "FullyConnected": ("dense", "conv"),
               "Add": ("add",), "Mul": ("mul",), "AvgPool": ("avg_pool",), "MaxPool": ("max_pool",),
               "Mean": ("mean",)}


def _vela_exe() -> list[str] | None:
    exe = pathlib.Path(sys.executable).with_name("vela")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("vela")
    return [found] if found else None


def vela_per_layer(model: pathlib.Path, out_dir: pathlib.Path, accelerator: str = "ethos-u55-256",
                   memory_mode: str | None = None) -> tuple[dict[str, dict], int] | None:
    """{OFM name: {cycles, macs, op}} and Vela's network total, or None when Vela is not installed
    (``memory_mode``: a vela.ini memory mode instead of the accelerator's default)."""
    stem = model.stem
    csv_path = out_dir / f"{stem}_per-layer.csv"
    if not csv_path.exists():
        exe = _vela_exe()
        if exe is None:
            return None
        out_dir.mkdir(parents=True, exist_ok=True)
        mode = ["--memory-mode", memory_mode] if memory_mode else []
        subprocess.run(exe + [str(model), "--accelerator-config", accelerator, "--output-dir", str(out_dir),
                              "--verbose-performance"] + mode, check=True, capture_output=True, cwd=out_dir)
    from byoc.frontend.tflite_context import tensor_name
    from byoc.frontend.tflite_reader import read_model
    tfl = read_model(model.read_bytes())
    model_tensors = {tensor_name(t) for t in tfl.tensors}
    # Keyed (OFM name, Original Operator): a producer regor writes straight into a concatenation's output carries
    # the concatenation's OFM name, as do the concatenation's own copies of its other inputs.
    found: dict[tuple[str, str], dict] = {}
    total = 0
    # Vela's rows without an original operator ("N/A": an ARG_MAX's depthwise, max pools, LUT and casts) come in a
    # run whose last row writes the op's OFM: the run is one layer under that row's name. So are the rows of an
    # operator regor decomposes (SOFTMAX, a 5-D TRANSPOSE) that write intermediates, tensors the model does not
    # hold: they belong to the next row of the same operator, the one writing the model's tensor.
    run: list[dict] = []
    decomposed: dict[str, str] = {}

    def add(name: str, op: str, rows: list[dict]) -> None:
        d = found.setdefault((name, op), {"cycles": 0, "macs": 0, "op": op, "name": name})
        d["cycles"] += sum(int(float(r["Op Cycles"])) for r in rows)
        d["macs"] += sum(int(float(r["MAC Count"])) for r in rows)

    def flush():
        if run:
            add(run[-1]["Name"].removesuffix("_intermediate"), run[-1]["Original Operator"], run)
            run.clear()
    with open(csv_path, newline="") as f:
        for row in csv.DictReader(f):
            total += int(float(row["Op Cycles"]))
            op, name = row["Original Operator"], row["Name"].removesuffix("_intermediate")
            if op in _DECOMPOSED:   # regor's LSTM rows, named after its own tensors: one layer per name, of
                flush()             # the kind of that name's first operation (an FC, or the gate's Add)
                add(name, decomposed.setdefault(name, row["NNG Operator"]), [row])
                continue
            if run and run[-1]["Original Operator"] != op:
                flush()
            if op == "N/A" or name not in model_tensors:
                run.append(row)
                continue
            add(name, op, run + [row])
            run.clear()
    flush()
    _join_input_named_rows(found, tfl)
    ops_of: dict[str, int] = {}
    for name, _ in found:
        ops_of[name] = ops_of.get(name, 0) + 1
    layers = {(name if ops_of[name] == 1 else f"{name} ({op})"): d for (name, op), d in found.items()}
    return layers, total


def _join_input_named_rows(found: dict[tuple[str, str], dict], tfl) -> None:
    """Rows regor names after an operator's input (RESIZE_BILINEAR's edge-padding copies write a padded copy of
    its input under the input's name) are that operator's: moved to the row of the operator's output. Vela's
    operator names are the opcodes in CamelCase (RESIZE_BILINEAR: ResizeBilinear)."""
    from byoc.frontend.tflite_context import tensor_name
    outputs: set[tuple[str, str]] = set()
    readers: dict[tuple[str, str], list[str]] = {}
    concats: set[str] = set()   # producers write into these (their rows are matched by _concat_producers)
    for o in tfl.operators:
        if not o.outputs:
            continue
        kind = o.opcode.replace("_", "").lower()
        out = tensor_name(tfl.tensors[o.outputs[0]])
        outputs.add((kind, out))
        if o.opcode == "CONCATENATION":
            concats.add(out)
        for i in o.inputs:
            if i >= 0:
                readers.setdefault((kind, tensor_name(tfl.tensors[i])), []).append(out)
    for (name, op) in list(found):
        kind = op.lower()
        dest = readers.get((kind, name), [])
        if (kind, name) in outputs or len(dest) != 1 or name in concats:
            continue
        d = found.pop((name, op))
        t = found.setdefault((dest[0], op), {"cycles": 0, "macs": 0, "op": op, "name": dest[0]})
        t["cycles"] += d["cycles"]
        t["macs"] += d["macs"]


# --- Building the NPU partition by hand (until the pattern partitioner is wired in) -------------------------
# One post-order walk of main groups the op chains of docs/architecture.md into composite function literals
# inside one global function with Compiler="npu"; ops before the first composite (MobileNetV2's NCHW→NHWC
# transpose) stay on the host.

_CHAINS = {
    "qnn.conv2d": ("nn.bias_add", "qnn.requantize", "clip"),
    "qnn.dense": ("nn.bias_add", "qnn.requantize", "clip"),
    "qnn.add": ("clip",),
    "qnn.mul": ("clip",),
    "qnn.mean": ("clip",),
}


def _name(op: str, call: Call) -> str:
    if op == "qnn.conv2d":
        return "npu.qnn_depthwise_conv2d" if call.attrs.groups > 1 else "npu.qnn_conv2d"
    return {"qnn.dense": "npu.qnn_dense", "qnn.add": "npu.qnn_add", "qnn.mul": "npu.qnn_mul",
            "qnn.mean": "npu.qnn_mean"}[op]


def npu_partition(mod) -> tuple[Function, Var, Call]:
    """(the Compiler="npu" function, main's value feeding it, that value's call) for a single-input chain model.
    TVM-form chains (MEAN as cast → mean → requantize) are read as their integer ops first."""
    from byoc.transform.canonicalize_qnn import canonicalize_module
    from byoc.transform.infer_type import infer_expr
    main = canonicalize_module(mod)["main"]
    infer_expr(main)
    users = users_map(main.body)
    order = post_order(main.body, enter_functions=False)
    new: dict[int, object] = {}
    outer_input = None
    boundary = None
    consumed: set[int] = set()
    for node in order:
        if not isinstance(node, Call) or not isinstance(node.op, Op):
            continue
        name = node.op.name
        if name == "reshape" and id(node.args[0]) in new:
            new[id(node)] = node.replace(args=(new[id(node.args[0])],))
            continue
        if name not in _CHAINS or id(node) in consumed:
            continue
        chain = [node]
        # Extend downward through single-user successors that the pattern allows.
        for nxt_op in _CHAINS[name]:
            u = users.get(id(chain[-1]), [])
            if len(u) == 1 and isinstance(u[0], Call) and isinstance(u[0].op, Op) and u[0].op.name == nxt_op:
                chain.append(u[0])
        pad = None
        data = node.args[0]
        if name == "qnn.conv2d" and isinstance(data, Call) and isinstance(data.op, Op) and data.op.name == "nn.pad":
            pad, data = data, data.args[0]
        inputs = [data] if name not in ("qnn.add", "qnn.mul") else [node.args[0], node.args[1]]
        params = [relay.var(f"in{i}", x.checked_type) for i, x in enumerate(inputs)]
        # Rebuild the chain over the composite's parameters.
        first_args = list(node.args)
        if pad is not None:
            inner = pad.replace(args=(params[0],) + pad.args[1:])
            first_args[0] = inner
        else:
            for k, p in enumerate(params):
                first_args[k] = p
        cur = node.replace(args=tuple(first_args))
        for c in chain[1:]:
            cur = c.replace(args=(cur,) + c.args[1:])
        fn = relay.Function(params, cur).with_attr("Composite", _name(name, node))
        outer_args = []
        for x in inputs:
            if id(x) in new:
                outer_args.append(new[id(x)])
            else:
                if outer_input is None:
                    outer_input = relay.var("npu_input", x.checked_type)
                    boundary = x
                if x is not boundary:
                    raise ValueError("npu_partition handles models with one NPU input")
                outer_args.append(outer_input)
        call = Call(fn, tuple(outer_args), span=chain[-1].span)
        for c in chain:
            consumed.add(id(c))
            new[id(c)] = call
    body = new.get(id(main.body))
    if body is None:
        raise ValueError("the model's output is not produced by an NPU composite")
    fn = relay.Function([outer_input], body)
    for k, v in (("Compiler", "npu"), ("global_symbol", "tvmgen_default_npu_main_0"), ("Primitive", 1),
                 ("Inline", 1)):
        fn = fn.with_attr(k, v)
    return fn, outer_input, boundary


def build_program(preset: str = PRESET):
    import npu_sim
    from byoc.frontend import from_tflite

    mod, _ = from_tflite(str(MODEL), semantics="tflm")  # fixed-point FC requantization, as on Ethos-U
    fn, _, _ = npu_partition(mod)
    return fn, npu_sim.compile(fn, preset)


def _best(fn, n: int = 3) -> tuple[float, float, object]:
    """(best wall s, best process CPU s, last result) of ``n`` calls."""
    wall = cpu = float("inf")
    out = None
    for _ in range(n):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
    return wall, cpu, out


def _peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def speed_rows() -> list[dict]:
    """MobileNetV2's whole NPU partition: compile and simulate host time (best of 3) and peak memory."""
    import npu_sim
    from byoc.frontend import from_tflite

    mod, _ = from_tflite(str(MODEL), semantics="tflm")  # fixed-point FC requantization, as on Ethos-U
    fn, _, _ = npu_partition(mod)
    c_wall, c_cpu, prog = _best(lambda: npu_sim.compile(fn, PRESET))
    x = np.random.default_rng(0).integers(-128, 128, size=prog.inputs[0].shape).astype(np.int8)
    feed = {prog.inputs[0].name: x}
    s_wall, s_cpu, (outs, stats) = _best(lambda: npu_sim.simulate(prog, feed))
    exact = bool(np.array_equal(outs[0], byoc.evaluate(fn, feed)[0]))
    c_peak = _peak_bytes(lambda: npu_sim.compile(fn, PRESET))
    s_peak = _peak_bytes(lambda: npu_sim.simulate(prog, feed))
    print(f"MobileNetV2 NPU partition: compile {c_cpu:.3f} s CPU ({c_wall:.3f} s wall), simulate {s_cpu:.3f} s CPU "
          f"({s_wall:.3f} s wall), peak traced memory compile {c_peak / 2**20:.1f} MiB, simulate "
          f"{s_peak / 2**20:.1f} MiB; output bit-exact vs byoc.evaluate: {exact}")
    return [
        {"name": "MobileNetV2 NPU output bit-exact vs byoc.evaluate", "value": int(exact), "unit": "bool",
         "target": "1"},
        {"name": "MobileNetV2 simulate (functional + timing), host CPU time, best of 3", "value": s_cpu,
         "unit": "s", "target": "<= 1 s"},
        {"name": "MobileNetV2 simulate, host wall time, best of 3 (shared host)", "value": s_wall, "unit": "s"},
        {"name": "MobileNetV2 compile, host CPU time, best of 3", "value": c_cpu, "unit": "s", "target": "<= 1.5 s"},
        {"name": "MobileNetV2 compile, host wall time, best of 3 (shared host)", "value": c_wall, "unit": "s"},
        {"name": "MobileNetV2 compile, peak traced memory", "value": c_peak / 2**20, "unit": "MiB"},
        {"name": "MobileNetV2 simulate, peak traced memory", "value": s_peak / 2**20, "unit": "MiB"},
        {"name": "MobileNetV2 simulated MACs per host CPU second", "value": stats.total_macs / s_cpu, "unit": "MAC/s"},
        {"name": "MobileNetV2 commands", "value": stats.command_count, "unit": "commands"},
        {"name": f"MobileNetV2 simulated cycles ({PRESET})", "value": stats.total_cycles, "unit": "cycles"},
    ]


def _summary_rows(label: str, models: list[dict], targets: bool) -> list[dict]:
    n_sc = sum(r["scored"] for r in models)
    worst = max((abs(r["ratio"] - 1) for r in models), default=float("nan"))
    out = []
    for tol in (10, 20, 30):
        n_in = sum(r[f"within{tol}"] for r in models)
        row = {"name": f"{label}: compute layers (>= {BIG_LAYER} Vela cycles) within ±{tol}% of Vela, "
                       f"{len(models)} models", "value": n_in / n_sc if n_sc else float("nan"),
               "unit": f"fraction of {n_sc}"}
        if targets and tol == 20:
            row["target"] = ">= 0.95"
        out.append(row)
    row = {"name": f"{label}: worst network total |ours/Vela - 1|, {len(models)} models", "value": worst,
           "unit": "ratio"}
    if targets:
        row["target"] = "<= 0.10"
    out.append(row)
    out.append({"name": f"per-model distribution, ours vs Vela ({label})", "details": _distribution_table(models)})
    return out


# Vela's two U65 memory modes and the preset suffix that models each (its default is Dedicated_Sram_384KB).
U65_MODES = (("Dedicated_Sram_384KB", ""), ("Shared_Sram", "-shared"))


def run() -> list[dict]:
    NOT_COMPILED.clear()
    rows_out = speed_rows()
    cache = pathlib.Path(os.environ.get("BYOC_VELA_CACHE", pathlib.Path(tempfile.gettempdir()) / "byoc_vela"))
    if _vela_exe() is None and not (cache / "u55_256").exists():
        print("vela is not installed (pip install -e '.[dev]'): no comparison")
        return rows_out
    models = run_models(cache / "u55_256")
    rows_out += _summary_rows("ethos-u55-256", models, targets=True)
    prow, ptable = placement_rows(cache / "u55_256")
    rows_out += prow + [{"name": "placement vs Vela (ethos-u55-256), per model", "details": ptable}]
    cross = tuple(m for m in MODELS if m not in U55_256_ONLY)
    for acc in CROSS_CONFIGS:
        ms = run_models(cache / acc.removeprefix("ethos-").replace("-", "_"), acc, cross)
        rows_out += _summary_rows(f"{acc} (preset not fitted)", ms, targets=False)
    for acc in ("ethos-u65-256", "ethos-u65-512"):
        for mode, suffix in U65_MODES:
            sub = cache / f"{acc.removeprefix('ethos-').replace('-', '_')}_{mode}"
            ms = run_models(sub, acc + suffix, cross, accelerator=acc, memory_mode=mode)
            rows_out += _summary_rows(f"{acc + suffix} vs Vela {acc} {mode}", ms, targets=False)
    if NOT_COMPILED:
        rows_out.append({"name": "models the simulator cannot compile for a configuration (not timed)",
                         "details": "\n".join(f"* {p}, {m}: {w}" for p, m, w in NOT_COMPILED)})
    for r in models:
        rows_out.append({"name": f"per-layer cycles, {r['model']}, ours vs Vela (ethos-u55-256)",
                         "details": _layer_table(r["rows"])})
    return rows_out


# Our layer kinds for Vela's original operators when one is matched by what it writes rather than by its name.
_PRODUCER_KINDS = {**_VELA_KINDS, "ResizeNearestNeighbor": ("resize",), "ResizeBilinear": ("resize",),
                   "Sigmoid": ("lut",), "Tanh": ("lut",), "Quantize": ("requant",), "Concat": ("copy",)}


_FUSED_ACTIVATIONS = {"LOGISTIC": "Sigmoid", "TANH": "Tanh"}   # TFLite opcode → Vela's name of it


def _concat_producers(path: pathlib.Path, per_layer: dict[str, dict], ours: dict[str, dict]) -> dict:
    """{(OFM name, Vela operator): our layers' sum, or None: counted with another row} for Vela's rows named after
    a tensor another operator writes. An activation fused into its producer (below); a CONCATENATION's output: regor lets an input's producer write straight into its slice of the output (the row then carries the
    output's name) and copies the other inputs (its "Concat" rows). Such a producer row is compared to our
    layers of the same kind that write the concatenation's inputs and that Vela does not time under their own
    names; the "Concat" rows to our copies of the remaining inputs (our layers ``<name>/<input index>``)."""
    from byoc.frontend.tflite_context import tensor_name
    from byoc.frontend.tflite_reader import read_model
    model = read_model(path.read_bytes())
    vela_names = {v["name"] for v in per_layer.values()}
    by_name: dict[str, list[str]] = {}
    for v in per_layer.values():
        by_name.setdefault(v["name"], []).append(v["op"])
    out: dict[tuple[str, str], dict | None] = {}
    for op in model.operators:
        if op.opcode in _FUSED_ACTIVATIONS and op.outputs and op.inputs:
            # regor runs an activation whose input has no other reader as the producer's own output stage: the
            # producer's row carries the activation's OFM name, the activation's own row (0 cycles) goes with it
            name = tensor_name(model.tensors[op.outputs[0]])
            src = tensor_name(model.tensors[op.inputs[0]])
            act = _FUSED_ACTIVATIONS[op.opcode]
            for vop in by_name.get(name, ()):
                kinds = set(_PRODUCER_KINDS.get(vop, ()))
                if vop != act and kinds and src in ours and src not in vela_names and ours[src]["kinds"] & kinds \
                        and name in ours:
                    out[(name, vop)] = _merged([ours[src], ours[name]])
                    out[(name, act)] = None
            continue
        if op.opcode != "CONCATENATION" or not op.outputs:
            continue
        name = tensor_name(model.tensors[op.outputs[0]])
        inputs = [tensor_name(model.tensors[i]) for i in op.inputs]
        direct: set[int] = set()
        for vop in by_name.get(name, ()):
            kinds = set(_PRODUCER_KINDS.get(vop, ()))
            if vop == "Concat" or not kinds:
                continue
            idx = [j for j, t in enumerate(inputs) if t in ours and t not in vela_names and ours[t]["kinds"] & kinds]
            if idx:
                direct.update(idx)
                out[(name, vop)] = _merged([ours[inputs[j]] for j in idx])
        if "Concat" in by_name.get(name, ()):
            copies = [ours[f"{name}/{j}"] for j in range(len(inputs)) if j not in direct and f"{name}/{j}" in ours]
            if copies:
                out[(name, "Concat")] = _merged(copies)
    return out


def _merged(layers: list[dict]) -> dict:
    return {"cycles": sum(d["cycles"] for d in layers), "kinds": set().union(*(d["kinds"] for d in layers)),
            "bound": layers[0]["bound"], "tile": layers[0]["tile"]}


def _model_rows(stem: str, path: pathlib.Path, cache: pathlib.Path, preset: str = PRESET,
                accelerator: str = "ethos-u55-256", memory_mode: str | None = None) -> dict | None:
    """Per-layer ours vs Vela for one model partitioned with the ``ethos-u`` pattern table."""
    from byoc.cli.common import load_model
    from byoc.cli.summary import profile_partitions
    from byoc.partition import partition_for

    vela = vela_per_layer(path, cache, accelerator, memory_mode) if path.exists() else None
    if vela is None:
        return None
    per_layer, vela_total = vela
    # imported as `byoc` commands import it for the target: TFLite Micro's semantics, LiteRT's for a model Micro
    # cannot run (a uint8 LOGISTIC)
    m = load_model(str(path), "auto", target=TARGET)
    pmod = partition_for(TARGET, m.mod, m.params)
    ours: dict[str, dict] = {}
    for prof in profile_partitions(pmod, TARGET, preset):
        for s in prof.stats.per_layer:
            # a both-broadcast op's materialised operand is part of that op (Vela's "<operand>_broadcasted" row
            # joins the op's own row in vela_per_layer)
            d = ours.setdefault(s.name.removesuffix("/materialise"),
                                {"cycles": 0, "kinds": set(), "bound": s.bound, "tile": s.tile})
            d["cycles"] += s.exclusive_cycles
            d["kinds"].add(s.kind)
    producers = _concat_producers(path, per_layer, ours)
    rows = []
    for key, v in per_layer.items():
        name = v["name"]
        o = ours.get(name)
        kinds = _VELA_KINDS.get(v["op"])
        matched = o is not None and (kinds is None or bool(o["kinds"] & set(kinds)))
        if (name, v["op"]) in producers and (producers[(name, v["op"])] is None or not matched):
            o = producers[(name, v["op"])]
            matched = o is not None
        rows.append({"name": key, "op": v["op"], "vela": v["cycles"], "ours": o["cycles"] if matched else None,
                     "ratio": o["cycles"] / v["cycles"] if matched and v["cycles"] else None,
                     "bound": o["bound"] if matched else "cpu", "compute": kinds is not None})
    m = [r for r in rows if r["ours"] is not None]
    ours_t, vela_t = sum(r["ours"] for r in m), sum(r["vela"] for r in m)
    scored = [r for r in m if r["compute"] and r["vela"] >= BIG_LAYER]
    ratios = sorted(r["ratio"] for r in scored)
    out = {"model": stem, "rows": rows, "ours": ours_t, "vela": vela_t, "vela_total": vela_total,
           "ours_total": sum(d["cycles"] for d in ours.values()),
           "ratio": ours_t / vela_t if vela_t else float("nan"), "scored": len(scored), "ratios": ratios}
    for tol in (10, 20, 30, 50):
        out[f"within{tol}"] = sum(1 for r in scored if abs(r["ratio"] - 1) <= tol / 100)
    out["within"] = out["within20"]
    return out


# Smaller U55 configurations, checked (never fitted): the preset is derived from Vela's accelerator table, and
# Vela is run with the matching --accelerator-config.
CROSS_CONFIGS = ("ethos-u55-64", "ethos-u55-128")


NOT_COMPILED: list[tuple[str, str, str]] = []   # (preset, model, why) of models the simulator refused


def run_models(cache: pathlib.Path, preset: str = PRESET, models: tuple[str, ...] = tuple(MODELS),
               accelerator: str | None = None, memory_mode: str | None = None) -> list[dict]:
    """Every model's network ratio and per-layer distribution vs Vela (``preset`` against Vela's
    ``accelerator``, by default the preset's name; ``ethos-u55-256-like`` is ethos-u55-256)."""
    out = []
    accelerator = accelerator or preset.removesuffix("-like")
    print(f"== {preset} vs Vela {accelerator}" + (f" {memory_mode}" if memory_mode else ""))
    from byoc.errors import ByocError
    for stem in models:
        path = MODELS[stem]
        try:
            r = _model_rows(stem, path, cache, preset, accelerator, memory_mode)
        except ByocError as e:   # a model the simulator cannot compile for this configuration: listed, not timed
            why = e.message.splitlines()[0]
            print(f"{stem}: not compiled for {preset}: {why}")
            NOT_COMPILED.append((preset, stem, why))
            continue
        if r is None:
            print(f"{stem}: skipped (vela or the model file is missing)")
            continue
        q = np.quantile(r["ratios"], [0.0, 0.25, 0.5, 0.75, 1.0]) if r["ratios"] else [float("nan")] * 5
        print(f"{stem:34s} network {r['ratio']:.3f} (ours {r['ours']} / Vela {r['vela']} matched of "
              f"{r['vela_total']}); layers >= {BIG_LAYER}: {r['within']}/{r['scored']} within ±{LAYER_TOL:.0%}; "
              f"ratio min/q1/median/q3/max " + "/".join(f"{x:.2f}" for x in q))
        for x in r["rows"]:
            if x["ratio"] is not None and x["compute"] and x["vela"] >= BIG_LAYER and abs(x["ratio"] - 1) > LAYER_TOL:
                print(f"    outside: {x['name'][-50:]} {x['op']} ours {x['ours']} Vela {x['vela']} "
                      f"ratio {x['ratio']:.2f} ({x['bound']})")
        out.append(r)
    return out


def _distribution_table(models: list[dict]) -> str:
    lines = ["| model | network ours / Vela (cycles) | ratio | layers >= 10k Vela cycles within ±10% / ±20% / ±30% "
             "/ ±50% | per-layer ratio min / q1 / median / q3 / max | Vela cycles not on our NPU |",
             "|---|---|---|---|---|---|"]
    for r in models:
        q = np.quantile(r["ratios"], [0.0, 0.25, 0.5, 0.75, 1.0]) if r["ratios"] else []
        n = r["scored"]
        name = r["model"] + (" (unseen)" if r["model"] in UNSEEN_MODELS else "")
        lines.append(f"| {name} | {r['ours']} / {r['vela']} | {r['ratio']:.3f} | "
                     + " / ".join(f"{r[f'within{t}']}/{n}" for t in (10, 20, 30, 50)) + " | "
                     + (" / ".join(f"{x:.2f}" for x in q) or "-") + f" | {r['vela_total'] - r['vela']} |")
    n_sc = sum(r["scored"] for r in models)
    lines.append("| **all** | " + f"{sum(r['ours'] for r in models)} / {sum(r['vela'] for r in models)} | | "
                 + " / ".join(f"{sum(r[f'within{t}'] for r in models)}/{n_sc}" for t in (10, 20, 30, 50))
                 + " | | |")
    return "\n".join(lines)


@dataclass(frozen=True)
class OpSig:
    """One TFLite operator as the placement table matches it: first output tensor's name (``None`` when the
    file leaves it unnamed), opcode, and the tensor facts Vela keeps on the operators it leaves to the CPU:
    first output's shape and dtype, the outputs' quantization, the inputs' shapes and dtypes."""
    name: str | None
    opcode: str
    shape: tuple
    dtype: str = ""
    detail: tuple = ()


def _op_sigs(data: bytes) -> list[OpSig]:
    """Every TFLite operator's signature, in file order."""
    from byoc.frontend.tflite_reader import read_model
    m = read_model(data)
    def facts(t):
        q = t.quant
        return (tuple(t.shape), t.dtype, None if q is None else (tuple(np.float32(q.scale).tolist()),
                                                                  tuple(np.int64(q.zero_point).tolist())))
    sigs = []
    for o in m.operators:
        if not o.outputs:   # Vela writes some ethos-u operators with no outputs (results left in scratch)
            sigs.append(OpSig(None, o.opcode, ()))
            continue
        out = m.tensors[o.outputs[0]]
        detail = (tuple(facts(m.tensors[i]) for i in o.outputs),
                  tuple(facts(m.tensors[i])[:2] if i >= 0 else None for i in o.inputs))
        sigs.append(OpSig(out.name or None, o.opcode, tuple(out.shape), out.dtype, detail))
    return sigs


def match_ops(model: list[OpSig], other: list[OpSig]) -> dict[int, int]:
    """{index in ``other``: index in ``model``} pairing each operator of ``other`` (Vela's CPU operators) with
    the model's operator it is. A name both lists hold once with the same opcode pairs by name; the rest (an
    unnamed or repeated name: Vela writes every unnamed tensor as '<unnamed>') pair by opcode and all tensor
    facts, then by opcode, output shape and dtype, then by opcode alone, in order of occurrence among the still
    unpaired operators."""
    def once(sigs):
        seen: dict = {}
        for s in sigs:
            if s.name is not None:
                seen[s.name] = seen.get(s.name, 0) + 1
        return {n for n, k in seen.items() if k == 1}
    unique = once(model) & once(other)
    by_name = {s.name: i for i, s in enumerate(model) if s.name in unique}
    pairs: dict[int, int] = {}
    for j, s in enumerate(other):
        i = by_name.get(s.name)
        if i is not None and model[i].opcode == s.opcode:
            pairs[j] = i
    for key in (lambda s: (s.opcode, s.shape, s.dtype, s.detail), lambda s: (s.opcode, s.shape, s.dtype),
                lambda s: s.opcode):
        used = set(pairs.values())
        free: dict = {}
        for i, s in enumerate(model):
            if i not in used:
                free.setdefault(key(s), []).append(i)
        for j, s in enumerate(other):
            if j not in pairs and free.get(key(s)):
                pairs[j] = free[key(s)].pop(0)
    return pairs


def placement(path: pathlib.Path, cache: pathlib.Path) -> dict | None:
    """TFLite operators Vela runs on the NPU (folded into its CUSTOM:ethos-u ops) vs those byoc's ``ethos-u``
    target offloads (partitioned as ``byoc partition --target ethos-u`` does); Vela's CPU operators are paired
    with the model's by ``match_ops``, byoc's by the tensor name its importer gives (``t<index>`` when unnamed).
    None when Vela or the model is missing."""
    from byoc.cli.cmd_model import give_back_policies
    from byoc.cli.common import load_model
    from byoc.errors import ByocError
    from byoc.frontend.tflite_context import tensor_name
    from byoc.frontend.tflite_reader import read_model
    from byoc.partition import partition_for
    if not path.exists() or vela_per_layer(path, cache) is None:
        return None
    data = path.read_bytes()
    sigs = _op_sigs(data)
    vela_sigs = [s for s in _op_sigs((cache / f"{path.stem}_vela.tflite").read_bytes())
                 if s.opcode != "CUSTOM:ethos-u"]
    vela_cpu = set(match_ops(sigs, vela_sigs).values())
    try:
        m = load_model(str(path), "auto", target=TARGET)
        _, report = partition_for(TARGET, m.mod, m.params, return_report=True, **give_back_policies("ethos-u"))
    except ByocError as e:   # not imported: byoc runs none of it
        lines = e.message.splitlines()
        why = lines[1].strip() if len(lines) > 1 else lines[0]
        why = re.sub(r"\(tensor \d+ '[^']*'\) ", "", re.sub(r" at file offset \d+", "", why))
        return {"ops": len(sigs), "vela_npu": len(sigs) - len(vela_cpu), "byoc_npu": 0, "both_npu": 0,
                "diffs": {("all", f"not imported ({why[:140]})"): len(sigs)}}
    model = read_model(data)
    names = [tensor_name(model.tensors[o.outputs[0]]) for o in model.operators]
    # byoc's CPU nodes by name; a name k operators share marks the first k of them that byoc reports
    cpu_reasons: dict[str, list[str]] = {}
    for n in report.cpu_ops():
        if n.name:
            cpu_reasons.setdefault(n.name, []).append(n.reason)
    byoc_cpu: dict[int, str] = {}
    for i, n in enumerate(names):
        if cpu_reasons.get(n):
            byoc_cpu[i] = cpu_reasons[n].pop(0)
    diffs = {}
    for i, s in enumerate(sigs):
        if (i in vela_cpu) != (i in byoc_cpu):
            why = byoc_cpu.get(i, "on byoc's NPU, on the CPU in Vela")
            diffs.setdefault((s.opcode, why[:240]), 0)
            diffs[(s.opcode, why[:240])] += 1
    return {"ops": len(sigs), "vela_npu": len(sigs) - len(vela_cpu), "byoc_npu": len(sigs) - len(byoc_cpu),
            "both_npu": sum(1 for i in range(len(sigs)) if i not in vela_cpu and i not in byoc_cpu),
            "diffs": diffs}


def placement_rows(cache: pathlib.Path) -> tuple[list[dict], str]:
    """Placement of every benchmark model, the unseen ones and the single-op SEANet groups vs Vela."""
    groups: dict[str, list[pathlib.Path]] = {m: [p] for m, p in {**MODELS, **PLACEMENT_ONLY}.items()}
    for label, (folder, prefix) in PLACEMENT_GROUPS.items():
        d = UNSEEN / folder
        files = sorted(d.glob(f"{prefix}[0-9]*.tflite"), key=lambda q: int(q.stem[len(prefix):])) \
            if d.exists() else []
        if files:
            groups[label] = files
    lines = ["| model | TFLite ops | Vela NPU | byoc NPU | of Vela's NPU ops, on byoc's NPU | differences (op: reason) |",
             "|---|---|---|---|---|---|"]
    tot_v = tot_b = 0
    for label, paths in groups.items():
        rs = [r for r in (placement(p, cache) for p in paths) if r is not None]
        if not rs:
            continue
        n, v, b, both = (sum(r[k] for r in rs) for k in ("ops", "vela_npu", "byoc_npu", "both_npu"))
        tot_v, tot_b = tot_v + v, tot_b + both
        diffs: dict = {}
        for r in rs:
            for k, c in r["diffs"].items():
                diffs[k] = diffs.get(k, 0) + c
        text = "; ".join(f"{c} ×{k}: {why}" for (c, why), k in diffs.items()) or "none"
        unseen = " (unseen)" if label in UNSEEN_MODELS or label in PLACEMENT_ONLY or label in PLACEMENT_GROUPS else ""
        lines.append(f"| {label}{unseen} | {n} | {v} | {b} | {both}/{v} | {text.replace('|', '/')} |")
        print(f"placement {label}: ops {n}, Vela NPU {v}, byoc NPU {b}, both {both}; {text[:200]}")
    row = {"name": "ethos-u placement: TFLite ops Vela runs on the NPU that byoc also offloads, all models",
           "value": tot_b / tot_v if tot_v else float("nan"), "unit": f"fraction of {tot_v}", "target": "1.0"}
    return [row], "\n".join(lines)


def _layer_table(rows: list[dict]) -> str:
    lines = ["| layer (OFM) | Vela op | ours (cycles) | Vela (cycles) | ratio | bound |", "|---|---|---|---|---|---|"]
    for r in rows:
        if not r["vela"] and r["ours"] is None:
            continue   # Vela's zero-cycle rows (fused activations, reshapes)
        ratio = f"{r['ratio']:.2f}" if r["ratio"] is not None else "-"
        ours = str(r["ours"]) if r["ours"] is not None else "-"
        lines.append(f"| {r['name'][-60:]} | {r['op']} | {ours} | {r['vela']} | {ratio} | {r['bound']} |")
    return "\n".join(lines)


def main() -> None:
    for r in run():
        print(r)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
