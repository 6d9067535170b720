"""``relay.analysis``."""
from ..ir.analysis import all_vars, bound_vars, count_ops, free_vars

__all__ = ["free_vars", "bound_vars", "all_vars", "count_ops"]
