"""``relay.testing.init``: parameter initialisers and ``create_workload``, as TVM's relay.testing had them.

The initialiser picks the fill from the parameter's name suffix (``weight``: Xavier uniform; ``bias``, ``beta``,
``mean``: 0; ``gamma``, ``var``: 1), so a workload built here has TVM's parameter values for the same seed
(numpy's global generator, as TVM seeded it).
"""
from __future__ import annotations

import numpy as np

from ...errors import UnsupportedAPIError
from ...ir.module import IRModule
from ...ir.types import TensorType

__all__ = ["Initializer", "Xavier", "Constant", "create_workload"]


class Initializer:
    """Fills ``arr`` in place according to the suffix of ``desc`` (a parameter name)."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs

    def __call__(self, desc: str, arr: np.ndarray) -> None:
        for suffix, fill in (("weight", self._init_weight), ("bias", self._init_bias),
                             ("gamma", self._init_gamma), ("beta", self._init_beta),
                             ("mean", self._init_mean), ("var", self._init_var)):
            if desc.endswith(suffix):
                fill(desc, arr)
                return
        self._init_default(desc, arr)

    def _init_bias(self, _, arr):
        arr[:] = 0.0

    def _init_gamma(self, _, arr):
        arr[:] = 1.0

    def _init_beta(self, _, arr):
        arr[:] = 0.0

    def _init_mean(self, _, arr):
        arr[:] = 0.0

    def _init_var(self, _, arr):
        arr[:] = 1.0

    def _init_weight(self, name, arr):
        raise NotImplementedError("Initializer subclasses define _init_weight")

    def _init_default(self, name, _):
        raise ValueError(f"cannot initialise parameter {name!r}: its name must end in weight, bias, gamma, beta, "
                         "mean or var")


class Xavier(Initializer):
    """Uniform in ±sqrt(magnitude / factor); factor from the fans (fan = dim × receptive field size)."""

    def __init__(self, rnd_type: str = "uniform", factor_type: str = "avg", magnitude: float = 3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        self.rnd_type, self.factor_type, self.magnitude = rnd_type, factor_type, float(magnitude)

    def _init_weight(self, name, arr):
        shape = arr.shape
        if len(shape) < 2:
            raise ValueError(f"Xavier initialisation needs a weight of rank >= 2; {name} has shape {shape}")
        field = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        fan_in, fan_out = shape[1] * field, shape[0] * field
        factors = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}
        if self.factor_type not in factors:
            raise ValueError(f"Xavier factor_type must be one of {sorted(factors)}, not {self.factor_type!r}")
        factor = field if "depthwise" in name else factors[self.factor_type]   # one input channel per filter
        if self.rnd_type != "uniform":
            raise ValueError(f"Xavier rnd_type must be 'uniform', not {self.rnd_type!r}")
        scale = np.sqrt(self.magnitude / factor)
        arr[:] = np.random.uniform(-scale, scale, size=shape)


class Constant(Initializer):
    """Every weight element is 1 / (number of elements)."""

    def _init_weight(self, name, arr):
        arr[:] = 1.0 / arr.size


def create_workload(net, initializer=None, seed: int = 0):
    """``(mod, params)``: ``net`` typed as a module's main; every parameter but ``data`` initialised by name."""
    from ...nd import array
    from ...transform import InferType
    mod = InferType()(IRModule.from_expr(net))
    np.random.seed(seed)
    initializer = initializer or Xavier()
    params = {}
    for p in mod["main"].params:
        if p.name_hint == "data":
            continue
        t = p.checked_type
        if not isinstance(t, TensorType):
            raise UnsupportedAPIError(f"create_workload parameter {p.name_hint} of type {t}",
                                      "workload parameters are tensors")
        value = np.zeros(tuple(int(d) for d in t.shape)).astype(t.dtype)
        initializer(p.name_hint, value)
        params[p.name_hint] = array(value)
    return mod, params
