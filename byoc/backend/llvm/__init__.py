"""CPU backend: FuseOps, llvmlite code generation, kernel cache, graph executor."""
from .codegen import CodeLibrary, CpuCodegen, cache_dir, get_codegen
from .executor import CpuExecutable, compile_function
from .fuse_ops import FusedGroup, check_supported, fuse_groups
from .lowering import effective_kind, get_lowering, registered_lowerings

__all__ = ["CodeLibrary", "CpuCodegen", "cache_dir", "get_codegen", "CpuExecutable", "compile_function",
           "FusedGroup", "check_supported", "fuse_groups", "effective_kind", "get_lowering", "registered_lowerings"]
