"""``tvm.contrib.utils``: ``tempdir()``, a temporary directory with ``relpath(name)``, removed when the
object is garbage collected (or ``remove()``); ``keep_for_debug=True`` keeps it."""
from __future__ import annotations

import os
import shutil
import tempfile

__all__ = ["TempDirectory", "tempdir"]


class TempDirectory:
    def __init__(self, custom_path: str | None = None, keep_for_debug: bool | None = None) -> None:
        if custom_path:
            os.makedirs(custom_path, exist_ok=True)
            self.temp_dir = os.path.realpath(custom_path)
        else:
            self.temp_dir = tempfile.mkdtemp(prefix="byoc_")
        self._owned = not custom_path and not keep_for_debug

    def relpath(self, name: str) -> str:
        return os.path.join(self.temp_dir, name)

    def listdir(self) -> list[str]:
        return sorted(os.listdir(self.temp_dir))

    def remove(self) -> None:
        if self._owned and os.path.isdir(self.temp_dir):
            shutil.rmtree(self.temp_dir, ignore_errors=True)
        self._owned = False

    def __del__(self) -> None:
        try:
            self.remove()
        except Exception:  # interpreter shutdown: modules may already be gone
            pass

    def __repr__(self) -> str:
        return f"TempDirectory({self.temp_dir!r})"


def tempdir(custom_path: str | None = None, keep_for_debug: bool | None = None) -> TempDirectory:
    return TempDirectory(custom_path, keep_for_debug)
