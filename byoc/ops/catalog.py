"""Importing this module registers every op (each definition module registers its ops on import)."""
from . import tensor, nn, qnn  # noqa: F401
from . import conv_transpose, pool, transform_ops, reduce, image, qnn_elemwise, qnn_activation  # noqa: F401
from . import annotation  # noqa: F401
from . import data_movement, qnn_prelu  # noqa: F401
from . import matmul  # noqa: F401
from . import qnn_math  # noqa: F401
from . import comparison, index_maps  # noqa: F401
from . import elementwise_math, creation, einsum, layout  # noqa: F401
from . import arg_types  # noqa: F401
from . import upsampling  # noqa: F401
from . import qnn_svdf, detection, custom  # noqa: F401
from . import mlas_math  # noqa: F401
from . import matmul_nbits  # noqa: F401

# Ops with numpy semantics but no CPU lowering (a CPU build refuses them with a CodegenError naming the op).
# Empty: every registered op lowers (the TVM-compatibility ops in byoc/backend/llvm/lower_tvm_compat.py), or runs
# as a host step of the CPU build (byoc/backend/llvm/host_ops.py: TFLite_Detection_PostProcess).
REFERENCE_ONLY: frozenset[str] = frozenset()
