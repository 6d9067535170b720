"""numpy1_dtype.np: NumPy with NumPy 1.x's np.dtype(obj) through a string ``obj.dtype`` (what TVM's Ethos-U
table relies on); everything else is NumPy's own."""
from __future__ import annotations

import numpy
import pytest

from .numpy1_dtype import np


class _Params:
    dtype = "int8"  # as TVM's checked_type.dtype: a string


def test_dtype_of_an_object_with_a_string_dtype():
    assert np.dtype(_Params()) == numpy.dtype("int8")
    assert np.dtype("uint8") == numpy.dtype("uint8") and np.int8 is numpy.int8
    with pytest.raises(TypeError):
        np.dtype("not a dtype name")
    with pytest.raises(TypeError):
        np.dtype(object.__new__(type("NoDtype", (), {})))
