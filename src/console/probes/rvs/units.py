"""Numbers as RVS prints them: plain decimals, bandwidths in GBps / MBytes/sec / MiB/s, and sentinels.

Total like ``console.probes.values``: any text gives a value or None, never an exception.
"""

from __future__ import annotations

import math
import re

_DECIMAL = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
# Decimal (MB) and binary (MiB) multiples both occur: babel's mibibytes key switches between them.
_RATE_TO_GBPS = {
    "gbps": 1.0,
    "gb/s": 1.0,
    "gbytes/sec": 1.0,
    "gbyte/s": 1.0,
    "gib/s": 2**30 / 1e9,
    "gibytes/sec": 2**30 / 1e9,
    "mbps": 1e-3,
    "mb/s": 1e-3,
    "mbytes/sec": 1e-3,
    "mib/s": 2**20 / 1e9,
    "mibytes/sec": 2**20 / 1e9,
    "kb/s": 1e-6,
    "tb/s": 1e3,
}


def small_int(text: str | None) -> int | None:
    """A non-negative integer written in at most 18 digits, or None."""
    if text is None:
        return None
    text = text.strip()
    if not text.isdigit() or len(text) > 18:
        return None
    return int(text)


def number(text: str | None) -> float | None:
    """A finite decimal number (the whole text), or None."""
    if text is None:
        return None
    text = text.strip()
    if len(text) > 64 or not _DECIMAL.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def rate_to_gbps(value: float | None, unit: str | None) -> float | None:
    """A bandwidth in gigabytes per second; None when the unit is not a known rate."""
    if value is None or unit is None:
        return None
    factor = _RATE_TO_GBPS.get(unit.strip().lower())
    return None if factor is None else value * factor


def bool_word(text: str | None) -> bool | None:
    """RVS's true/false words in any case; None for anything else."""
    word = (text or "").strip().lower()
    return {"true": True, "false": False, "pass": True, "fail": False}.get(word)
