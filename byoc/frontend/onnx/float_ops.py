"""Float ONNX ops → IR (NCHW layout kept). Each converter returns the node's output value(s)."""
from __future__ import annotations

import numpy as np

from ...errors import ModelError
from ...ir.expr import Constant, Expr, Span, Tuple, TupleGetItem
from ...relay.op import make_call
from .model import check_size_values, node_label

__all__ = ["FLOAT_CONVERTERS", "conv_padding", "pool_padding", "pool_ceil_mode"]


def _call(op, args, attrs=None, node=None):
    return make_call(op, args, attrs, span=Span(node.name or node.output[0]) if node is not None else None)


def _inputs(imp, node, n_min, n_max=None):
    ins = list(node.input)
    n_max = n_min if n_max is None else n_max
    present = len([i for i in ins if i])
    if not n_min <= len(ins) <= max(n_max, n_min) or present < n_min:
        raise ModelError(f"{node_label(node)} takes {n_min}..{n_max} inputs, found {len(ins)}")
    return ins


def conv_padding(node, attrs, in_hw, kernel_hw, strides, dilations) -> tuple[int, int, int, int]:
    """ONNX pads/auto_pad → (top, left, bottom, right)."""
    auto = attrs.get("auto_pad", "NOTSET")
    if auto in ("NOTSET", ""):
        pads = list(attrs.get("pads", [0, 0, 0, 0]))
        if len(pads) != 4 or min(pads) < 0:
            raise ModelError(f"{node_label(node)}: pads must be 4 non-negative values for 2-D, found {pads}")
        return (pads[0], pads[1], pads[2], pads[3])
    if auto == "VALID":
        return (0, 0, 0, 0)
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise ModelError(f"{node_label(node)}: unknown auto_pad {auto!r}")
    out = []
    for size, k, s, d in zip(in_hw, kernel_hw, strides, dilations):
        o = -(-size // s)
        total = max(0, (o - 1) * s + (k - 1) * d + 1 - size)
        small, big = total // 2, total - total // 2
        out.append((small, big) if auto == "SAME_UPPER" else (big, small))
    return (out[0][0], out[1][0], out[0][1], out[1][1])


def _spatial_attrs(node, attrs, rank_needed=2):
    strides = tuple(attrs.get("strides", [1] * rank_needed))
    dil = tuple(attrs.get("dilations", [1] * rank_needed))
    if len(strides) != rank_needed or len(dil) != rank_needed:
        raise ModelError(f"{node_label(node)}: only 2-D (NCHW) spatial ops are supported",
                         hint=f"strides={strides}, dilations={dil}")
    return strides, dil


def _not_folded_by_ort(imp, name: str) -> bool:
    """Whether onnxruntime sees this tensor as a non-constant: a graph input, a DequantizeLinear output (its
    constant folding leaves DequantizeLinear nodes alone so that QDQ groups stay recognisable), or anything
    computed from one (``Importer.ort_runtime``)."""
    return name in imp.ort_runtime


def conv_2d(imp, node, attrs, x, w):
    ins = _inputs(imp, node, 2, 3)
    xs = imp.shape_of(x)
    ws = imp.shape_of(w)
    if len(xs) != 4 or len(ws) != 4:
        raise ModelError(f"{node_label(node)}: only 2-D convolution (4-D NCHW input) is supported, input {xs}, "
                         f"weight {ws}")
    strides, dil = _spatial_attrs(node, attrs)
    group = int(attrs.get("group", 1))
    pad = conv_padding(node, attrs, xs[2:], ws[2:], strides, dil)
    # A weight that is not an initializer (DequantizeLinear of one: the float fallback of a QDQ group) keeps
    # onnxruntime off its NCHWc kernels: MlasConv's im2col GEMM runs it, whose float32 order byoc follows.
    # float16: onnxruntime's CPU provider has no float16 Conv on x86; its InsertCastTransformer runs it in float32
    # between Casts (the weight cast at run time unless it is a constant)
    half = imp.dtype_of(x) == "float16" and imp.dtype_of(w) == "float16"
    if half:
        x = _call("cast", (x,), {"dtype": "float32"}, node)
        w = _call("cast", (w,), {"dtype": "float32"}, node)
    mlas = imp.dtype_of(x) == "float32" and _not_folded_by_ort(imp, ins[1])
    wc = imp.constant_value(ins[1]) if mlas else None
    if isinstance(wc, np.ndarray) and wc.shape == tuple(ws):
        # DequantizeLinear of a constant, as onnxruntime computes it: the CPU kernel's constant
        w = Constant(wc.astype(np.float32) if half else wc)
    out = _call("nn.conv2d", (x, w), dict(strides=strides, padding=pad, dilation=dil, groups=group,
                                          channels=ws[0], kernel_size=ws[2:], data_layout="NCHW",
                                          kernel_layout="OIHW", accumulation="mlas" if mlas else ""), node)
    if len(ins) > 2 and ins[2]:
        b = imp.expr(ins[2])
        out = _call("nn.bias_add", (out, _call("cast", (b,), {"dtype": "float32"}, node) if half else b),
                    {"axis": 1}, node)
    return _call("cast", (out,), {"dtype": "float16"}, node) if half else out


def _batch_norm(imp, node, attrs):
    _inputs(imp, node, 5)
    if attrs.get("training_mode", 0):
        raise ModelError(f"{node_label(node)}: training-mode BatchNormalization is not supported")
    args = tuple(imp.expr(n) for n in node.input[:5])
    bn = _call("nn.batch_norm", args, {"axis": 1, "epsilon": float(attrs.get("epsilon", 1e-5))}, node)
    return TupleGetItem(bn, 0)


def _unary(op):
    def conv(imp, node, attrs):
        _inputs(imp, node, 1)
        return _call(op, (imp.expr(node.input[0]),), None, node)
    return conv


def _binary(op):
    def conv(imp, node, attrs):
        _inputs(imp, node, 2)
        a, b = (imp.values[n] for n in node.input[:2])
        # int64 constants are narrowed to int32 (shape arithmetic); next to an int64 tensor they stay int64
        if isinstance(a, np.ndarray) and not isinstance(b, np.ndarray):
            eb = imp.expr(node.input[1])
            return _call(op, (_like(imp, a, eb, node.input[0]), eb), None, node)
        ea = imp.expr(node.input[0])
        eb = _like(imp, b, ea, node.input[1]) if isinstance(b, np.ndarray) else imp.expr(node.input[1])
        return _call(op, (ea, eb), None, node)
    return conv


def _like(imp, const: np.ndarray, other, name):
    if const.dtype == np.int64 and imp.dtype_of(other) == "int64":
        return Constant(const)
    return imp.expr(name)


def clip_bounds(imp, node, attrs) -> tuple[float, float]:
    lo, hi = float("-inf"), float("inf")
    if imp.opset < 11:
        lo, hi = float(attrs.get("min", lo)), float(attrs.get("max", hi))
    else:
        ins = list(node.input)
        if len(ins) > 1 and ins[1]:
            lo = float(imp.const(ins[1], node, "min").reshape(-1)[0])
        if len(ins) > 2 and ins[2]:
            hi = float(imp.const(ins[2], node, "max").reshape(-1)[0])
    return lo, hi


def _clip(imp, node, attrs):
    ins = list(node.input)
    fed = [i for i in ins[1:] if i and not isinstance(imp.values.get(i), np.ndarray)]
    if imp.opset >= 11 and fed:
        # bounds fed at run time: max(x, min) then min(·, max), as ONNX's reference does
        x = imp.expr(ins[0])
        if len(ins) > 1 and ins[1]:
            x = _call("maximum", (x, imp.expr(ins[1])), None, node)
        if len(ins) > 2 and ins[2]:
            x = _call("minimum", (x, imp.expr(ins[2])), None, node)
        return x
    lo, hi = clip_bounds(imp, node, attrs)
    return _call("clip", (imp.expr(node.input[0]),), {"a_min": lo, "a_max": hi}, node)


def pool_padding(node, attrs, in_hw, kernel, strides, dilations):
    """ONNX pads/auto_pad of a 2-D pool → (top, left, bottom, right); ceil_mode is read by ``pool_ceil_mode``."""
    return conv_padding(node, attrs, in_hw, kernel, strides, dilations)


def pool_ceil_mode(node, attrs, in_hw, kernel, strides, dilations, pad) -> bool:
    """ONNX ceil_mode as the IR's (Relay's) ceil_mode flag. ONNX rounds the output size up but drops a last window
    that would start in the end padding; Relay rounds up without that rule, so each axis must agree with one of
    Relay's two sizes."""
    if not attrs.get("ceil_mode", 0):
        return False
    ceil_ok = floor_ok = True
    for i, (size, k, st, d) in enumerate(zip(in_hw, kernel, strides, dilations)):
        before, after = pad[i], pad[i + 2]
        span = size + before + after - ((k - 1) * d + 1)
        relay_ceil, relay_floor = -(-span // st) + 1, span // st + 1
        onnx = relay_ceil - 1 if (relay_ceil - 1) * st >= size + before else relay_ceil
        ceil_ok &= onnx == relay_ceil
        floor_ok &= onnx == relay_floor
    if ceil_ok:
        return True
    if floor_ok:
        return False
    raise ModelError(f"{node_label(node)}: ceil_mode=1 with these pads drops the last window on one axis only",
                     hint="not expressible as one ceil_mode flag; pad the input explicitly instead")


def _pool(op):
    def conv(imp, node, attrs):
        _inputs(imp, node, 1)
        if len(node.output) > 1 and node.output[1]:
            raise ModelError(f"{node_label(node)}: the Indices output of MaxPool is not supported")
        x = imp.expr(node.input[0])
        xs = imp.shape_of(x)
        kernel = tuple(int(k) for k in attrs.get("kernel_shape", ()))
        one_d = len(xs) == 3 and len(kernel) == 1
        if not one_d and (len(xs) != 4 or len(kernel) != 2):
            raise ModelError(f"{node_label(node)}: only 1-D and 2-D pooling (NCL / NCHW) is supported, input "
                             f"{xs}, kernel {kernel}")
        if one_d:  # pool over (1, L): the 2-D op with a unit height
            attrs = dict(attrs)
            for key in ("strides", "dilations"):
                if key in attrs:
                    attrs[key] = [1] + list(attrs[key])
            if "pads" in attrs:
                attrs["pads"] = [0, attrs["pads"][0], 0, attrs["pads"][1]]
            kernel = (1,) + kernel
            x = _call("reshape", (x,), {"newshape": (xs[0], xs[1], 1, xs[2])}, node)
        hw = imp.shape_of(x)[2:]
        strides, dil = _spatial_attrs(node, attrs)
        pad = pool_padding(node, attrs, hw, kernel, strides, dil)
        ceil = pool_ceil_mode(node, attrs, hw, kernel, strides, dil, pad)
        a = dict(pool_size=kernel, strides=strides, dilation=dil, padding=pad, layout="NCHW", ceil_mode=ceil)
        if op == "nn.avg_pool2d":
            a["count_include_pad"] = bool(attrs.get("count_include_pad", 0))
        elif attrs.get("storage_order", 0):
            raise ModelError(f"{node_label(node)}: storage_order=1 is not supported")
        out = _call(op, (x,), a, node)
        if one_d:
            out = _call("reshape", (out,), {"newshape": tuple(imp.shape_of(out)[:2]) + (imp.shape_of(out)[3],)},
                        node)
        return out
    return conv


def _global_avg_pool(imp, node, attrs):
    x = imp.expr(node.input[0])
    xs = imp.shape_of(x)
    if len(xs) == 3:  # NCL (torch's adaptive_avg_pool1d(x, 1)): the 2-D pool over (1, L)
        x = _call("reshape", (x,), {"newshape": (xs[0], xs[1], 1, xs[2])}, node)
        y = _call("nn.global_avg_pool2d", (x,), {"layout": "NCHW"}, node)
        return _call("reshape", (y,), {"newshape": (xs[0], xs[1], 1)}, node)
    if len(xs) != 4:
        raise ModelError(f"{node_label(node)}: only 3-D NCL and 4-D NCHW input is supported, found {list(xs)}")
    return _call("nn.global_avg_pool2d", (x,), {"layout": "NCHW"}, node)


def _dense(imp, node, a, w_kn, bias, alpha=1.0, beta=1.0, mlas=False):
    """a[M, K] @ w_kn[K, N] (+ bias): nn.dense takes the weight as [N, K]."""
    wt = _call("transpose", (w_kn,), {"axes": (1, 0)}, node) if not isinstance(w_kn, np.ndarray) else \
        Constant(np.ascontiguousarray(w_kn.T))
    units = imp.shape_of(wt)[0]
    out = _call("nn.dense", (a, wt), {"units": units, **({"accumulation": "mlas"} if mlas else {})}, node)
    if alpha != 1.0:
        out = _call("multiply", (out, Constant(np.array(alpha, np.float32))), None, node)
    if bias is not None:
        if beta != 1.0:
            bias = _call("multiply", (bias, Constant(np.array(beta, np.float32))), None, node)
        out = _call("add", (out, bias), None, node)
    return out


def _gemm(imp, node, attrs):
    ins = _inputs(imp, node, 2, 3)
    from .int_to_float import int_matmul_to_float
    exact = int_matmul_to_float(imp, node, attrs)
    if exact is None:
        exact = _mlas_gemm(imp, node, attrs, ins)
    if exact is not None:
        return exact
    a = imp.expr(ins[0])
    if attrs.get("transA", 0):
        a = _call("transpose", (a,), {"axes": (1, 0)}, node)
    bval = imp.values[ins[1]]
    if isinstance(bval, np.ndarray):
        b = bval.T if attrs.get("transB", 0) else bval
    else:
        b = imp.expr(ins[1])
        if attrs.get("transB", 0):
            b = _call("transpose", (b,), {"axes": (1, 0)}, node)
    bias = imp.expr(ins[2]) if len(ins) > 2 and ins[2] else None
    return _dense(imp, node, a, b, bias, float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0)))


def _mlas_gemm(imp, node, attrs, ins):
    """onnxruntime's float Gemm: Y = C, then MlasGemm adds every K block onto it (``nn.mlas_gemm``). An
    initializer B is prepacked (FMA kernel, K blocks of 256); any other B (a DequantizeLinear output: the float
    path of a QDQ Gemm onnxruntime does not fuse, or a graph input) is not, and one row takes the M = 1 kernels
    (SgemmKernelM1TransposeB with transB). Only for alpha 1, beta 1 (or no C) and A not transposed; None
    otherwise (then plain float32, within 1e-5)."""
    has_c = len(ins) > 2 and bool(ins[2])
    if (attrs.get("transA", 0) or float(attrs.get("alpha", 1.0)) != 1.0
            or (has_c and float(attrs.get("beta", 1.0)) != 1.0)):
        return None
    return gemm_call(imp, node, imp.expr(ins[0]), ins[1], bool(attrs.get("transB", 0)), ins[2] if has_c else "")


def gemm_call(imp, node, a, b_name: str, trans_b: bool, c_name: str):
    """``nn.mlas_gemm`` of A (a 2-D float32 expression), the tensor ``b_name`` and C (``c_name``, or none);
    None where byoc cannot follow onnxruntime's kernel choice."""
    packed = not _not_folded_by_ort(imp, b_name)
    if packed and not isinstance(imp.values.get(b_name), np.ndarray):
        return None  # a constant onnxruntime folds and byoc does not: its value is not known here
    ash = imp.shape_of(a)
    if imp.dtype_of(a) != "float32" or len(ash) != 2:
        return None
    has_c = bool(c_name)
    ins = ("", b_name, c_name)
    bval = imp.constant_value(ins[1])
    if isinstance(bval, np.ndarray):
        if bval.dtype != np.float32 or bval.ndim != 2:
            return None
        w = Constant(np.ascontiguousarray(bval if trans_b else bval.T))
    else:
        w = imp.expr(ins[1])
        if imp.dtype_of(w) != "float32" or len(imp.shape_of(w)) != 2:
            return None
        if not trans_b:
            w = _call("transpose", (w,), {"axes": (1, 0)}, node)
    n, k = imp.shape_of(w)
    if k != ash[1]:
        raise ModelError(f"{node_label(node)}: Gemm shapes {list(ash)} and B {list(imp.shape_of(w))} do not match")
    out = (ash[0], n)
    cval = imp.constant_value(ins[2]) if has_c else np.array(-0.0, np.float32)  # −0.0: the additive identity
    if isinstance(cval, np.ndarray):
        if cval.dtype != np.float32:
            return None
        try:
            c = Constant(np.ascontiguousarray(np.broadcast_to(cval, out)))
        except ValueError as e:
            raise ModelError(f"{node_label(node)}: C of shape {list(cval.shape)} does not broadcast to "
                             f"{list(out)}") from e
    else:
        c = imp.expr(ins[2])
        if imp.dtype_of(c) != "float32":
            return None
        if tuple(imp.shape_of(c)) != out:
            c = _call("broadcast_to", (c,), {"shape": out}, node)
    return _call("nn.mlas_gemm", (a, w, c), {"trans_b": trans_b, "packed_b": packed}, node)


def _matmul_add_fusion(imp, node):
    """onnxruntime's MatMulAddFusion (level 1): a MatMul whose only consumer is an Add becomes a Gemm with the
    Add's other input as C (A of another rank reshaped to 2-D and back), so C enters before the first K block
    (``nn.mlas_gemm``). The C shapes it fuses, measured with onnxruntime 1.32: [N], [1, N], and for a 2-D A also
    [M, N] and [M, 1]; not a scalar. Returns (Add node index, result) or None."""
    out = node.output[0]
    users = imp.consumers.get(out, [])
    if len(users) != 1 or out in imp.graph_outputs:
        return None
    add = imp.graph.node[users[0]]
    if add.op_type != "Add" or add.domain not in ("", "ai.onnx") or len(add.input) != 2 or \
            list(add.input).count(out) != 1 or not add.output or not add.output[0]:
        return None
    c_name = add.input[1] if add.input[0] == out else add.input[0]
    if c_name not in imp.values:  # produced after the MatMul: left to the Add (the importer's order)
        return None
    a = imp.expr(node.input[0])
    ash = tuple(imp.shape_of(a))
    bv = imp.values.get(node.input[1])
    bsh = tuple(bv.shape) if isinstance(bv, np.ndarray) else tuple(imp.shape_of(imp.expr(node.input[1])))
    cv = imp.values.get(c_name)
    csh = tuple(cv.shape) if isinstance(cv, np.ndarray) else tuple(imp.shape_of(imp.expr(c_name)))
    if not ash or len(bsh) != 2 or ash[-1] != bsh[0] or imp.dtype_of(a) != "float32":
        return None
    n = bsh[1]
    rows = int(np.prod(ash[:-1], dtype=np.int64)) if len(ash) > 1 else 1
    ok_c = [(n,), (1, n)] + ([(ash[0], n), (ash[0], 1)] if len(ash) == 2 else [])
    if csh not in ok_c:
        return None
    y = None
    if len(ash) == 2:  # the fused Gemm may be a QDQ group onnxruntime runs as QGemm (a float output)
        from .int_to_float import int_matmul_to_float
        y = int_matmul_to_float(imp, node, {}, ins=[node.input[0], node.input[1], c_name], out=add.output[0],
                                gemm=True)
        if y is not None:
            return users[0], y
    a2 = a if len(ash) == 2 else _call("reshape", (a,), {"newshape": (rows, ash[-1])}, node)
    y = gemm_call(imp, node, a2, node.input[1], False, c_name)
    if y is None:
        return None
    if len(ash) != 2:
        y = _call("reshape", (y,), {"newshape": tuple(ash[:-1]) + (n,)}, node)
    return users[0], y


def _matmul(imp, node, attrs):
    _inputs(imp, node, 2)
    fused = _matmul_add_fusion(imp, node)
    if fused is not None:  # the Add is absorbed; the MatMul's own output has no other reader
        j, y = fused
        imp.absorbed.add(j)
        imp.values[imp.graph.node[j].output[0]] = y
        return y
    from .int_to_float import int_matmul_to_float
    y = int_matmul_to_float(imp, node, attrs)
    if y is not None:
        return y
    a = imp.expr(node.input[0])
    b = imp.constant_value(node.input[1])
    ash = imp.shape_of(a)
    raw = imp.values.get(node.input[1])
    if isinstance(raw, np.ndarray) and not _not_folded_by_ort(imp, node.input[1]) and raw.ndim == 2 and \
            raw.dtype == np.float32 and \
            imp.dtype_of(a) == "float32" and ash and ash[-1] == raw.shape[0]:
        # an initializer B is prepacked by onnxruntime (MlasGemmPackB): the FMA kernel in K blocks of 256 over
        # all rows of A at once
        k, n = raw.shape
        rows = int(np.prod(ash[:-1], dtype=np.int64)) if len(ash) > 1 else 1
        a2 = a if len(ash) == 2 else _call("reshape", (a,), {"newshape": (rows, k)}, node)
        out = _call("nn.mlas_gemm", (a2, Constant(np.ascontiguousarray(raw.T)),
                                     Constant(np.full((rows, n), -0.0, np.float32))),
                    {"trans_b": False, "packed_b": True}, node)
        return out if len(ash) == 2 else _call("reshape", (out,), {"newshape": tuple(ash[:-1]) + (n,)}, node)
    if isinstance(b, np.ndarray) and b.ndim == 2 and len(ash) >= 2:
        if ash[-1] != b.shape[0]:
            raise ModelError(f"{node_label(node)}: MatMul shapes {ash} and {b.shape} do not match")
        a2 = a if len(ash) == 2 else _call("reshape", (a,), {"newshape": (-1, ash[-1])}, node)
        # B from DequantizeLinear (an unfused QDQ MatMul) is not prepacked: MlasGemm's order (ops/mlas_order.py)
        mlas = imp.dtype_of(a) == "float32" and _not_folded_by_ort(imp, node.input[1])
        out = _dense(imp, node, a2, b, None, mlas=mlas)
        if len(ash) != 2:
            out = _call("reshape", (out,), {"newshape": tuple(ash[:-1]) + (b.shape[1],)}, node)
        return out
    b = imp.expr(node.input[1])
    # two run-time operands: MlasGemm per batch (one GEMM over all rows for a 2-D right operand)
    mlas = imp.dtype_of(a) == "float32" and (_not_folded_by_ort(imp, node.input[1])
                                             or isinstance(imp.values.get(node.input[1]), Expr))
    return batched_matmul(imp, node, a, b, mlas=mlas)


def batched_matmul(imp, node, a, b, mlas: bool = False):
    """numpy.matmul semantics (1-D operands promoted, batch dimensions broadcast) as one nn.batch_matmul."""
    ash, bsh = tuple(imp.shape_of(a)), tuple(imp.shape_of(b))
    if not ash or not bsh:
        raise ModelError(f"{node_label(node)}: MatMul operands must have rank >= 1, found {ash} and {bsh}")
    a_vec, b_vec = len(ash) == 1, len(bsh) == 1
    a3s = (1,) + ash if a_vec else ash
    b3s = bsh + (1,) if b_vec else bsh
    if a3s[-1] != b3s[-2]:
        raise ModelError(f"{node_label(node)}: MatMul shapes {ash} and {bsh} do not match")
    try:
        batch = tuple(np.broadcast_shapes(a3s[:-2], b3s[:-2]))
    except ValueError as e:
        raise ModelError(f"{node_label(node)}: MatMul batch dimensions of {ash} and {bsh} do not broadcast") from e
    nb = int(np.prod(batch, dtype=np.int64)) if batch else 1
    m, k, n = a3s[-2], a3s[-1], b3s[-1]

    def to3(x, orig, promoted, rows, cols):
        if promoted != orig:
            x = _call("reshape", (x,), {"newshape": promoted}, node)
        own = int(np.prod(promoted[:-2], dtype=np.int64)) if len(promoted) > 2 else 1
        if own != 1 and tuple(promoted[:-2]) != batch:
            x = _call("broadcast_to", (x,), {"shape": batch + (rows, cols)}, node)
            own = nb
        return _call("reshape", (x,), {"newshape": (own, rows, cols)}, node)
    a3 = to3(a, ash, a3s, m, k)
    b3 = to3(b, bsh, b3s, k, n)
    # onnxruntime's call structure is known for a 2-D right operand or equal batch dimensions (no vectors)
    mlas = mlas and not a_vec and not b_vec and (len(bsh) == 2 or tuple(a3s[:-2]) == tuple(b3s[:-2]))
    out = _call("nn.batch_matmul", (a3, b3), {"transpose_a": False, "transpose_b": False,
                                              **({"accumulation": "mlas"} if mlas else {})}, node)
    shape = batch + ((m,) if not a_vec else ()) + ((n,) if not b_vec else ())
    return _call("reshape", (out,), {"newshape": shape}, node)


def reshape_target(imp, node, in_shape, attrs) -> tuple[int, ...]:
    if node.op_type == "Flatten":
        axis = int(attrs.get("axis", 1))
        axis = axis + len(in_shape) if axis < 0 else axis
        if not 0 <= axis <= len(in_shape):
            raise ModelError(f"{node_label(node)}: axis {attrs.get('axis')} out of range for rank {len(in_shape)}")
        return (int(np.prod(in_shape[:axis], dtype=np.int64)), int(np.prod(in_shape[axis:], dtype=np.int64)))
    if node.op_type == "Reshape":
        if imp.opset < 5:  # Reshape-1: the target shape is an attribute
            if "shape" not in attrs:
                raise ModelError(f"{node_label(node)}: Reshape-1 needs its 'shape' attribute")
            shape = [int(d) for d in attrs["shape"]]
        elif len(node.input) < 2 or not node.input[1]:
            raise ModelError(f"{node_label(node)}: Reshape-{imp.opset} needs its shape input")
        else:
            shape = [int(d) for d in imp.const(node.input[1], node, "shape").reshape(-1)]
        allow_zero = int(attrs.get("allowzero", 0))
        out = [in_shape[i] if d == 0 and not allow_zero and i < len(in_shape) else d for i, d in enumerate(shape)]
        total = int(np.prod(in_shape, dtype=np.int64))
        if out.count(-1) > 1 or any(d < -1 for d in out):
            raise ModelError(f"{node_label(node)}: invalid target shape {shape}")
        if -1 in out:
            known = int(np.prod([d for d in out if d != -1], dtype=np.int64))
            if known == 0 or total % known:
                raise ModelError(f"{node_label(node)}: cannot reshape {in_shape} to {shape}")
            out[out.index(-1)] = total // known
        if int(np.prod(out, dtype=np.int64)) != total:
            raise ModelError(f"{node_label(node)}: cannot reshape {in_shape} ({total} elements) to {shape}")
        return tuple(out)
    axes = _axes(imp, node, attrs)
    if node.op_type == "Squeeze":
        axes = [a + len(in_shape) if a < 0 else a for a in axes] if axes else \
            [i for i, d in enumerate(in_shape) if d == 1]
        if any(not 0 <= a < len(in_shape) or in_shape[a] != 1 for a in axes):
            raise ModelError(f"{node_label(node)}: cannot squeeze axes {axes} of shape {in_shape}")
        return tuple(d for i, d in enumerate(in_shape) if i not in axes)
    # Unsqueeze
    rank = len(in_shape) + len(axes)
    axes = sorted(a + rank if a < 0 else a for a in axes)
    out = list(in_shape)
    for a in axes:
        if not 0 <= a <= len(out):
            raise ModelError(f"{node_label(node)}: unsqueeze axis out of range")
        out.insert(a, 1)
    return tuple(out)


def _axes(imp, node, attrs):
    if imp.opset >= 13 and node.op_type in ("Squeeze", "Unsqueeze"):
        if len(node.input) > 1 and node.input[1]:
            return [int(a) for a in imp.const(node.input[1], node, "axes").reshape(-1)]
        return []
    return [int(a) for a in attrs.get("axes", [])]


def _reshape_like(imp, node, attrs):
    x = imp.expr(node.input[0])
    return _call("reshape", (x,), {"newshape": reshape_target(imp, node, imp.shape_of(x), attrs)}, node)


def transpose_axes(imp, node, attrs, rank):
    perm = tuple(int(p) for p in attrs.get("perm", range(rank - 1, -1, -1)))
    if sorted(perm) != list(range(rank)):
        raise ModelError(f"{node_label(node)}: perm {perm} is not a permutation of rank {rank}")
    return perm


def _transpose(imp, node, attrs):
    x = imp.expr(node.input[0])
    return _call("transpose", (x,), {"axes": transpose_axes(imp, node, attrs, len(imp.shape_of(x)))}, node)


def _concat(imp, node, attrs):
    if "axis" not in attrs:
        raise ModelError(f"{node_label(node)}: Concat needs an axis attribute")
    xs = [imp.expr(n) for n in node.input if n]
    return _call("concatenate", (Tuple(tuple(xs)),), {"axis": int(attrs["axis"])}, node)


def _softmax(imp, node, attrs):
    x = imp.expr(node.input[0])
    shape = imp.shape_of(x)
    axis = int(attrs.get("axis", -1 if imp.opset >= 13 else 1))
    axis = axis + len(shape) if axis < 0 else axis
    last = axis == len(shape) - 1
    if imp.dtype_of(x) == "float32" and (last or imp.opset < 13) and int(np.prod(shape, dtype=np.int64)) > 0:
        # onnxruntime's MLAS kernel over rows (byoc/ops/mlas_math.py); the opsets < 13 rows are the whole tail
        flat = _call("reshape", (x,), {"newshape": (int(np.prod(shape[:axis], dtype=np.int64)),
                                                    int(np.prod(shape[axis:], dtype=np.int64)))}, node)
        return _call("reshape", (_call("nn.mlas_softmax", (flat,), None, node),), {"newshape": shape}, node)
    if imp.dtype_of(x) == "float32" and int(np.prod(shape, dtype=np.int64)) > 0:
        # opset >= 13, axis not last: onnxruntime transposes the axis last, runs the rows, transposes back
        perm = [d for d in range(len(shape)) if d != axis] + [axis]
        inv = [perm.index(d) for d in range(len(shape))]
        t = _call("transpose", (x,), {"axes": tuple(perm)}, node)
        rows = _call("reshape", (t,), {"newshape": (int(np.prod(shape, dtype=np.int64)) // shape[axis],
                                                     int(shape[axis]))}, node)
        y = _call("reshape", (_call("nn.mlas_softmax", (rows,), None, node),),
                  {"newshape": tuple(shape[d] for d in perm)}, node)
        return _call("transpose", (y,), {"axes": tuple(inv)}, node)
    if imp.opset < 13 and not last:
        # Opsets < 13 flatten to 2-D at `axis` and normalise over the whole tail.
        flat = _call("reshape", (x,), {"newshape": (int(np.prod(shape[:axis])), -1)}, node)
        out = _call("nn.softmax", (flat,), {"axis": 1}, node)
        return _call("reshape", (out,), {"newshape": shape}, node)
    return _call("nn.softmax", (x,), {"axis": axis}, node)


def _pad(imp, node, attrs):
    mode = attrs.get("mode", "constant")
    if mode not in ("constant", "reflect", "edge", "wrap"):
        raise ModelError(f"{node_label(node)}: Pad mode {mode!r} is not supported",
                         hint="constant, reflect, edge, wrap")
    x = imp.expr(node.input[0])
    shape = imp.shape_of(x)
    rank = len(shape)
    value = None
    if imp.opset >= 11:
        pads = [int(p) for p in imp.const(node.input[1], node, "pads").reshape(-1)]
        if len(node.input) > 2 and node.input[2]:
            v = imp.values[node.input[2]]
            value = v.reshape(()) if isinstance(v, np.ndarray) else \
                _call("reshape", (imp.expr(node.input[2]),), {"newshape": ()}, node)
        if len(node.input) > 3 and node.input[3]:
            axes = [int(a) for a in imp.const(node.input[3], node, "axes").reshape(-1)]
            axes = [a + rank if a < 0 else a for a in axes]
            if len(pads) != 2 * len(axes) or any(not 0 <= a < rank for a in axes) or len(set(axes)) != len(axes):
                raise ModelError(f"{node_label(node)}: pads {pads} do not match axes {axes} of rank {rank}")
            full = [0] * (2 * rank)
            for i, a in enumerate(axes):
                full[a], full[a + rank] = pads[i], pads[i + len(axes)]
            pads = full
    else:
        pads = [int(p) for p in attrs.get("pads", [])]
        value = np.asarray(attrs.get("value", 0.0))
    if len(pads) != 2 * rank:
        raise ModelError(f"{node_label(node)}: pads {pads} must be {2 * rank} values")
    check_size_values(node, "pads", pads)
    if min(pads, default=0) < 0:
        # negative pads crop
        begin = [max(-pads[i], 0) for i in range(rank)]
        end = [shape[i] - max(-pads[i + rank], 0) for i in range(rank)]
        x = _call("strided_slice", (x,), {"begin": tuple(begin), "end": tuple(end), "strides": (1,) * rank}, node)
        shape = tuple(e - b for b, e in zip(begin, end))
        pads = [max(p, 0) for p in pads]
    width = tuple((pads[i], pads[i + rank]) for i in range(rank))
    if not any(pads):
        return x
    dtype = imp.dtype_of(x)
    if mode == "constant":
        pv = value if isinstance(value, Expr) else Constant(np.array(0 if value is None else value, dtype))
        return _call("nn.pad", (x, pv), {"pad_width": width}, node)
    if mode == "reflect":
        if any(max(w) > d - 1 for w, d in zip(width, shape)):
            raise ModelError(f"{node_label(node)}: reflect pads {pads} exceed the input shape {list(shape)} − 1")
        return _call("nn.mirror_pad", (x,), {"pad_width": width, "mode": "REFLECT"}, node)
    # edge / wrap: per axis, concatenate slices of the (already padded) tensor
    for axis, (lo, hi) in enumerate(width):
        if not lo and not hi:
            continue
        d = shape[axis]
        if mode == "wrap" and (lo > d or hi > d):
            raise ModelError(f"{node_label(node)}: wrap pads {pads} exceed the input shape {list(shape)}")
        parts = []
        if lo:
            parts.append(_edge_or_wrap(x, shape, axis, lo, mode, before=True, node=node))
        parts.append(x)
        if hi:
            parts.append(_edge_or_wrap(x, shape, axis, hi, mode, before=False, node=node))
        x = _call("concatenate", (Tuple(tuple(parts)),), {"axis": axis}, node)
        shape = tuple(d + lo + hi if i == axis else s_ for i, s_ in enumerate(shape))
    return x


def _edge_or_wrap(x, shape, axis, n, mode, before, node):
    rank = len(shape)
    d = shape[axis]
    if mode == "edge":
        lo_hi = (0, 1) if before else (d - 1, d)
    else:
        lo_hi = (d - n, d) if before else (0, n)
    begin = tuple(lo_hi[0] if i == axis else 0 for i in range(rank))
    end = tuple(lo_hi[1] if i == axis else shape[i] for i in range(rank))
    part = _call("strided_slice", (x,), {"begin": begin, "end": end, "strides": (1,) * rank}, node)
    if mode == "edge" and n > 1:
        part = _call("broadcast_to", (part,), {"shape": tuple(n if i == axis else shape[i] for i in range(rank))},
                     node)
    return part


def _leaky_relu(imp, node, attrs):
    _inputs(imp, node, 1)
    return _call("nn.leaky_relu", (imp.expr(node.input[0]),), {"alpha": float(attrs.get("alpha", 0.01))}, node)


def _identity(imp, node, attrs):
    return imp.values[node.input[0]]


def _constant(imp, node, attrs):
    for key, dt in (("value_float", np.float32), ("value_floats", np.float32), ("value_int", np.int64),
                    ("value_ints", np.int64)):
        if key in attrs:
            return np.asarray(attrs[key], dt)
    if "value" not in attrs:
        raise ModelError(f"{node_label(node)}: only Constant nodes with a tensor 'value' are supported")
    return attrs["value"]


FLOAT_CONVERTERS = {
    "BatchNormalization": _batch_norm, "Relu": _unary("nn.relu"), "Sigmoid": _unary("sigmoid"),
    "Tanh": _unary("tanh"), "Clip": _clip, "Add": _binary("add"), "Sub": _binary("subtract"),
    "Mul": _binary("multiply"), "Div": _binary("divide"), "MaxPool": _pool("nn.max_pool2d"),
    "AveragePool": _pool("nn.avg_pool2d"), "GlobalAveragePool": _global_avg_pool, "Gemm": _gemm,
    "MatMul": _matmul, "Reshape": _reshape_like, "Flatten": _reshape_like, "Squeeze": _reshape_like,
    "Unsqueeze": _reshape_like, "Concat": _concat, "Transpose": _transpose, "Softmax": _softmax, "Pad": _pad,
    "Identity": _identity, "Constant": _constant, "LeakyRelu": _leaky_relu,
}


def _register_extra() -> None:
    from .reduce_activation_ops import REDUCE_ACTIVATION_CONVERTERS
    from .shape_ops import SHAPE_CONVERTERS
    from .conv_ops import CONV_CONVERTERS
    from .resize_ops import RESIZE_CONVERTERS
    from .norm_ops import NORM_CONVERTERS
    from .dynamic_quant_ops import DYNAMIC_QUANT_CONVERTERS
    FLOAT_CONVERTERS.update(DYNAMIC_QUANT_CONVERTERS)
    FLOAT_CONVERTERS.update(NORM_CONVERTERS)
    FLOAT_CONVERTERS.update(RESIZE_CONVERTERS)
    FLOAT_CONVERTERS.update(CONV_CONVERTERS)
    FLOAT_CONVERTERS.update(REDUCE_ACTIVATION_CONVERTERS)
    FLOAT_CONVERTERS.update(SHAPE_CONVERTERS)
    from .split_ops import SPLIT_CONVERTERS
    FLOAT_CONVERTERS.update(SPLIT_CONVERTERS)


_register_extra()
