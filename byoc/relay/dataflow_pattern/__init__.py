"""``relay.dataflow_pattern``: TVM Relay's dataflow pattern language over this project's IR."""
from __future__ import annotations

from .check import Check, MatchContext, Rule, Support, describe_check, evaluate_check, rule
from .graph import IndexedGraph
from .matcher import DFPatternMatcher, Match, NodeMap, match, match_details
from .partition import partition
from .pattern import (AltPattern, AttrPattern, CallPattern, ConstantPattern, DataTypePattern, DFPattern,
                      DominatorPattern, ExprPattern, FunctionPattern, IfPattern, LetPattern, ShapePattern,
                      TuplePattern, TupleGetItemPattern, TypePattern, VarPattern, WildcardPattern, dominates,
                      has_attr, has_dtype, has_shape, has_type, is_constant, is_expr, is_if, is_let, is_op,
                      is_tuple, is_tuple_get_item, is_var, wildcard)
from .rewrite import DFPatternCallback, rewrite
from .table import CompositePattern, normalize_table

__all__ = [
    "DFPattern", "ExprPattern", "WildcardPattern", "VarPattern", "ConstantPattern", "CallPattern",
    "FunctionPattern", "TuplePattern", "TupleGetItemPattern", "IfPattern", "LetPattern", "AltPattern",
    "AttrPattern", "TypePattern", "DataTypePattern", "ShapePattern", "DominatorPattern",
    "is_op", "wildcard", "is_var", "is_constant", "is_expr", "is_tuple", "is_tuple_get_item", "is_if", "is_let",
    "has_attr", "has_type", "has_dtype", "has_shape", "dominates",
    "match", "match_details", "Match", "NodeMap", "DFPatternMatcher", "IndexedGraph", "partition", "rewrite",
    "DFPatternCallback", "Support", "Rule", "Check", "MatchContext", "rule", "evaluate_check", "describe_check",
    "CompositePattern", "normalize_table",
]
