"""Pattern tables per target (``npu``, ``vta``, ``ethos-u``, ``example_accelerator``) and their registry.

``get_pattern_table("npu")`` loads ``patterns/npu.py`` on first use; ``describe_rules("npu")`` lists every
composite and op rule in words.
"""
from .registry import (Check, CompositePattern, MatchContext, Rule, RuleText, Support, describe_rules,
                       get_pattern_table, op_predicates, register_op_predicate, register_pattern_table,
                       registered_targets, rule, preferred_semantics, set_preferred_semantics,
                       desired_layouts, set_desired_layouts, vendor_compiler, set_vendor_placement)

__all__ = ["register_pattern_table", "get_pattern_table", "registered_targets", "describe_rules", "RuleText",
           "CompositePattern", "Check", "Rule", "Support", "MatchContext", "rule", "register_op_predicate",
           "op_predicates", "preferred_semantics", "set_preferred_semantics",
           "desired_layouts", "set_desired_layouts", "vendor_compiler", "set_vendor_placement"]
