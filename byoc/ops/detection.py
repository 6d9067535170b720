"""``vision.detection_postprocess``: TFLite's ``TFLite_Detection_PostProcess`` custom op (SSD box decoding and
non-maximum suppression), with LiteRT's reference algorithm.

Operands: box_encodings float32 [1, N, ≥4] (y, x, h, w per anchor), class_predictions float32 [1, N, C + k]
(k background columns, ``label_offset``), anchors float32 [N, 4] (y, x, h, w). Quantized inputs are dequantized
by the importer first (LiteRT's Dequantizer, (float(q) − zp)·scale, is ``qnn.dequantize`` exactly). Result: a
tuple (boxes [1, D, 4], classes [1, D], scores [1, D], num_detections [1]), all float32, D = max_detections ·
max_classes_per_detection.

* decoding: in double, y = ey / y_scale · ha + ya, half_h = 0.5 · exp(eh / h_scale) · ha (x, w alike), each
  rounded to float32; corners ycenter ∓ half_h in float32.
* fast NMS (``use_regular_nms`` false): per anchor its best classes by score (DecreasingPartialArgSort: the first
  maximum for one class, else libstdc++'s std::partial_sort, whose heap decides the order of tied scores); single-class NMS on each anchor's best score: the scores ≥ threshold in a stable descending order,
  then greedily kept while IoU (float32) with a kept box is ≤ the IoU threshold, up to max_detections; kept
  anchor k writes its p = min(max_classes_per_detection, C) best classes to rows k·p .. k·p + p − 1, and
  num_detections is the number of kept anchors (LiteRT's count, not the rows written).
* regular NMS: single-class NMS per class (up to detections_per_class each), merged after each class with the
  running list by a stable descending sort (a tie keeps the earlier entry first), keeping the max_detections
  first. (LiteRT's sources differ between versions here: TFLite Micro breaks ties by position, newer LiteRT
  merges with std::inplace_merge under ``>=``; this is the installed ai-edge-litert's result, which the tests
  check with tied scores.)
* rows past those written are zeros. LiteRT leaves them unwritten (arena contents): the fast path writes the
  num_detections · classes-per-anchor rows, the regular path max_detections rows (zeros past num_detections);
  only those rows are LiteRT's values.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.attrs import Attrs
from ..ir.types import TensorType, TupleType
from .registry import FusionKind, register_op
from .rel import expect_dtype, fail, tensor_arg

__all__ = ["DetectionPostProcessAttrs", "detection_postprocess", "decode_boxes"]

_ARGS = ("box_encodings", "class_predictions", "anchors")


@dataclass(frozen=True)
class DetectionPostProcessAttrs(Attrs):
    max_detections: int = 10
    max_classes_per_detection: int = 1
    detections_per_class: int = 100
    use_regular_nms: bool = False
    nms_score_threshold: float = 0.0
    nms_iou_threshold: float = 0.5
    num_classes: int = 1
    y_scale: float = 10.0
    x_scale: float = 10.0
    h_scale: float = 5.0
    w_scale: float = 5.0


def decode_boxes(enc: np.ndarray, anchors: np.ndarray, a: DetectionPostProcessAttrs) -> np.ndarray:
    """[N, 4] float32 corners (ymin, xmin, ymax, xmax) of the centre-size encodings."""
    e = enc[:, :4].astype(np.float64)
    an = anchors.astype(np.float64)
    f32 = np.float32
    yc = (e[:, 0] / float(f32(a.y_scale)) * an[:, 2] + an[:, 0]).astype(f32)
    xc = (e[:, 1] / float(f32(a.x_scale)) * an[:, 3] + an[:, 1]).astype(f32)
    hh = (0.5 * np.exp(e[:, 2] / float(f32(a.h_scale))) * an[:, 2]).astype(f32)
    hw = (0.5 * np.exp(e[:, 3] / float(f32(a.w_scale))) * an[:, 3]).astype(f32)
    return np.stack([yc - hh, xc - hw, yc + hh, xc + hw], axis=1)


def _iou(boxes: np.ndarray, i: int, js: np.ndarray) -> np.ndarray:
    """ComputeIntersectionOverUnion of box i with boxes js, in float32 (0 when either area is ≤ 0)."""
    bi, bj = boxes[i], boxes[js]
    area_i = (bi[2] - bi[0]) * (bi[3] - bi[1])
    area_j = (bj[:, 2] - bj[:, 0]) * (bj[:, 3] - bj[:, 1])
    zero = np.float32(0)
    ih = np.maximum(np.minimum(bi[2], bj[:, 2]) - np.maximum(bi[0], bj[:, 0]), zero)
    iw = np.maximum(np.minimum(bi[3], bj[:, 3]) - np.maximum(bi[1], bj[:, 1]), zero)
    inter = ih * iw
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (area_i + area_j - inter)
    return np.where((area_i <= 0) | (area_j <= 0), zero, iou).astype(np.float32)


def _nms_single_class(boxes, scores, a: DetectionPostProcessAttrs, limit: int) -> list[int]:
    keep = np.nonzero(scores >= np.float32(a.nms_score_threshold))[0]
    order = keep[np.argsort(-scores[keep].astype(np.float64), kind="stable")]
    out_size = min(len(order), limit)
    active = np.ones(len(order), bool)
    selected: list[int] = []
    iou_t = np.float32(a.nms_iou_threshold)
    for i in range(len(order)):
        if not active.any() or len(selected) >= out_size:
            break
        if not active[i]:
            continue
        selected.append(int(order[i]))
        active[i] = False
        rest = np.nonzero(active[i + 1:])[0] + i + 1
        if rest.size:
            active[rest[_iou(boxes, int(order[i]), order[rest]) > iou_t]] = False
    return selected


def _partial_sort_desc(values: np.ndarray, k: int) -> list[int]:
    """The first ``k`` of LiteRT's DecreasingPartialArgSort: for k = 1 the first maximum (ArgMaxVector); else
    ``std::partial_sort`` of 0..n−1 under values[i] > values[j] as libstdc++ performs it (a heap of the first k
    indices, each later index that beats the heap top replacing it, then the heap sorted), which decides the
    order of tied values."""
    v = [float(x) for x in np.asarray(values, np.float32)]
    n = len(v)
    if n == 0 or k <= 0:
        return []
    if k == 1:
        return [int(np.argmax(np.asarray(v)))]
    a = list(range(n))
    comp = lambda i, j: v[i] > v[j]  # noqa: E731

    def push(first_hole: int, top: int, value: int) -> None:
        hole = first_hole
        parent = (hole - 1) // 2
        while hole > top and comp(a[parent], value):
            a[hole] = a[parent]
            hole, parent = parent, (parent - 1) // 2
        a[hole] = value

    def adjust(hole: int, length: int, value: int) -> None:
        top, child = hole, hole
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if comp(a[child], a[child - 1]):
                child -= 1
            a[hole] = a[child]
            hole = child
        if length % 2 == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            a[hole] = a[child - 1]
            hole = child - 1
        push(hole, top, value)

    def pop(last: int, result: int) -> None:
        value = a[result]
        a[result] = a[0]
        adjust(0, last, value)

    k = min(k, n)
    if k > 1:
        for parent in range((k - 2) // 2, -1, -1):
            adjust(parent, k, a[parent])
    for i in range(k, n):
        if comp(a[i], a[0]):
            pop(k, i)
    for last in range(k - 1, 0, -1):
        pop(last, last)
    return a[:k]


def detection_postprocess(enc, cls, anchors, a: DetectionPostProcessAttrs):
    enc, cls = np.asarray(enc, np.float32)[0], np.asarray(cls, np.float32)[0]
    boxes = decode_boxes(enc, np.asarray(anchors, np.float32), a)
    offset = cls.shape[1] - a.num_classes
    scores = cls[:, offset:]
    per = min(a.max_classes_per_detection, a.num_classes)
    total = a.max_detections * a.max_classes_per_detection
    out_boxes = np.zeros((total, 4), np.float32)
    out_cls = np.zeros(total, np.float32)
    out_scores = np.zeros(total, np.float32)
    if a.use_regular_nms:
        entries: list[tuple[float, int, int]] = []    # (score, anchor, class), in LiteRT's merged order
        for c in range(a.num_classes):
            col = scores[:, c]
            merged = entries + [(float(col[s]), s, c) for s in _nms_single_class(boxes, col, a,
                                                                                  a.detections_per_class)]
            # the installed LiteRT's merge: a stable descending sort (a tie keeps the earlier entry first)
            order = np.argsort(-np.asarray([m[0] for m in merged], np.float64), kind="stable")
            entries = [merged[k] for k in order[:a.max_detections]]
        for k, (sc, anchor, c) in enumerate(entries):
            out_boxes[k], out_cls[k], out_scores[k] = boxes[anchor], c, sc
        n = len(entries)
    else:
        order = np.asarray([_partial_sort_desc(s, per) for s in scores], np.int64).reshape(len(scores), per)
        best = scores[np.arange(len(scores)), order[:, 0]] if len(scores) else np.zeros(0, np.float32)
        selected = _nms_single_class(boxes, best, a, a.max_detections)
        for k, anchor in enumerate(selected):
            for j, c in enumerate(order[anchor]):
                r = k * per + j
                out_boxes[r], out_cls[r], out_scores[r] = boxes[anchor], c, scores[anchor, c]
        n = len(selected)   # LiteRT counts the kept anchors, not the rows they write
    return (out_boxes[None], out_cls[None], out_scores[None], np.asarray([n], np.float32))


def _rel(types, attrs):
    name = "vision.detection_postprocess"
    enc, cls, anchors = (tensor_arg(name, _ARGS, types, i) for i in range(3))
    for t, arg in ((enc, "box_encodings"), (cls, "class_predictions"), (anchors, "anchors")):
        expect_dtype(name, arg, t, "float32")
    if enc.ndim != 3 or enc.shape[0] != 1 or enc.shape[2] < 4:
        raise fail(name, "box_encodings", "[1, N, ≥4]", list(enc.shape))
    n = enc.shape[1]
    if cls.ndim != 3 or cls.shape[:2] != (1, n) or cls.shape[2] < attrs.num_classes:
        raise fail(name, "class_predictions", f"[1, {n}, ≥{attrs.num_classes}]", list(cls.shape))
    if anchors.shape != (n, 4):
        raise fail(name, "anchors", f"[{n}, 4]", list(anchors.shape))
    if attrs.num_classes < 1 or attrs.max_detections < 1 or attrs.max_classes_per_detection < 1 or \
            attrs.detections_per_class < 1:
        raise fail(name, "attrs", "positive num_classes, max_detections, max_classes_per_detection and "
                   "detections_per_class", attrs)
    if not 0.0 <= attrs.nms_iou_threshold <= 1.0:
        raise fail(name, "nms_iou_threshold", "a value in [0, 1] (LiteRT ENSUREs it)", attrs.nms_iou_threshold)
    d = attrs.max_detections * attrs.max_classes_per_detection
    f = "float32"
    return TupleType((TensorType((1, d, 4), f), TensorType((1, d), f), TensorType((1, d), f), TensorType((1,), f)))


def _compute(args, attrs):
    return detection_postprocess(args[0], args[1], args[2], attrs)


register_op("vision.detection_postprocess", _ARGS, attrs=DetectionPostProcessAttrs, rel=_rel,
            fusion=FusionKind.OPAQUE, compute=_compute,
            doc="TFLite_Detection_PostProcess (custom op): SSD centre-size box decoding and fast or regular "
                "non-maximum suppression, LiteRT's reference algorithm; float32 outputs boxes, classes, scores, "
                "num_detections.")
