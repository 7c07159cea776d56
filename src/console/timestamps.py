"""The one way to print a time: every timestamp an operator or a machine reads carries its zone.

Machine output (JSON, reports) is ISO 8601 in UTC with a ``Z``; text for a person is the console host's
local time with the zone's name, so "23:40" on a shared admin host is never ambiguous between sites.
"""

from __future__ import annotations

import time


def iso_utc(epoch: float) -> str:
    """``2026-12-07T23:40:05Z``: for JSON and reports."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def local(epoch: float, *, seconds: bool = True) -> str:
    """``2026-12-07 23:40:05 UTC`` in the console host's zone: for text a person reads."""
    return time.strftime("%Y-%m-%d %H:%M:%S %Z" if seconds else "%Y-%m-%d %H:%M %Z", time.localtime(epoch))
