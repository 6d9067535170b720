"""Code generation backends. ``byoc.backend.llvm`` is the CPU backend (llvmlite)."""
