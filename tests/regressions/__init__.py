"""Saved fuzz findings replayed as tests (see tests/fuzz/regressions.py for the data format)."""
