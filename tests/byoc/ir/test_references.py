"""References (RefCreate / RefRead / RefWrite): nodes, typing, text, AnnotateTarget, the interpreter's cells,
and the passes that must not treat them as pure dataflow. Expected values are written out by hand or computed
with numpy, never by the code under test."""
from __future__ import annotations

import numpy as np
import pytest

import byoc as tvm
from byoc import relay
from byoc.errors import ByocError, CodegenError, ExecutionError, ParseError, TypeInferenceError
from byoc.ir.traversal import children, post_order
from byoc.relay import transform
from byoc.text.parser import parse, parse_expr

F32 = relay.TensorType((2,), "float32")


def _typed(body, params):
    return transform.InferType()(tvm.IRModule.from_expr(relay.Function(params, body)))


def _lets(*bindings_and_body):
    """let v1 = e1; let v2 = e2; ...; body  (bindings as (var, value) pairs, the body last)."""
    *bindings, body = bindings_and_body
    for var, value in reversed(bindings):
        body = relay.Let(var, value, body)
    return body


# ------------------------------------------------------------------------------------------- IR and typing

def test_nodes_are_exported_where_tvm_has_them():
    assert relay.RefCreate is relay.expr.RefCreate is tvm.ir.RefCreate
    assert relay.RefRead is relay.expr.RefRead and relay.RefWrite is relay.expr.RefWrite
    assert relay.RefType is relay.RelayRefType
    c = relay.const(1.0)
    a, b = relay.RefCreate(c), relay.RefCreate(c)
    assert a != b and len({a, b}) == 2            # identity-hashed, like every expression node
    with pytest.raises(Exception):
        a.value = c                               # frozen
    r = relay.RefWrite(a, c)
    assert children(r) == (a, c) and children(relay.RefRead(a)) == (a,) and children(a) == (c,)
    with pytest.raises(ByocError, match="RefWrite.value must be an Expr"):
        relay.RefWrite(a, 1.0)


def test_typing_rules():
    x = relay.var("x", F32)
    r = relay.RefCreate(x)
    mod = _typed(relay.Tuple([r, relay.RefRead(r), relay.RefWrite(r, x)]), [x])
    assert mod["main"].ret_type == relay.TupleType([relay.RefType(F32), F32, relay.TupleType([])])
    with pytest.raises(TypeInferenceError, match="the cell holds"):
        _typed(relay.RefWrite(r, relay.cast(x, "int32")), [x])
    with pytest.raises(TypeInferenceError, match="expected a reference"):
        _typed(relay.RefRead(x), [x])
    # TVM's local spelling: types an expression with free variables in place
    s = relay.var("s", "int8")
    cell = relay.RefCreate(s)
    assert transform.InferTypeLocal(cell) == relay.RefType(relay.scalar_type("int8")) == cell.checked_type
    assert transform.InferTypeLocal(relay.RefWrite(cell, s)) == relay.TupleType([])


def test_structural_equality_and_hash():
    def build(kind):
        x = relay.var("x", F32)
        r = relay.RefCreate(x)
        return relay.Function([x], relay.Tuple([relay.RefWrite(r, x), kind(r)]))
    a, b = build(relay.RefRead), build(relay.RefRead)
    assert tvm.ir.structural_equal(a, b) and tvm.ir.structural_hash(a) == tvm.ir.structural_hash(b)
    c = build(lambda r: relay.RefCreate(r))
    assert not tvm.ir.structural_equal(a, c)
    # a cell used twice is not two equal cells
    x = relay.var("x", F32)
    one = relay.RefCreate(x)
    shared = relay.Function([x], relay.Tuple([relay.RefRead(one), relay.RefRead(one)]))
    y = relay.var("y", F32)
    split = relay.Function([y], relay.Tuple([relay.RefRead(relay.RefCreate(y)), relay.RefRead(relay.RefCreate(y))]))
    assert not tvm.ir.structural_equal(shared, split)


def test_deep_reference_chain_needs_no_recursion():
    # the expression is deep, its types are not (a cell of a cell of ... would nest the type too)
    e = relay.const(np.float32(-2.5))
    for _ in range(20000):
        e = relay.negative(relay.RefRead(relay.RefCreate(e)))
    mod = transform.InferType()(tvm.IRModule.from_expr(relay.Function([], e)))
    assert mod["main"].ret_type == relay.TensorType((), "float32")
    assert len(post_order(e)) == 60001
    np.testing.assert_array_equal(tvm.evaluate(mod)[0], np.float32(-2.5))  # an even number of negations
    text = mod.astext()
    assert tvm.ir.structural_equal(transform.InferType()(parse(text)), mod)


# ------------------------------------------------------------------------------------------------ text

def test_text_uses_tvm_syntax_and_round_trips():
    x = relay.var("x", F32)
    r = relay.var("r")
    w = relay.var("w")
    body = _lets((r, relay.RefCreate(x)), (w, relay.RefWrite(r, relay.nn.relu(relay.RefRead(r)))), relay.RefRead(r))
    mod = _typed(body, [x])
    text = mod.astext()
    assert "let %r: ref(Tensor[(2), float32]) = ref(%x)" in text
    assert "ref_write(%r, %1)" in text and "ref_read(%r)" in text and "/* ty=() */" in text
    back = transform.InferType()(parse(text))
    assert tvm.ir.structural_equal(back, mod)
    assert back.astext() == text


def test_parser_reads_hand_written_references_and_ref_types():
    e = parse_expr("fn (%v: ref(int8)) { (ref_write(%v, 3i8), ref_read(%v), ref(ref_read(%v))) }")
    fields = e.body.fields
    assert [type(f) for f in fields] == [relay.RefWrite, relay.RefRead, relay.RefCreate]
    assert e.params[0].type_annotation == relay.RefType(relay.TensorType((), "int8"))
    with pytest.raises(ParseError, match="ref_write takes 2 operands, found 1"):
        parse_expr("fn (%v: ref(int8)) { ref_write(%v) }")


# ----------------------------------------------------------------------------------------- AnnotateTarget

@pytest.fixture
def relu_target():
    op = tvm.ir.Op.get("nn.relu")
    op.set_attr("target.refs_test", lambda expr: True)
    yield "refs_test"
    op.reset_attr("target.refs_test")


def _ref_program():
    cell = relay.RefCreate(relay.const(1.0))
    return tvm.IRModule.from_expr(relay.RefWrite(cell, relay.nn.relu(relay.RefRead(cell))))


def test_annotate_target_closes_regions_around_references_without_non_call_ops(relu_target):
    from byoc.relay.op.annotation import compiler_begin as cb, compiler_end as ce
    t = relu_target
    cell = relay.RefCreate(relay.const(1.0))
    expected = relay.RefWrite(cell, ce(relay.nn.relu(cb(relay.RefRead(cell), t)), t))
    got = transform.AnnotateTarget(t, False)(_ref_program())
    tvm.ir.assert_structural_equal(got, transform.InferType()(tvm.IRModule.from_expr(expected)))


def test_annotate_target_puts_references_in_default_regions(relu_target):
    from byoc.relay.op.annotation import compiler_begin as cb, compiler_end as ce
    t, d = relu_target, "default"
    cell = relay.RefCreate(cb(relay.const(1.0), d))
    # every use of the cell leaves its region through its own end/begin pair
    read = ce(relay.RefRead(cb(ce(cell, d), d)), d)
    relu_out = cb(ce(relay.nn.relu(cb(read, t)), t), d)
    expected = ce(relay.RefWrite(cb(ce(cell, d), d), relu_out), d)
    got = transform.AnnotateTarget(t, True)(_ref_program())
    tvm.ir.assert_structural_equal(got, transform.InferType()(tvm.IRModule.from_expr(expected)))
    # annotating again changes nothing
    tvm.ir.assert_structural_equal(transform.AnnotateTarget(t, True)(got), got)


def test_references_partition_with_their_producer_as_tvm_does(relu_target):
    x = relay.var("x", F32)
    mod = _typed(relay.RefRead(relay.RefCreate(relay.nn.relu(x))), [x])
    seq = tvm.transform.Sequential([transform.AnnotateTarget(relu_target), transform.MergeCompilerRegions(),
                                    transform.PartitionGraph()])
    out = seq(mod)
    ext = [f for gv, f in out.items() if gv.name_hint != "main"]
    assert len(ext) == 1 and ext[0].attrs["Compiler"] == relu_target
    assert {type(n) for n in post_order(ext[0].body)} >= {relay.RefCreate, relay.RefRead}


# ------------------------------------------------------------------------------------------- interpreter

def test_cells_are_mutable_and_lets_sequence_effects():
    x = relay.var("x", F32)
    r, w1, w2 = relay.var("r"), relay.var("w1"), relay.var("w2")
    one, two = relay.const(np.float32(1)), relay.const(np.float32(2))
    body = _lets((r, relay.RefCreate(x)),
                 (w1, relay.RefWrite(r, relay.add(relay.RefRead(r), one))),
                 (w2, relay.RefWrite(r, relay.multiply(relay.RefRead(r), two))),
                 relay.Tuple([relay.RefRead(r), w2]))
    xv = np.array([0.5, -3.0], np.float32)
    out = tvm.evaluate(_typed(body, [x]), {"x": xv})
    assert len(out) == 1  # the empty tuple a write returns flattens to nothing
    np.testing.assert_array_equal(out[0], (xv + np.float32(1)) * np.float32(2))


def test_operands_are_evaluated_left_to_right():
    x = relay.var("x", F32)
    r = relay.var("r")
    y = relay.const(np.array([7, 8], np.float32))
    write_then_read = _lets((r, relay.RefCreate(x)), relay.Tuple([relay.RefWrite(r, y), relay.RefRead(r)]))
    read_then_write = _lets((r, relay.RefCreate(x)), relay.Tuple([relay.RefRead(r), relay.RefWrite(r, y)]))
    xv = np.array([1, 2], np.float32)
    np.testing.assert_array_equal(tvm.evaluate(_typed(write_then_read, [x]), {"x": xv})[0], [7, 8])
    x2 = relay.var("x", F32)
    np.testing.assert_array_equal(tvm.evaluate(_typed(read_then_write, [x]), {"x": xv})[0], [1, 2])
    del x2


def test_a_shared_ref_create_is_one_cell():
    x = relay.var("x", F32)
    cell = relay.RefCreate(x)       # used by the write and the read: one node, one cell (the graph's meaning)
    y = relay.const(np.array([5, 6], np.float32))
    body = relay.Tuple([relay.RefWrite(cell, y), relay.RefRead(cell)])
    np.testing.assert_array_equal(tvm.evaluate(_typed(body, [x]), {"x": np.zeros(2, np.float32)})[0], [5, 6])


def test_a_loop_counts_in_a_cell():
    # let %c = ref(0); let %loop = fn (%i) { if (%i < n) { %c := !%c + %i; %loop(%i + 1) } else { () } };
    n = 5
    i = relay.var("i", shape=(), dtype="int32")
    c, loop, w, ignore = relay.var("c"), relay.var("loop"), relay.var("w"), relay.var("ignore")
    step = relay.Let(w, relay.RefWrite(c, relay.add(relay.RefRead(c), i)), loop(relay.add(i, relay.const(1))))
    fn = relay.Function([i], relay.If(relay.less(i, relay.const(n)), step, relay.Tuple([])),
                        relay.TupleType([]))
    body = _lets((c, relay.RefCreate(relay.const(0))), (loop, fn), (ignore, loop(relay.const(0))),
                 relay.RefRead(c))
    out = tvm.evaluate(_typed(body, []))
    assert out[0] == sum(range(n))


def test_returning_a_reference_is_a_named_error():
    x = relay.var("x", F32)
    with pytest.raises(ExecutionError, match="returns a reference"):
        tvm.evaluate(_typed(relay.RefCreate(x), [x]), {"x": np.zeros(2, np.float32)})


# ----------------------------------------------------------------------------- passes that assume purity

def test_cse_keeps_two_cells_and_two_reads_apart():
    c = relay.const(np.array([1, 1], np.float32))
    r1, r2, a, w, b = (relay.var(n) for n in ("r1", "r2", "a", "w", "b"))
    five = relay.const(np.array([5, 5], np.float32))
    body = _lets((r1, relay.RefCreate(c)), (r2, relay.RefCreate(c)),
                 (a, relay.nn.relu(relay.RefRead(r1))),
                 (w, relay.RefWrite(r1, five)),
                 (b, relay.nn.relu(relay.RefRead(r1))),
                 relay.Tuple([a, b, relay.RefRead(r2)]))
    mod = _typed(body, [])
    out = transform.EliminateCommonSubexpr()(mod)
    got = tvm.evaluate(out)
    np.testing.assert_array_equal(got[0], [1, 1])
    np.testing.assert_array_equal(got[1], [5, 5])
    np.testing.assert_array_equal(got[2], [1, 1])   # the second cell never saw the write
    kinds = [type(n) for n in post_order(out["main"])]
    assert kinds.count(relay.RefCreate) == 2 and kinds.count(relay.RefRead) == 3


def test_dce_keeps_effects_and_drops_what_is_pure():
    x = relay.var("x", F32)
    r, w, unused_cell, unused_read, unused_pure = (relay.var(n) for n in ("r", "w", "cell", "rd", "p"))
    y = relay.const(np.array([3, 4], np.float32))
    body = _lets((r, relay.RefCreate(x)),
                 (unused_cell, relay.RefCreate(x)),          # creating a cell is pure: dropped
                 (unused_pure, relay.negative(x)),           # pure: dropped
                 (unused_read, relay.RefRead(r)),            # a read is an effect in TVM: kept
                 (w, relay.RefWrite(r, y)),                  # kept although %w is never used
                 relay.RefRead(r))
    mod = _typed(body, [x])
    for inline_once in (False, True):
        out = transform.DeadCodeElimination(inline_once=inline_once)(mod)
        names = [n.var.name_hint for n in post_order(out["main"]) if isinstance(n, relay.Let)]
        assert {"rd", "w"} <= set(names) and not {"cell", "p"} & set(names)
        np.testing.assert_array_equal(tvm.evaluate(out, {"x": np.zeros(2, np.float32)})[0], [3, 4])


def test_dce_keeps_a_call_of_a_function_that_writes():
    x = relay.var("x", F32)
    r, f, done = relay.var("r"), relay.var("f"), relay.var("done")
    y = relay.const(np.array([9, 9], np.float32))
    body = _lets((r, relay.RefCreate(x)), (f, relay.Function([], relay.RefWrite(r, y))), (done, f()),
                 relay.RefRead(r))
    out = transform.DeadCodeElimination()(_typed(body, [x]))
    np.testing.assert_array_equal(tvm.evaluate(out, {"x": np.zeros(2, np.float32)})[0], [9, 9])


def test_dce_still_drops_dead_bindings_in_programs_without_references():
    x = relay.var("x", F32)
    dead = relay.var("dead")
    out = transform.DeadCodeElimination()(_typed(relay.Let(dead, relay.negative(x), x), [x]))
    assert not any(isinstance(n, relay.Let) for n in post_order(out["main"]))


def test_fold_constant_leaves_references_alone():
    cell = relay.RefCreate(relay.const(np.array([1, -2], np.float32)))
    w = relay.var("w")
    body = relay.Let(w, relay.RefWrite(cell, relay.const(np.array([-3, 4], np.float32))),
                     relay.nn.relu(relay.RefRead(cell)))
    mod = _typed(body, [])
    out = transform.FoldConstant()(mod)
    kinds = {type(n) for n in post_order(out["main"])}
    assert {relay.RefCreate, relay.RefRead, relay.RefWrite} <= kinds
    np.testing.assert_array_equal(tvm.evaluate(out)[0], [0, 4])


# ------------------------------------------------------------------------------- what cannot run them

def test_cpu_build_refuses_references_by_name():
    x = relay.var("x", F32)
    mod = _typed(relay.RefRead(relay.RefCreate(x)), [x])
    with pytest.raises(CodegenError, match="RefCreate node, RefRead node") as e:
        relay.build(mod, target="llvm")
    assert "reference interpreter" in str(e.value)


def test_npu_codegen_refuses_references_by_name():
    x = relay.var("x", shape=(1, 4, 4, 8), dtype="int8")
    p = relay.var("p", shape=(1, 4, 4, 8), dtype="int8")
    ext = relay.Function([p], relay.RefRead(relay.RefCreate(relay.clip(p, -128, 100))))
    ext = ext.with_attr("Compiler", "npu").with_attr("global_symbol", "npu_0").with_attr("Primitive", 1)
    gv = relay.GlobalVar("npu_0")
    mod = tvm.IRModule.from_expr(relay.Function([x], gv(x)))
    mod[gv] = ext
    with pytest.raises(ByocError, match="RefCreate nodes are not supported in an NPU function"):
        relay.build(transform.InferType()(mod), target="llvm")


def test_graph_normal_form_keeps_effects_in_order():
    from byoc.transform.normal_form import ToGraphNormalForm
    x = relay.var("x", F32)
    r, before, w = relay.var("r"), relay.var("before"), relay.var("w")
    y = relay.const(np.array([3, 4], np.float32))
    body = _lets((r, relay.RefCreate(x)), (before, relay.RefRead(r)), (w, relay.RefWrite(r, y)),
                 relay.Tuple([before, relay.RefRead(r)]))
    out = ToGraphNormalForm()(_typed(body, [x]))
    lets = [n.var.name_hint for n in post_order(out["main"]) if isinstance(n, relay.Let)]
    assert sorted(lets) == ["before", "w"]        # the cell itself is substituted (one node: one cell)
    got = tvm.evaluate(out, {"x": np.array([1, 2], np.float32)})
    np.testing.assert_array_equal(got[0], [1, 2])
    np.testing.assert_array_equal(got[1], [3, 4])


def _three_with_ref():
    # let i = ref(1); let iv = !i; let u = (i := 2); let uv = !i; iv + uv  -> 1 + 2
    i, iv, u, uv = (relay.Var(n) for n in ("i", "iv", "u", "uv"))
    return _lets((i, relay.RefCreate(relay.const(1))), (iv, relay.RefRead(i)), (u, relay.RefWrite(i, relay.const(2))),
                 (uv, relay.RefRead(i)), relay.add(iv, uv))


def test_a_normal_form_keeps_the_order_of_effects():
    body = _three_with_ref()
    anf = transform.ToANormalForm()(tvm.IRModule.from_expr(body))
    assert int(tvm.evaluate(anf)[0]) == 3
    lets = [n for n in post_order(anf["main"]) if isinstance(n, relay.Let)]
    order = [type(n.value).__name__ for n in reversed(lets)]   # post-order meets the innermost let first
    assert order[:4] == ["RefCreate", "RefRead", "RefWrite", "RefRead"]


def test_executor_evaluates_globals_and_closed_expressions_as_tvm():
    mod = tvm.IRModule()
    gv = relay.GlobalVar("three_with_ref")
    mod[gv] = relay.Function([], _three_with_ref())
    run = relay.create_executor(mod=mod, device=tvm.cpu(), target="llvm").evaluate(gv)
    assert int(run().numpy()) == 3
    # a closed expression is evaluated at once; a function is returned to be called
    assert int(relay.create_executor(device=tvm.cpu(), target="llvm").evaluate(_three_with_ref()).numpy()) == 3
    x = relay.var("x", shape=(), dtype="int32")
    f = relay.create_executor().evaluate(relay.Function([x], relay.add(x, relay.const(1))))
    assert int(f(np.int32(4)).numpy()) == 5
