"""Terminal output: tables and progress bars come from rich; progress only on a terminal, never with --json or
in a pipe, and tables are the same text wherever they go."""
from __future__ import annotations

import os
import pty
import subprocess
import sys

from cli_helpers import REPO


def test_tables_align_columns_and_print_cells_literally():
    from byoc.cli.common import format_table
    text = format_table(["tensor", "dtype", "cycles"], [["a/b[1, 2]", "[bold]int8[/bold]", 12345], ["c", "x", 7]])
    lines = text.splitlines()
    assert lines[0].split() == ["tensor", "dtype", "cycles"] and set(lines[1]) <= {"─", " "}
    assert "[bold]int8[/bold]" in lines[2] and "a/b[1, 2]" in lines[2] and "\x1b" not in text
    # numbers right-aligned under their header
    assert lines[2].endswith("12345") and lines[3].endswith("    7") and len(lines[0]) == len(lines[2])
    assert text == format_table(["tensor", "dtype", "cycles"],
                                [["a/b[1, 2]", "[bold]int8[/bold]", 12345], ["c", "x", 7]])


def _run_with_tty_stderr(*args) -> tuple[int, str, str]:
    """The CLI with stderr on a pseudo-terminal (stdout a pipe); returns (exit code, stdout, terminal text)."""
    master, slave = pty.openpty()
    env = dict(os.environ, COLUMNS="120", TERM="xterm")
    p = subprocess.Popen([sys.executable, "-m", "byoc.cli", *map(str, args)], cwd=REPO, env=env,
                         stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    out = p.stdout.read()
    code = p.wait(timeout=300)
    os.close(master)
    return code, out, b"".join(chunks).decode("utf-8", "replace")


def test_progress_bar_on_a_terminal_only(small_model):
    code, out, tty = _run_with_tty_stderr("profile", small_model)
    assert code == 0 and "simulate" in tty and "━" in tty and "roofline" in out
    code, out, tty = _run_with_tty_stderr("profile", small_model, "--json")
    assert code == 0 and "simulate" not in tty and "━" not in tty and out.lstrip().startswith("{")
    p = subprocess.run([sys.executable, "-m", "byoc.cli", "profile", str(small_model)], cwd=REPO,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "━" not in p.stderr and "simulate" not in p.stderr
