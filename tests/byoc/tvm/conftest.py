"""The ``tables`` fixture: TVM's own pattern tables (import lines changed) registered for a test module, byoc's
registrations under the same target names restored afterwards."""
from __future__ import annotations

import pytest

from . import tvm_tables


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    pytest.importorskip("ethosu.vela", reason="TVM's Ethos-U table needs ethos-u-vela (a test dependency)")
    with tvm_tables.tables_installed(tmp_path_factory.mktemp("tvm_tables")) as mods:
        yield mods
