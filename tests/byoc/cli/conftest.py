from __future__ import annotations

from pathlib import Path

import pytest

from cli_helpers import SMALL_BLOCKS


@pytest.fixture(scope="session")
def small_model(tmp_path_factory) -> Path:
    from byoc.testing.models import mobilenet_v2
    path = tmp_path_factory.mktemp("cli_models") / "small_mbv2.tflite"
    path.write_bytes(mobilenet_v2(32, blocks=SMALL_BLOCKS, seed=3))
    return path
