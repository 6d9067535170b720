"""The project's test suite (a package so ``python -m tests.fuzz`` and ``tests.regressions`` can import helpers)."""
