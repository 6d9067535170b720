"""byoc.parse(mod.astext()) is structurally equal to mod, for every construct the project can build."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.ir.expr import Call, Constant, Function, Var
from byoc.ir.module import IRModule
from byoc.ir.traversal import post_order
from byoc.ops.registry import get_op_def, list_ops
from byoc.text import parse_expr
from tests.shared_models import COMMITTED_NAMES, committed_model, shared_model, shared_params

from . import modules


def assert_round_trip(mod: IRModule) -> str:
    text = mod.astext()
    parsed = byoc.parse(text)
    assert byoc.structural_equal(parsed, mod), "round trip changed the module:\n" + text
    again = parsed.astext()
    typed = any(f._checked_type is not None for _, f in mod.items())
    if typed:
        again = relay.transform.InferType()(parsed).astext()
    assert again == text, "printing the parsed module gave different text"
    return text


@pytest.mark.parametrize("name", sorted(modules.ALL))
def test_round_trip(name):
    assert_round_trip(modules.ALL[name]())


@pytest.mark.parametrize("name", modules.TYPED)
def test_round_trip_typed(name):
    mod = relay.transform.InferType()(modules.ALL[name]())
    text = assert_round_trip(mod)
    assert "/* ty=" in text


def _constants(mod):
    return [n for _, f in mod.items() for n in post_order(f) if isinstance(n, Constant)]


def test_constant_bits_survive():
    """Independent of structural_equal: every constant's dtype, shape and raw bytes come back identical."""
    mod = modules.constants_of_every_dtype()
    parsed = byoc.parse(mod.astext())
    before, after = _constants(mod), _constants(parsed)
    assert len(before) == len(after) == 32
    for a, b in zip(before, after):
        assert a.data.dtype == b.data.dtype and a.data.shape == b.data.shape
        assert a.data.tobytes() == b.data.tobytes()


def test_shared_scalar_stays_shared():
    mod = modules.shared_constants()
    parsed = byoc.parse(mod.astext())
    consts = _constants(parsed)
    # shared 1.5, copy 1.5, copy 1.5, shared tensor w: four distinct objects (post_order dedups by identity)
    assert len(consts) == 4


def test_evaluation_agrees_after_round_trip():
    mod = modules.qnn_conv_chain()
    parsed = byoc.parse(mod.astext())
    x = np.random.default_rng(3).integers(-128, 128, (1, 9, 9, 3), dtype=np.int8)
    (want,) = byoc.evaluate(mod, {"x": x})
    (got,) = byoc.evaluate(parsed, {"x": x})
    assert want.dtype == got.dtype and np.array_equal(want, got)


def test_tvm_layout_of_a_quantized_chain():
    """The spelling follows TVM: bound %n lines, inline scalar literals with suffixes, meta tensors."""
    text = relay.transform.InferType()(modules.qnn_conv_chain()).astext()
    lines = text.splitlines()
    assert lines[0] == '#[version = "0.0.5"]'
    assert lines[1] == "def @main(%x: Tensor[(1, 9, 9, 3), int8]) -> Tensor[(1, 4, 4, 8), int8] {"
    assert lines[2].startswith("  %0 = nn.pad(%x, -14i8 /* ty=int8 */, pad_width=[[0, 0], [0, 1], [0, 1], [0, 0]])")
    assert lines[2].endswith(" /* ty=Tensor[(1, 10, 10, 3), int8] */;")
    assert "%1 = qnn.conv2d(%0, meta[relay.Constant][0] /* ty=Tensor[(3, 3, 3, 8), int8] */, -14 /* ty=int32 */" in text
    assert "strides=[2, 2]" in text and 'data_layout="NHWC"' in text and "0.5f /* ty=float32 */" in text
    assert lines[6] == "  clip(%3, a_min=-128.0, a_max=100.0) /* ty=Tensor[(1, 4, 4, 8), int8] */"
    assert lines[7] == "}" and lines[8] == "#[metadata]"


def test_function_attributes_printed_like_tvm():
    text = modules.partitioned().astext()
    assert ('def @tvmgen_default_npu_main_0(%npu_0_i0: Tensor[(1, 4, 4, 8), int8], Inline=1, Compiler="npu", '
            'global_symbol="tvmgen_default_npu_main_0", Primitive=1) -> Tensor[(1, 4, 4, 8), int8] {') in text
    assert ('%2 = fn (%FunctionVar_0_0: Tensor[(1, 4, 4, 8), int8], Composite="npu.qnn_conv2d", '
            'PartitionedFromPattern="qnn.conv2d_nn.bias_add_qnn.requantize_") {') in text
    assert "@tvmgen_default_npu_main_0(%x)" in text
    assert text.index("def @main") < text.index("def @tvmgen")  # main first


def test_if_places_shared_values_before_it():
    text = modules.if_sharing().astext()
    body = text.splitlines()
    s_line = next(i for i, line in enumerate(body) if "add(%x, %x)" in line)
    if_line = next(i for i, line in enumerate(body) if "if (%c)" in line)
    only_true = next(i for i, line in enumerate(body) if "multiply(%x, 3.0f)" in line)
    assert s_line < if_line < only_true  # shared value outside, the one-branch value inside the branch


def test_names_are_unique_and_deterministic():
    mod = modules.colliding_names()
    text = mod.astext()
    header = text.splitlines()[1]
    for name in ("%x:", "%x_1:", "%x_2:", "%v0:", "%conv_weights_0:", "%x_1_1:", "%let:", "%u)"):
        assert name in header, name
    assert modules.colliding_names().astext() == text  # a fresh build prints identically


def test_let_chain_prints_flat():
    text = modules.lets_and_closures().astext()
    assert "let %f = fn (%a: Tensor[(4), float32]) {" in text
    assert "let %y: Tensor[(4), float32] = %f(%x);" in text


def test_parse_bare_expression_and_function():
    expr = parse_expr("free_var %x: Tensor[(2), int8];\n%0 = add(%x, 1i8);\nnn.relu(%0)")
    assert isinstance(expr, Call) and expr.op.name == "nn.relu"
    x = expr.args[0].args[0]
    assert isinstance(x, Var) and x.name_hint == "x" and x.type_annotation == relay.TensorType((2,), "int8")
    mod = byoc.parse("fn (%a: float32, %b: float32) -> float32 { multiply(%a, %b) }")
    assert isinstance(mod["main"], Function) and len(mod["main"].params) == 2
    mod2 = byoc.parse("free_var %x: Tensor[(2), int8];\nadd(%x, %x)")  # free vars become main's parameters
    assert [p.name_hint for p in mod2["main"].params] == ["x"]


def test_expr_astext_round_trips():
    x = relay.var("x", shape=(3,), dtype="int16")
    e = relay.Let(relay.var("t"), relay.Tuple([x, relay.const(3, "int16")]),
                  relay.multiply(x, relay.const(np.arange(3, dtype=np.int16))))
    back = parse_expr(e.astext())
    assert byoc.structural_equal(back, e, map_free_vars=True)


# ------------------------------------------------------------------------------------------ every op's attrs

def _variants(value):
    """Other values of the same kind as ``value`` (attrs validation may reject some)."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1, -7]
    if isinstance(value, float):
        return [0.1, -2.5e-9, float("inf"), float("-inf")]
    if isinstance(value, str):
        return ["NHWC", "int8", "", 'quote"and\\slash']
    if isinstance(value, tuple):
        if value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return [tuple(v + 1 for v in value), ()]
        return [(1, 2), ((1, 2), (3, 4))]
    if value is None:
        return [3, (1, 2), "NHWC"]
    return []


def _attr_instances(attrs_type):
    base = attrs_type()
    yield base
    for f in dataclasses.fields(attrs_type):
        for v in _variants(getattr(base, f.name)):
            try:
                yield attrs_type(**{f.name: v})
            except Exception:  # noqa: BLE001 - the op's own validation rejected the variant
                continue


@pytest.mark.parametrize("op_name", list_ops())
def test_every_registered_op_and_its_attrs_round_trip(op_name):
    op_def = get_op_def(op_name)
    try:
        instances = list(_attr_instances(op_def.attrs_type))
    except TypeError:
        pytest.fail(f"{op_name}: attrs {op_def.attrs_type.__name__} need a default for every field")
    args = [relay.var(f"a{i}", shape=(2,)) for i in range(op_def.num_inputs)]
    calls = [Call(op_def.op, tuple(args), attrs) for attrs in instances]
    mod = IRModule.from_expr(relay.Function(args, relay.Tuple(calls)))
    parsed = byoc.parse(mod.astext())
    assert byoc.structural_equal(parsed, mod), mod.astext()
    got = [c.attrs for c in parsed["main"].body.fields]
    for want, have in zip(instances, got):
        assert type(want) is type(have)
        for f in dataclasses.fields(want):  # same values and the same Python kinds (1 is not True)
            a, b = getattr(want, f.name), getattr(have, f.name)
            assert a == b and type(a) is type(b), (op_name, f.name, a, b)


# --------------------------------------------------------------------------- modules from the other packages

@pytest.mark.parametrize("model", shared_params() + list(COMMITTED_NAMES))
def test_real_models_and_their_partitions_round_trip(model):
    path = committed_model(model) if model in COMMITTED_NAMES else shared_model(model)
    from byoc.frontend import from_tflite
    mod, params = from_tflite(str(path))
    assert_round_trip(relay.transform.InferType()(mod))
    partitioned = byoc.partition_for("npu", mod, params)
    assert_round_trip(relay.transform.InferType()(partitioned))


def test_equal_attrs_of_different_kinds_keep_their_kinds():
    x = relay.var("x", shape=(2,), dtype="int8")
    a = relay.clip(x, -128, 127)          # ints
    b = relay.clip(a, -128.0, 127.0)      # equal floats
    parsed = byoc.parse(IRModule.from_expr(relay.Function([x], b)).astext())
    outer = parsed["main"].body
    assert type(outer.attrs.a_min) is float and type(outer.args[0].attrs.a_min) is int


def test_reads_tvm_style_text_written_by_hand():
    """Text in TVM's own spelling (comments, span annotations, ret types, inline tails) means what it says."""
    text = """#[version = "0.0.5"]
def @main(%data: Tensor[(1, 3, 8, 8), float32], %weight: Tensor[(4, 3, 3, 3), float32]) -> Tensor[(1, 4, 8, 8), float32] {
  %0 = nn.conv2d(%data, %weight, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]) /* ty=Tensor[(1, 4, 8, 8), float32] */;
  %1 = nn.relu(%0) /* ty=Tensor[(1, 4, 8, 8), float32] */ /* span=conv1/relu:0:0 */;
  %2 = (%1, %0);
  %3 = %2.0;  // the relu
  add(%3, 1f /* ty=float32 */) /* ty=Tensor[(1, 4, 8, 8), float32] */
}
"""
    data = relay.var("data", shape=(1, 3, 8, 8))
    weight = relay.var("weight", shape=(4, 3, 3, 3))
    conv = relay.nn.conv2d(data, weight, padding=(1, 1, 1, 1), channels=4, kernel_size=(3, 3))
    t = relay.Tuple([relay.nn.relu(conv), conv])
    body = relay.add(relay.TupleGetItem(t, 0), relay.const(1.0, "float32"))
    want = IRModule.from_expr(relay.Function([data, weight], body, ret_type=relay.TensorType((1, 4, 8, 8))))
    assert byoc.structural_equal(byoc.parse(text), want)
