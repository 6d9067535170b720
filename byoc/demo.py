"""``make demo``: the main job on a built-in model."""
from __future__ import annotations

import sys

import numpy as np


def seed_conv_block():
    from byoc import relay
    data = relay.var("data", shape=(1, 3, 224, 224))
    weight = relay.var("weight", shape=(16, 3, 3, 3))
    names = ("bn_gamma", "bn_beta", "bn_mean", "bn_var")
    gamma, beta, mean, var = (relay.var(n, shape=(16,)) for n in names)
    conv = relay.nn.conv2d(data, weight, kernel_size=(3, 3), channels=16, padding=(1, 1))
    bn = relay.nn.batch_norm(conv, gamma, beta, mean, var)[0]
    act = relay.nn.relu(bn)
    return relay.Function(relay.analysis.free_vars(act), act)


def main(argv=None) -> int:
    import byoc
    from byoc import relay
    rng = np.random.default_rng(0)
    mod = byoc.IRModule.from_expr(seed_conv_block())
    mod = relay.transform.InferType()(mod)
    print(mod.astext(show_meta_data=False))
    params = {
        "weight": rng.normal(size=(16, 3, 3, 3)).astype("float32"),
        "bn_gamma": rng.uniform(0.5, 1.5, 16).astype("float32"),
        "bn_beta": rng.normal(size=16).astype("float32"),
        "bn_mean": rng.normal(size=16).astype("float32"),
        "bn_var": rng.uniform(0.5, 1.5, 16).astype("float32"),
    }
    x = rng.normal(size=(1, 3, 224, 224)).astype("float32")
    ref = byoc.evaluate(mod, {"data": x}, params)[0]
    seq = relay.transform.Sequential([relay.transform.InferType(), relay.transform.SimplifyInference(),
                                      relay.transform.FoldConstant()])
    bound = byoc.interpreter.bind_params(mod, params)
    opt = seq(bound)
    print(opt.astext(show_meta_data=False))
    out = byoc.evaluate(opt, {"data": x})[0]
    print(f"output {out.shape} {out.dtype}; max |before − after passes| = {np.abs(out - ref).max():.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
