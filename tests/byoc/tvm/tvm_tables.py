"""Load TVM's own pattern tables (CMSIS-NN, Ethos-U with its util.py, Arm Compute Library) with only their
import lines changed, from a local copy that is never part of this repository.

``TVM_TABLES`` (env ``BYOC_TVM_TABLES``, default ``/work/ext/tvm_tables``) holds the files as they are in
apache/tvm 513c2be0c3 (python/tvm/relay/op/contrib/ and relay/backend/contrib/ethosu/util.py). ``load_tables``
copies them to a temporary directory rewriting import lines only (``IMPORT_REWRITES``), checks that nothing
else changed, and imports them.

What the Ethos-U table imports from TVM's Ethos-U backend (not part of byoc) comes from ``ethosu_backend.py``
beside this file: ``codegen.replicate_pads`` (written here), ``preprocess.preprocess_ext_io`` (identity: it
reshapes partition inputs/outputs for the NPU's calling convention, after partitioning) and ``_ffi_api``.
CMSIS-NN's C++ helpers (``relay.ext.cmsisnn.transform.*``: its conv check's padding helper and the
codegen-preparation passes run after PartitionGraph) are byoc's own builtins (``byoc/_ffi/tvm_builtins.py``).
``import numpy as np`` becomes ``numpy1_dtype.np``: NumPy with NumPy 1.x's ``np.dtype(obj)`` (through a string
``obj.dtype``), which Ethos-U's elementwise checks call and NumPy 2 refuses, in TVM as here.
"""
from __future__ import annotations

import contextlib
import importlib
import os
import re
import sys
from pathlib import Path

TVM_TABLES = Path(os.environ.get("BYOC_TVM_TABLES", "/work/ext/tvm_tables"))

# file in TVM_TABLES -> module name it is imported as (ethosu.py would shadow Vela's ``ethosu`` package)
FILES = {"cmsisnn.py": "tvm_cmsisnn", "ethosu.py": "tvm_ethosu", "ethosu_util.py": "ethosu_util",
         "arm_compute_lib.py": "tvm_arm_compute_lib"}

# (regex on an import line, replacement): ``import tvm`` -> ``import byoc as tvm``, ``from tvm.X`` ->
# ``from byoc.X``, relative imports to their absolute byoc module, the Ethos-U backend to ethosu_backend.py
IMPORT_REWRITES = [
    (r"^(\s*)from tvm\.relay\.backend\.contrib\.ethosu\.util import", r"\1from ethosu_util import"),
    (r"^(\s*)from tvm\.relay\.backend\.contrib\.ethosu import", r"\1from ethosu_backend import"),
    (r"^(\s*)from \. import _ffi_api", r"\1from ethosu_backend import _ffi_api"),
    (r"^(\s*)from \.\.\.dataflow_pattern import", r"\1from byoc.relay.dataflow_pattern import"),
    (r"^(\s*)from \.register import", r"\1from byoc.relay.op.contrib.register import"),
    (r"^(\s*)from \.\.strategy\.generic import", r"\1from byoc.relay.op.strategy.generic import"),
    (r"^(\s*)import tvm(\.ir)?(\s|$)", r"\1import byoc as tvm\3"),
    (r"^(\s*)from tvm(\.|\s)", r"\1from byoc\2"),
    # NumPy 1.x's np.dtype(obj-with-a-string-.dtype), which the Ethos-U table relies on (numpy1_dtype.py)
    (r"^(\s*)import numpy as np(\s|$)", r"\1from numpy1_dtype import np\2"),
]
_IMPORT_LINE = re.compile(r"^\s*(import|from)\s")


def available() -> bool:
    return all((TVM_TABLES / f).is_file() for f in FILES)


def rewrite_imports(text: str) -> str:
    out = []
    for line in text.splitlines(keepends=True):
        if _IMPORT_LINE.match(line):
            for pattern, repl in IMPORT_REWRITES:
                new = re.sub(pattern, repl, line)
                if new != line:
                    line = new
                    break
        out.append(line)
    return "".join(out)


def changed_lines(old: str, new: str) -> list[tuple[str, str]]:
    a, b = old.splitlines(), new.splitlines()
    assert len(a) == len(b)
    return [(x, y) for x, y in zip(a, b) if x != y]


_LOADED: dict[str, object] = {}


def load_tables(workdir: Path) -> dict[str, object]:
    """Write the rewritten copies to ``workdir`` and import them; returns module name -> module. Once per
    process: the tables register global functions at import (as in TVM, where a module is imported once), so a
    second call returns the first call's modules."""
    if _LOADED:
        return dict(_LOADED)
    workdir.mkdir(parents=True, exist_ok=True)
    for f, mod_name in FILES.items():
        src = (TVM_TABLES / f).read_text()
        new = rewrite_imports(src)
        for old_line, new_line in changed_lines(src, new):
            assert _IMPORT_LINE.match(old_line), (f, old_line, new_line)
        (workdir / f"{mod_name}.py").write_text(new)
    here = str(Path(__file__).parent)
    for p in (str(workdir), here):
        if p not in sys.path:
            sys.path.insert(0, p)
    mods = {}
    for mod_name in ("ethosu_util", "tvm_cmsisnn", "tvm_ethosu", "tvm_arm_compute_lib"):
        sys.modules.pop(mod_name, None)
        mods[mod_name] = importlib.import_module(mod_name)
    _LOADED.update(mods)
    return mods


TARGETS = ("ethos-u", "cmsis-nn", "arm_compute_lib")
_TVM_REGISTRATIONS: dict = {}   # what importing the tables registered: (table functions, op predicates)


def _registrations():
    from byoc.ops import registry as ops
    from patterns import registry
    keys = {f"target.{t}" for t in TARGETS}
    return ({t: registry._TABLE_FUNCS.get(t) for t in TARGETS},
            {k: v for k, v in ops._OP_ATTRS.items() if k[1] in keys})


def _install(registrations) -> None:
    from byoc.ops import registry as ops
    from patterns import registry
    funcs, attrs = registrations
    for t, fn in funcs.items():
        registry._TABLE_FUNCS.pop(t, None)
        registry._TABLES.pop(t, None)
        if fn is not None:
            registry._TABLE_FUNCS[t] = fn
    keys = {f"target.{t}" for t in TARGETS}
    for k in [k for k in ops._OP_ATTRS if k[1] in keys]:
        del ops._OP_ATTRS[k]
    ops._OP_ATTRS.update(attrs)


@contextlib.contextmanager
def tables_installed(workdir: Path):
    """TVM's tables registered under TVM's target names for the duration; byoc's own registrations under those
    names (``ethos-u`` is also byoc's built-in target) come back afterwards. The modules import once per process
    (they register global functions at import, as in TVM); later uses re-install what that import registered."""
    from patterns import get_pattern_table
    get_pattern_table("ethos-u")   # byoc's built-in table is loaded, so it is what gets restored
    saved = _registrations()
    first = not _LOADED
    mods = load_tables(workdir)
    if first:
        _TVM_REGISTRATIONS["tables"] = _registrations()
    else:
        _install(_TVM_REGISTRATIONS["tables"])
    try:
        yield mods
    finally:
        _install(saved)
