"""docs/porting-from-tvm.md's API table is the registry in byoc/porting.py, and the registry is true."""
from __future__ import annotations

from pathlib import Path

import pytest

from byoc.errors import UnsupportedAPIError
from byoc.porting import TVM_API, render_table, resolve

DOC = Path(__file__).resolve().parents[3] / "docs" / "porting-from-tvm.md"
BEGIN, END = "<!-- BEGIN GENERATED TVM API TABLE -->\n", "<!-- END GENERATED TVM API TABLE -->"


def test_doc_table_is_the_generated_one():
    text = DOC.read_text()
    assert BEGIN in text and END in text
    table = text.split(BEGIN, 1)[1].split(END, 1)[0]
    assert table == render_table(), "regenerate with: python -m byoc.porting"


def test_names_are_unique_and_statuses_known():
    names = [e.name for e in TVM_API]
    assert len(names) == len(set(names))
    assert {e.status for e in TVM_API} <= {"yes", "partial", "no"}
    assert all(e.note for e in TVM_API if e.status != "yes")


@pytest.mark.parametrize("entry", [e for e in TVM_API if e.status != "no"], ids=lambda e: e.name)
def test_ported_names_resolve(entry):
    assert resolve(entry.name) is not None


@pytest.mark.parametrize("entry", [e for e in TVM_API if e.status == "no"], ids=lambda e: e.name)
def test_unsupported_names_raise_unsupported_api_error(entry):
    with pytest.raises(UnsupportedAPIError, match="porting-from-tvm.md"):
        resolve(entry.name)
