import time, byoc, importlib
from byoc.frontend import from_tflite
from byoc.transform import InferType
P = importlib.import_module("byoc.relay.dataflow_pattern.partition")
M = importlib.import_module("byoc.relay.dataflow_pattern.matcher")
from byoc.relay.dataflow_pattern.graph import IndexedGraph
import patterns
mod, params = from_tflite("/work/shared/models/mobilenet_v2_quantized_1x3x224x224.tflite")
from byoc.interpreter import bind_params
mod = InferType()(bind_params(mod, params))
t = patterns.get_pattern_table("npu")
f = mod["main"]
e=t[0]
g=IndexedGraph(f.body)
for i in range(3):
    t0=time.perf_counter(); gs = P.PatternGrouper(e.pattern, f.body, g).run(); t1=time.perf_counter()
    print("group", (t1-t0)*1e3)
m = M.DFPatternMatcher(g)
roots=[x.root for x in gs]
t0=time.perf_counter()
for r in roots: m.match(e.pattern, r)
t1=time.perf_counter()
for r in roots: m.match(e.pattern, r); m.details(e.pattern, r)
t2=time.perf_counter()
print("match", (t1-t0)*1e3, "details", (t2-t1)*1e3)
from byoc.relay.dataflow_pattern.check import evaluate_check
t0=time.perf_counter()
for x in gs: evaluate_check(e.check, x.root, x.match.captures)
print("checks", (time.perf_counter()-t0)*1e3)
