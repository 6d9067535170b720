"""Peak memory of compiling and of running the shared MobileNetV2 (npu,llvm), each in a fresh process.

The figure is the child's peak resident set (``VmHWM``) minus the resident set right after the imports the job
needs, so it is what compiling or running costs rather than what Python and numpy cost. Peer: LiteRT BUILTIN_REF
interpreter construction + one inference on the same file, measured the same way.

A third child (not part of the headline figures) splits the run into phases: the CPU backend's LLVM library and
JIT set-up, loading the artifact, and the inference, each with its peak and what stays resident after it.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "..", "shared", "models", "mobilenet_v2_quantized_1x3x224x224.tflite")

# The child's peak resident set, and its reading right after the imports every child script starts with.
_PEAK = """
def rss_mb():
    # VmHWM belongs to this address space; ru_maxrss would carry over the parent's peak across fork + exec.
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
base = rss_mb()
"""

_PRELUDE = """
import json, resource, sys
import numpy as np
import byoc, byoc.build, runtime.artifact, npu_sim
from byoc.frontend import from_tflite
""" + _PEAK

_COMPILE = _PRELUDE + """
mod, params = from_tflite(sys.argv[1], semantics="tflm")
part = byoc.partition_for("npu", mod, params)
m = byoc.build(part, target="npu,llvm")
m.export(sys.argv[2])
print(json.dumps({"base": base, "peak": rss_mb()}))
"""

_RUN = _PRELUDE + """
m = byoc.load(sys.argv[2])
name = m.input_names[0]
shape = m.main.params[0].type_annotation.shape
x = np.random.default_rng(0).integers(-128, 128, shape).astype(np.int8)
m.run({name: x})
print(json.dumps({"base": base, "peak": rss_mb()}))
"""

_PHASES = _PRELUDE + """
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
def reset_peak():  # VmHWM := VmRSS, so the next reading is this phase's own peak (Linux)
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass  # then each phase's peak includes the earlier phases
rows = []
from byoc.backend.llvm.codegen import get_codegen
get_codegen()
rows.append(["LLVM library + CPU codegen set-up", rss_mb() - base, rss() - base])
reset_peak()
m = byoc.load(sys.argv[2])
rows.append(["byoc.load (parse graph, decode + validate NPU program, CPU kernels)", rss_mb() - base, rss() - base])
name = m.input_names[0]
shape = m.main.params[0].type_annotation.shape
x = np.random.default_rng(0).integers(-128, 128, shape).astype(np.int8)
reset_peak()
m.run({name: x})
rows.append(["one inference (NPU simulator + CPU kernels)", rss_mb() - base, rss() - base])
print(json.dumps(rows))
"""

_LITERT = """
import json, resource, sys
import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType
""" + _PEAK + """
it = Interpreter(model_path=sys.argv[1], experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
it.allocate_tensors()
d = it.get_input_details()[0]
it.set_tensor(d["index"], np.zeros(d["shape"], d["dtype"]))
it.invoke()
print(json.dumps({"base": base, "peak": rss_mb()}))
"""


def _child(code: str, artifact: str):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code, MODEL, artifact], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "child failed")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run() -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        art = os.path.join(tmp, "mobilenet_v2.byoc")
        comp = _child(_COMPILE, art)
        runm = _child(_RUN, art)
        try:
            phases = _child(_PHASES, art)
        except RuntimeError:  # the breakdown is a diagnostic; the headline figures stand without it
            phases = []
    lite = _child(_LITERT, "")
    lite_mb = lite["peak"] - lite["base"]
    rows = []
    for name, r in (("compile peak memory (npu,llvm)", comp), ("run peak memory (load artifact + 1 inference)", runm)):
        used = r["peak"] - r["base"]
        rows.append({"name": name, "value": round(used, 1), "unit": "MB",
                     "peer": "LiteRT BUILTIN_REF load + invoke", "peer_value": round(lite_mb, 1),
                     "ratio": round(used / lite_mb, 2) if lite_mb > 0 else None})
    if phases:
        table = ["| phase of the run (fresh process) | peak (MB above baseline) | resident after (MB) |",
                 "|---|---|---|"]
        table += [f"| {name} | {peak:.1f} | {after:.1f} |" for name, peak, after in phases]
        rows.append({"name": "run peak memory by phase", "details": "\n".join(table)})
    return rows


def main() -> None:
    for r in run():
        if "details" in r:
            print(r["details"])
            continue
        print(f"{r['name']:<48} {r['value']:>8} MB   (LiteRT {r['peer_value']} MB, ratio {r['ratio']})")


if __name__ == "__main__":
    main()
