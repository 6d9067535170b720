"""TVM's own CMSIS-NN, Ethos-U and Arm Compute Library pattern tables, import lines changed and nothing else,
load and partition real models; partitioning never changes a result (bit for bit, reference interpreter).

The tables are read from a local copy of apache/tvm (``BYOC_TVM_TABLES``); without it these tests skip."""
from __future__ import annotations

from pathlib import Path

import pytest

from . import tvm_tables
from .table_offload import KINDS, measure
from tests.shared_models import PERSON_DETECT as PERSON_DETECT_NAME, SHARED_MODELS

pytestmark = pytest.mark.skipif(not tvm_tables.available(),
                                reason=f"TVM's table files are not at {tvm_tables.TVM_TABLES}")

MODELS = Path(__file__).resolve().parents[2] / "data" / "mlcommons_tiny"
PERSON_DETECT = SHARED_MODELS / PERSON_DETECT_NAME



def test_only_import_lines_are_changed():
    for f in tvm_tables.FILES:
        src = (tvm_tables.TVM_TABLES / f).read_text()
        changed = tvm_tables.changed_lines(src, tvm_tables.rewrite_imports(src))
        assert changed, f
        for old, new in changed:
            assert old.lstrip().startswith(("import ", "from ")), (f, old)
            assert any(m in new for m in ("byoc", "ethosu_util", "ethosu_backend", "numpy1_dtype")), (f, new)


def test_tables_load_and_register(tables):
    from byoc.relay.op.contrib import get_pattern_table
    assert {"tvm_cmsisnn", "tvm_ethosu", "tvm_arm_compute_lib"} <= set(tables)
    for target in ("cmsis-nn", "ethos-u"):
        names = [e[0] for e in get_pattern_table(target)]
        assert names and all(n.startswith(target + ".") for n in names)
    # ACL registers its op predicates as target.arm_compute_lib attributes
    from byoc.ops.registry import get_op_attr
    assert get_op_attr("nn.conv2d", "target.arm_compute_lib") is not None


def test_partition_for_tables_on_kws(tables):
    results = {r.table: r for r in measure(MODELS / "kws_ref_model.tflite", tables)}
    assert set(results) == {"cmsis-nn", "ethos-u", "arm_compute_lib"}
    for r in results.values():
        assert not r.error, r.error
        assert r.identical is True, r.table
    # CMSIS-NN's checks do not depend on the weight layout: every conv, depthwise conv and FC is offloaded, and
    # the softmax (TVM's dequantize → nn.softmax → quantize form)
    cm = results["cmsis-nn"]
    assert cm.offloaded == cm.total and sum(cm.total[k] for k in KINDS) == 10 and cm.total["softmax"] == 1
    # the FC layer is offloaded by all three (its form matches TVM's importer)
    assert all(r.offloaded["dense"] == 1 for r in results.values())


@pytest.mark.skipif(not PERSON_DETECT.is_file(), reason="shared models are not present")
def test_partition_for_tables_on_person_detect(tables):
    results = {r.table: r for r in measure(PERSON_DETECT, tables)}
    for r in results.values():
        assert not r.error and r.identical is True, r.table
    cm = results["cmsis-nn"]
    assert cm.offloaded == cm.total and cm.total["conv2d"] + cm.total["depthwise"] == 28


def test_ethosu_elementwise_check_error_propagates_with_entry_and_op(tables, monkeypatch):
    """Ethos-U's binary-elementwise check calls np.dtype() on an object whose .dtype is a string, which
    NumPy 2 refuses (the loader gives the table NumPy 1's np.dtype, numpy1_dtype.py; here it gets NumPy 2's):
    the error reaches the caller, naming the entry and the op (it used to be swallowed)."""
    import numpy as np
    monkeypatch.setattr(tables["tvm_ethosu"], "np", np)
    from byoc import relay
    from byoc.errors import PatternCheckError
    if int(np.__version__.split(".")[0]) < 2:
        pytest.skip("NumPy < 2 accepts the table's np.dtype() call")
    mod, params = relay.frontend.from_tflite((MODELS / "pretrainedResnet_quant.tflite").read_bytes())
    with pytest.raises(PatternCheckError, match=r"ethos-u\.add check raised ValueError on qnn\.add") as info:
        tables["tvm_ethosu"].partition_for_ethosu(mod, params)
    assert isinstance(info.value.__cause__, ValueError)


def test_ethosu_offloads_every_conv_of_kws_in_tvms_layouts(tables):
    """The importer emits TVM's kernel layouts (conv HWIO, depthwise HWOI [KH, KW, C, 1]), so Ethos-U's
    patterns match and its checks accept every convolution of kws; partitioning keeps every bit."""
    import byoc
    from byoc import relay
    from byoc.ir.traversal import post_order
    from .table_offload import count_kinds, random_inputs
    mod, params = relay.frontend.from_tflite((MODELS / "kws_ref_model.tflite").read_bytes())
    convs = [n for n in post_order(mod["main"].body) if getattr(getattr(n, "op", None), "name", "") == "qnn.conv2d"]
    assert {(n.attrs.groups > 1, n.attrs.kernel_layout) for n in convs} == {(False, "HWIO"), (True, "HWOI")}
    x = random_inputs(mod)
    ref = byoc.evaluate(mod, x)
    out = tables["tvm_ethosu"].partition_for_ethosu(mod, params)
    total, offloaded = count_kinds(out)
    assert offloaded == total and total["conv2d"] == 5 and total["depthwise"] == 4
    assert [a.tobytes() for a in byoc.evaluate(out, x)] == [a.tobytes() for a in ref]
