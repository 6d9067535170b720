"""``tvm.nd``: TVM's NDArray spelling over numpy (``byoc.nd.array``, ``byoc.nd.empty``, ``Constant.data``).

An ``NDArray`` is a numpy array (a subclass, so every numpy function accepts it) that also answers TVM's
methods: ``.numpy()`` / ``.asnumpy()`` (a fresh, writable copy), ``.device``, ``.copyfrom``, ``.copyto``.
Arithmetic on it gives plain numpy arrays, so the subclass never spreads into kernels.
"""
from __future__ import annotations

import numpy as np

__all__ = ["NDArray", "array", "empty", "Device", "cpu", "device", "as_ndarray"]


class Device:
    """``tvm.cpu(0)`` / ``tvm.device("llvm", 0)``: this project runs on the host CPU (and the simulated NPU)."""
    __slots__ = ("device_type", "device_id")
    _TYPES = {"cpu": 1, "llvm": 1, "c": 1}

    def __init__(self, device_type: str = "cpu", device_id: int = 0):
        from .errors import CodegenError
        kind = str(device_type).split()[0].lower() if device_type else "cpu"
        if kind not in self._TYPES:
            raise CodegenError(f"device {device_type!r} is not available",
                               hint="byoc runs on the host: use byoc.cpu(0) or byoc.device('llvm', 0); "
                                    "see docs/porting-from-tvm.md")
        self.device_type = self._TYPES[kind]
        self.device_id = int(device_id)

    def __eq__(self, other) -> bool:
        return isinstance(other, Device) and (other.device_type, other.device_id) == (self.device_type,
                                                                                       self.device_id)

    def __hash__(self) -> int:
        return hash((self.device_type, self.device_id))

    def __repr__(self) -> str:
        return f"cpu({self.device_id})"

    def sync(self) -> None:
        """Work finishes before ``run`` returns: nothing to wait for."""


def cpu(dev_id: int = 0) -> Device:
    return Device("cpu", dev_id)


def device(dev_type="cpu", dev_id: int = 0) -> Device:
    return Device(dev_type, dev_id)


class NDArray(np.ndarray):
    """A numpy array with TVM's NDArray methods."""

    def __array_wrap__(self, arr, context=None, return_scalar=False):
        # ufunc results are plain arrays (or scalars): the subclass stays on stored data only
        if return_scalar and arr.ndim == 0:
            return arr[()]
        return arr.view(np.ndarray)

    def numpy(self) -> np.ndarray:
        """A writable copy as a plain numpy array (TVM copies too)."""
        return np.array(self, copy=True, subok=False)

    asnumpy = numpy

    @property
    def device(self) -> Device:
        return cpu(0)

    def copyfrom(self, source) -> "NDArray":
        src = np.asarray(source)
        if src.shape != self.shape:
            from .errors import ExecutionError
            raise ExecutionError(f"copyfrom: shape {src.shape} does not match the array's {self.shape}")
        np.copyto(self, src.astype(self.dtype, copy=False))
        return self

    def copyto(self, target):
        if isinstance(target, Device):
            return array(self)
        np.copyto(target, self)
        return target

    def same_as(self, other) -> bool:
        return self is other


def as_ndarray(arr: np.ndarray) -> NDArray:
    """A view of ``arr`` as an ``NDArray`` (no copy; keeps the read-only flag)."""
    return arr if type(arr) is NDArray else arr.view(NDArray)


def array(arr, device: Device | None = None) -> NDArray:
    """``tvm.nd.array(numpy_array[, dev])``: a copy of ``arr`` (its dtype is kept)."""
    return np.array(np.asarray(arr), copy=True, order="C").view(NDArray)


def empty(shape, dtype="float32", device: Device | None = None) -> NDArray:
    """``tvm.nd.empty(shape, dtype)``: zero-filled (deterministic) rather than uninitialised."""
    from .ir.types import normalize_dtype
    return np.zeros(tuple(int(d) for d in shape), dtype=normalize_dtype(dtype)).view(NDArray)
