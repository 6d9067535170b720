"""What ``Runtime`` and ``Executor`` share: a registered name plus checked options (TVM's ``attrs``)."""
from __future__ import annotations

from types import MappingProxyType

from ...errors import UnsupportedAPIError


class NamedChoice:
    """A name among ``KNOWN`` (name → the options it accepts, with their Python types)."""
    kind = "choice"
    KNOWN: dict[str, dict[str, type]] = {}

    def __init__(self, name: str, options: dict | None = None) -> None:
        if name not in self.KNOWN:
            raise UnsupportedAPIError(f"relay.backend.{type(self).__name__}({name!r})",
                                      f"the {self.kind}s here are {', '.join(sorted(self.KNOWN))}")
        allowed = self.KNOWN[name]
        opts = dict(options or {})
        for key, value in opts.items():
            if key not in allowed:
                raise UnsupportedAPIError(f"{type(self).__name__}({name!r}, {{{key!r}: ...}})",
                                          f"options of {name!r}: {', '.join(sorted(allowed)) or 'none'}")
            if not isinstance(value, allowed[key]):
                raise UnsupportedAPIError(f"{type(self).__name__}({name!r}, {{{key!r}: {value!r}}})",
                                          f"{key!r} takes a {allowed[key].__name__}")
        self.name = name
        self._attrs = MappingProxyType(opts)

    @property
    def attrs(self):
        return self._attrs

    def __contains__(self, key) -> bool:
        return key in self._attrs

    def __getitem__(self, key):
        return self._attrs[key]

    def get(self, key, default=None):
        return self._attrs.get(key, default)

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and (other.name, dict(other.attrs)) == (self.name, dict(self.attrs))

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.name))

    def __repr__(self) -> str:
        return f"{self.name}" + (f"{dict(self._attrs)}" if self._attrs else "")

    @classmethod
    def list_registered(cls) -> list[str]:
        return sorted(cls.KNOWN)

    @classmethod
    def list_registered_options(cls, name: str) -> dict[str, str]:
        if name not in cls.KNOWN:
            raise UnsupportedAPIError(f"{cls.__name__}.list_registered_options({name!r})",
                                      f"the {cls.kind}s here are {', '.join(sorted(cls.KNOWN))}")
        return {k: t.__name__ for k, t in cls.KNOWN[name].items()}
