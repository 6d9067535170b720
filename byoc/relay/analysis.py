"""``relay.analysis``."""
from ..ir.analysis import all_vars, bound_vars, count_ops, free_vars
from ..transform.regions import AnnotatedRegion, AnnotatedRegionSet

__all__ = ["free_vars", "bound_vars", "all_vars", "count_ops", "AnnotatedRegion", "AnnotatedRegionSet"]
