"""Foundation acceptance: the seed programs build, print, parse, type-check, optimise and evaluate correctly,
and building the same program twice is deterministic (text and structural hash, across processes too)."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import numpy as np

import byoc
from byoc import relay
from byoc.interpreter import bind_params
from byoc.ir.analysis import count_ops
from byoc.ir.verify import verify
from byoc.transform import FoldConstant, InferType, Sequential, SimplifyInference


def seed_conv_block():
    data = relay.var("data", shape=(1, 3, 224, 224), dtype="float32")
    weight = relay.var("weight", shape=(16, 3, 3, 3))
    gamma, beta, mean, var = (relay.var(n, shape=(16,)) for n in ("bn_gamma", "bn_beta", "bn_mean", "bn_var"))
    conv = relay.nn.conv2d(data, weight, kernel_size=(3, 3), channels=16, padding=(1, 1))
    bn = relay.nn.batch_norm(conv, gamma, beta, mean, var)[0]
    act = relay.nn.relu(bn)
    return relay.Function(relay.analysis.free_vars(act), act)


def _seed_inputs():
    rng = np.random.default_rng(2024)
    params = {
        "weight": rng.normal(0, 0.5, size=(16, 3, 3, 3)).astype("float32"),
        "bn_gamma": rng.uniform(0.5, 1.5, 16).astype("float32"),
        "bn_beta": rng.normal(size=16).astype("float32"),
        "bn_mean": rng.normal(size=16).astype("float32"),
        "bn_var": rng.uniform(0.5, 1.5, 16).astype("float32"),
    }
    return rng.normal(size=(1, 3, 224, 224)).astype("float32"), params


def _numpy_conv_block(x, p):
    """Plain numpy in float64: 3x3 convolution with zero padding 1, batch norm (eps 1e-5), relu."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    w = p["weight"].astype(np.float64)
    out = np.zeros((1, 16, 224, 224))
    for kh in range(3):
        for kw in range(3):
            out += np.einsum("nchw,oc->nohw", xp[:, :, kh:kh + 224, kw:kw + 224], w[:, :, kh, kw])
    c = (1, 16, 1, 1)
    inv_std = 1.0 / np.sqrt(p["bn_var"].astype(np.float64) + 1e-5)
    out = (out - p["bn_mean"].reshape(c)) * (inv_std * p["bn_gamma"]).reshape(c) + p["bn_beta"].reshape(c)
    return np.maximum(out, 0.0)


def test_seed_conv_block_end_to_end():
    func = seed_conv_block()
    assert [p.name_hint for p in func.params] == ["data", "weight", "bn_gamma", "bn_beta", "bn_mean", "bn_var"]
    mod = InferType()(byoc.IRModule.from_expr(func))
    verify(mod)
    assert mod["main"].checked_type.ret_type == relay.TensorType((1, 16, 224, 224), "float32")

    text = mod.astext()
    for fragment in ("def @main(%data: Tensor[(1, 3, 224, 224), float32]", "nn.conv2d(%data, %weight",
                     "channels=16", "kernel_size=[3, 3]", "nn.batch_norm(", ".0", "nn.relu("):
        assert fragment in text, fragment
    reparsed = InferType()(byoc.parse(text))
    assert reparsed.astext() == text

    x, params = _seed_inputs()
    expected = _numpy_conv_block(x, params)
    before = byoc.evaluate(mod, {"data": x}, params)[0]
    np.testing.assert_allclose(before, expected, rtol=1e-5, atol=1e-5)

    optimised = Sequential([InferType(), SimplifyInference(), FoldConstant()])(bind_params(mod, params))
    verify(optimised)
    assert count_ops(optimised["main"]) == {"nn.conv2d": 1, "multiply": 1, "add": 1, "nn.relu": 1}
    assert [p.name_hint for p in optimised["main"].params] == ["data"]
    after = byoc.evaluate(optimised, {"data": x})[0]
    np.testing.assert_array_equal(after, before)  # the passes replay the same float32 operations


def test_scalar_int64_program():
    x = relay.var("x", shape=(), dtype="int64")
    mod = byoc.IRModule.from_expr(x + 1)
    text = mod.astext()
    assert "add(%x, 1i64)" in text and "int64" in text
    typed = InferType()(mod)
    assert typed["main"].checked_type.ret_type == relay.TensorType((), "int64")
    for v in (41, -7, 2**40):
        out = byoc.evaluate(mod, {"x": np.array(v, "int64")})[0]
        assert out.dtype == np.int64 and out.shape == () and int(out) == v + 1
    assert byoc.parse(text).astext() == text


# ---------------------------------------------------------------------------------------------- determinism

def _let_closure_program():
    x = relay.var("x", shape=(4,), dtype="float32")
    c = relay.var("c", shape=(), dtype="bool")
    v = relay.var("v")
    y = relay.var("y", shape=(4,))
    f = relay.Function([y], relay.multiply(y, v))
    body = relay.Let(v, relay.exp(x), relay.If(c, relay.Call(f, [x]), relay.negative(v)))
    return relay.Function([c, x], body)


_FINGERPRINT = """
import hashlib, byoc
from byoc.transform import InferType
from tests.byoc.test_foundation import seed_conv_block, _let_closure_program
for build in (seed_conv_block, _let_closure_program):
    mod = InferType()(byoc.IRModule.from_expr(build()))
    print(hashlib.sha256(mod.astext().encode()).hexdigest(), byoc.structural_hash(mod))
"""


def _fingerprints() -> list[str]:
    out = []
    for build in (seed_conv_block, _let_closure_program):
        mod = InferType()(byoc.IRModule.from_expr(build()))
        out.append(f"{hashlib.sha256(mod.astext().encode()).hexdigest()} {byoc.structural_hash(mod)}")
    return out


def test_building_twice_gives_identical_text_and_hash():
    for build in (seed_conv_block, _let_closure_program):
        a, b = byoc.IRModule.from_expr(build()), byoc.IRModule.from_expr(build())
        assert a.astext() == b.astext()
        assert byoc.structural_hash(a) == byoc.structural_hash(b)
        assert byoc.structural_equal(a, b, map_free_vars=True)
    assert _fingerprints() == _fingerprints()


def test_fingerprints_do_not_depend_on_the_process_hash_seed():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONHASHSEED="12345", PYTHONPATH=root)
    result = subprocess.run([sys.executable, "-c", _FINGERPRINT], capture_output=True, text=True, env=env,
                            cwd=root, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == _fingerprints()
