"""``relay.qnn.transform``: ``Legalize()`` applies the ``FTVMQnnLegalize`` hooks (then InferType), as TVM's."""
from __future__ import annotations

from ...transform.infer_type import InferType
from ...transform.legalize import QnnLegalize
from ...transform.pass_infra import Sequential

__all__ = ["Legalize"]


def Legalize():  # noqa: N802 - TVM's name
    return Sequential([QnnLegalize(), InferType()])
