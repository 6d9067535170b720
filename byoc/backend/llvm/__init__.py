"""CPU backend: FuseOps, llvmlite code generation, kernel cache, graph executor.

Layout (organised like numba's LLVM layer):

* ``fuse_ops.py``   — FuseOps driven by the registry's fusion kinds (one iterative post-order sweep).
* ``lowering.py``   — the lowering registry: one small function per op, element- or kernel-shaped.
* ``lower_*.py``    — the lowerings (elementwise, injective, nn, qnn, reductions/pooling/softmax, tuples);
  ``gemm.py`` holds the fast int8 schedules (VNNI dot-product GEMM, vectorised depthwise).
* ``kernel.py``     — builds one kernel function per fused group (ABI ``i32 (ptr args, i64 begin, i64 end)``).
* ``cgutils.py``    — IR idioms: ``for_range``, ``loop_nest``, ``alloca_once``, TFLite fixed-point primitives.
* ``codegen.py``    — ``CpuCodegen`` (host target machine, JIT) and ``CodeLibrary`` (verify, O3, object code,
  in-process and on-disk kernel caches).
* ``executor.py``   — compiles a function's groups, plans buffers (reused by liveness) and runs them.

Entry point: ``byoc.build(mod, target="llvm", params=None)``.
"""
from __future__ import annotations

from .codegen import CodeLibrary, CpuCodegen, cache_dir, get_codegen
from .executor import CpuExecutable, compile_function
from .fuse_ops import FusedGroup, check_supported, fuse_groups
from .lowering import effective_kind, get_lowering, registered_lowerings

__all__ = ["CodeLibrary", "CpuCodegen", "cache_dir", "get_codegen", "CpuExecutable", "compile_function",
           "FusedGroup", "check_supported", "fuse_groups", "effective_kind", "get_lowering", "registered_lowerings"]
