"""Option values checked as the command line is read, and usage errors said in one line.

A ``type=`` below refuses a value with the reason; argparse names the option, and ``OneLineParser``
prints ``instinct-console sweep: error: argument --every: ...`` and exits 2 like every usage error.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import NoReturn

from console.exitcodes import ExitCode


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr (a log or a prolog keeps one line)."""

    def error(self, message: str) -> NoReturn:
        """Print ``PROG: error: MESSAGE`` and exit with the usage code; the usage itself is in ``--help``."""
        self.exit(int(ExitCode.USAGE), f"{self.prog}: error: {message} (see --help)\n")


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def seconds(text: str) -> float:
    """A timeout, deadline or interval: a number of seconds above 0 (0 would give up at once)."""
    value = _finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} s: give a number of seconds above 0")
    return value


def share(text: str) -> float:
    """A share of a pool, above 0 and at most 1 (0.10 is a tenth)."""
    value = _finite(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text}: give a fraction above 0 and at most 1")
    return value


def whole(minimum: int) -> Callable[[str], int]:
    """A whole number, ``minimum`` or more: ``--cap 0`` holds no node out, ``--count 0`` would never sweep."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text}: give a whole number, {minimum} or more")
        return value

    return parse
