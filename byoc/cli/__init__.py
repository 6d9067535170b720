"""The ``byoc`` command line.

    byoc import MODEL                          print the imported IR
    byoc partition MODEL --target npu          partitioned IR, offload summary, why ops stayed on the CPU
    byoc compile MODEL --target npu,llvm -o OUT.byoc [--npu-config PRESET|FILE]
    byoc run ARTIFACT --input x.npy [-o y.npy] [--profile]
    byoc compare MODEL --target npu            every executor against the reference, tensor by tensor
    byoc profile MODEL --target npu [--csv F] [--trace F.json]
    byoc patterns [TARGET]                     pattern tables and their support rules in words
    byoc report MODEL --target npu -o report.html
    byoc calibrate [--force]                   this machine's CPU cost table (--placement cost uses it)
    byoc sweep MODEL... --axis PATH=V1,V2 [--method lhs --samples N] --db F.sqlite -o DIR [--cluster ray://...]
    byoc tune MODEL --target ethos-u --preset ethos-u55-256 --trials N -o records.jsonl [--cluster ray://...]
    byoc compile MODEL --target ethos-u,llvm --tuning-records records.jsonl -o OUT.byoc

Every command that imports a model takes ``--shape NAME=D0,D1,...`` (static shapes for ONNX inputs with symbolic
dimensions; ``shapes.py``). Every command takes ``--json`` (one JSON document on stdout; nothing else is written
there). Progress goes to stderr, as a bar only when stderr is a terminal and ``--json`` is off.

Your own targets: every command takes ``--patterns FILE.py`` (repeatable), a Python file that registers pattern
tables and codegens (docs/targets.md); it is executed like an imported module, so pass only files you trust.
Installed packages can offer targets through the ``byoc.targets`` entry-point group (``byoc/targets.py``).

Exit codes: 0 ok; 1 a comparison found a mismatch (or a check failed); 2 usage error; 3 bad input (a
``ByocError``: bad model, artifact, config or input file; the message is printed without a traceback);
4 internal error (a bug; set ``BYOC_TRACEBACK=1`` for the traceback).
"""
from __future__ import annotations

import argparse
import os
import sys
import traceback

from ..errors import ByocError
from .common import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, Output, UsageError

__all__ = ["main", "build_parser"]

_EPILOG = """your own targets: --patterns FILE.py (a Python file, executed) or a package's byoc.targets entry point
exit codes: 0 ok, 1 comparison mismatch / check failed, 2 usage error,
3 bad input (model, artifact, config, input or target file), 4 internal error"""

_PATTERNS_HELP = ("a Python file registering your own targets' pattern tables and codegens (docs/targets.md); "
                  "it is EXECUTED as Python code, so pass only files you trust; repeatable")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own usage errors: exit code 2, as documented
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    from . import cmd_analyze, cmd_build, cmd_model, cmd_sweep, cmd_tune
    parser = _Parser(prog="byoc", description="Pattern-based BYOC partitioning for an NPU simulator.",
                     epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    from .. import __version__
    parser.add_argument("--version", action="version", version=f"byoc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for module in (cmd_model, cmd_build, cmd_analyze, cmd_sweep, cmd_tune):
        module.register(sub)
    for p in sub.choices.values():  # one shared option: a user's targets for every command
        p.add_argument("--patterns", action="append", default=[], metavar="FILE.py", help=_PATTERNS_HELP)
    return parser


def load_target_files(paths) -> None:
    from ..targets import load_target_file
    for path in paths or ():
        load_target_file(path)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``byoc`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    out = Output(getattr(args, "json", False))
    try:
        load_target_files(getattr(args, "patterns", ()))
        return int(args.handler(args, out) or EXIT_OK)
    except UsageError as e:
        parser.print_usage(sys.stderr)
        print(f"byoc {args.command}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except ByocError as e:
        print(f"error: {e}", file=sys.stderr)
        if out.json_mode:
            out.json({"error": {"type": type(e).__name__, "message": e.message, "hint": e.hint,
                                "notes": list(e.notes)}})
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # The reader went away (``byoc ... | head``): not an error; silence the flush at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - the last line of defence: a bug, reported as one
        print(f"internal error (a bug in byoc): {type(e).__name__}: {e}", file=sys.stderr)
        if os.environ.get("BYOC_TRACEBACK"):
            traceback.print_exc()
        else:
            print("set BYOC_TRACEBACK=1 for the traceback and please report it", file=sys.stderr)
        return EXIT_INTERNAL
