"""Importing this module registers every op (each definition module registers its ops on import)."""
from . import tensor, nn, qnn  # noqa: F401
from . import conv_transpose, pool, transform_ops, reduce, image, qnn_elemwise, qnn_activation  # noqa: F401
from . import annotation  # noqa: F401
from . import transform_more, qnn_prelu  # noqa: F401
from . import matmul  # noqa: F401
from . import elementwise_more  # noqa: F401
from . import elementwise_more2  # noqa: F401
from . import elementwise_math, creation, einsum, layout  # noqa: F401
from . import arg_types  # noqa: F401

# Ops registered for TVM source compatibility (TVM's BYOC tests and programs build graphs with them): they have
# type relations and numpy semantics, so byoc.evaluate, patterns and partitioning handle them, but no CPU
# lowering yet; a CPU build refuses them with a CodegenError naming the op.
REFERENCE_ONLY = frozenset({
    "log", "erf", "power", "left_shift", "right_shift", "fixed_point_multiply", "zeros", "ones", "zeros_like",
    "ones_like", "einsum", "nn.matmul", "layout_transform", "variance",
})
