import time, byoc
from byoc.frontend import from_tflite
from byoc.transform.pass_infra import PassContext, PassTimingInstrument
mod, params = from_tflite("/work/shared/models/mobilenet_v2_quantized_1x3x224x224.tflite")
byoc.partition_for("npu", mod, params)
best = {}
for i in range(7):
    ti = PassTimingInstrument()
    with PassContext(instruments=[ti]):
        byoc.partition_for("npu", mod, params)
    for n, t in ti.timings:
        best[n] = min(best.get(n, 1e9), t)
for n, t in best.items(): print(f"{n:30s} {t*1e3:8.1f} ms")
