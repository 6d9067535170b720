"""The tests find the shared models in one place (tests/shared_models.py), so a fresh clone without
../shared/models skips those tests with a message instead of failing on a missing file."""
from __future__ import annotations

import re
from pathlib import Path

from tests.shared_models import COMMITTED_MODELS, COMMITTED_NAMES, where_to_put

TESTS = Path(__file__).resolve().parent
# A path to ../shared/models spelled out anywhere else (docs tests aside: the docs name that path literally).
SPELLED = re.compile(r"""["']shared["']\s*[/,]\s*["']models["']|shared/models["']""")
ALLOWED = {"shared_models.py", "test_docs.py", "test_model_locations.py"}


def test_no_test_spells_out_the_shared_models_directory():
    offenders = [str(p.relative_to(TESTS)) for p in TESTS.rglob("*.py")
                 if p.name not in ALLOWED and SPELLED.search(p.read_text(encoding="utf-8"))]
    assert not offenders, f"use tests/shared_models.py instead: {offenders}"


def test_committed_models_are_present_and_the_skip_message_says_where_to_put_the_shared_ones():
    assert sorted(p.name for p in COMMITTED_MODELS.glob("*.tflite")) == sorted(COMMITTED_NAMES)
    msg = where_to_put("person_detect.tflite")
    assert "person_detect.tflite" in msg and "BYOC_SHARED_MODELS" in msg and "put the shared" in msg
