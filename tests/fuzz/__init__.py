"""Differential fuzzing and robustness hunting.

* ``graphs``: hypothesis strategies for random quantized TFLite graphs (written with ``TFLiteWriter``).
* ``differential``: one model through every executor, compared bit for bit with LiteRT BUILTIN_REF.
* ``mutate`` / ``files``: file fuzzing of ``.tflite``, ``.onnx``, artifact containers and NPU programs in child
  processes under address-space limits and per-case alarms; only ``ByocError`` subclasses may escape.
* ``graph_properties``: the derandomized CI slice, run by ``tests/test_fuzz_ci.py`` in a child pytest with glibc
  heap checking (a kernel that writes out of bounds kills the child, which is reported, not the session).
* ``regressions``: shrunk failures saved as ``tests/regressions/data/*.npz`` and replayed by
  ``tests/regressions/test_saved_cases.py`` (``open`` = known bug, strict; ``fixed`` = must pass).
* ``python -m tests.fuzz --minutes N`` (``make fuzz``): the long mode with random seeds.
"""
