"""Shared helpers of the TFLite importer tests: run a model in LiteRT (BUILTIN_REF), TFLite Micro, and our IR.

The reference runtimes are the oracles; nothing here computes expected values itself.
"""
from __future__ import annotations

import numpy as np

import byoc
from tests.shared_models import shared_model as model_path  # noqa: F401  (skips when the model is absent)


def litert_run(data: bytes, inputs: list[np.ndarray]) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
    """Outputs and every named tensor LiteRT's reference kernels expose (preserve_all_tensors)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    it = Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                     experimental_preserve_all_tensors=True)
    it.allocate_tensors()
    for d, v in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], v)
    it.invoke()
    outs = [it.get_tensor(d["index"]).copy() for d in it.get_output_details()]
    tensors = {}
    for d in it.get_tensor_details():
        try:
            tensors[d["name"]] = it.get_tensor(d["index"]).copy()
        except ValueError:  # scratch tensors without data
            pass
    return outs, tensors


def tflm_run(data: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    import tflite
    from tflite_micro import runtime
    it = runtime.Interpreter.from_bytes(data)
    for i, v in enumerate(inputs):
        it.set_input(v, i)
    it.invoke()
    count = tflite.Model.GetRootAs(data, 0).Subgraphs(0).OutputsLength()
    return [np.array(it.get_output(i)) for i in range(count)]


def ir_run(mod, inputs: list[np.ndarray]) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
    """Our interpreter's outputs and, per span (TFLite tensor name), the value of the last call carrying it."""
    names = [p.name_hint for p in mod["main"].params]
    taps: dict[str, object] = {}

    def tap(call, value):
        if call.span is not None:
            taps[call.span.source] = value

    outs = byoc.evaluate(mod, dict(zip(names, inputs)), tap=tap)
    return outs, taps


def random_inputs(mod, rng: np.random.Generator) -> list[np.ndarray]:
    out = []
    for p in mod["main"].params:
        t = p.type_annotation
        if t.dtype in ("int8", "uint8", "int16"):
            info = np.iinfo(t.dtype)
            out.append(rng.integers(info.min, info.max + 1, t.shape).astype(t.dtype))
        else:
            out.append(rng.standard_normal(t.shape).astype(t.dtype))
    return out


def compare_tensors(ref: dict[str, np.ndarray], taps: dict[str, object]) -> tuple[int, dict[str, int]]:
    """(tensors compared, {name: mismatching elements}) over names both sides have (tuple taps skipped)."""
    compared, bad = 0, {}
    for name, value in taps.items():
        if name not in ref or isinstance(value, tuple):
            continue
        v = np.asarray(value)
        r = ref[name]
        compared += 1
        if v.shape != r.shape or v.dtype != r.dtype:
            bad[name] = -1
        elif (v != r).any():
            bad[name] = int((v != r).sum())
    return compared, bad


def patch_bias_quantized_dimension(data: bytes) -> tuple[bytes, int]:
    """person_detect's test copy: set quantized_dimension to 0 on rank-1 tensors whose value is out of range.

    Located with the ``tflite`` package's generated accessors (independent of the importer's reader).
    """
    import tflite
    buf = bytearray(data)
    model = tflite.Model.GetRootAs(buf, 0)
    sg = model.Subgraphs(0)
    patched = 0
    for i in range(sg.TensorsLength()):
        t = sg.Tensors(i)
        q = t.Quantization()
        if q is None or t.ShapeLength() != 1 or q.QuantizedDimension() < 1:
            continue
        o = q._tab.Offset(16)  # vtable slot 6: quantized_dimension
        pos = q._tab.Pos + o
        buf[pos:pos + 4] = (0).to_bytes(4, "little")
        patched += 1
    return bytes(buf), patched


def check_against_litert(data: bytes, rng, inputs=None, exact_float: bool = True, samples: int = 2,
                         cpu: bool = True) -> None:
    """``data`` through byoc.evaluate (and the LLVM build unless ``cpu`` is False) vs LiteRT BUILTIN_REF, every
    output, ``samples`` times; floats exactly unless ``exact_float`` is False (then within 2e-6: transcendental
    float ops, and float sums the CPU adds sequentially where numpy adds pairwise)."""
    mod, _ = byoc.frontend.from_tflite(data)
    exe = byoc.build(mod, target="llvm") if cpu else None
    names = [p.name_hint for p in mod["main"].params]
    for _ in range(samples):
        ins = inputs(rng) if inputs else random_inputs(mod, rng)
        feed = dict(zip(names, ins))
        refs, _ = litert_run(data, ins)
        ours = byoc.evaluate(mod, feed)
        got = exe.run(feed) if exe is not None else ours
        assert len(ours) == len(refs) == len(got)
        for ref, o, g in zip(refs, ours, got):
            assert o.shape == ref.shape and o.dtype == ref.dtype, (o.shape, ref.shape, o.dtype, ref.dtype)
            assert g.shape == o.shape and g.dtype == o.dtype
            if ref.dtype.kind == "f" and not exact_float:
                np.testing.assert_allclose(o, ref, rtol=2e-6, atol=2e-6)
                np.testing.assert_allclose(g, o, rtol=2e-6, atol=2e-6)
            else:
                assert np.array_equal(o, ref), f"{int((o != ref).sum())}/{ref.size} mismatches vs LiteRT"
                assert np.array_equal(g, o), f"{int((g != o).sum())}/{ref.size} CPU mismatches"
