"""``Target``: a parsed target string, the form ``relay.build`` and ``byoc.build`` take.

A string is one or more comma-separated kinds, each with optional ``-key=value`` options, e.g. ``"llvm"``,
``"npu, llvm"`` (the NPU codegen plus the host) or ``"llvm -mcpu=cortex-m55"``. Kinds are the host (``llvm``,
``cpu``, ``c`` meaning the host too) and every registered codegen (``byoc.build.register_codegen`` or
``register_func("relay.ext.<name>")``). Options are kept for the caller to read; the host backend compiles for
the machine it runs on."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import CodegenError

__all__ = ["Target", "TargetKind", "list_kinds"]

_HOST_ALIASES = {"llvm": "llvm", "cpu": "cpu", "c": "llvm"}


def list_kinds() -> list[str]:
    """Host kinds and every registered codegen (``"npu"``, plus user codegens)."""
    from ..build import HOST_TARGETS, registered_codegens
    return sorted(set(HOST_TARGETS) | {"c"} | set(registered_codegens()))


@dataclass(frozen=True)
class TargetKind:
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class _Part:
    kind: str
    attrs: tuple[tuple[str, str], ...]


def _parse_part(text: str, whole: str) -> _Part:
    words = text.split()
    kind, opts = words[0], words[1:]
    if kind not in list_kinds():
        raise CodegenError(f"unknown target kind {kind!r} in {whole!r}", hint=f"known: {', '.join(list_kinds())}")
    attrs = []
    for o in opts:
        if not o.startswith("-") or o == "-":
            raise CodegenError(f"target option {o!r} in {whole!r} must look like -key=value or -flag")
        key, _, value = o.lstrip("-").partition("=")
        attrs.append((key, value if value else "true"))
    return _Part(kind, tuple(attrs))


@dataclass(frozen=True, init=False)
class Target:
    """``Target("npu, llvm")``: ``.kind`` is the first kind, ``.kinds`` all of them, ``.attrs`` the options of the
    first, ``.host`` the host part."""
    text: str
    parts: tuple[_Part, ...] = field(repr=False)
    host: "Target | None" = field(default=None, repr=False)

    def __init__(self, target, host=None):
        if isinstance(target, Target):
            text, parts = target.text, target.parts
        elif isinstance(target, str) and target.strip():
            text = target.strip()
            parts = tuple(_parse_part(p.strip(), text) for p in text.split(",") if p.strip())
        else:
            raise CodegenError(f"a target is a string like 'llvm' or 'npu, llvm', got {target!r}")
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "parts", parts)
        if host is None and any(p.kind in _HOST_ALIASES for p in parts):
            host_part = next(p for p in parts if p.kind in _HOST_ALIASES)
            host = None if len(parts) == 1 else Target(host_part.kind)
        elif host is not None and not isinstance(host, Target):
            host = Target(host)
        object.__setattr__(self, "host", host)

    @property
    def kind(self) -> TargetKind:
        return TargetKind(self.parts[0].kind)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(p.kind for p in self.parts)

    @property
    def attrs(self) -> dict[str, str]:
        return dict(self.parts[0].attrs)

    @property
    def keys(self) -> tuple[str, ...]:
        return self.kinds

    def build_target(self) -> list[str]:
        """The kinds as ``byoc.build`` takes them (``c`` is the host; a host is added when none is named)."""
        names = [_HOST_ALIASES.get(k, k) for k in self.kinds]
        if self.host is not None:
            names += [_HOST_ALIASES.get(k, k) for k in self.host.kinds]
        if not any(n in _HOST_ALIASES for n in names):
            names.append("llvm")
        return list(dict.fromkeys(names))

    @staticmethod
    def list_kinds() -> list[str]:
        return list_kinds()

    @staticmethod
    def current(allow_none: bool = True):
        return None

    def __str__(self) -> str:
        return self.text

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None
