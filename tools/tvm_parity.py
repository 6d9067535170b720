"""Run TVM's own Relay BYOC tests against byoc, with only their import lines changed.

    python tools/tvm_parity.py --tvm-git PATH/TO/tvm[.git] [--rev 21095b98bb] [--out DIR] [FILE ...]
    python tools/tvm_parity.py --tvm-src PATH/TO/tvm-checkout [FILE ...]

The test files are read from the user's TVM checkout (or a bare git directory at ``--rev``, the last tree with
Relay), never from this repository. Each ``import tvm...`` / ``from tvm... import ...`` line becomes the byoc
spelling (``import byoc as tvm``, ``from byoc.X import Y``); nothing else changes. An import byoc does not
provide binds a placeholder that fails with "missing: <name>" when used, so the rest of the file still runs and
the table shows which tests needed it. Prints a per-file table and each test's status (Markdown).
"""
from __future__ import annotations

import argparse
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

FILES = ("test_pass_merge_composite.py", "test_pass_annotate_target.py", "test_pass_merge_compiler_regions.py",
         "test_annotated_regions.py", "test_pass_partition_graph.py", "test_dataflow_pattern.py")
TEST_DIR = "tests/python/relay"

PLACEHOLDER = '''
class _Missing:
    """What byoc does not provide: fails when used, naming the import."""
    def __init__(self, name):
        self._name = name
    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise RuntimeError(f"missing: {self._name}.{attr} is not provided by byoc")
    def __call__(self, *args, **kwargs):
        return _Missing(self._name + "()")
'''


def byoc_module(name: str) -> str:
    return "byoc" + name[3:] if name == "tvm" or name.startswith("tvm.") else name


def _guarded(indent: str, statement: str, bound: list[str], module: str) -> str:
    lines = [f"{indent}try:", f"{indent}    {statement}", f"{indent}except Exception:  # ImportError or UnsupportedAPIError"]
    lines += [f"{indent}    {n} = _Missing({(module + '.' + n)!r})" for n in bound] or [f"{indent}    pass"]
    return "\n".join(lines)


def rewrite_import(line: str) -> str | None:
    """The byoc spelling of one TVM import line, or None when ``line`` is not an import of tvm."""
    indent = line[: len(line) - len(line.lstrip())]
    text = line.strip()
    m = re.fullmatch(r"import (tvm(?:\.[\w.]+)?)(?: as (\w+))?", text)
    if m:
        module, alias = m.groups()
        if alias:
            return _guarded(indent, f"import {byoc_module(module)} as {alias}", [alias], module)
        if module == "tvm":
            return _guarded(indent, "import byoc as tvm", ["tvm"], module)
        # ``import tvm.relay.testing`` binds ``tvm`` and imports the submodule.
        return f"{indent}import byoc as tvm\n" + _guarded(indent, f"import {byoc_module(module)}", [], module)
    m = re.fullmatch(r"from (tvm(?:\.[\w.]+)?) import (.+)", text)
    if m:
        module, names = m.groups()
        if names.strip() == "*":
            return _guarded(indent, f"from {byoc_module(module)} import *", [], module)
        parts = [p.strip() for p in names.strip("()").split(",") if p.strip()]
        return "\n".join(_guarded(indent, f"from {byoc_module(module)} import {p}", [p.split(" as ")[-1].strip()],
                                  module) for p in parts)
    return None


def rewrite(source: str) -> str:
    out: list[str] = []
    first_import = None
    for line in source.splitlines():
        new = rewrite_import(line)
        if new is not None and first_import is None:
            first_import = len(out)
        out.append(line if new is None else new)
    out.insert(first_import or 0, PLACEHOLDER)
    return "\n".join(out) + "\n"


def read_tests(args, name: str) -> str:
    if args.tvm_src:
        return (pathlib.Path(args.tvm_src) / TEST_DIR / name).read_text()
    return subprocess.run(["git", "-C", args.tvm_git, "show", f"{args.rev}:{TEST_DIR}/{name}"], check=True,
                          capture_output=True, text=True).stdout


def run_file(path: pathlib.Path, repo: pathlib.Path) -> dict[str, tuple[str, str]]:
    report = path.with_suffix(".xml")
    env = dict(os.environ, PYTHONPATH=str(repo) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path),
                    f"--junitxml={report}", "-o", "junit_family=xunit1"], cwd=path.parent, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        status, message = "pass", ""
        for tag, word in (("failure", "fail"), ("error", "error"), ("skipped", "skip")):
            node = case.find(tag)
            if node is not None:
                status, message = word, (node.get("message") or "").splitlines()[0][:160] if node.get("message") else ""
        results[case.get("name")] = (status, message)
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--tvm-git", help="a TVM git directory (bare or not); files are read at --rev")
    where.add_argument("--tvm-src", help="a TVM source checkout with Relay's tests")
    parser.add_argument("--rev", default="21095b98bb", help="TVM commit to read (default: the last Relay tree)")
    parser.add_argument("--out", help="directory for the rewritten files (default: a temporary one)")
    parser.add_argument("files", nargs="*", default=list(FILES))
    args = parser.parse_args(argv)
    repo = pathlib.Path(__file__).resolve().parents[1]
    out = pathlib.Path(args.out or tempfile.mkdtemp(prefix="byoc-tvm-parity-"))
    out.mkdir(parents=True, exist_ok=True)
    table = ["| file | passed | failed | skipped |", "|---|---|---|---|"]
    details, totals = [], [0, 0, 0]
    for name in args.files:
        path = out / name
        path.write_text(rewrite(read_tests(args, name)))
        results = run_file(path, repo)
        passed = sum(s == "pass" for s, _ in results.values())
        skipped = sum(s == "skip" for s, _ in results.values())
        failed = len(results) - passed - skipped
        totals = [totals[0] + passed, totals[1] + failed, totals[2] + skipped]
        table.append(f"| {name} | {passed} | {failed} | {skipped} |")
        details.append(f"\n## {name}")
        details += [f"- {s:5} {test}  {msg}" for test, (s, msg) in results.items()]
    table.append(f"| total | {totals[0]} | {totals[1]} | {totals[2]} |")
    print("\n".join(table + details))
    return 0


if __name__ == "__main__":
    sys.exit(main())
