"""argparse ``type=`` functions of the ``byoc`` command line: a malformed value is a usage error (exit 2)
with one line naming the option, before any model is read."""
from __future__ import annotations

import argparse

__all__ = ["seed", "positive_int"]

_MAX_SEED = 2**128  # numpy's SeedSequence takes any non-negative integer; this keeps --seed a sane size


def seed(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 0 <= value < _MAX_SEED:
        raise argparse.ArgumentTypeError(f"{text} is out of range: a seed is an integer from 0 to 2**128 - 1")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 1 <= value <= 2**31 - 1:
        raise argparse.ArgumentTypeError(f"{text} is out of range: expected an integer from 1 to 2**31 - 1")
    return value
