"""Malformed text raises ParseError at the right line:column, with the source line and a caret."""
from __future__ import annotations

import functools

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import byoc
from byoc.errors import ByocError, ParseError
from byoc.text import parse_expr

HEADER = '#[version = "0.0.5"]\n'
GOOD_BODY = ("def @main(%x: Tensor[(1, 4), int8]) {\n"
             "  %0 = add(%x, 1i8);\n"
             "  nn.relu(%0)\n"
             "}\n")


def _where(text: str, needle: str, occurrence: int = 0) -> tuple[int, int]:
    """1-based (line, column) of the ``occurrence``-th ``needle`` in ``text``, computed from the text itself."""
    pos = -1
    for _ in range(occurrence + 1):
        pos = text.index(needle, pos + 1)
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


def _parse_error(text: str, parse=byoc.parse) -> ParseError:
    with pytest.raises(ParseError) as info:
        parse(text)
    return info.value


def test_the_good_text_parses():
    mod = byoc.parse(HEADER + GOOD_BODY)
    assert mod["main"].body.op.name == "nn.relu"


CASES = [
    # (name, text, needle at the reported position, occurrence, words in the message)
    ("unknown op", GOOD_BODY.replace("nn.relu", "nn.rleu"), "nn.rleu", 0, ["unknown op 'nn.rleu'", "nn.relu"]),
    ("unknown attribute",
     GOOD_BODY.replace("nn.relu(%0)", "nn.bias_add(%0, %x, axes=1)"), "axes", 0,
     ["nn.bias_add has no attribute 'axes'", "did you mean 'axis'"]),
    ("undefined variable", GOOD_BODY.replace("add(%x,", "add(%y,"), "%y", 0, ["undefined variable %y"]),
    ("misspelt variable", GOOD_BODY.replace("add(%x,", "add(%xx,"), "%xx", 0, ["did you mean %x"]),
    ("use before definition", GOOD_BODY.replace("add(%x, 1i8)", "add(%1, 1i8)"), "%1", 0, ["%1 is not defined"]),
    ("missing semicolon", GOOD_BODY.replace("1i8);", "1i8)"), "nn.relu", 0, ["expected ';'"]),
    ("missing closing brace", GOOD_BODY.rstrip().rstrip("}"), None, 0, ["expected '}'", "end of input"]),
    ("bad dtype", GOOD_BODY.replace("int8]", "int9]"), "int9", 0, ["expected a dtype", "did you mean int8"]),
    ("integer out of range", GOOD_BODY.replace("1i8", "300i8"), "300i8", 0, ["out of range for int8"]),
    ("unknown suffix", GOOD_BODY.replace("1i8", "1i7"), "1i7", 0, ["unknown literal suffix"]),
    ("wrong arity", GOOD_BODY.replace("add(%x, 1i8)", "add(%x)"), "add", 0, ["add takes 2 arguments"]),
    ("unexpected character", GOOD_BODY.replace("1i8", "$"), "$", 0, ["expected an expression", "'$'"]),
    ("unterminated comment", GOOD_BODY.replace("1i8)", "1i8 /* ty=int8)"), "/*", 0, ["unterminated /* comment"]),
    ("unterminated string", GOOD_BODY.replace("nn.relu(%0)", 'clip(%0, a_min="x)'), '"x)', 0,
     ["unterminated string"]),
    ("meta without metadata", GOOD_BODY.replace("1i8", "meta[relay.Constant][0]"), "meta", 0,
     ["no #[metadata] section"]),
    ("positional after attribute", GOOD_BODY.replace("nn.relu(%0)", "clip(%0, a_min=1, %x)"), "%x", 2,
     ["positional argument after attributes"]),
    ("undefined global", GOOD_BODY.replace("nn.relu(%0)", "@mian(%0)"), "@mian", 0,
     ["undefined global function @mian", "did you mean @main"]),
    ("statement after the tail", GOOD_BODY.replace("nn.relu(%0)\n", "nn.relu(%0)\n  %1 = %0;\n"), "%1", 0,
     ["expected '}'"]),
    ("garbage after module", GOOD_BODY + "fn", "fn", 0, ["expected 'def' or the end of the module"]),
    ("bad attribute value", GOOD_BODY.replace("nn.relu(%0)", "clip(%0, a_min=%x)"), "%x)", 0,
     ["expected an attribute value"]),
    ("bad attribute type", GOOD_BODY.replace("nn.relu(%0)", 'qnn.requantize(%0, 1f, 0, 1f, 0, rounding="UP")'),
     "qnn.requantize", 0, ["bad attributes for qnn.requantize", "unknown rounding"]),
    ("bad tuple index", GOOD_BODY.replace("nn.relu(%0)", "%0.x"), "x", 2, ["expected a tuple index"]),
    ("if without else", "fn (%c: bool, %x: int8) {\n  if (%c) { %x }\n}\n", "}", 1, ["expected 'else'"]),
]


@pytest.mark.parametrize("name,text,needle,occurrence,words", CASES, ids=[c[0] for c in CASES])
def test_malformed_text(name, text, needle, occurrence, words):
    err = _parse_error(HEADER + text)
    full = HEADER + text
    if needle is None:  # at the end of the text
        end = full.rstrip()
        want = (end.count("\n") + 1, len(end) - (end.rfind("\n") + 1) + 1)
    else:
        want = _where(full, needle, occurrence)
    assert (err.line, err.column) == want, str(err)
    message = str(err)
    assert message.startswith(f"{want[0]}:{want[1]}: ")
    for w in words:
        assert w in message, (w, message)
    # The source line and a caret under the column follow the message.
    src_line = full.splitlines()[want[0] - 1]
    lines = message.splitlines()
    assert src_line in lines
    caret = lines[lines.index(src_line) + 1]
    assert caret == " " * (want[1] - 1) + "^"


def test_metadata_errors():
    mod_text = byoc.parse(HEADER + GOOD_BODY.replace("1i8", "meta[relay.Constant][0]") +
                          '#[metadata]\n{"relay.Constant": [{"dtype": "int8", "shape": [1, 4], '
                          '"data": "AQIDBA=="}]}\n')
    assert mod_text["main"].body.args[0].args[1].data.tolist() == [[1, 2, 3, 4]]
    cases = [
        ('{"relay.Constant": [{"dtype": "int8", "shape": [1, 4], "data": "AQID"}]}', "3 data bytes, expected 4"),
        ('{"relay.Constant": [{"dtype": "int9", "shape": [1], "data": "AQ=="}]}', "unknown dtype 'int9'"),
        ('{"relay.Constant": [{"dtype": "int8", "shape": [1], "data": "%%%"}]}', "not valid base64"),
        ('{"relay.Constant": [{"dtype": "bool", "shape": [1], "data": "Ag=="}]}', "bytes 0 or 1"),
        ('{"relay.Constant": [{"dtype": "int8", "shape": [-1], "data": ""}]}', "non-negative ints"),
        ('{"relay.Constant": [{"dtype": "int8"}]}', "lacks shape, data"),
        ('{"relay.Constant": [1, 2', "malformed #[metadata] section"),
        ('[]', "must be a JSON object"),
    ]
    for meta, words in cases:
        err = _parse_error(HEADER + GOOD_BODY + "#[metadata]\n" + meta + "\n")
        assert words in str(err), (words, str(err))
        assert err.line >= GOOD_BODY.count("\n") + 2
    program = HEADER + GOOD_BODY.replace("1i8", "meta[relay.Constant][1]")
    err = _parse_error(program + '#[metadata]\n{"relay.Constant": [{"dtype": "int8", "shape": [], "data": "AQ=="}]}\n')
    assert "out of range: the metadata section has 1 constants" in str(err)
    assert (err.line, err.column) == _where(program, "1]")


@pytest.mark.parametrize("text", ["free_var %x: int8;\nadd(%x,", "fn (%x: int8", "fn (%x: int8, Primitive=",
                                  "free_var %x: int8;\nclip(%x, a_min=[1, ", "let", "let %v", "let %v =",
                                  "free_var", "free_var %x: Tensor[(1,", "if (", "fn (%x: int8) {", "meta[",
                                  "free_var %x: (int8, int8)\n%x.", "{", "@", "%", '"', "/*"])
def test_truncated_text_is_a_parse_error(text):
    err = _parse_error(text, parse=parse_expr)
    assert err.line >= 1 and ("end of input" in str(err) or "unterminated" in str(err) or "'" in str(err))


def test_nesting_limit_is_an_error_not_a_crash():
    err = _parse_error("free_var %x: int8;\n" + "(" * 5000 + "%x" + ")" * 5000, parse=parse_expr)
    assert "nested more than" in str(err) and err.line == 2


def test_duplicate_definitions():
    err = _parse_error(GOOD_BODY + GOOD_BODY)
    assert "@main is defined twice (first at line 1)" in str(err) and err.line == 5
    err = _parse_error("fn (%x: int8, %x: int8) { %x }", parse=parse_expr)
    assert "parameter %x appears twice" in str(err)
    err = _parse_error("free_var %x: int8;\n%0 = add(%x, %x);\n%0 = add(%x, %x);\n%0", parse=parse_expr)
    assert "%0 is already defined" in str(err) and (err.line, err.column) == (3, 1)


def test_parse_expr_rejects_modules_and_errors_are_byoc_errors():
    err = _parse_error(GOOD_BODY, parse=parse_expr)
    assert "use byoc.parse for modules" in str(err)
    with pytest.raises(ByocError):
        byoc.parse(b"def @main() { 1 }")  # not a str
    with pytest.raises(ParseError):
        parse_expr("")  # no expression at all
    assert len(byoc.parse(byoc.IRModule().astext())) == 0  # but an empty module is a module


def test_show_meta_data_false_output_reports_missing_metadata():
    import numpy as np
    from byoc import relay
    x = relay.var("x", shape=(2,))
    mod = byoc.IRModule.from_expr(relay.add(x, relay.const(np.ones(2, np.float32))))
    err = _parse_error(mod.astext(show_meta_data=False))
    assert "no #[metadata] section" in str(err) and "show_meta_data=True" in str(err)


@functools.lru_cache(maxsize=None)
def _samples() -> tuple[str, ...]:
    from byoc import relay

    from . import modules
    return (relay.transform.InferType()(modules.partitioned()).astext(), modules.lets_and_closures().astext(),
            modules.if_sharing().astext(), modules.constants_of_every_dtype().astext(),
            modules.many_attrs().astext())


_EDIT = st.tuples(st.sampled_from(["delete", "insert", "replace", "duplicate"]), st.integers(0, 10**6),
                  st.integers(1, 12), st.text(alphabet='%@"()[]{},;=:.-0123456789abcfi \n/*\\', max_size=6))


@settings(max_examples=300, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 4), st.lists(_EDIT, min_size=1, max_size=3))
def test_mutated_text_never_crashes(which, edits):
    """Random edits of printed text either parse or raise ParseError: never a raw Python exception."""
    text = _samples()[which]
    for kind, pos, length, insert in edits:
        pos %= len(text) + 1
        if kind == "delete":
            text = text[:pos] + text[pos + length:]
        elif kind == "insert":
            text = text[:pos] + insert + text[pos:]
        elif kind == "replace":
            text = text[:pos] + insert + text[pos + length:]
        else:
            text = text[:pos] + text[pos:pos + length] + text[pos:]
    try:
        byoc.parse(text)
    except ParseError as e:
        assert e.line >= 1 and str(e).startswith(f"{e.line}:{e.column}: ")


def test_comments_anywhere_including_the_end():
    text = "/* lead */ " + GOOD_BODY.replace("1i8);", "1i8 /* ty=int8 */); // trailing") + "// last line\n/* end */"
    assert byoc.parse(text)["main"].body.op.name == "nn.relu"
    err = _parse_error(GOOD_BODY.rstrip().rstrip("}") + "  /* a comment at the end */\n")
    assert "end of input" in str(err) and (err.line, err.column) == (3, 14)  # just after "nn.relu(%0)"
