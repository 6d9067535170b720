"""Builders for the generic tensor ops (``relay.add``, ``relay.clip``, ...), and ``make_call``."""
from __future__ import annotations

from ...ir.expr import Call, Expr, Op, Tuple, TupleGetItem, _as_expr
from ...ops.registry import register_op_attr  # TVM spelling: relay.op.register_op_attr(op, "target.<t>")
from .op import register_legalize, register_qnn_legalize  # noqa: E402
from . import contrib  # noqa: E402,F401 - as TVM's relay imports op.contrib (registers target.dnnl checks)

__all__ = ["make_call", "TupleWrapper", "add", "subtract", "multiply", "divide", "floor_divide", "maximum", "minimum", "clip",
           "cast", "negative", "abs", "exp", "sqrt", "rsqrt", "tanh", "sigmoid", "round", "floor", "copy",
           "reshape", "squeeze", "expand_dims", "transpose", "concatenate", "split", "strided_slice", "mean", "sum",
           "max", "min", "register_op_attr", "stack", "take", "argmax", "argmin", "broadcast_to",
           "register_legalize", "register_qnn_legalize"]


def make_call(op_name: str, args, attrs: dict | None = None, span=None) -> Call:
    """A call to a registered op; attributes are validated against the op's schema."""
    return Call(Op.get(op_name), tuple(args), attrs, span)


class TupleWrapper:
    """What Relay returns for multi-output ops: index it to get a TupleGetItem."""

    def __init__(self, tuple_value: Expr, size: int):
        self.tuple_value = tuple_value
        self.size = size

    def astuple(self) -> Expr:
        return self.tuple_value

    def __getitem__(self, index: int) -> TupleGetItem:
        if not 0 <= index < self.size:
            from ...errors import IRError
            raise IRError(f"tuple index {index} out of range for {self.size} fields")
        return TupleGetItem(self.tuple_value, index)

    def __len__(self) -> int:
        return self.size

    def __iter__(self):  # a, b = relay.split(x, 2)
        return (TupleGetItem(self.tuple_value, i) for i in range(self.size))


def _binary(name):
    def f(lhs, rhs):
        lhs = _as_expr(lhs, rhs if isinstance(rhs, Expr) else None)
        return make_call(name, (lhs, _as_expr(rhs, lhs)))
    f.__name__ = name
    return f


add = _binary("add")
subtract = _binary("subtract")
multiply = _binary("multiply")
divide = _binary("divide")
floor_divide = _binary("floor_divide")
maximum = _binary("maximum")
minimum = _binary("minimum")


def clip(a, a_min, a_max):
    return make_call("clip", (a,), {"a_min": a_min, "a_max": a_max})


def cast(data, dtype):
    return make_call("cast", (data,), {"dtype": dtype})


def _unary(name):
    def f(data):
        return make_call(name, (data,))
    f.__name__ = name
    return f


negative = _unary("negative")
abs = _unary("abs")  # noqa: A001 - Relay spelling
exp = _unary("exp")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
round = _unary("round")  # noqa: A001
floor = _unary("floor")
copy = _unary("copy")


def reshape(data, newshape):
    if isinstance(newshape, int):
        newshape = (newshape,)
    return make_call("reshape", (data,), {"newshape": tuple(newshape)})


def squeeze(data, axis=None):
    return make_call("squeeze", (data,), {"axis": axis})


def expand_dims(data, axis, num_newaxis=1):
    return make_call("expand_dims", (data,), {"axis": int(axis), "num_newaxis": int(num_newaxis)})


def transpose(data, axes=None):
    return make_call("transpose", (data,), {"axes": None if axes is None else tuple(axes)})


def _as_tuple(data) -> Expr:
    if isinstance(data, Expr):
        return data
    return Tuple(tuple(_as_expr(d) for d in data))


def concatenate(data, axis):
    """``relay.concatenate([a, b], axis)``: a list/tuple of expressions or a ``relay.Tuple``."""
    return make_call("concatenate", (_as_tuple(data),), {"axis": int(axis)})


def split(data, indices_or_sections, axis=0):
    """Returns a ``TupleWrapper``; index it (``split(x, 2)[0]``) or call ``astuple()``."""
    if isinstance(indices_or_sections, (list, tuple)):
        indices_or_sections = tuple(int(i) for i in indices_or_sections)
        size = len(indices_or_sections) + 1
    else:
        indices_or_sections = int(indices_or_sections)
        size = indices_or_sections
    call = make_call("split", (data,), {"indices_or_sections": indices_or_sections, "axis": int(axis)})
    return TupleWrapper(call, size)


def strided_slice(data, begin, end, strides=None, axes=None, slice_mode="end"):
    return make_call("strided_slice", (data,), {
        "begin": tuple(begin), "end": tuple(end), "strides": None if strides is None else tuple(strides),
        "axes": None if axes is None else tuple(axes), "slice_mode": slice_mode})


def _reduce(name):
    def f(data, axis=None, keepdims=False, exclude=False):
        if isinstance(axis, int):
            axis = (axis,)
        return make_call(name, (data,), {"axis": None if axis is None else tuple(axis), "keepdims": bool(keepdims),
                                         "exclude": bool(exclude)})
    f.__name__ = name
    return f


mean = _reduce("mean")
sum = _reduce("sum")  # noqa: A001 - Relay spelling
max = _reduce("max")  # noqa: A001
min = _reduce("min")  # noqa: A001


def stack(data, axis=0):
    """``relay.stack([a, b], axis)``: join equally shaped tensors along a new axis."""
    return make_call("stack", (_as_tuple(data),), {"axis": int(axis)})


def take(data, indices, axis=None, batch_dims=0, mode="clip"):
    return make_call("take", (data, _as_expr(indices)), {"axis": None if axis is None else int(axis),
                                                         "batch_dims": int(batch_dims), "mode": mode})


def _arg_reduce(name):
    def f(data, axis=None, keepdims=False, exclude=False, select_last_index=False):
        if isinstance(axis, int):
            axis = (axis,)
        return make_call(name, (data,), {"axis": None if axis is None else tuple(axis), "keepdims": bool(keepdims),
                                         "exclude": bool(exclude), "select_last_index": bool(select_last_index)})
    f.__name__ = name
    return f


argmax = _arg_reduce("argmax")
argmin = _arg_reduce("argmin")


def broadcast_to(data, shape):
    """``relay.broadcast_to(x, shape)``: numpy broadcasting to a static shape."""
    return make_call("broadcast_to", (data,), {"shape": tuple(int(d) for d in shape)})


__all__ += ["tile", "where", "gather_nd", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


def tile(data, reps):
    """``relay.tile(x, reps)``: numpy tile."""
    return make_call("tile", (data,), {"reps": tuple(int(r) for r in reps)})


def where(condition, x, y):
    return make_call("where", (condition, x, y))


def gather_nd(data, indices, batch_dims=0, index_rank=None):
    """TVM layout: ``indices`` [M, Y...] index the first M axes of ``data``."""
    return make_call("gather_nd", (data, indices), {"batch_dims": int(batch_dims), "index_rank": index_rank})


equal = _binary("equal")
not_equal = _binary("not_equal")
less = _binary("less")
less_equal = _binary("less_equal")
greater = _binary("greater")
greater_equal = _binary("greater_equal")



__all__ += ["log", "erf", "power", "left_shift", "right_shift", "fixed_point_multiply", "zeros", "ones",
            "zeros_like", "ones_like", "einsum", "layout_transform", "variance"]

log = _unary("log")
erf = _unary("erf")
zeros_like = _unary("zeros_like")
ones_like = _unary("ones_like")
power = _binary("power")
left_shift = _binary("left_shift")
right_shift = _binary("right_shift")


def fixed_point_multiply(data, multiplier: int, shift: int):
    """round(data · multiplier · 2^(shift − 31)) on int32 (TVM's q_multiply_shift)."""
    return make_call("fixed_point_multiply", (data,), {"multiplier": int(multiplier), "shift": int(shift)})


def _shape_attr(shape):
    if isinstance(shape, int):
        return (shape,)
    return tuple(int(d) for d in shape)


def zeros(shape, dtype="float32"):
    return make_call("zeros", (), {"shape": _shape_attr(shape), "dtype": dtype})


def ones(shape, dtype="float32"):
    return make_call("ones", (), {"shape": _shape_attr(shape), "dtype": dtype})


def einsum(data, equation: str):
    """``relay.einsum([a, b], "ij,jk->ik")``."""
    return make_call("einsum", (_as_tuple(data),), {"equation": str(equation)})


def layout_transform(data, src_layout: str, dst_layout: str):
    return make_call("layout_transform", (data,), {"src_layout": src_layout, "dst_layout": dst_layout})


def variance(data, axis=None, keepdims=False, exclude=False, unbiased=False):
    """Mean of squared deviations from the mean over ``axis`` (``unbiased``: divide by N − 1)."""
    if isinstance(axis, int):
        axis = (axis,)
    m = mean(data, axis, keepdims=True, exclude=exclude)
    return make_call("variance", (data, m), {"axis": None if axis is None else tuple(axis),
                                             "keepdims": bool(keepdims), "exclude": bool(exclude),
                                             "unbiased": bool(unbiased)})


def get(op_name: str):
    """``relay.op.get("add")``."""
    return Op.get(op_name)


def __getattr__(name):
    # relay.op.nn / relay.op.op / relay.op.annotation load on first use (relay.nn imports this package).
    import importlib
    if name in ("nn", "op", "annotation", "contrib", "strategy", "op_attrs", "_make"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
