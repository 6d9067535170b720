"""Tokenizer of the text format: one compiled regular expression, tokens as plain strings.

``tokenize`` returns the token strings (``re.findall`` is the fastest way to cut a large text in CPython); a
token's kind follows from its first character (``%`` local, ``@`` global, ``"`` string, a digit or ``-`` a
number, a letter an identifier, else punctuation). Offsets are recomputed by ``token_offset`` only when an
error is reported. ``/* ... */`` and ``// ...`` comments (the printer's ``/* ty=... */`` annotations among them)
and the ``#[version = ...]`` header are skipped. A character that starts no token becomes a one-character
token of its own, which the parser then reports.
"""
from __future__ import annotations

import bisect
import re

from ..errors import ParseError

__all__ = ["tokenize", "token_offset", "SourceMap", "split_metadata", "EOF"]

EOF = ""  # the sentinel token after the last one

_SKIP = r"(?:\s+|/\*.*?\*/|//[^\n]*|\#\[version[^\]\n]*\])*"
_TOKEN_ALTERNATIVES = (
    r"[()\[\]{},;=:.]",                                      # punctuation (most frequent first)
    r"%[A-Za-z0-9_]+",                                       # %local
    r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*",  # identifiers and dotted op names
    r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?:[iuf]\d*)?",        # numbers with an optional dtype suffix
    r"->",
    r'@(?:[A-Za-z_][A-Za-z0-9_.]*|"(?:[^"\\\n]|\\.)*")',     # @global or @"quoted global"
    r'"(?:[^"\\\n]|\\.)*"',                                  # "string"
    r"-inf\b|-nan\b",
    r"\S",                                                   # anything else: reported by the parser
    r"\Z",  # trailing comments and space: matching them here keeps \S from backtracking into a comment
)
_TOKEN = re.compile(_SKIP + "(" + "|".join(_TOKEN_ALTERNATIVES) + ")", re.S)
_METADATA_RE = re.compile(r"^#\[metadata\][ \t]*$", re.M)


def tokenize(program: str) -> list[str]:
    """The token strings of ``program`` followed by EOF sentinels (two, so one token of lookahead is safe)."""
    tokens = _TOKEN.findall(program)
    while tokens and tokens[-1] == EOF:  # the \Z matches at the end
        tokens.pop()
    tokens.extend((EOF, EOF))
    return tokens


def token_offset(program: str, index: int) -> int:
    """The offset in ``program`` of token number ``index`` (just after the last token for the EOF sentinel)."""
    end_of_last = 0
    for k, m in enumerate(_TOKEN.finditer(program)):
        if not m.group(1):  # past the last token: point just after it
            break
        if k == index:
            return m.start(1)
        end_of_last = m.end(1)
    return end_of_last


def split_metadata(text: str) -> tuple[str, int | None]:
    """(program text, offset of the ``#[metadata]`` line or None)."""
    m = _METADATA_RE.search(text)
    if m is None:
        return text, None
    return text[:m.start()], m.start()


class SourceMap:
    """Offsets to 1-based (line, column), and the source line of an offset with a caret under the column."""

    def __init__(self, text: str):
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line_col(self, offset: int) -> tuple[int, int]:
        i = bisect.bisect_right(self.starts, offset) - 1
        return i + 1, offset - self.starts[i] + 1

    def caret(self, offset: int) -> str:
        line, col = self.line_col(offset)
        start = self.starts[line - 1]
        end = self.text.find("\n", start)
        src = self.text[start:] if end < 0 else self.text[start:end]
        if len(src) > 160:  # keep long lines readable: a window around the column
            lo = max(0, col - 80)
            src, col = ("..." if lo else "") + src[lo:lo + 160], col - lo + (3 if lo else 0)
        return f"{src}\n{' ' * (col - 1)}^"

    def error(self, message: str, offset: int, hint: str | None = None) -> ParseError:
        line, col = self.line_col(offset)
        return ParseError(message, line, col, hint=hint, notes=(self.caret(offset),))
