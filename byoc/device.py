"""``tvm.cpu(0)``: a device handle. Only the host CPU exists here; executors take it and ignore the id."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Device", "cpu"]


@dataclass(frozen=True)
class Device:
    device_type: str = "cpu"
    device_id: int = 0

    def __str__(self) -> str:
        return f"{self.device_type}({self.device_id})"


def cpu(dev_id: int = 0) -> Device:
    return Device("cpu", int(dev_id))
