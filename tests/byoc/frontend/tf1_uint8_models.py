"""Random uint8 models shaped like TF1-era quantization-aware-trained MobileNetV2 / DeepLabV3 files.

TF1's FakeQuant + TOCO wrote per-tensor asymmetric uint8 activations *and weights* (weight zero point ≠ 0), int32
biases with scale s_in·s_w, fused RELU6 outputs whose range is [0, 6] (or an EMA estimate just below it) and
linear bottleneck outputs with learned asymmetric ranges. The builder below picks every range from a float
simulation of the model (dequantized weights), nudges it as TF1's FakeQuant did and writes the file with
``byoc.testing.tflite_writer``. It never computes quantized arithmetic: the expected values of the tests come
from LiteRT's reference kernels.

``python -m tests.byoc.frontend.tf1_uint8_models [--seeds N] [--target npu]`` runs the broad check: every
intermediate tensor of N random models on the reference interpreter, the CPU build, the NPU build and LiteRT.
"""
from __future__ import annotations

import numpy as np

from byoc.testing.tflite_writer import TensorRef, TFLiteWriter

__all__ = ["tf1_quant_params", "random_tf1_model", "Tf1Builder", "RELU6_SCALE"]

RELU6_SCALE = float(np.float32(6.0) / np.float32(255.0))


def tf1_quant_params(lo: float, hi: float, narrow: bool = False) -> tuple[float, int]:
    """TF1 FakeQuant's nudged (scale, zero point) for the float range [lo, hi] on uint8 (all float32)."""
    f = np.float32
    qmin, qmax = (1, 255) if narrow else (0, 255)
    lo, hi = f(min(lo, 0.0)), f(max(hi, 0.0))
    if hi - lo < f(1e-6):
        hi = lo + f(1e-6)
    scale = f((hi - lo) / f(qmax - qmin))
    zp_from_min = f(qmin) - lo / scale
    zp = qmin if zp_from_min < qmin else qmax if zp_from_min > qmax else int(np.round(zp_from_min))
    return float(scale), int(zp)


def _windows(x: np.ndarray, kh: int, kw: int, stride: int) -> tuple[np.ndarray, int, int]:
    """SAME-padded sliding windows of an NHWC float array: [N, OH, OW, C, KH, KW]."""
    n, h, w, c = x.shape
    oh, ow = -(-h // stride), -(-w // stride)
    ph, pw = max((oh - 1) * stride + kh - h, 0), max((ow - 1) * stride + kw - w, 0)
    xp = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(1, 2))[:, ::stride, ::stride]
    return win[:, :oh, :ow], oh, ow


class Tf1Builder:
    """A TFLiteWriter plus a float shadow of every activation, used only to choose quantization ranges."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.w = TFLiteWriter("tf1-like uint8 model")
        self.value: dict[int, np.ndarray] = {}

    def _range(self, v: np.ndarray, relu6: bool) -> tuple[float, int]:
        if relu6:  # TF1 relu6 ranges: exactly [0, 6], or an EMA estimate a little below
            hi = 6.0 if self.rng.random() < 0.6 else float(self.rng.uniform(5.0, 6.0))
            return tf1_quant_params(0.0, min(hi, 6.0))
        shrink = float(self.rng.uniform(0.85, 1.0))  # EMA ranges clip the rare extremes
        return tf1_quant_params(float(v.min()) * shrink, float(v.max()) * shrink)

    def _weights(self, shape, fan_in: int):
        w = self.rng.normal(0.0, 1.0 / np.sqrt(fan_in), shape) * self.rng.uniform(0.6, 1.6)
        w += self.rng.normal(0.0, 0.02)  # a slightly off-centre distribution moves the zero point
        scale, zp = tf1_quant_params(float(w.min()), float(w.max()), narrow=bool(self.rng.random() < 0.5))
        q = np.clip(np.round(w / scale) + zp, 0, 255).astype(np.uint8)
        return q, scale, zp, (q.astype(np.float64) - zp) * scale

    def _bias(self, x: TensorRef, w_scale: float, n: int, spread: float) -> tuple[np.ndarray, np.ndarray]:
        b = self.rng.normal(0.0, spread, n)
        s = float(np.float32(np.float32(x.scale[0]) * np.float32(w_scale)))
        q = np.round(b / s).astype(np.int32)
        return q, q * s

    def input(self, shape) -> TensorRef:
        x = self.w.input("input", shape, "uint8", scale=0.0078125, zero_point=128)  # TF1 MobileNet [-1, 1]
        self.value[x.index] = self.rng.uniform(-1, 1, shape)
        return x

    def conv(self, x: TensorRef, cout: int, k: int = 1, stride: int = 1, relu6: bool = True,
             depthwise: bool = False, name: str | None = None) -> TensorRef:
        v = self.value[x.index]
        cin = x.shape[3]
        win, oh, ow = _windows(v, k, k, stride)
        if depthwise:
            q, s, zp, wf = self._weights((1, k, k, cin), k * k)
            acc = np.einsum("nhwcij,ijc->nhwc", win, wf[0])
        else:
            q, s, zp, wf = self._weights((cout, k, k, cin), k * k * cin)
            acc = np.einsum("nhwcij,oijc->nhwo", win, wf)
        bq, bf = self._bias(x, s, acc.shape[3], 0.3)
        out = acc + bf
        if relu6:
            out = np.clip(out, 0.0, 6.0)
        o_scale, o_zp = self._range(out, relu6)
        act = "RELU6" if relu6 else "NONE"
        if depthwise:
            y = self.w.depthwise_conv2d(x, q, bq, weight_scale=s, weight_zp=zp, strides=(stride, stride),
                                        activation=act, out_scale=o_scale, out_zp=o_zp, name=name)
        else:
            y = self.w.conv2d(x, q, bq, weight_scale=s, weight_zp=zp, strides=(stride, stride), activation=act,
                              out_scale=o_scale, out_zp=o_zp, name=name)
        self.value[y.index] = out
        return y

    def add(self, a: TensorRef, b: TensorRef) -> TensorRef:
        out = self.value[a.index] + self.value[b.index]
        s, zp = self._range(out, False)
        y = self.w.add(a, b, out_scale=s, out_zp=zp)
        self.value[y.index] = out
        return y

    def global_avgpool(self, x: TensorRef) -> TensorRef:
        _, h, w, _ = x.shape
        y = self.w.average_pool2d(x, (h, w))  # TFLite requires the input quantization on the output
        self.value[y.index] = self.value[x.index].mean(axis=(1, 2), keepdims=True)
        return y

    def fully_connected(self, x: TensorRef, units: int) -> TensorRef:
        v = self.value[x.index].reshape(1, -1)
        q, s, zp, wf = self._weights((units, v.shape[1]), v.shape[1])
        bq, bf = self._bias(x, s, units, 0.3)
        out = v @ wf.T + bf
        o_scale, o_zp = self._range(out, False)
        y = self.w.fully_connected(x, q, bq, weight_scale=s, weight_zp=zp, out_scale=o_scale, out_zp=o_zp)
        self.value[y.index] = out
        return y

    def softmax(self, x: TensorRef) -> TensorRef:
        v = self.value[x.index]
        e = np.exp(v - v.max(axis=-1, keepdims=True))
        y = self.w.softmax(x)  # uint8: scale 1/256, zero point 0 (LiteRT requires it)
        self.value[y.index] = e / e.sum(axis=-1, keepdims=True)
        return y

    def resize_bilinear(self, x: TensorRef, size) -> TensorRef:
        # TF1 DeepLab resized with align_corners=True; later exports use half-pixel centres
        mode = int(self.rng.integers(0, 3))
        y = self.w.resize_bilinear(x, size, align_corners=mode == 1, half_pixel_centers=mode == 2)
        v = self.value[x.index]
        rows = np.arange(size[0]) * v.shape[1] // size[0]
        cols = np.arange(size[1]) * v.shape[2] // size[1]
        self.value[y.index] = v[:, rows][:, :, cols]
        return y

    def concat(self, xs: list[TensorRef]) -> TensorRef:
        out = np.concatenate([self.value[x.index] for x in xs], axis=3)
        # TOCO gave a concatenation the union of its inputs' ranges
        lo = min((0 - x.zero_point[0]) * x.scale[0] for x in xs)
        hi = max((255 - x.zero_point[0]) * x.scale[0] for x in xs)
        s, zp = tf1_quant_params(lo, hi)
        y = self.w.concatenation(xs, 3, out_scale=s, out_zp=zp)
        self.value[y.index] = out
        return y


def random_tf1_model(seed: int) -> bytes:
    """A MobileNetV2-like classifier or a DeepLabV3-like segmenter (chosen by the seed), uint8 throughout (a
    segmenter may end in ARG_MAX)."""
    rng = np.random.default_rng(seed)
    b = Tf1Builder(rng)
    size = int(rng.choice([16, 24, 32]))
    x = b.input((1, size, size, 3))
    c = int(rng.choice([8, 16]))
    y = b.conv(x, c, k=3, stride=2, name="stem")
    for i in range(int(rng.integers(1, 4))):
        stride = int(rng.choice([1, 1, 2]))
        cout = c if stride == 1 and rng.random() < 0.6 else int(rng.choice([8, 16, 24]))
        e = b.conv(y, c * int(rng.choice([3, 6])), name=f"block{i}/expand")
        d = b.conv(e, 0, k=3, stride=stride, depthwise=True, name=f"block{i}/depthwise")
        p = b.conv(d, cout, relu6=False, name=f"block{i}/project")
        y = b.add(y, p) if stride == 1 and cout == c else p
        c = cout
    if rng.random() < 0.5:  # classifier head: pool, logits (FC, or MobileNetV1's 1x1 conv + reshape), softmax
        pooled = b.global_avgpool(b.conv(y, 4 * c, name="head/expand"))
        classes = int(rng.integers(5, 17))
        if rng.random() < 0.5:
            logits = b.fully_connected(pooled, classes)
        else:
            conv = b.conv(pooled, classes, relu6=False, name="logits")
            logits = b.w.reshape(conv, (1, classes))
            b.value[logits.index] = b.value[conv.index].reshape(1, classes)
        b.w.output(b.softmax(logits))
    else:  # DeepLabV3 head: ASPP (1x1 branch + image pooling branch), concat, logits, upsample
        _, h, w, _ = y.shape
        branch = b.conv(y, 16, name="aspp0")
        pooled = b.conv(b.global_avgpool(y), 16, name="image_pooling")
        up = b.resize_bilinear(pooled, (h, w))
        cat = b.concat([branch, up])
        logits = b.conv(b.conv(cat, 16, name="concat_projection"), int(rng.integers(3, 8)), relu6=False,
                        name="logits")
        up = b.resize_bilinear(logits, (size, size))
        b.w.output(b.w.arg_max(up, 3) if rng.random() < 0.5 else up)
    return b.w.finish()


def _main(argv=None) -> int:
    import argparse
    import time

    from byoc.cli.common import LoadedModel
    from byoc.compare import compare_model
    from byoc.frontend.tflite import from_tflite

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--target", default="npu", help='offloaded build target ("" for none)')
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    models = tensors = elements = bad_models = vs_litert = 0
    per_executor: dict[str, int] = {}
    for seed in range(args.first, args.first + args.seeds):
        data = random_tf1_model(seed)
        mod, params = from_tflite(data)
        model = LoadedModel(f"tf1_uint8_{seed}.tflite", "tflite", data, mod, params, "litert")
        p = mod["main"].params[0]
        x = np.random.default_rng(10_000 + seed).integers(0, 256, p.type_annotation.shape).astype(np.uint8)
        res = compare_model(model, {p.name_hint: x}, args.target)
        if {e.name for e in res.executors if e.available} != {"evaluate", "cpu", "litert"} | (
                {args.target} if args.target else set()):
            raise SystemExit(f"seed {seed}: an executor is missing: {res.executors}")
        models += 1
        for t in res.intermediates + res.outputs:
            tensors += 1
            elements += int(np.prod(t.shape, dtype=np.int64))
            vs_litert += t.expected == "litert"
            for d in t.diffs:
                if d.mismatches:
                    per_executor[d.executor] = per_executor.get(d.executor, 0) + max(d.mismatches, 0)
        if not res.ok or res.first_divergence is not None:
            bad_models += 1
            print(f"seed {seed}: {res.verdict()}")
    print(f"{models} models, {tensors} tensors ({elements} elements, {vs_litert} tensors also in LiteRT) "
          f"compared on reference/cpu/{args.target or '-'}/LiteRT BUILTIN_REF: {bad_models} models differ; "
          f"mismatching elements by executor: {per_executor or 0}; {time.perf_counter() - t0:.1f} s")
    return 1 if bad_models else 0


if __name__ == "__main__":
    raise SystemExit(_main())
