"""onnxruntime's float convolution summation order (MLAS, x86-64, one intra-op thread), as a numpy reference.

onnxruntime runs a float ``Conv`` whose weight is not a constant initializer (the float fallback of a QDQ group
it does not fuse: ``DequantizeLinear(weight) → Conv``) through ``MlasConv``: per group, an im2col matrix with
K = Cin/groups · KH · KW rows in (channel, ky, kx) order times the filter matrix, by MLAS's SGEMM. The float32
result depends on the order of that sum, which is:

* K is cut into blocks of ``stride_k(N, K)`` (N = output pixels; MLAS's StrideN/StrideK heuristic that trades
  N for K from 128 × 128). Each block is a float32 fused-multiply-add chain from 0 over its k in order; block
  results are added in float32 (``C = block + C``).
* With one output channel per group (depthwise convolutions, M = 1), the SGEMM's M = 1 kernel multiplies
  (rounded products) and sums four k at a time: ``C = (((p0 + p1) + p2) + p3) + C``, then two, then one.
  A pointwise convolution (1x1, stride 1, no padding) goes to the GEMM directly: one block.
* Padding taps contribute an exact zero, so skipping them changes nothing.

ConvTranspose (``transpose_plan``) is a GEMM with the weight transposed followed by Col2im. The bias is a separate
float32 add (``nn.bias_add``). Checked bit for bit against onnxruntime 1.32 on
3x3/1x1/7x7 convolutions, strides 1 and 2, grouped and depthwise (tests/byoc/frontend/test_onnx_mlas_order.py).
With more than one intra-op thread MLAS slices N per thread, which changes the block size only when the
per-thread slice is smaller than K.
"""
from __future__ import annotations

import numpy as np

__all__ = ["stride_k", "mlas_plan", "fma_f32", "mlas_conv2d_nhwc", "mlas_dense", "transpose_b_block",
           "transpose_plan", "mlas_conv2d_transpose_nhwc", "mlas_batch_matmul", "gemm_kernel", "mlas_gemm"]


def stride_k(n: int, k: int) -> int:
    """MLAS's K block for an N × K slice (MLAS_SGEMM_STRIDEN = MLAS_SGEMM_STRIDEK = 128)."""
    sn, sk = 128, 128
    if n >= k:
        while sk // 2 >= k:
            sn, sk = sn * 2, sk // 2
    else:
        while sn > 16 and sn // 2 >= n:
            sk, sn = sk * 2, sn // 2
    return sk


def mlas_plan(m: int, n: int, k: int, pointwise: bool) -> tuple[str, int]:
    """(kernel, K block size) for one group's GEMM of M filters × N pixels × K: kernel ``"m1"`` (one filter),
    ``"tb"`` (one pixel, several filters: SgemmKernelM1TransposeB) or ``"fma"``."""
    if pointwise or m > n:  # MlasConvAlgorithmGemmDirect / ExpandThenGemm: one MlasGemm over all of K
        return gemm_plan(m, n, k)
    return ("m1" if m == 1 else "tb" if n == 1 else "fma"), stride_k(n, k)


def gemm_plan(m: int, n: int, k: int) -> tuple[str, int]:
    """MlasSgemmOperation(M, N, K), alpha 1, beta 0, B not transposed, one thread."""
    if m == 1:
        return "m1", k
    if n == 1:
        return "tb", k
    return "fma", stride_k(n, k)


def transpose_b_block(row: int, rows: int) -> int:
    """SgemmKernelM1TransposeB reduces rows (filters) four at a time, then two, then one: the block size of
    ``row``, which decides the order its eight lane sums are added in."""
    four = rows - rows % 4
    if row < four:
        return 4
    return 2 if row < four + 2 * ((rows % 4) // 2) else 1


def _tb_reduce(lanes: list, block: int):
    a = lanes
    if block == 4:
        return _add(_add(_add(_add(a[0], a[1]), a[2]), a[3]), _add(_add(_add(a[4], a[5]), a[6]), a[7]))
    if block == 2:
        return _add(_add(_add(a[2], a[0]), _add(a[6], a[4])), _add(_add(a[3], a[1]), _add(a[7], a[5])))
    return _add(_add(_add(a[0], a[1]), _add(a[2], a[3])), _add(_add(a[4], a[5]), _add(a[6], a[7])))


def _tb_chain(cols: list, wts: list, rows_of, c):
    """SgemmKernelM1TransposeB over one K block: lane l sums the rounded products of k ≡ l (mod 8) left to
    right from +0; the lanes are reduced by each row's block (``rows_of``: block size per output element) and
    added to C."""
    lanes = [None] * 8
    for i, (col, wt) in enumerate(zip(cols, wts)):
        p = (col * wt).astype(np.float32)
        lanes[i % 8] = p if lanes[i % 8] is None else _add(lanes[i % 8], p)
    zero = np.zeros_like(lanes[0])
    lanes = [zero if v is None else v for v in lanes]
    out = np.empty_like(zero)
    for block in (4, 2, 1):
        sel = rows_of == block
        if sel.any():
            out[sel] = _tb_reduce([v[sel] for v in lanes], block)
    return out if c is None else _add(out, c)


def fma_f32(acc: np.ndarray, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """float32 ``fma(x, w, acc)``, correctly rounded: the float64 product is exact, the float64 sum is made
    round-to-odd (exact error by TwoSum), and rounding that to float32 is then a single correct rounding."""
    p = x.astype(np.float64) * w.astype(np.float64)
    a = acc.astype(np.float64)
    s = a + p
    bb = s - a
    err = (a - (s - bb)) + (p - bb)
    fix = (err != 0) & ((s.view(np.int64) & 1) == 0)
    if fix.any():
        s = np.where(fix, np.nextafter(s, s + err), s)
    return s.astype(np.float32)


def _add(a, b):
    return (a + b).astype(np.float32)


def mlas_conv2d_nhwc(x: np.ndarray, w: np.ndarray, strides, dilation, groups: int, pointwise: bool) -> np.ndarray:
    """Convolution of an already padded NHWC float32 input with an HWIO kernel (I = Cin/groups), summed in
    MLAS's order (module doc). Returns float32 NHWC."""
    n, h, wd, cin = x.shape
    kh, kw, cig, cout = w.shape
    sh, sw = strides
    dh, dw = dilation
    oh = (h - ((kh - 1) * dh + 1)) // sh + 1
    ow = (wd - ((kw - 1) * dw + 1)) // sw + 1
    out = np.zeros((n, max(oh, 0), max(ow, 0), cout), np.float32)
    if oh <= 0 or ow <= 0:
        return out
    cog = cout // groups
    x = x.astype(np.float32)
    w = w.astype(np.float32)
    k_total = cig * kh * kw
    kind, block = mlas_plan(cog, oh * ow, k_total, pointwise)
    # (channel, ky, kx) order of MLAS's im2col rows
    taps = [(c, ky, kx) for c in range(cig) for ky in range(kh) for kx in range(kw)]
    for g in range(groups):
        wg = w[:, :, :, g * cog:(g + 1) * cog]  # [kh, kw, cig, cog]
        c_out = None
        for k0 in range(0, k_total, block):
            chunk = taps[k0:k0 + block]
            cols = [x[:, ky * dh: ky * dh + (oh - 1) * sh + 1: sh, kx * dw: kx * dw + (ow - 1) * sw + 1: sw,
                      g * cig + c][..., None] for c, ky, kx in chunk]
            wts = [wg[ky, kx, c] for c, ky, kx in chunk]
            if kind == "m1":
                c_out = _m1_chain([(col * wt).astype(np.float32) for col, wt in zip(cols, wts)], c_out)
                continue
            if kind == "tb":
                rows_of = np.broadcast_to(np.array([transpose_b_block(o, cog) for o in range(cog)]),
                                          (n, oh, ow, cog))
                c_out = _tb_chain([np.broadcast_to(col, (n, oh, ow, cog)) for col in cols], wts, rows_of, c_out)
                continue
            acc = np.zeros((n, oh, ow, cog), np.float32)
            for col, wt in zip(cols, wts):
                acc = fma_f32(acc, col, wt)
            c_out = acc if c_out is None else _add(acc, c_out)
        out[..., g * cog:(g + 1) * cog] = c_out
    return out


def _m1_chain(prods: list, c):
    """SgemmKernelM1Avx: four rounded products summed left to right then added to C, then two, then one."""
    i, k = 0, len(prods)
    for size in (4, 2, 1):
        while k - i >= size:
            t = prods[i]
            for p in prods[i + 1:i + size]:
                t = _add(t, p)
            c = t if c is None else _add(t, c)
            i += size
            if size < 4:
                break
    return c


def _tb_rows(kind: str, rows: str, m: int, n: int):
    """For the ``"tb"`` kernel, each output element's 4/2/1 block size (``transpose_b_block`` along the rows of
    A when ``rows`` is ``"m"``, else along the rows of B), as an [m, n] array; None for the other kernels."""
    if kind != "tb":
        return None
    if rows == "m":
        blocks = np.array([[transpose_b_block(i, m)] for i in range(m)])
    else:
        blocks = np.array([[transpose_b_block(j, n) for j in range(n)]])
    return np.broadcast_to(blocks, (m, n))


def _k_block(kind: str, a: np.ndarray, w: np.ndarray, ks: range, rows_of, c):
    """One K block (columns ``ks`` of ``a`` [M, K] and ``w`` [N, K]) in ``kind``'s order, added onto ``c`` (None:
    the block's sum is the result)."""
    cols = [a[:, j:j + 1] for j in ks]
    wts = [w[:, j] for j in ks]
    if kind == "m1":
        return _m1_chain([(col * wt).astype(np.float32) for col, wt in zip(cols, wts)], c)
    if kind == "tb":
        return _tb_chain([np.broadcast_to(col, rows_of.shape) for col in cols], wts, rows_of, c)
    acc = np.zeros((a.shape[0], w.shape[0]), np.float32)
    for col, wt in zip(cols, wts):
        acc = fma_f32(acc, col, wt)
    return acc if c is None else _add(acc, c)


def mlas_dense(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """float32 x[..., K] · w[N, K]ᵀ in MlasGemm's order (ONNX MatMul with a non-constant B, one thread)."""
    shape = x.shape[:-1]
    a = x.reshape(-1, x.shape[-1]).astype(np.float32)
    w = w.astype(np.float32)
    m, k = a.shape
    n = w.shape[0]
    kind, block = gemm_plan(m, n, k)
    rows_of = _tb_rows(kind, "m", m, n)
    c = None
    for k0 in range(0, k, block):
        c = _k_block(kind, a, w, range(k0, min(k, k0 + block)), rows_of, c)
    if c is None:
        c = np.zeros((m, n), np.float32)
    return c.reshape(shape + (n,))


def transpose_plan(n_pixels: int, k: int) -> tuple[str, int]:
    """onnxruntime's ConvTranspose (weight not prepacked): MlasGemm(TransA, M = Cout/g·KH·KW, N = input pixels,
    K = Cin/g). With A transposed the K block only shrinks (never grows): 128 once K > 128; one input pixel
    (N = 1) takes the SGEMM's M = 1 kernel with the operands swapped."""
    if n_pixels == 1:
        return "m1", k
    return "fma", (k if k <= 128 else 128)


def mlas_conv2d_transpose_nhwc(x: np.ndarray, w: np.ndarray, attrs) -> np.ndarray:
    """ConvTranspose as onnxruntime runs it: per group the column matrix (every (c, ky, kx) × input pixel) by
    MLAS's GEMM order (``transpose_plan``), then Col2im adds the columns into a zeroed output in (c, ky, kx)
    order, each in float32. ``x`` NHWC float32, ``w`` [KH, KW, Cin, Cout/g]; returns NHWC."""
    n, h, wd, c = x.shape
    kh, kw, _, cog = w.shape
    g = attrs.groups
    cig = c // g
    (sh, sw), (dh, dw) = attrs.strides, attrs.dilation
    t, l, b, r = attrs.padding
    full_h = (h - 1) * sh + dh * (kh - 1) + 1 + attrs.output_padding[0]
    full_w = (wd - 1) * sw + dw * (kw - 1) + 1 + attrs.output_padding[1]
    canvas = np.zeros((n, full_h, full_w, cog * g), np.float32)
    kind, block = transpose_plan(h * wd, cig)
    for gi in range(g):
        xg = x[..., gi * cig:(gi + 1) * cig]
        for ky in range(kh):
            for kx in range(kw):
                wt = w[ky, kx, gi * cig:(gi + 1) * cig, :]  # [K, Cout/g]
                cols = [xg[..., k:k + 1] for k in range(cig)]
                if kind == "m1":
                    col = _m1_chain([(cx * wt[k]).astype(np.float32) for k, cx in enumerate(cols)], None)
                else:
                    col = None
                    for k0 in range(0, cig, block):
                        acc = np.zeros((n, h, wd, cog), np.float32)
                        for k in range(k0, min(cig, k0 + block)):
                            acc = fma_f32(acc, cols[k], wt[k])
                        col = acc if col is None else _add(acc, col)
                view = canvas[:, ky * dh: ky * dh + (h - 1) * sh + 1: sh, kx * dw: kx * dw + (wd - 1) * sw + 1: sw,
                              gi * cog:(gi + 1) * cog]
                view[...] = _add(view, col)
    return canvas[:, t: full_h - b, l: full_w - r, :]


def mlas_batch_matmul(a: np.ndarray, b: np.ndarray, transpose_a: bool, transpose_b: bool) -> np.ndarray:
    """ONNX MatMul of two run-time tensors as onnxruntime runs it: one MlasGemm per batch, or one over all rows
    of ``a`` when ``b`` has batch 1 (a 2-D right operand). ``a`` [B, M, K], ``b`` [B or 1, K, N] (before the
    transposes); float32 [B, M, N]."""
    a = np.swapaxes(a, 1, 2) if transpose_a else a
    b = np.swapaxes(b, 1, 2) if transpose_b else b
    nb, m, k = a.shape
    if b.shape[0] == 1:
        return mlas_dense(a.reshape(nb * m, k), b[0].T).reshape(nb, m, -1)
    return np.stack([mlas_dense(a[i], b[i].T) for i in range(nb)]).astype(np.float32)


def gemm_kernel(m: int, n: int, k: int, trans_b: bool, packed_b: bool = False) -> tuple[str, int, str]:
    """MlasSgemmOperation(M, N, K) with alpha 1, beta 0 or 1 (ONNX Gemm: C copied into Y first, beta 1), one
    thread: (kernel, K block, the dimension whose 4/2/1 blocks order a ``"tb"`` reduction: ``"m"`` or ``"n"``).
    One row takes the M = 1 kernels (SgemmKernelM1TransposeB over the rows of B when B is transposed); one
    column with B not transposed (ldb = 1) the swapped M1TransposeB over the rows of A; else the FMA kernel.
    A prepacked B (a constant initializer: MlasGemmPackB) always takes the FMA kernel in K blocks of 256
    (MLAS_SGEMM_PACKED_STRIDEK)."""
    if packed_b:
        return "fma", 256, ""
    if m == 1:
        return ("tb", k, "n") if trans_b else ("m1", k, "")
    if n == 1 and not trans_b:
        return "tb", k, "m"
    return "fma", stride_k(n, k), ""


def mlas_gemm(x: np.ndarray, w: np.ndarray, c: np.ndarray, trans_b: bool, packed_b: bool = False) -> np.ndarray:
    """ONNX Gemm (alpha 1) as onnxruntime runs it with a non-prepacked B: Y = C (``c`` [M, N], already
    broadcast and times beta 1; −0.0 where there is none, the exact additive identity), then every K block's
    partial (an FMA chain, the M = 1 kernels' groups / lane sums) added onto Y in float32. ``x`` [M, K], ``w``
    [N, K] whatever ``trans_b`` says; ``trans_b`` and ``packed_b`` only select MLAS's kernel (``gemm_kernel``)."""
    a = x.astype(np.float32)
    w = w.astype(np.float32)
    m, k = a.shape
    n = w.shape[0]
    kind, block, rows = gemm_kernel(m, n, k, trans_b, packed_b)
    out = np.array(np.broadcast_to(c, (m, n)), np.float32)
    rows_of = _tb_rows(kind, rows, m, n)
    for k0 in range(0, k, block):
        out = _k_block(kind, a, w, range(k0, min(k, k0 + block)), rows_of, out)
    return out
