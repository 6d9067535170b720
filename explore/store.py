"""The sweep database: SQLite (stdlib) in WAL mode, written by the sweep's parent process only.

Tables: ``points`` (one row per point, keyed by ``point_id``; ``status`` "ok" or "error" with the error text),
``layers`` (each NPU layer's cycles of a point), ``models`` (per model and target: MACs and the measured CPU
time). A point's row is inserted and committed as soon as its result arrives, so an interrupted sweep loses at
most the points in flight; ``INSERT OR IGNORE`` on the key means a point is never stored twice. No column a
comparison reads holds a timestamp or a process id, so the same sweep gives the same rows.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from byoc.errors import ByocError

__all__ = ["Store", "SweepStoreError"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS points (
    point_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, model TEXT NOT NULL, model_sha TEXT NOT NULL,
    target TEXT NOT NULL, config_name TEXT NOT NULL, coords TEXT NOT NULL, config TEXT NOT NULL,
    status TEXT NOT NULL, error TEXT NOT NULL, metrics TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS layers (
    point_id TEXT NOT NULL, idx INTEGER NOT NULL, partition TEXT NOT NULL, layer TEXT NOT NULL, kind TEXT NOT NULL,
    exclusive_cycles INTEGER NOT NULL, macs INTEGER NOT NULL, bytes INTEGER NOT NULL,
    roofline_cycles INTEGER NOT NULL, bound TEXT NOT NULL, PRIMARY KEY (point_id, idx));
CREATE TABLE IF NOT EXISTS models (
    model_sha TEXT NOT NULL, target TEXT NOT NULL, model TEXT NOT NULL, cpu_seconds REAL,
    cpu_source TEXT NOT NULL, PRIMARY KEY (model_sha, target));
"""

POINT_COLUMNS = ("point_id", "seq", "model", "model_sha", "target", "config_name", "coords", "config", "status",
                 "error", "metrics")


class SweepStoreError(ByocError):
    pass


class Store:
    def __init__(self, path: str | Path):
        self.path = str(path)
        try:
            self.db = sqlite3.connect(self.path, timeout=30.0)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as e:
            raise SweepStoreError(f"sweep database {self.path!r}: {e}",
                                  hint="pass a new file or an earlier sweep's .sqlite file") from None

    def close(self) -> None:
        self.db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def done_ids(self) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT point_id FROM points")}

    def add(self, row: dict, layers: list[dict] = ()) -> bool:
        """Insert one finished point (and its layers) in one transaction; False if it was already there."""
        with self.db:
            cur = self.db.execute(
                f"INSERT OR IGNORE INTO points ({','.join(POINT_COLUMNS)}) VALUES ({','.join('?' * len(POINT_COLUMNS))})",
                [row[c] if c not in ("metrics",) else json.dumps(row[c], sort_keys=True) for c in POINT_COLUMNS])
            if cur.rowcount == 0:
                return False
            self.db.executemany(
                "INSERT INTO layers VALUES (?,?,?,?,?,?,?,?,?,?)",
                [(row["point_id"], i, l["partition"], l["layer"], l["kind"], l["exclusive_cycles"], l["macs"],
                  l["bytes"], l["roofline_cycles"], l["bound"]) for i, l in enumerate(layers)])
        return True

    def model_cpu(self, sha: str, target: str):
        r = self.db.execute("SELECT cpu_seconds, cpu_source FROM models WHERE model_sha=? AND target=?",
                            (sha, target)).fetchone()
        return r

    def set_model(self, sha: str, target: str, name: str, cpu_seconds, source: str) -> None:
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO models VALUES (?,?,?,?,?)", (sha, target, name, cpu_seconds,
                                                                                 source))

    def rows(self) -> list[tuple]:
        """Every point row in sweep order (the columns a comparison of two runs reads)."""
        return list(self.db.execute(f"SELECT {','.join(POINT_COLUMNS)} FROM points ORDER BY seq, point_id"))

    def layer_rows(self) -> list[tuple]:
        return list(self.db.execute("SELECT * FROM layers ORDER BY point_id, idx"))

    def count(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM points").fetchone()[0]
