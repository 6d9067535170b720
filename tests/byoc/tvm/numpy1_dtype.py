"""NumPy as TVM's Ethos-U table was written against (NumPy 1.x), for ``tvm_tables.load_tables``.

The table calls ``np.dtype(params)`` on its ``TensorParams`` objects, whose ``.dtype`` is the string TVM's
``checked_type.dtype`` is (in TVM as in byoc). NumPy 1.x converted such an object through its ``.dtype``
attribute (with a DeprecationWarning); NumPy 2 raises ValueError. ``np`` here is numpy with only ``dtype``
doing that 1.x conversion, so the unchanged table runs under NumPy 2. Only the table's import line changes
(``import numpy as np`` -> ``from numpy1_dtype import np``)."""
from __future__ import annotations

import types

import numpy

__all__ = ["np"]


def _dtype(obj, *args, **kwargs):
    try:
        return numpy.dtype(obj, *args, **kwargs)
    except (TypeError, ValueError):
        inner = getattr(obj, "dtype", None)
        if inner is None or isinstance(obj, (str, type)) or isinstance(inner, numpy.dtype):
            raise
        return numpy.dtype(inner, *args, **kwargs)


class _NumPy1(types.ModuleType):
    dtype = staticmethod(_dtype)

    def __getattr__(self, name):
        return getattr(numpy, name)


np = _NumPy1("numpy")
