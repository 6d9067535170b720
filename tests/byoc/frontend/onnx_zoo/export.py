"""Export small real architectures with torch.onnx and quantize them with onnxruntime.quantization.

Test-only tool; torch is NOT a dependency of byoc or its tests. Run it with a separate venv that has torch:

    python3 -m venv /work/ext/torchenv
    /work/ext/torchenv/bin/pip install --index-url https://download.pytorch.org/whl/cpu torch torchvision
    /work/ext/torchenv/bin/pip install onnx onnxscript onnxruntime
    /work/ext/torchenv/bin/python tests/byoc/frontend/onnx_zoo/export.py OUT_DIR [--only NAME ...]

Writes OUT_DIR/<model>.<exporter>.<config>.onnx for exporter in {legacy (opset 17), dynamo (opset 20)} and config
in CONFIGS (float, QDQ / QOperator, per-tensor / per-channel, int8 / uint8 / int16 activations, dynamic), with
random weights (torch.manual_seed(0)) and calibration on 4 normal random batches. `matrix.py` (run with byoc's
venv) imports every file and compares it with onnxruntime.
"""
from __future__ import annotations

import argparse
import logging
import sys
import warnings
import types
from pathlib import Path

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

# A CPU torch with a CUDA torchvision wheel cannot load torchvision's C++ ops; the models here need none of them.
sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))
import torchvision.models as tvm  # noqa: E402

RES = 64


class UNet(nn.Module):
    """Two-level UNet: conv blocks, MaxPool down, ConvTranspose and bilinear Resize up, Concat skips."""

    def __init__(self, c=8):
        super().__init__()
        blk = lambda i, o: nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(),  # noqa: E731
                                         nn.Conv2d(o, o, 3, padding=1), nn.ReLU())
        self.e1, self.e2, self.mid = blk(3, c), blk(c, 2 * c), blk(2 * c, 4 * c)
        self.up2 = nn.ConvTranspose2d(4 * c, 2 * c, 2, stride=2)
        self.d2 = blk(4 * c, 2 * c)
        self.d1 = blk(3 * c, c)
        self.head = nn.Conv2d(c, 2, 1)

    def forward(self, x):
        e1 = self.e1(x)
        e2 = self.e2(F.max_pool2d(e1, 2))
        m = self.mid(F.max_pool2d(e2, 2))
        d2 = self.d2(torch.cat([self.up2(m), e2], 1))
        up1 = F.interpolate(d2, scale_factor=2, mode="bilinear", align_corners=False)
        d1 = self.d1(torch.cat([up1, e1], 1))
        return self.head(d1)


class Audio1D(nn.Module):
    """KWS-style 1-D conv net: Conv1d/BatchNorm1d/ReLU, MaxPool1d (ceil_mode), AvgPool1d, adaptive pool, Linear."""

    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(nn.Conv1d(8, 16, 5, stride=2, padding=2), nn.BatchNorm1d(16), nn.ReLU(),
                               nn.MaxPool1d(3, 2, ceil_mode=True),
                               nn.Conv1d(16, 16, 3, padding=1, groups=16), nn.Conv1d(16, 24, 1), nn.ReLU(),
                               nn.AvgPool1d(2), nn.Conv1d(24, 24, 3, padding=1), nn.ReLU())
        self.fc = nn.Linear(24, 6)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool1d(self.f(x), 1).flatten(1))


class Encoder(nn.Module):
    """A two-layer pre-norm transformer encoder (LayerNorm, MultiheadAttention, GELU MLP) with a mean-pool head."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d, heads, 64, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 5)

    def forward(self, x):
        return self.fc(self.norm(self.enc(x)).mean(1))


class DetHead(nn.Module):
    """FPN-like detection head: backbone stages, nearest upsample + add, shared conv heads, sigmoid scores, boxes
    reshaped / permuted / concatenated over levels (the SSD/YOLO output shuffle)."""

    def __init__(self, c=16, anchors=3, classes=4):
        super().__init__()
        self.s1 = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1), nn.ReLU(), nn.Conv2d(c, c, 3, 2, 1), nn.ReLU())
        self.s2 = nn.Sequential(nn.Conv2d(c, 2 * c, 3, 2, 1), nn.ReLU())
        self.lat1, self.lat2 = nn.Conv2d(c, c, 1), nn.Conv2d(2 * c, c, 1)
        self.cls = nn.Conv2d(c, anchors * classes, 3, padding=1)
        self.box = nn.Conv2d(c, anchors * 4, 3, padding=1)
        self.k = classes

    def forward(self, x):
        f1 = self.s1(x)
        f2 = self.s2(f1)
        p2 = self.lat2(f2)
        p1 = self.lat1(f1) + F.interpolate(p2, scale_factor=2, mode="nearest")
        scores, boxes = [], []
        for p in (p1, p2):
            n = p.shape[0]
            scores.append(torch.sigmoid(self.cls(p)).permute(0, 2, 3, 1).reshape(n, -1, self.k))
            boxes.append(self.box(p).permute(0, 2, 3, 1).reshape(n, -1, 4))
        return torch.cat([torch.cat(scores, 1), torch.cat(boxes, 1)], 2)


class InceptionBlocks(nn.Module):
    """googlenet's stem and two Inception blocks (its real module), ceil_mode pools, adaptive pool head."""

    def __init__(self):
        super().__init__()
        g = tvm.googlenet(weights=None, aux_logits=False, init_weights=True, num_classes=10)
        self.body = nn.Sequential(g.conv1, g.maxpool1, g.conv2, g.conv3, g.maxpool2, g.inception3a, g.inception3b,
                                  g.maxpool3)
        self.fc = nn.Linear(480, 10)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool2d(self.body(x), 1).flatten(1))


def _image(net):
    return lambda: (net(), (1, 3, RES, RES))


MODELS = {
    "resnet18": _image(lambda: tvm.resnet18(num_classes=10)),
    "mobilenet_v2": _image(lambda: tvm.mobilenet_v2(num_classes=10, width_mult=0.5)),
    "mobilenet_v3_small": _image(lambda: tvm.mobilenet_v3_small(num_classes=10, width_mult=0.5)),
    "squeezenet1_1": _image(lambda: tvm.squeezenet1_1(num_classes=10)),
    "googlenet_blocks": _image(InceptionBlocks),
    "shufflenet_v2": _image(lambda: tvm.shufflenet_v2_x0_5(num_classes=10)),
    "efficientnet_b0": _image(lambda: tvm.efficientnet_b0(num_classes=10)),
    "regnet": _image(lambda: tvm.regnet_x_400mf(num_classes=10)),
    "unet": _image(UNet),
    "audio1d": lambda: (Audio1D(), (1, 8, 96)),
    "transformer": lambda: (Encoder(), (1, 12, 32)),
    "det_head": _image(DetHead),
}

CONFIGS = ["float", "qdq_s8", "qdq_s8_pc", "qdq_u8", "qdq_u8_pc", "qdq_s16", "qop_s8", "qop_u8", "qop_u8_pc",
           "dynamic"]


def export(name: str, out: Path) -> dict[str, Path]:
    torch.manual_seed(0)
    # the eval-mode fast path (aten::_transformer_encoder_layer_fwd) has no ONNX export: the plain ops instead
    torch.backends.mha.set_fastpath_enabled(False)
    net, shape = MODELS[name]()
    net.eval()
    x = torch.randn(*shape)
    files = {}
    for exporter, opset in (("legacy", 17), ("dynamo", 20)):
        f = out / f"{name}.{exporter}.float.onnx"
        with torch.no_grad():
            if exporter == "legacy":
                torch.onnx.export(net, (x,), str(f), dynamo=False, opset_version=opset, input_names=["x"],
                                  output_names=["y"])
            else:
                prog = torch.onnx.export(net, (x,), dynamo=True, opset_version=opset, input_names=["x"],
                                         output_names=["y"])
                prog.save(str(f), external_data=False)
        files[exporter] = f
    return files


def quantize(src: Path, cfg: str, dst: Path, shape) -> None:
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                          quantize_static)
    if cfg == "dynamic":
        quantize_dynamic(str(src), str(dst))
        return
    fmt, act, *pc = cfg.split("_")
    types_ = {"s8": QuantType.QInt8, "u8": QuantType.QUInt8, "s16": QuantType.QInt16}
    rng = np.random.default_rng(1)
    name = onnx.load(str(src)).graph.input[0].name

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{name: rng.normal(0, 1, shape).astype(np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.it, None)

    quantize_static(str(src), str(dst), Reader(), quant_format=QuantFormat.QDQ if fmt == "qdq" else
                    QuantFormat.QOperator, activation_type=types_[act], weight_type=QuantType.QInt8,
                    per_channel=bool(pc))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--configs", nargs="*", default=CONFIGS)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    logging.disable(logging.WARNING)  # the quantizer's pre-processing advice, once per file
    warnings.simplefilter("ignore")
    for name in args.only or MODELS:
        _, shape = MODELS[name]()
        try:
            files = export(name, args.out)
        except Exception as e:  # report and go on: one exporter failing must not hide the others
            print(f"{name}: export failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
            continue
        for exporter, f in files.items():
            for cfg in args.configs:
                if cfg == "float":
                    continue
                dst = f.with_name(f"{name}.{exporter}.{cfg}.onnx")
                try:
                    quantize(f, cfg, dst, shape)
                except Exception as e:  # (QOperator on a legacy export fails without shape inference)
                    print(f"{dst.name}: quantization failed ({type(e).__name__}: {str(e)[:200]}); retrying "
                          "after quant_pre_process", flush=True)
                    try:
                        from onnxruntime.quantization.shape_inference import quant_pre_process
                        pre = f.with_name(f"{name}.{exporter}.pre.onnx.tmp")
                        quant_pre_process(str(f), str(pre))
                        quantize(pre, cfg, dst, shape)
                        pre.unlink()
                    except Exception as e2:
                        print(f"{dst.name}: quantization failed: {type(e2).__name__}: {str(e2)[:300]}", flush=True)
        print(f"{name}: done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
