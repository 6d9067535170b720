"""Parser of the text format: ``parse(text) -> IRModule`` and ``parse_expr(text) -> Expr``.

Statements of a block (``%n = expr;``, ``let %v = expr;``, ``free_var %x: T;``) are read in a loop, and blocks
(function bodies, if branches, ``{ ... }``) that open at statement level are frames on an explicit stack, so a
100,000-statement function, a 100,000-long let chain or deeply nested ``fn``/``if`` blocks never recurse per
statement. Only the expression of one statement recurses (arguments, tuples, types, attribute lists), bounded
by ``MAX_NESTING``; the printer never nests deeper than a call's arguments.

Ops are looked up in the registry and attributes are built into the op's attrs dataclass; unknown names get
"did you mean" hints. Every error is a ``ParseError`` with line:column and the source line with a caret.
"""
from __future__ import annotations

import difflib
import json
import re
from typing import Any

import numpy as np

from ..errors import IRError, ParseError
from ..ir.attrs import FrozenDict
from ..ir.expr import (Call, Constant, Expr, Function, GlobalVar, If, Let, RefCreate, RefRead, RefWrite, Tuple,
                       TupleGetItem, Var)
from ..ir.module import IRModule
from ..ir.types import DTYPES, FuncType, RelayRefType, TensorType, TupleType, Type
from ..ops.registry import get_op_def
from .lexer import EOF, SourceMap, split_metadata, token_offset, tokenize
from .literals import attr_defaults, decode_constant, gc_paused, parse_number

__all__ = ["parse", "parse_expr", "MAX_NESTING"]

MAX_NESTING = 200  # nesting within one statement (parentheses, lists, types, blocks inside arguments)
_MISSING = object()
_TUPLE_INDEX_PAIR = re.compile(r"(\d+)\.(\d+)\Z")
_NUMBER_START = frozenset("0123456789-")
_ARG_END = frozenset((",", ")"))
_BLOCK_START = frozenset(("fn", "if", "{"))
_REF_FORMS = {"ref": (RefCreate, 1), "ref_read": (RefRead, 1), "ref_write": (RefWrite, 2)}


def parse(text: str) -> IRModule:
    """Read a module (``def @name(...) {...}`` functions) or a bare expression (wrapped as ``@main``)."""
    with gc_paused():
        return _Parser(text).module()


def parse_expr(text: str) -> Expr:
    """Read a bare expression, e.g. ``fn (%x: int8) { add(%x, 1i8) }`` or ``free_var %x: int8; %x``."""
    with gc_paused():
        return _Parser(text).bare_expr()


def _is_name(tok: str) -> bool:
    return tok[:1].isalpha() or tok[:1] == "_"


class _Frame:
    """A block being read: its pending lets, the names it defined (to undo at its end), and what it is."""

    __slots__ = ("kind", "cont", "lets", "undo", "params", "attrs", "ret_type", "cond", "then", "at")

    def __init__(self, kind: str, cont: tuple, at: int):
        self.kind = kind  # "fn", "if_then", "if_else", "block" or "top"
        self.cont = cont  # what the enclosing block does with this block's value
        self.at = at      # token index of the block's header, for errors
        self.lets: list[tuple[Var, Expr]] = []
        self.undo: list[tuple[str, Any]] = []
        self.params: list[Var] = []
        self.attrs: dict = {}
        self.ret_type: Type | None = None
        self.cond: Expr | None = None
        self.then: Expr | None = None


class _Parser:
    def __init__(self, text: str):
        if not isinstance(text, str):
            raise ParseError(f"expected the program text as a str, got {type(text).__name__}")
        self.src = SourceMap(text)
        self.program, meta_at = split_metadata(text)
        self.meta: list[Constant] | None = None if meta_at is None else self._metadata(text, meta_at)
        self.toks = tokenize(self.program)
        self.i = 0
        self.names: dict[str, Expr] = {}
        self.globals: dict[str, GlobalVar] = {}
        self.global_refs: dict[str, int] = {}  # name -> token index of the first reference
        self.depth = 0
        self.literal_cache: dict[str, np.ndarray] = {}
        self.type_cache: dict[tuple, Type] = {}
        self.attr_fields: dict[type, frozenset] = {}
        self.attrs_cache: dict[tuple[type, str], Any] = {}

    # --------------------------------------------------------------------------------------- token helpers

    def error(self, message: str, at: int | None = None, hint: str | None = None) -> ParseError:
        """A ParseError at token index ``at`` (default: the current token)."""
        return self.src.error(message, token_offset(self.program, self.i if at is None else at), hint)

    def found(self, at: int | None = None) -> str:
        tok = self.toks[self.i if at is None else at]
        if tok == EOF:
            return "end of input"
        if tok == '"':
            return "an unterminated string literal"
        if tok == "/" and self.program[token_offset(self.program, self.i if at is None else at):][:2] == "/*":
            return "an unterminated /* comment"
        return repr(tok)

    def expect(self, tok: str, what: str | None = None) -> None:
        if self.toks[self.i] != tok:
            raise self.error(f"expected {what or repr(tok)}, found {self.found()}")
        self.i += 1

    def accept(self, tok: str) -> bool:
        if self.toks[self.i] == tok:
            self.i += 1
            return True
        return False

    # ----------------------------------------------------------------------------------------- top level

    def module(self) -> IRModule:
        if self.toks[0] == EOF and self.meta is None:
            return IRModule()  # the text of an empty module
        if self.toks[0] != "def":
            return IRModule.from_expr(self._run(_Frame("top", ("return",), 0)))
        mod = IRModule()
        defined: dict[str, int] = {}
        while self.toks[self.i] != EOF:
            at = self.i
            self.expect("def", "'def' or the end of the module")
            tok = self.toks[self.i]
            if tok[:1] != "@" or len(tok) < 2:
                raise self.error(f"expected a global function name @name after 'def', found {self.found()}")
            name = self._global_name(tok, self.i)
            if name in defined:
                line, _ = self.src.line_col(token_offset(self.program, defined[name]))
                raise self.error(f"@{name} is defined twice (first at line {line})")
            defined[name] = self.i
            self.i += 1
            frame = _Frame("fn", ("return",), at)
            self._signature(frame)
            self.expect("{", f"'{{' to open the body of @{name}")
            func = self._run(frame)
            gv = self.globals.setdefault(name, GlobalVar(name))
            mod[gv] = func  # type: ignore[assignment]
        for name, at in self.global_refs.items():
            if name not in defined:
                close = difflib.get_close_matches(name, list(defined), n=1)
                raise self.error(f"reference to undefined global function @{name}", at,
                                 hint=f"did you mean @{close[0]}?" if close else
                                 f"define it with def @{name}(...) {{ ... }}")
        return mod

    def bare_expr(self) -> Expr:
        if self.toks[0] == "def":
            raise self.error("expected an expression, found a module ('def')", 0, hint="use byoc.parse for modules")
        expr = self._run(_Frame("top", ("return",), 0))
        if self.global_refs:
            name, at = next(iter(self.global_refs.items()))
            raise self.error(f"an expression cannot refer to global function @{name}", at,
                             hint="use byoc.parse on a module that defines it")
        return expr

    # ------------------------------------------------------------------------------ statements and blocks

    def _run(self, bottom: _Frame) -> Expr:
        """Read statements until ``bottom`` (whose header is consumed) closes; returns its value."""
        toks, names = self.toks, self.names
        stack = [bottom]
        top = bottom
        while True:
            i = self.i
            tok = toks[i]
            if tok[:1] == "%" and toks[i + 1] == "=":
                if tok in names and tok[1:].isdigit():
                    raise self.error(f"{tok} is already defined", i, hint="each %n is bound once")
                self.i = i + 2
                cont: tuple = ("bind", tok)
            elif tok == "let":
                var_tok = toks[i + 1]
                if var_tok[:1] != "%" or len(var_tok) < 2:
                    raise self.error(f"expected a variable %name after 'let', found {self.found(i + 1)}", i + 1)
                self.i = i + 2
                ann = self.parse_type() if self.accept(":") else None
                self.expect("=", "'=' in the let binding")
                cont = ("let", Var(var_tok[1:], ann))
                if toks[self.i] == "fn":   # a let-bound function sees itself (Relay's recursive let: loops)
                    self._define(top, var_tok, cont[1])
            elif tok == "free_var":
                self._free_var(top)
                continue
            else:
                cont = ("tail",)
            if toks[self.i] in _BLOCK_START:
                top = self._open(cont)
                stack.append(top)
                continue
            value = self.parse_expr()
            while True:  # deliver the value; a tail closes its block, whose value is delivered in turn
                kind = cont[0]
                if kind == "bind":
                    top.undo.append((cont[1], names.get(cont[1], _MISSING)))
                    names[cont[1]] = value
                    if toks[self.i] != ";":
                        raise self.error(f"expected ';' after the binding of {cont[1]}, found {self.found()}")
                    self.i += 1
                    break
                if kind == "let":
                    var = cont[1]
                    top.lets.append((var, value))
                    self._define(top, "%" + var.name_hint, var)
                    self.expect(";", "';' after the let binding")
                    break
                done = self._close(top, value)
                if done is None:  # an if's then-branch closed; its else-branch follows
                    break
                stack.pop()
                if not stack:
                    return done
                value = self._postfix(done)
                cont, top = top.cont, stack[-1]

    def _open(self, cont: tuple) -> _Frame:
        """Consume the header of ``fn (...) -> T {``, ``if (cond) {`` or ``{`` and return its frame."""
        at = self.i
        tok = self.toks[at]
        self.i += 1
        if tok == "fn":
            frame = _Frame("fn", cont, at)
            self._signature(frame)
            self.expect("{", "'{' to open the function body")
        elif tok == "if":
            frame = _Frame("if_then", cont, at)
            self.expect("(", "'(' after 'if'")
            frame.cond = self.parse_expr()
            self.expect(")", "')' after the if condition")
            self.expect("{", "'{' to open the then-branch")
        else:
            frame = _Frame("block", cont, at)
        return frame

    def _close(self, frame: _Frame, tail: Expr) -> Expr | None:
        """End ``frame``'s block with ``tail``; returns the frame's value (None: an else-branch follows)."""
        if frame.kind == "top":
            if self.toks[self.i] != EOF:
                raise self.error(f"expected the end of input after the final expression, found {self.found()}",
                                 hint="statements end with ';'")
        elif self.toks[self.i] != "}":
            raise self.error(f"expected '}}' to close the block (or ';' to end a statement), found {self.found()}")
        else:
            self.i += 1
        body = tail
        for var, value in reversed(frame.lets):
            body = Let(var, value, body)
        frame.lets = []
        names = self.names
        for name, old in reversed(frame.undo):
            if old is _MISSING:
                del names[name]
            else:
                names[name] = old
        frame.undo = []
        if frame.kind == "fn":
            try:
                return Function(tuple(frame.params), body, frame.ret_type, FrozenDict(frame.attrs))
            except IRError as e:
                raise self.error(f"bad function: {e.message}", frame.at, hint=e.hint) from None
        if frame.kind == "if_then":
            frame.then = body
            self.expect("else", "'else' after the then-branch")
            self.expect("{", "'{' to open the else-branch")
            frame.kind = "if_else"
            return None
        if frame.kind == "if_else":
            return If(frame.cond, frame.then, body)  # type: ignore[arg-type]
        return body

    def _define(self, frame: _Frame, name: str, value: Expr) -> None:
        frame.undo.append((name, self.names.get(name, _MISSING)))
        self.names[name] = value

    def _free_var(self, frame: _Frame) -> None:
        self.i += 1
        tok = self.toks[self.i]
        if tok[:1] != "%" or len(tok) < 2:
            raise self.error(f"expected a variable %name after 'free_var', found {self.found()}")
        self.i += 1
        ann = self.parse_type() if self.accept(":") else None
        self.expect(";", "';' after the free_var declaration")
        self._define(frame, tok, Var(tok[1:], ann))

    def _signature(self, frame: _Frame) -> None:
        """``(%x: T, ..., Key=value, ...) [-> R]``; the parameters are defined in ``frame``."""
        self.expect("(", "'(' to open the parameter list")
        seen: set[str] = set()
        toks = self.toks
        if not self.accept(")"):
            while True:
                tok = toks[self.i]
                if tok[:1] == "%" and len(tok) > 1:
                    if frame.attrs:
                        raise self.error("function parameters must come before the function attributes")
                    if tok in seen:
                        raise self.error(f"parameter {tok} appears twice")
                    seen.add(tok)
                    self.i += 1
                    ann = self.parse_type() if self.accept(":") else None
                    var = Var(tok[1:], ann)
                    frame.params.append(var)
                    self._define(frame, tok, var)
                elif (_is_name(tok) or tok[:1] == '"') and toks[self.i + 1] == "=":
                    key = self._string(tok, self.i) if tok[:1] == '"' else tok
                    self.i += 2
                    frame.attrs[key] = self.parse_attr_value()
                else:
                    raise self.error(f"expected a parameter %name or an attribute Key=value, found {self.found()}")
                if self.accept(","):
                    continue
                self.expect(")", "',' or ')' in the parameter list")
                break
        if self.accept("->"):
            frame.ret_type = self.parse_type()

    # -------------------------------------------------------------------------------------- expressions

    def parse_expr(self) -> Expr:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error(f"expression nested more than {MAX_NESTING} levels deep",
                             hint="bind sub-expressions to %n = ...; statements")
        value = self._primary()
        if self.toks[self.i] in ("(", "."):
            value = self._postfix(value)
        self.depth -= 1
        return value

    def _primary(self) -> Expr:
        i = self.i
        tok = self.toks[i]
        c = tok[:1]
        if c == "%" and len(tok) > 1:
            value = self.names.get(tok)
            if value is None:
                raise self._undefined(tok, i)
            self.i = i + 1
            return value
        if c in _NUMBER_START and tok != "->" and len(tok) > (c == "-"):
            self.i = i + 1
            return Constant(self._literal_array(tok, i))
        if _is_name(tok):
            if tok in ("True", "False", "inf", "nan"):
                self.i = i + 1
                return Constant(self._literal_array(tok, i))
            if tok == "meta":
                return self._meta_ref()
            if tok in ("fn", "if"):
                return self._run(self._open(("return",)))
            if tok in ("let", "free_var", "def", "else"):
                raise self.error(f"unexpected '{tok}' inside an expression",
                                 hint="let and free_var are statements of a block; wrap in { ... } if needed")
            if tok in _REF_FORMS and self.toks[i + 1] == "(":
                return self._ref_form()
            return self._op_call()
        if c == "@" and len(tok) > 1:
            self.i = i + 1
            name = self._global_name(tok, i)
            self.global_refs.setdefault(name, i)
            gv = self.globals.get(name)
            if gv is None:
                gv = self.globals[name] = GlobalVar(name)
            return gv
        if tok == "(":
            self.i = i + 1
            if self.accept(")"):
                return Tuple(())
            first = self.parse_expr()
            if self.accept(")"):
                return first
            self.expect(",", "',' or ')'")
            fields = [first]
            while not self.accept(")"):
                fields.append(self.parse_expr())
                if not self.accept(","):
                    self.expect(")", "',' or ')' in the tuple")
                    break
            return Tuple(tuple(fields))
        if tok == "{":
            return self._run(self._open(("return",)))
        raise self.error(f"expected an expression, found {self.found()}")

    def _postfix(self, value: Expr) -> Expr:
        toks = self.toks
        while True:
            tok = toks[self.i]
            if tok == ".":
                self.i += 1
                index_tok = toks[self.i]
                pair = _TUPLE_INDEX_PAIR.match(index_tok)
                if index_tok.isdigit():
                    indices = [int(index_tok)]
                elif pair:  # %t.0.1 lexes as %t . 0.1
                    indices = [int(pair.group(1)), int(pair.group(2))]
                else:
                    raise self.error(f"expected a tuple index after '.', found {self.found()}")
                self.i += 1
                for index in indices:
                    value = TupleGetItem(value, index)
            elif tok == "(":
                at = self.i
                self.i += 1
                args, _ = self._arguments(allow_attrs=False)
                try:
                    value = Call(value, tuple(args))
                except IRError as e:
                    raise self.error(e.message, at, hint=e.hint) from None
            else:
                return value

    def _arguments(self, allow_attrs: bool) -> tuple[list[Expr], dict[str, tuple[Any, int]]]:
        """Call arguments after '(' up to and including ')': expressions, then ``name=value`` attributes."""
        args: list[Expr] = []
        attrs: dict[str, tuple[Any, int]] = {}
        toks, names = self.toks, self.names
        if toks[self.i] == ")":
            self.i += 1
            return args, attrs
        while True:
            i = self.i
            tok = toks[i]
            if toks[i + 1] == "=" and (_is_name(tok) or tok[:1] == '"'):
                if not allow_attrs:
                    raise self.error("only calls of ops take attributes", i)
                key = self._string(tok, i) if tok[:1] == '"' else tok
                if key in attrs:
                    raise self.error(f"attribute {key!r} given twice", i)
                self.i = i + 2
                attrs[key] = (self.parse_attr_value(), i)
            else:
                if attrs:
                    raise self.error("positional argument after attributes", i,
                                     hint="write the operands first, then name=value attributes")
                simple = toks[i + 1] in _ARG_END
                value = names.get(tok) if simple else None
                if value is not None:  # the common cases: a bound name, a number
                    self.i = i + 1
                    args.append(value)
                elif simple and tok[:1] in _NUMBER_START and len(tok) > (tok[:1] == "-"):
                    self.i = i + 1
                    args.append(Constant(self._literal_array(tok, i)))
                else:
                    args.append(self.parse_expr())
            sep = toks[self.i]
            self.i += 1
            if sep == ",":
                if toks[self.i] == ")":
                    self.i += 1
                    return args, attrs
                continue
            if sep != ")":
                self.i -= 1
                raise self.error(f"expected ',' or ')' in the argument list, found {self.found()}")
            return args, attrs

    def _ref_form(self) -> Expr:
        """``ref(%v)``, ``ref_read(%r)``, ``ref_write(%r, %v)``: TVM's spelling of the reference nodes."""
        at = self.i
        name = self.toks[at]
        node_type, arity = _REF_FORMS[name]
        self.i += 2
        args, _ = self._arguments(allow_attrs=False)
        if len(args) != arity:
            raise self.error(f"{name} takes {arity} operand{'s' if arity > 1 else ''}, found {len(args)}", at)
        return node_type(*args)

    def _op_call(self) -> Expr:
        at = self.i
        name = self.toks[at]
        try:
            op_def = get_op_def(name)
        except IRError as e:
            raise self.error(f"unknown op {name!r}", at, hint=e.hint) from None
        self.i += 1
        self.expect("(", f"'(' after op {name}")
        args, raw_attrs = self._arguments(allow_attrs=True)
        attrs_type = op_def.attrs_type
        values = {}
        if raw_attrs:
            known = self.attr_fields.get(attrs_type)
            if known is None:
                known = self.attr_fields[attrs_type] = frozenset(n for n, _ in attr_defaults(attrs_type))
            for key, (value, kat) in raw_attrs.items():
                if key not in known:
                    close = difflib.get_close_matches(key, sorted(known), n=1)
                    raise self.error(f"{name} has no attribute {key!r}", kat,
                                     hint=(f"did you mean {close[0]!r}? " if close else "") +
                                     f"{name} accepts: {', '.join(sorted(known)) or 'no attributes'}")
                values[key] = value
        # Attrs are frozen values, so equal ones can be shared; repr keeps 1, 1.0 and True apart.
        key = (attrs_type, repr(tuple(values.items())))
        attrs = self.attrs_cache.get(key)
        if attrs is None:
            try:
                attrs = self.attrs_cache[key] = attrs_type(**values)
            except (IRError, TypeError, ValueError) as e:
                msg = e.message if isinstance(e, IRError) else str(e)
                raise self.error(f"bad attributes for {name}: {msg}", at) from None
        try:
            return Call(op_def.op, tuple(args), attrs)
        except IRError as e:
            raise self.error(e.message, at, hint=e.hint) from None

    # ------------------------------------------------------------------------------------------- leaves

    def _undefined(self, name: str, at: int) -> ParseError:
        if name[1:].isdigit():
            return self.error(f"{name} is not defined here", at,
                              hint="a %n must be bound (%n = ...;) before use, in this block or an enclosing one")
        candidates = [n for n in self.names if not n[1:].isdigit()][:2000]
        close = difflib.get_close_matches(name, candidates, n=1)
        return self.error(f"undefined variable {name}", at,
                          hint=f"did you mean {close[0]}?" if close else
                          "variables are function parameters, let bindings or free_var declarations")

    def _literal_array(self, tok: str, at: int) -> np.ndarray:
        arr = self.literal_cache.get(tok)
        if arr is None:
            if tok in ("True", "False"):
                arr = np.array(tok == "True")
            else:
                try:
                    value, dtype = parse_number(tok)
                except ValueError as e:
                    raise self.error(str(e), at) from None
                arr = np.array(value, dtype=dtype)
            arr.setflags(write=False)  # read-only arrays are shared by the Constants, not copied
            self.literal_cache[tok] = arr
        return arr

    def _meta_ref(self) -> Constant:
        at = self.i
        self.i += 1
        self.expect("[", "'[' after meta")
        if self.toks[self.i] != "relay.Constant":
            raise self.error(f"expected relay.Constant in meta[...], found {self.found()}")
        self.i += 1
        self.expect("]")
        self.expect("[")
        k_at = self.i
        tok = self.toks[k_at]
        if not tok.isdigit():
            raise self.error(f"expected a constant index, found {self.found()}")
        self.i += 1
        self.expect("]")
        if self.meta is None:
            raise self.error("meta[relay.Constant] is used but the text has no #[metadata] section", at,
                             hint="print with astext(show_meta_data=True)")
        k = int(tok)
        if k >= len(self.meta):
            raise self.error(f"meta[relay.Constant][{k}] is out of range: the metadata section has "
                             f"{len(self.meta)} constants", k_at)
        return self.meta[k]

    def _global_name(self, tok: str, at: int) -> str:
        return self._string(tok[1:], at) if tok.startswith('@"') else tok[1:]

    def _string(self, tok: str, at: int) -> str:
        """A quoted string token (JSON escapes)."""
        try:
            return json.loads(tok)
        except ValueError as e:
            raise self.error(f"malformed string literal: {e.msg if hasattr(e, 'msg') else e}", at,
                             hint='strings use JSON escapes: \\" \\\\ \\n \\uXXXX') from None

    def _metadata(self, text: str, start: int) -> list[Constant]:
        body_at = text.index("]", start) + 1
        try:
            data = json.loads(text[body_at:])
        except json.JSONDecodeError as e:
            raise self.src.error(f"malformed #[metadata] section: {e.msg}", body_at + e.pos) from None
        if not isinstance(data, dict) or not isinstance(data.get("relay.Constant", []), list):
            raise self.src.error('the #[metadata] section must be a JSON object {"relay.Constant": [...]}', start)
        out = []
        for k, entry in enumerate(data.get("relay.Constant", [])):
            try:
                arr = decode_constant(entry, k)
            except ValueError as e:
                raise self.src.error(f"bad #[metadata] entry: {e}", start) from None
            arr.setflags(write=False)
            out.append(Constant(arr))
        return out

    # -------------------------------------------------------------------------------- types, attributes

    def parse_type(self) -> Type:
        toks = self.toks
        i = self.i
        tok = toks[i]
        if tok == "Tensor":  # by far the most common: memoized on its tokens
            try:
                end = toks.index("]", i)
            except ValueError:
                end = len(toks) - 1
            key = tuple(toks[i:end + 1])
            cached = self.type_cache.get(key)
            if cached is not None:
                self.i = end + 1
                return cached
            t = self._tensor_type()
            self.type_cache[key] = t
            return t
        if tok in DTYPES:
            self.i = i + 1
            return TensorType((), tok)
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error(f"type nested more than {MAX_NESTING} levels deep")
        if tok == "(":
            self.i += 1
            fields, trailing_comma = [], False
            while not self.accept(")"):
                fields.append(self.parse_type())
                trailing_comma = self.accept(",")
                if not trailing_comma:
                    self.expect(")", "',' or ')' in the tuple type")
                    break
            t: Type = fields[0] if len(fields) == 1 and not trailing_comma else TupleType(tuple(fields))
        elif tok == "ref" and toks[i + 1] == "(":   # a reference type: ref(T)
            self.i += 2
            t = RelayRefType(self.parse_type())
            self.expect(")", "')' to close ref(...)")
        elif tok == "fn":
            self.i += 1
            self.expect("(", "'(' after fn in a function type")
            args = []
            while not self.accept(")"):
                args.append(self.parse_type())
                if not self.accept(","):
                    self.expect(")", "',' or ')' in the argument types")
                    break
            self.expect("->", "'->' in the function type")
            t = FuncType(tuple(args), self.parse_type())
        else:
            close = difflib.get_close_matches(tok, DTYPES, n=1) if _is_name(tok) else []
            raise self.error(f"expected a type, found {self.found()}",
                             hint=(f"did you mean {close[0]}? " if close else "") +
                             "types are Tensor[(1, 2), int8], a dtype, (T1, T2) or fn (T) -> R")
        self.depth -= 1
        return t

    def _tensor_type(self) -> TensorType:
        self.i += 1
        self.expect("[", "'[' after Tensor")
        self.expect("(", "'(' to open the shape")
        dims = []
        while not self.accept(")"):
            tok = self.toks[self.i]
            if not tok.isdigit():
                raise self.error(f"expected a dimension (a non-negative integer), found {self.found()}")
            dims.append(int(tok))
            self.i += 1
            if not self.accept(","):
                self.expect(")", "',' or ')' in the shape")
                break
        self.expect(",", "',' between the shape and the dtype")
        tok = self.toks[self.i]
        if tok not in DTYPES:
            close = difflib.get_close_matches(tok, DTYPES, n=1) if _is_name(tok) else []
            raise self.error(f"expected a dtype, found {self.found()}",
                             hint=(f"did you mean {close[0]}? " if close else "") + "one of " + ", ".join(DTYPES))
        self.i += 1
        self.expect("]", "']' to close Tensor[...]")
        return TensorType(tuple(dims), tok)

    def parse_attr_value(self) -> Any:
        i = self.i
        tok = self.toks[i]
        c = tok[:1]
        if (c in _NUMBER_START and tok != "->" and len(tok) > (c == "-")) or tok in ("inf", "nan"):
            self.i = i + 1
            try:
                return parse_number(tok)[0]
            except ValueError as e:
                raise self.error(str(e), i) from None
        if c == '"' and len(tok) > 1:
            self.i = i + 1
            return self._string(tok, i)
        if tok in ("True", "False", "None"):
            self.i = i + 1
            return {"True": True, "False": False, "None": None}[tok]
        if tok == "[":
            self.i = i + 1
            self.depth += 1
            if self.depth > MAX_NESTING:
                raise self.error(f"attribute value nested more than {MAX_NESTING} levels deep")
            items = []
            while not self.accept("]"):
                items.append(self.parse_attr_value())
                if not self.accept(","):
                    self.expect("]", "',' or ']' in the list")
                    break
            self.depth -= 1
            return tuple(items)
        raise self.error(f"expected an attribute value, found {self.found()}",
                         hint='values are numbers, "strings", True/False/None or [lists]')
