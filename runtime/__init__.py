"""Heterogeneous runtime: executor, compiled-artifact format, profiling."""
