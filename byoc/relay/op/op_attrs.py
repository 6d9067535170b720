"""``tvm.relay.op.op_attrs``: the attribute classes of byoc's ops under TVM's names (``Conv2DAttrs``,
``GlobalPool2DAttrs``, ...), for the ``isinstance(call.attrs, ...)`` tests pattern tables make.

A TVM attribute class byoc has no op for is an empty class no byoc node's attributes are an instance of (the
test is False, as it is in TVM for a node of another op)."""
from __future__ import annotations

from ...ir.attrs import Attrs

_CLASSES: dict[str, type] = {}


def _collect() -> dict[str, type]:
    if not _CLASSES:
        import byoc.ops  # noqa: F401 - every op module registers its attribute classes
        stack = list(Attrs.__subclasses__())
        while stack:
            cls = stack.pop()
            _CLASSES.setdefault(cls.__name__, cls)
            stack.extend(cls.__subclasses__())
    return _CLASSES


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    classes = _collect()
    if name in classes:
        return classes[name]
    if name.endswith("Attrs"):
        cls = classes[name] = type(name, (Attrs,), {"__doc__": f"TVM's {name}: no byoc op has these attributes"})
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
