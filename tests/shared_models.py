"""Where the tests find real model files — the one place that knows.

* The shared models (MobileNetV2, person_detect, micro_speech, hello_world) are not in the repository: they are
  looked up in ``$BYOC_SHARED_MODELS`` or else ``../shared/models`` beside the repository. Tests that need one
  call ``shared_model(name)`` (or use ``needs_shared``), which skips with a message saying where to put them.
* The MLPerf Tiny int8 models committed in ``tests/data/mlcommons_tiny`` are always present
  (``committed_model``); tests that only need *some* real model use them when the shared ones are absent.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_MODELS = Path(os.environ.get("BYOC_SHARED_MODELS") or REPO.parent / "shared" / "models")
COMMITTED_MODELS = REPO / "tests" / "data" / "mlcommons_tiny"

HELLO_WORLD = "hello_world_int8.tflite"
MICRO_SPEECH = "micro_speech_quantized.tflite"
PERSON_DETECT = "person_detect.tflite"
MOBILENET = "mobilenet_v2_quantized_1x3x224x224.tflite"
SHARED_NAMES = (HELLO_WORLD, MICRO_SPEECH, PERSON_DETECT, MOBILENET)

COMMITTED_NAMES = ("ad01_int8.tflite", "kws_ref_model.tflite", "pretrainedResnet_quant.tflite",
                   "str_ww_ref_model.tflite", "vww_96_int8.tflite")


def where_to_put(name: str | None = None) -> str:
    what = f"{name} (a shared model, not in the repository)" if name else "the shared models (not in the repository)"
    return (f"needs {what}: put the shared .tflite files in {SHARED_MODELS}, or set BYOC_SHARED_MODELS to the "
            f"directory holding them")


def has_shared(name: str | None = None) -> bool:
    """Whether the shared model ``name`` (any of them when None) is present."""
    if name is not None:
        return (SHARED_MODELS / name).is_file()
    return any((SHARED_MODELS / n).is_file() for n in SHARED_NAMES)


def shared_model(name: str) -> Path:
    """Path of a shared model; skips the calling test when it is absent."""
    path = SHARED_MODELS / name
    if not path.is_file():
        pytest.skip(where_to_put(name))
    return path


def shared_model_files() -> list[Path]:
    """Every ``*.tflite`` in the shared models directory (empty when it is absent)."""
    return sorted(SHARED_MODELS.glob("*.tflite")) if SHARED_MODELS.is_dir() else []


def needs_shared(name: str | None = None):
    """A skipif mark for tests (or parameters) that need the shared model ``name`` (any one when None)."""
    return pytest.mark.skipif(not has_shared(name), reason=where_to_put(name))


def shared_params(names=SHARED_NAMES) -> list:
    """``pytest.param`` per shared model, each skipped (with where to put it) when absent."""
    return [pytest.param(n, marks=needs_shared(n), id=n) for n in names]


def committed_model(name: str) -> Path:
    path = COMMITTED_MODELS / name
    assert path.is_file(), f"{path} is committed in the repository"
    return path
