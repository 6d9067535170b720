"""``tvm.testing``'s assertion helpers for ported test code (``import byoc as tvm``; ``tvm.testing.X``)."""
from __future__ import annotations

import numpy as np

__all__ = ["assert_allclose"]


def _array(x):
    return x.numpy() if hasattr(x, "numpy") and not isinstance(x, np.ndarray) else np.asarray(x)


def assert_allclose(actual, desired, rtol: float = 1e-7, atol: float = 1e-7, verbose: bool = True) -> None:
    """numpy's assert_allclose on arrays or NDArrays, with TVM's defaults (rtol = atol = 1e-7) and a shape check
    first (numpy would broadcast)."""
    actual, desired = _array(actual), _array(desired)
    np.testing.assert_equal(actual.shape, desired.shape)
    np.testing.assert_allclose(actual, desired, rtol=rtol, atol=atol, verbose=verbose)
