"""excerpt(root, node): the printed text around the line that defines ``node``, marked with ^^^^."""
from __future__ import annotations

import numpy as np
import pytest

import byoc
from byoc import relay
from byoc.errors import TypeInferenceError
from byoc.text import excerpt


def _marked_line(text: str) -> str:
    """The source line right above the caret line (without its 'NN | ' prefix)."""
    lines = [line for line in text.splitlines() if " | " in line or line.strip().startswith("| ")]
    idx = next(i for i, line in enumerate(lines) if line.split("|", 1)[1].strip().startswith("^^^^"))
    return lines[idx - 1].split("| ", 1)[1]


def _chain():
    x = relay.var("x", shape=(1, 4))
    a = relay.nn.relu(x)
    b = relay.negative(a)
    c = relay.abs(b)
    d = relay.exp(c)
    return x, a, b, c, d


def test_marks_the_defining_line():
    x, a, b, c, d = _chain()
    func = relay.Function([x], d)
    text = excerpt(func, b)
    marked = _marked_line(text)
    assert marked.strip().startswith("%1 = negative(%0)")
    caret_line = text.splitlines()[text.splitlines().index(next(
        line for line in text.splitlines() if line.endswith(marked))) + 1]
    # the carets start under the statement, after the indentation
    assert caret_line.split("| ", 1)[1].index("^") == len(marked) - len(marked.lstrip())
    # surrounding lines are shown, with their line numbers in the printed text
    full = func.astext(show_meta_data=False).splitlines()
    for line in text.splitlines():
        num, _, content = line.partition(" | ")
        if num.strip():
            assert full[int(num) - 1] == content


def test_leaves_and_tails():
    x, a, b, c, d = _chain()
    func = relay.Function([x], d)
    assert "exp(%2)" in _marked_line(excerpt(func, d))  # the inline tail
    assert _marked_line(excerpt(func, x)).strip().startswith("%0 = nn.relu(%x)")  # a parameter: its first use
    unrelated = relay.var("y")
    assert excerpt(func, unrelated) == ""


def test_excerpt_in_a_module():
    mod = byoc.IRModule()
    p = relay.var("p", shape=(2,))
    inner = relay.negative(p)
    mod["helper"] = relay.Function([p], relay.nn.relu(inner))
    x = relay.var("x", shape=(2,))
    mod["main"] = relay.Function([x], relay.Call(mod.get_global_var("helper"), [x]))
    assert _marked_line(excerpt(mod, inner)).strip() == "%0 = negative(%p);"


def test_type_errors_show_the_offending_line():
    x = relay.var("x", shape=(1, 4))
    y = relay.var("y", shape=(3, 5))
    a = relay.nn.relu(x)
    bad = relay.add(a, y)
    out = relay.negative(bad)
    mod = byoc.IRModule.from_expr(relay.Function([x, y], out))
    with pytest.raises(TypeInferenceError) as info:
        relay.transform.InferType()(mod)
    message = str(info.value)
    assert "do not broadcast" in message
    assert _marked_line(message).strip().startswith("%1 = add(%0, %y)")


def test_long_graph_excerpt_is_local():
    x = relay.var("x", shape=(2,))
    y = x
    nodes = []
    for i in range(2000):
        y = relay.add(y, relay.const(np.float32(i)))
        nodes.append(y)
    text = excerpt(relay.Function([x], y), nodes[1000])
    assert len(text.splitlines()) <= 8
    assert _marked_line(text).strip().startswith("%1000 = add(%999, 1000.0f)")
