import time, numpy as np, byoc
from byoc.frontend import from_tflite
mod, params = from_tflite("/work/shared/models/mobilenet_v2_quantized_1x3x224x224.tflite")
part = byoc.partition_for("npu", mod, params)
x = np.random.default_rng(0).integers(-128,128,(1,3,224,224)).astype("int8")
name = mod["main"].params[0].name_hint
t=time.time(); a = byoc.evaluate(mod, {name: x}, params); print("eval", time.time()-t)
t=time.time(); b = byoc.evaluate(part, {name: x}); print("eval", time.time()-t)
print(np.array_equal(a[0], b[0]))
