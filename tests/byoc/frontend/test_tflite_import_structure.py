"""from_tflite structure and diagnostics: TVM-style op chains, names and spans, determinism, and ModelError /
UnsupportedOpsError on corrupt, inconsistent or unsupported files (checked against the file with the ``tflite``
package's own accessors, independent of the importer's reader).
"""
from __future__ import annotations

import numpy as np
import pytest
import tflite

import byoc
from byoc.errors import ModelError, UnsupportedOpsError
from byoc.frontend import from_tflite
from byoc.ir.expr import Call, Constant, Op, Var
from byoc.ir.traversal import post_order, users_map
from byoc.testing import TFLiteWriter

from tests.shared_models import committed_model
from tflite_oracles import model_path

MOBILENET = "mobilenet_v2_quantized_1x3x224x224.tflite"


def _calls(mod) -> list[Call]:
    return [n for n in post_order(mod["main"].body) if isinstance(n, Call) and isinstance(n.op, Op)]


def _tflite_ops(data: bytes) -> list[tuple[str, object]]:
    """(builtin name, operator) of every operator, read with the generated tflite accessors."""
    m = tflite.Model.GetRootAs(data, 0)
    names = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
    sg = m.Subgraphs(0)
    out = []
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        code = m.OperatorCodes(op.OpcodeIndex())
        out.append((names[max(code.BuiltinCode(), code.DeprecatedBuiltinCode())], op))
    return out


def test_mobilenet_v2_conv_chains():
    data = model_path(MOBILENET).read_bytes()
    mod, _ = from_tflite(data)
    calls = _calls(mod)
    users = users_map(mod["main"].body)
    tops = _tflite_ops(data)
    n_conv = sum(name in ("CONV_2D", "DEPTHWISE_CONV_2D") for name, _ in tops)
    n_pad = sum(name == "PAD" for name, _ in tops)
    convs = [c for c in calls if c.op.name == "qnn.conv2d"]
    assert len(convs) == n_conv == 52
    pads_into_conv = 0
    for conv in convs:
        if isinstance(conv.args[0], Call) and conv.args[0].op.name == "nn.pad":
            pads_into_conv += 1
            assert conv.attrs.padding == (0, 0, 0, 0)
        (bias,) = users[id(conv)]
        assert bias.op.name == "nn.bias_add" and bias.attrs.axis == 3
        (req,) = users[id(bias)]
        assert req.op.name == "qnn.requantize" and req.attrs.rounding == "TFLITE"
        assert req.args[1].data.dtype == np.float64  # exact double(s_in)·double(s_w) products
        following = users[id(req)]
        if len(following) == 1 and following[0].op.name == "clip":
            assert following[0].attrs.a_min > -128  # a RELU6 clamp, not the full range
    # The model's explicit PADs all feed VALID convolutions: nn.pad → qnn.conv2d chains.
    assert pads_into_conv == n_pad == 18
    text = mod.astext()
    order = [text.index(s) for s in ("nn.pad(", "qnn.conv2d(", "nn.bias_add(", "qnn.requantize(", "clip(")]
    assert order == sorted(order)


def test_names_and_spans_follow_tflite_tensors():
    data = model_path("person_detect.tflite").read_bytes()
    mod, _ = from_tflite(data)
    m = tflite.Model.GetRootAs(data, 0)
    sg = m.Subgraphs(0)
    tensor_names = [sg.Tensors(i).Name().decode() for i in range(sg.TensorsLength())]
    (param,) = mod["main"].params
    assert param.name_hint == tensor_names[sg.Inputs(0)] == "input"
    spans = set()
    for node in post_order(mod["main"].body):
        if isinstance(node, (Call, Constant, Var)):
            assert node.span is not None, node
            spans.add(node.span.source)
    outputs = {tensor_names[op.Outputs(0)] for _, op in _tflite_ops(data)}
    weights = {tensor_names[op.Inputs(1)] for name, op in _tflite_ops(data) if "CONV" in name}
    assert outputs <= spans and weights <= spans
    assert spans <= set(tensor_names)


def test_unnamed_tensors_get_stable_generated_names():
    w = TFLiteWriter()
    x = w.input("", (1, 4, 4, 2), "int8", scale=0.1, zero_point=0)
    y = w.max_pool2d(x, (2, 2), (2, 2), name="")
    w.output(y)
    data = w.finish()
    mod1, _ = from_tflite(data)
    mod2, _ = from_tflite(data)
    assert mod1["main"].params[0].name_hint == "t0"
    (pool,) = _calls(mod1)
    assert pool.span.source == f"t{1}"
    assert byoc.structural_equal(mod1["main"], mod2["main"])
    assert mod1.astext() == mod2.astext()


def test_unsupported_ops_reported_together():
    w = TFLiteWriter()
    x = w.input("x", (4,), "float32")
    a = w.tensor("a", (4,), "float32")
    b = w.tensor("b", (4,), "float32")
    c = w.tensor("c", (4,), "float32")
    w.op("EXP", [x], [a])
    w.op("SIN", [a], [b])
    w.op("EXP", [b], [c])
    w.output(c)
    with pytest.raises(UnsupportedOpsError) as info:
        from_tflite(w.finish())
    msg = str(info.value)
    assert "EXP ×2 (operators 0, 2)" in msg and "SIN ×1 (operator 1)" in msg
    assert info.value.unsupported == {"EXP": (0, 2), "SIN": (1,)}


def _small_model() -> bytes:
    rng = np.random.default_rng(0)
    w = TFLiteWriter()
    x = w.input("x", (1, 5, 5, 2), "int8", scale=0.05, zero_point=1)
    y = w.conv2d(x, rng.integers(-127, 128, (3, 3, 3, 2)).astype(np.int8), rng.integers(-100, 100, 3),
                 weight_scale=[0.01, 0.02, 0.03], out_scale=0.1, out_zp=0, name="conv")
    w.output(y)
    return w.finish()


def _field_pos(table, slot: int) -> int:
    return table._tab.Pos + table._tab.Offset(4 + 2 * slot)


@pytest.mark.parametrize("cut", [0, 3, 7, 20, 100, -1])
def test_truncated_files_raise_model_error(cut):
    data = _small_model()
    with pytest.raises(ModelError):
        from_tflite(data[:cut] if cut >= 0 else data[:len(data) // 2])


def test_tensor_index_out_of_range_names_operator():
    data = bytearray(_small_model())
    op = tflite.Model.GetRootAs(data, 0).Subgraphs(0).Operators(0)
    pos = op._tab.Vector(op._tab.Offset(6))  # inputs vector of operator 0
    data[pos:pos + 4] = (999).to_bytes(4, "little")
    with pytest.raises(ModelError, match=r"operator 0.*tensor index 999"):
        from_tflite(bytes(data))


def test_shape_that_disagrees_with_buffer():
    data = bytearray(_small_model())
    sg = tflite.Model.GetRootAs(data, 0).Subgraphs(0)
    weight = sg.Tensors(sg.Operators(0).Inputs(1))
    pos = weight._tab.Vector(weight._tab.Offset(4))  # shape[0] of the filter
    data[pos:pos + 4] = (4).to_bytes(4, "little")
    with pytest.raises(ModelError, match=r"tensor 1 'conv_weight_0' has shape \[4, 3, 3, 2\].*holds 54 bytes"):
        from_tflite(bytes(data))


def test_absurd_shape_is_rejected_without_allocating():
    data = bytearray(_small_model())
    sg = tflite.Model.GetRootAs(data, 0).Subgraphs(0)
    out = sg.Tensors(sg.Outputs(0))
    pos = out._tab.Vector(out._tab.Offset(4))
    data[pos:pos + 4] = (2**30).to_bytes(4, "little")
    with pytest.raises(ModelError, match="'conv'"):
        from_tflite(bytes(data))


def test_output_shape_inconsistent_with_op():
    rng = np.random.default_rng(1)
    w = TFLiteWriter()
    x = w.input("x", (1, 5, 5, 2), "int8", scale=0.05, zero_point=1)
    y = w.conv2d(x, rng.integers(-127, 128, (3, 3, 3, 2)).astype(np.int8), None, weight_scale=0.01,
                 out_scale=0.1, out_zp=0, padding="VALID", out_shape=(1, 5, 5, 3), name="conv")
    w.output(y)
    with pytest.raises(ModelError, match=r"operator 0 \(CONV_2D\).*'conv' is declared Tensor\[\(1, 5, 5, 3\)"):
        from_tflite(w.finish())


def test_filter_quantized_dimension_out_of_range_is_strict():
    data = bytearray(committed_model("str_ww_ref_model.tflite").read_bytes())
    sg = tflite.Model.GetRootAs(data, 0).Subgraphs(0)
    q = sg.Tensors(sg.Operators(0).Inputs(1)).Quantization()  # a per-channel depthwise filter (qdim 3)
    pos = _field_pos(q, 6)
    data[pos:pos + 4] = (5).to_bytes(4, "little")
    with pytest.raises(ModelError, match=r"operator 0 \(DEPTHWISE_CONV_2D\).*quantized_dimension 5"):
        from_tflite(bytes(data))


def test_bad_arguments():
    with pytest.raises(ModelError, match="semantics"):
        from_tflite(_small_model(), semantics="tvm")
    with pytest.raises(ModelError, match="cannot read"):
        from_tflite("/nonexistent/model.tflite")
    with pytest.raises(ModelError):
        from_tflite(b"\x00" * 64)
    with pytest.raises(ModelError):
        from_tflite(object())


def test_accepts_path_bytes_and_tflite_model_objects():
    path = committed_model("kws_ref_model.tflite")
    data = path.read_bytes()
    texts = {from_tflite(src)[0].astext() for src in (path, str(path), data, tflite.Model.GetRootAs(data, 0))}
    assert len(texts) == 1


def test_missing_ir_ops_are_reported_as_unsupported(monkeypatch):
    import byoc.frontend.tflite as frontend
    registered = [n for n in frontend.list_ops() if n != "qnn.dense"]
    monkeypatch.setattr(frontend, "list_ops", lambda: registered)
    data = committed_model("ad01_int8.tflite").read_bytes()  # an autoencoder of FULLY_CONNECTED layers
    count = sum(name == "FULLY_CONNECTED" for name, _ in _tflite_ops(data))
    assert count > 1
    with pytest.raises(UnsupportedOpsError, match=rf"FULLY_CONNECTED \(quantized\) ×{count} .*qnn\.dense"):
        from_tflite(data)
