"""Seed files and mutators for file fuzzing: ``.tflite``, ``.onnx``, artifact containers and NPU programs.

Every mutation is a pure function of (seed bytes, numpy Generator), so case ``i`` of a run seeded ``s`` is rebuilt
exactly from ``np.random.default_rng([s, i])``. Three families per format:

* bytes: bit flips, truncation, random byte runs, extreme 32-bit values (what a damaged download looks like);
* fields: structured edits that keep the file well formed — protobuf fields of an ONNX model, writer-level
  tensors/operators of a TFLite model, JSON header fields of an artifact with its checksums recomputed — so the
  mutation reaches past parsing and checksums into validation;
* sizes: absurd dimensions, lengths and counts (2^31, 2^40, negative, zero) that must be refused before anything
  is allocated.

The TFLite importer's byte-level fuzzing of the shared models lives in tests/byoc/frontend/test_tflite_fuzz.py;
here TFLite seeds are writer-built graphs covering the whole writer op set, and the edits are semantic.
"""
from __future__ import annotations

import hashlib
import json
import struct
import zlib

import numpy as np

__all__ = ["mutate_bytes", "tflite_seeds", "mutate_tflite", "onnx_seeds", "mutate_onnx", "container_seeds",
           "mutate_container", "program_seeds", "mutate_program", "ABSURD_INTS"]

ABSURD_INTS = (0, -1, -2**31, 2**31 - 1, 2**32 - 1, 2**40, 2**62, 3, 1 << 20)


def _pick(rng, seq):
    return seq[int(rng.integers(0, len(seq)))]


# ------------------------------------------------------------------------------------------------ bytes
def mutate_bytes(data: bytes, rng: np.random.Generator) -> bytes:
    b = bytearray(data)
    n = len(b)
    if n < 8:
        return bytes(b)
    kind = int(rng.integers(0, 5))
    if kind == 0:
        for _ in range(int(rng.integers(1, 9))):
            i = int(rng.integers(0, n))
            b[i] ^= 1 << int(rng.integers(0, 8))
    elif kind == 1:
        b = b[:int(rng.integers(0, n))]
    elif kind == 2:
        i, k = int(rng.integers(0, n)), int(rng.integers(1, 32))
        b[i:i + k] = rng.integers(0, 256, k, dtype=np.uint8).tobytes()
    elif kind == 3:
        pos = int(rng.integers(0, n - 4))
        v = _pick(rng, [0, 1, 0x7FFFFFFF, 0xFFFFFFFF, 0x80000000, int(rng.integers(0, 2**32))])
        b[pos:pos + 4] = int(v).to_bytes(4, "little")
    else:  # duplicate or delete a run (shifts every later offset)
        i, k = int(rng.integers(0, n)), int(rng.integers(1, 64))
        b = b[:i] + b[i:i + k] + b[i:] if rng.integers(0, 2) else b[:i] + b[i + k:]
    return bytes(b)


# ------------------------------------------------------------------------------------------------ TFLite
def _kitchen_sink(seed: int):
    """A writer graph with every op kind the writer offers (the writer object is returned unfinished)."""
    from byoc.testing.tflite_writer import TFLiteWriter
    rng = np.random.default_rng(seed)
    w = TFLiteWriter()

    def wt(shape):
        return rng.integers(-127, 128, shape).astype(np.int8)

    x = w.input("x", (1, 6, 6, 4), "int8", scale=0.05, zero_point=-3)
    x2 = w.input("x2", (1, 6, 6, 4), "int8", scale=0.07, zero_point=5)
    c = w.conv2d(x, wt((8, 3, 3, 4)), rng.integers(-500, 500, 8), weight_scale=rng.uniform(0.005, 0.02, 8),
                 padding="SAME", activation="RELU6", out_scale=0.1, out_zp=-128)
    d = w.depthwise_conv2d(c, wt((1, 3, 3, 8)), rng.integers(-500, 500, 8), weight_scale=0.01, strides=(2, 2),
                           out_scale=0.08, out_zp=2)
    a = w.add(x, x2, out_scale=0.1, out_zp=0, activation="RELU")
    s = w.sub(a, x, out_scale=0.1, out_zp=1)
    m = w.mul(s, a, out_scale=0.3, out_zp=-2)
    p = w.max_pool2d(m, (2, 2), (2, 2))
    ap = w.average_pool2d(p, (2, 2), (1, 1), "SAME")
    cat = w.concatenation([ap, ap], axis=3)
    mean = w.mean(cat, [1, 2], keep_dims=True, out_scale=0.05, out_zp=0)
    r = w.reshape(mean, (1, 8))
    fc = w.fully_connected(r, wt((5, 8)), rng.integers(-100, 100, 5), weight_scale=0.02, out_scale=0.2, out_zp=3)
    sm = w.softmax(fc)
    lg = w.logistic(fc)
    th = w.tanh(fc)
    hs = w.hard_swish(d, out_scale=0.08, out_zp=-10)
    lr = w.leaky_relu(hs, 0.1, out_scale=0.05, out_zp=0)
    rl = w.relu(lr)
    r6 = w.relu6(rl)
    r1 = w.relu_n1_to_1(r6)
    pd = w.pad(r1, [[0, 0], [1, 1], [0, 2], [0, 0]])
    pv = w.padv2(pd, [[0, 0], [0, 1], [1, 0], [0, 0]], -7)
    sp = w.split(pv, 2, 3)
    ss = w.strided_slice(sp[0], [0, 0, 1, 0], [1, 4, 5, 4], [1, 2, 1, 1])
    tr = w.transpose(ss, [0, 2, 1, 3])
    rs = w.resize_nearest_neighbor(tr, (5, 3))
    sq = w.squeeze(w.reshape(rs, (1, 1, 15, 4)), [1])
    q = w.quantize(sq, out_scale=0.02, out_zp=4, out_dtype="int8")
    dq = w.dequantize(q)
    tc = w.transpose_conv(d, wt((3, 2, 2, 8)), (1, 6, 6, 3), rng.integers(-100, 100, 3), weight_scale=0.01,
                          strides=(2, 2), padding="SAME", out_scale=0.1, out_zp=0)
    w.output(sm, lg, th, sp[1], dq, tc)
    return w


def _small_chain(seed: int):
    from byoc.testing.tflite_writer import TFLiteWriter
    rng = np.random.default_rng(seed)
    w = TFLiteWriter()
    x = w.input("x", (1, 4, 4, 2), "int8", scale=0.1, zero_point=0)
    y = w.conv2d(x, rng.integers(-127, 128, (3, 1, 1, 2)).astype(np.int8), np.zeros(3, np.int32),
                 weight_scale=0.01, padding="VALID", out_scale=0.05, out_zp=-1)
    w.output(w.max_pool2d(y, (2, 2), (2, 2)))
    return w


def tflite_seeds() -> list:
    """Unfinished writers (so field edits can reach tensors and operators before serialisation)."""
    return [_kitchen_sink(0), _kitchen_sink(1), _small_chain(2)]


def _edit_writer(w, rng: np.random.Generator) -> str:
    """One semantic edit of the writer's tables; returns what was done."""
    t = _pick(rng, w._tensors)
    op = _pick(rng, w._operators)
    kind = int(rng.integers(0, 14))
    if kind == 0:
        dims = list(t.shape) or [1]
        dims[int(rng.integers(0, len(dims)))] = int(_pick(rng, [0, -1, -7, 2**31 - 1, 2**20, 65536]))
        t.shape = tuple(dims)
        return f"tensor {t.name} shape -> {t.shape}"
    if kind == 1:
        t.shape = tuple(int(v) for v in rng.integers(1, 4, int(_pick(rng, [0, 1, 5, 7, 9]))))
        return f"tensor {t.name} rank -> {len(t.shape)}"
    if kind == 2:
        t.dtype = _pick(rng, ["float32", "int32", "uint8", "int64", "bool", "int16", "int8"])
        return f"tensor {t.name} dtype -> {t.dtype}"
    if kind == 3:
        bad = _pick(rng, [0.0, -1.0, float("nan"), float("inf"), 1e-45, 3e38])
        n = len(t.scale) if t.scale else 1
        t.scale = tuple([bad] * n) if rng.integers(0, 2) else tuple([0.1] * int(rng.integers(2, 5)))
        t.zero_point = t.zero_point or (0,) * len(t.scale)
        return f"tensor {t.name} scale -> {t.scale[:3]}"
    if kind == 4:
        if t.scale is None:
            t.scale = (0.1,)
        t.zero_point = tuple(int(_pick(rng, [2**31 - 1, -2**31, 300, -129, 256])) for _ in t.scale)
        return f"tensor {t.name} zero point -> {t.zero_point[:3]}"
    if kind == 5:
        t.quantized_dimension = int(_pick(rng, [-1, 4, 7, 2**31 - 1]))
        return f"tensor {t.name} quantized_dimension -> {t.quantized_dimension}"
    if kind == 6:
        ins = list(op.inputs)
        if ins:
            ins[int(rng.integers(0, len(ins)))] = int(_pick(rng, [-1, len(w._tensors), 2**31 - 1, -5]))
        op.inputs = tuple(ins)
        return f"operator inputs -> {op.inputs}"
    if kind == 7:
        op.inputs = op.inputs + op.outputs if rng.integers(0, 2) else op.inputs[:max(len(op.inputs) - 1, 0)]
        return f"operator inputs -> {op.inputs} (cycle or missing)"
    if kind == 8:
        op.outputs = op.outputs + op.outputs[:1] if rng.integers(0, 2) else ()
        return f"operator outputs -> {op.outputs}"
    if kind == 9:
        op.opcode = int(_pick(rng, [len(w._opcodes), 2**31 - 1, 0]))
        return f"operator opcode index -> {op.opcode}"
    if kind == 10:
        buf = int(rng.integers(1, len(w._buffers)))
        w._buffers[buf] = w._buffers[buf][:int(rng.integers(0, max(len(w._buffers[buf]), 1)))] \
            if rng.integers(0, 2) else w._buffers[buf] + b"\x01" * int(rng.integers(1, 64))
        return f"buffer {buf} resized"
    if kind == 11:
        t.buffer = int(_pick(rng, [len(w._buffers), 2**31 - 1, 0]))
        return f"tensor {t.name} buffer -> {t.buffer}"
    if kind == 12 and op.options:
        key = _pick(rng, sorted(op.options))
        v = op.options[key]
        if isinstance(v, bool):
            op.options[key] = not v
        elif isinstance(v, float):
            op.options[key] = float(_pick(rng, [0.0, -1.0, float("nan"), 1e30]))
        elif isinstance(v, list):
            op.options[key] = [int(_pick(rng, ABSURD_INTS[:4]))] * 3
        else:
            op.options[key] = int(_pick(rng, [0, -1, 99, 2**31 - 1]))
        return f"option {key} -> {op.options[key]}"
    # 13: graph inputs/outputs
    w._outputs = [int(_pick(rng, [len(w._tensors), -1, 0]))] + w._outputs[1:] if rng.integers(0, 2) else []
    return f"graph outputs -> {w._outputs[:3]}"


def mutate_tflite(seed_index: int, rng: np.random.Generator) -> bytes:
    """A field edit of a writer seed (serialised afterwards), or a byte mutation of the serialised seed."""
    import copy
    w = copy.deepcopy(tflite_seeds_cached()[seed_index])
    if rng.integers(0, 3):
        for _ in range(int(rng.integers(1, 3))):
            _edit_writer(w, rng)
        try:
            return w.finish()
        except Exception:  # noqa: BLE001 - the writer itself may refuse an edit; fall back to bytes
            w = copy.deepcopy(tflite_seeds_cached()[seed_index])
    return mutate_bytes(w.finish(), rng)


_TFLITE_SEEDS: list | None = None


def tflite_seeds_cached() -> list:
    global _TFLITE_SEEDS
    if _TFLITE_SEEDS is None:
        _TFLITE_SEEDS = tflite_seeds()
    return _TFLITE_SEEDS


# ------------------------------------------------------------------------------------------------ ONNX
def onnx_seeds() -> list[bytes]:
    """Float CNN, QDQ CNN and QOperator models (serialised), built with onnx.helper."""
    import onnx
    from onnx import TensorProto as TP
    from onnx import helper as h
    from onnx import numpy_helper as nh
    rng = np.random.default_rng(0)

    def init(name, arr):
        return nh.from_array(np.asarray(arr), name)

    def model(nodes, inputs, outputs, inits):
        g = h.make_graph(nodes, "g", inputs, outputs, inits)
        m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
        m.ir_version = 8
        return m.SerializeToString()

    x = h.make_tensor_value_info("x", TP.FLOAT, [1, 3, 6, 6])
    fl = model([
        h.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        h.make_node("Relu", ["c1"], ["r1"]),
        h.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        h.make_node("Add", ["p1", "p1"], ["a1"]),
        h.make_node("GlobalAveragePool", ["a1"], ["g1"]),
        h.make_node("Flatten", ["g1"], ["f1"], axis=1),
        h.make_node("Gemm", ["f1", "fw", "fb"], ["y"], transB=1),
        h.make_node("Softmax", ["y"], ["prob"], axis=1),
    ], [x], [h.make_tensor_value_info("prob", TP.FLOAT, [1, 5])],
        [init("w1", rng.normal(0, .3, (4, 3, 3, 3)).astype(np.float32)), init("b1", np.zeros(4, np.float32)),
         init("fw", rng.normal(0, .3, (5, 4)).astype(np.float32)), init("fb", np.zeros(5, np.float32))])

    def qdq(name, scale, zp, dtype=np.int8):
        return [init(f"{name}_s", np.float32(scale)), init(f"{name}_z", np.asarray(zp, dtype))]

    qinits = (qdq("xq", 0.05, 0) + qdq("wq", 0.01, 0) + qdq("cq", 0.1, -5) + qdq("aq", 0.2, 3)
              + [init("w_int", rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)),
                 init("b_int", rng.integers(-100, 100, 4).astype(np.int32)), init("b_s", np.float32(0.0005)),
                 init("b_z", np.int32(0))])
    q = model([
        h.make_node("QuantizeLinear", ["x", "xq_s", "xq_z"], ["xq"]),
        h.make_node("DequantizeLinear", ["xq", "xq_s", "xq_z"], ["xd"]),
        h.make_node("DequantizeLinear", ["w_int", "wq_s", "wq_z"], ["wd"]),
        h.make_node("DequantizeLinear", ["b_int", "b_s", "b_z"], ["bd"]),
        h.make_node("Conv", ["xd", "wd", "bd"], ["c"], pads=[1, 1, 1, 1]),
        h.make_node("QuantizeLinear", ["c", "cq_s", "cq_z"], ["cq"]),
        h.make_node("DequantizeLinear", ["cq", "cq_s", "cq_z"], ["cd"]),
        h.make_node("Add", ["cd", "cd"], ["a"]),
        h.make_node("QuantizeLinear", ["a", "aq_s", "aq_z"], ["aq"]),
        h.make_node("DequantizeLinear", ["aq", "aq_s", "aq_z"], ["y"]),
    ], [x], [h.make_tensor_value_info("y", TP.FLOAT, [1, 4, 6, 6])], qinits)

    xq = h.make_tensor_value_info("xq", TP.INT8, [1, 3, 6, 6])
    qo = model([
        h.make_node("QLinearConv", ["xq", "xq_s", "xq_z", "w_int", "wq_s", "wq_z", "cq_s", "cq_z", "b_int"], ["c"],
                    pads=[1, 1, 1, 1]),
        h.make_node("QLinearAdd", ["c", "cq_s", "cq_z", "c", "cq_s", "cq_z", "aq_s", "aq_z"], ["a"],
                    domain="com.microsoft"),
        h.make_node("DequantizeLinear", ["a", "aq_s", "aq_z"], ["y"]),
    ], [xq], [h.make_tensor_value_info("y", TP.FLOAT, [1, 4, 6, 6])], qinits)
    m = onnx.ModelProto()
    m.ParseFromString(qo)
    m.opset_import.append(h.make_opsetid("com.microsoft", 1))
    return [fl, q, m.SerializeToString()]


def _edit_onnx(m, rng: np.random.Generator) -> None:
    g = m.graph
    kind = int(rng.integers(0, 12))
    if kind == 0 and len(g.initializer):
        t = _pick(rng, list(g.initializer))
        if len(t.dims):
            t.dims[int(rng.integers(0, len(t.dims)))] = int(_pick(rng, ABSURD_INTS[:7]))
        else:
            t.dims.append(int(_pick(rng, ABSURD_INTS[:7])))
    elif kind == 1 and len(g.initializer):
        _pick(rng, list(g.initializer)).data_type = int(rng.integers(0, 25))
    elif kind == 2 and len(g.initializer):
        t = _pick(rng, list(g.initializer))
        raw = t.raw_data
        t.raw_data = raw[:int(rng.integers(0, len(raw) + 1))] if rng.integers(0, 2) else raw + b"\x7f" * 5
    elif kind == 3 and len(g.initializer):  # scales and zero points
        t = _pick(rng, list(g.initializer))
        if t.data_type == 1 and len(t.raw_data) >= 4:
            v = float(_pick(rng, [0.0, -1.0, float("nan"), float("inf"), 1e-45, 3e38]))
            t.raw_data = struct.pack("<f", v) * (len(t.raw_data) // 4)
    elif kind == 4 and len(g.node):
        n = _pick(rng, list(g.node))
        if len(n.attribute):
            a = _pick(rng, list(n.attribute))
            if len(a.ints):
                a.ints[int(rng.integers(0, len(a.ints)))] = int(_pick(rng, ABSURD_INTS[:7]))
            elif a.type == 2:
                a.i = int(_pick(rng, ABSURD_INTS[:7]))
            else:
                a.type = int(rng.integers(0, 15))
        else:
            a = n.attribute.add()
            a.name = _pick(rng, ["group", "axis", "pads", "strides", "kernel_shape", "dilations"])
            a.type = 7 if a.name in ("pads", "strides", "kernel_shape", "dilations") else 2
            if a.type == 7:
                a.ints.extend([int(_pick(rng, ABSURD_INTS[:7]))] * int(rng.integers(0, 5)))
            else:
                a.i = int(_pick(rng, ABSURD_INTS[:7]))
    elif kind == 5 and len(g.node):
        n = _pick(rng, list(g.node))
        if len(n.input):
            i = int(rng.integers(0, len(n.input)))
            n.input[i] = _pick(rng, ["", "missing", n.output[0] if len(n.output) else "", "x"])
    elif kind == 6 and len(g.node):
        _pick(rng, list(g.node)).op_type = _pick(rng, ["Conv", "Relu", "Loop", "If", "QLinearConv", "Gemm",
                                                      "Reshape", "Concat", "Resize", "", "Custom"])
    elif kind == 7:
        m.opset_import[0].version = int(_pick(rng, [1, 6, 11, 13, 99, -1]))
    elif kind == 8 and len(g.node) > 1:  # reverse two nodes (topological order broken)
        i, j = sorted(int(v) for v in rng.choice(len(g.node), 2, replace=False))
        a, b = g.node[i], g.node[j]
        tmp = type(a)()
        tmp.CopyFrom(a)
        a.CopyFrom(b)
        b.CopyFrom(tmp)
    elif kind == 9:
        vi = _pick(rng, list(g.input) + list(g.output))
        dims = vi.type.tensor_type.shape.dim
        if len(dims):
            d = dims[int(rng.integers(0, len(dims)))]
            if rng.integers(0, 2):
                d.dim_value = int(_pick(rng, ABSURD_INTS[:7]))
            else:
                d.dim_param = "N"
        vi.type.tensor_type.elem_type = int(_pick(rng, [vi.type.tensor_type.elem_type, 0, 3, 7, 16]))
    elif kind == 10 and len(g.node):
        dup = g.node.add()
        dup.CopyFrom(_pick(rng, list(g.node)[:-1] or list(g.node)))
    elif len(g.output):
        g.output[0].name = _pick(rng, ["", "nope", g.input[0].name if len(g.input) else "x"])


def mutate_onnx(seed_bytes: bytes, rng: np.random.Generator) -> bytes:
    import onnx
    if rng.integers(0, 4) == 0:
        return mutate_bytes(seed_bytes, rng)
    m = onnx.ModelProto()
    m.ParseFromString(seed_bytes)
    for _ in range(int(rng.integers(1, 3))):
        _edit_onnx(m, rng)
    return m.SerializeToString()


# ------------------------------------------------------------------------------------------------ containers
def container_seeds() -> list[bytes]:
    from runtime.arrays import describe_array
    from runtime.container import encode_container
    rng = np.random.default_rng(0)
    arrays = {"w": rng.integers(-128, 128, (4, 3), dtype=np.int8), "b": np.arange(4, dtype=np.int32),
              "f": rng.standard_normal((2, 2, 2)).astype(np.float32)}
    tensors, sections = {}, {}
    for k, a in arrays.items():
        desc, blob = describe_array(a)
        tensors[k] = desc
        sections[f"tensor/{k}"] = blob
    sections["graph"] = b'{"nodes": []}'
    return [encode_container({"kind": "fuzz-seed", "tensors": tensors}, sections),
            encode_container({}, {}), encode_container({"a": [1, 2, 3]}, {"x": b"\x00" * 100})]


def _reseal_container(header: dict, payload: bytes, version: int | None = None) -> bytes:
    from runtime.container import FORMAT_VERSION, MAGIC
    hb = json.dumps(header, separators=(",", ":")).encode()
    fixed = struct.pack("<8sII32s", MAGIC, version or FORMAT_VERSION, len(hb), hashlib.sha256(hb).digest())
    return fixed + hb + payload


def _container_parts(data: bytes) -> tuple[dict, bytes]:
    (hlen,) = struct.unpack_from("<I", data, 12)
    return json.loads(data[48:48 + hlen]), data[48 + hlen:]


def mutate_container(seed: bytes, rng: np.random.Generator) -> bytes:
    """Byte damage, or a header edit resealed with a correct header hash (reaching the section checks)."""
    kind = int(rng.integers(0, 3))
    if kind == 0:
        return mutate_bytes(seed, rng)
    header, payload = _container_parts(seed)
    secs = header["sections"]
    edit = int(rng.integers(0, 11))
    if edit == 0 and secs:
        _pick(rng, secs)["size"] = int(_pick(rng, ABSURD_INTS))
    elif edit == 1 and secs:
        _pick(rng, secs)["offset"] = int(_pick(rng, ABSURD_INTS))
    elif edit == 2 and secs:
        e = _pick(rng, secs)
        e[_pick(rng, ["name", "offset", "size", "sha256"])] = _pick(rng, [None, 1.5, [], {}, "x", True, -3])
    elif edit == 3 and secs:
        secs.append(dict(secs[0]))
    elif edit == 4:
        depth = int(_pick(rng, [100, 10_000, 200_000]))
        header["meta"] = json.loads("[" * min(depth, 900) + "]" * min(depth, 900))
        hb = json.dumps(header, separators=(",", ":")).encode()
        if depth > 900:  # deeper than Python's json module can build: splice the raw text in
            hb = hb.replace(b'"meta":' + b"[" * 900 + b"]" * 900, b'"meta":' + b"[" * depth + b"]" * depth)
        from runtime.container import FORMAT_VERSION, MAGIC
        return struct.pack("<8sII32s", MAGIC, FORMAT_VERSION, len(hb), hashlib.sha256(hb).digest()) + hb + payload
    elif edit == 5:
        header = _pick(rng, [[], None, "s", 1, {"meta": {}}, {"sections": []}, {"meta": [], "sections": {}}])
    elif edit == 6 and secs:  # payload bytes changed and the section hash recomputed to match
        e = _pick(rng, secs)
        blob = bytearray(payload[e["offset"]:e["offset"] + e["size"]])
        if blob:
            blob[int(rng.integers(0, len(blob)))] ^= 0xFF
            payload = payload[:e["offset"]] + bytes(blob) + payload[e["offset"] + e["size"]:]
            e["sha256"] = hashlib.sha256(bytes(blob)).hexdigest()
    elif edit == 7:
        tensors = header["meta"].get("tensors") if isinstance(header["meta"], dict) else None
        if tensors:
            d = tensors[_pick(rng, sorted(tensors))]
            d[_pick(rng, ["dtype", "shape"])] = _pick(rng, ["object", "<U8", "V16", "O", [2**40, 2**40], [-1],
                                                            [0] * 40, "float128", None, [1.5]])
    elif edit == 8:
        return _reseal_container(header, payload, version=int(_pick(rng, [0, 2, 2**32 - 1])))
    elif edit == 9:
        payload = payload + b"\x00" * int(rng.integers(1, 9))
    else:
        header["meta"] = {"k" * int(rng.integers(1, 5)): _pick(rng, [float("nan"), 1e308, -0.0, "\udc80", None])}
    try:
        return _reseal_container(header, payload)
    except (UnicodeEncodeError, ValueError):
        return mutate_bytes(seed, rng)


# ------------------------------------------------------------------------------------------------ NPU programs
def program_seeds() -> list[bytes]:
    """NPU programs compiled from small partitioned graphs (empty when npu_sim cannot compile them)."""
    import byoc
    import npu_sim
    out = []
    for w in (_small_chain(2), _kitchen_sink(3)):
        mod, params = byoc.frontend.from_tflite(w.finish())
        pm = byoc.partition_for("npu", mod, params)
        for gv, func in pm.sorted_items():
            if func.attrs.get("Compiler") == "npu":
                try:
                    out.append(npu_sim.compile(func, name=gv.name_hint).to_bytes())
                except Exception:  # noqa: BLE001 - partitions the compiler refuses are reported elsewhere
                    continue
    return out


def _reseal_program(data: bytes) -> bytes:
    body = data[:-4]
    return body + struct.pack("<I", zlib.crc32(body))


def mutate_program(seed: bytes, rng: np.random.Generator) -> bytes:
    """Byte damage with the CRC recomputed (so it reaches the decoder), metadata edits, or raw damage."""
    from npu_sim.program import _HEAD
    kind = int(rng.integers(0, 4))
    if kind == 0:
        return mutate_bytes(seed, rng)
    magic, version, pad, meta_len, const_len, n_cmds, cmd_len = _HEAD.unpack_from(seed, 0)
    if kind == 1:  # damage inside the body, CRC fixed up
        body = bytearray(seed[:-4])
        lo = _HEAD.size + (meta_len if rng.integers(0, 2) else 0)
        for _ in range(int(rng.integers(1, 6))):
            i = int(rng.integers(lo, len(body)))
            body[i] = int(rng.integers(0, 256))
        return _reseal_program(bytes(body) + b"\0\0\0\0")
    if kind == 2:  # header counts
        fields = [magic, version, pad, meta_len, const_len, n_cmds, cmd_len]
        i = int(rng.integers(3, 7))
        fields[i] = int(_pick(rng, [0, 1, 2**31 - 1, 2**32 - 1, fields[i] + 1, max(fields[i] - 1, 0)]))
        return _reseal_program(_HEAD.pack(*fields) + seed[_HEAD.size:-4] + b"\0\0\0\0")
    meta = json.loads(seed[_HEAD.size:_HEAD.size + meta_len])
    section = _pick(rng, ["regions", "inputs", "outputs", "layers", "constants"])
    items = meta.get(section) or []
    if items:
        item = _pick(rng, items)
        if isinstance(item, dict):
            key = _pick(rng, sorted(item))
            item[key] = _pick(rng, [-1, 0, 2**31 - 1, 2**40, [2**20, 2**20], "int64", None, [], 1.5]) \
                if not isinstance(item[key], str) else _pick(rng, ["", "x" * 1000, "int64", "nope"])
        elif isinstance(item, list) and item:
            item[int(rng.integers(0, len(item)))] = int(_pick(rng, ABSURD_INTS))
    else:
        meta["config"] = _pick(rng, [{}, None, {"name": "x"}])
    mb = json.dumps(meta, sort_keys=True, separators=(",", ":")).encode()
    rest = seed[_HEAD.size + meta_len:-4]
    head = _HEAD.pack(magic, version, pad, len(mb), const_len, n_cmds, cmd_len)
    return _reseal_program(head + mb + rest + b"\0\0\0\0")
