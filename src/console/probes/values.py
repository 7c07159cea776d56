"""Normalising the many ways the tools print one number: plain, with units, in value/unit objects, N/A.

Every helper here is total: any input gives a value or ``None`` with a reason, never an exception.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any, NamedTuple

# Words the tools use for "no value": amd-smi N/A, rocm-smi n/a and "Not supported",
# rocminfo GPU-XX placeholders are handled by callers, sysfs max_uint sentinels below.
_NA_WORDS = {
    "n/a",
    "na",
    "none",
    "not supported",
    "not available",
    "unsupported",
    "unknown",
    "",
    "-",
    "nan",
}
# amd-smi prints max_uint of the field width for unsupported counters in some versions.
_MAX_UINT_SENTINELS = {2**16 - 1, 2**32 - 1, 2**64 - 1}

_NUM_UNIT = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*([^\d\s].*?)?\s*$")


class Quantity(NamedTuple):
    """A parsed reading: ``value`` in the unit given, or None with ``reason``.

    Immutable, and a named tuple rather than a frozen dataclass: a parse makes ~1,500 of them per node, and
    a tuple is built in half the time of a frozen dataclass's ``__init__``.
    """

    value: float | None
    unit: str | None = None
    reason: str | None = None


def na_reason(raw: Any) -> str | None:
    """Return the tool's own word if ``raw`` means 'no value', else None."""
    if isinstance(raw, str):  # the common case first
        return _text_na_reason(raw) if len(raw) <= _CACHED_TEXT else _text_na_reason.__wrapped__(raw)
    if raw is None:
        return "absent in output"
    if isinstance(raw, int) and not isinstance(raw, bool) and raw in _MAX_UINT_SENTINELS:
        return f"sentinel {raw}"
    if isinstance(raw, float) and (math.isnan(raw) or math.isinf(raw)):
        return "not a number"
    return None


# Longer texts are not kept by the caches below: a garbage or huge output must not stay in memory.
_CACHED_TEXT = 64


@functools.lru_cache(maxsize=4096)
def _text_na_reason(text: str) -> str | None:
    # Cached: an 8-GPU output repeats the same few words (N/A, ENABLED, a unit) hundreds of times.
    word = text.strip()
    lowered = word.lower()
    if lowered in _NA_WORDS or lowered.startswith("not supported"):
        return word or "empty"
    return word if lowered.startswith("n/a") else None


def said_no_value(reason: str) -> bool:
    """Whether ``reason`` (a ``Quantity.reason`` or an ``unavailable`` entry) is the tool's own word for "no value"
    (``N/A``, ``Not supported``, a max-uint sentinel) or the field's absence, rather than something it printed
    that could not be read (``not a number: #@!``, NaN, a boolean, a unit or word of no known meaning).

    The first may be a model or release without the counter; the second is a reading lost, which a check can
    never take for "not supported" (``console.checks.evaluate``: UNKNOWN, not the check's ``on_missing``).
    NaN is a reading lost too, whether printed as a JSON ``NaN`` or as the word.
    """
    if reason in ("absent in output", "empty") or reason.startswith("sentinel "):
        return True
    word = _text_na_reason(reason) if len(reason) <= _CACHED_TEXT else _text_na_reason.__wrapped__(reason)
    return word is not None and word.lower() != "nan"


# Units amd-smi prints in its {"value", "unit"} objects: known not to be an N/A word, so not tested as one.
_UNITS = frozenset({"W", "C", "%", "MB", "KB", "GB", "MHz", "mV", "J", "uJ", "GT/s", "Gb/s", "Mb/s", "GB/s", "B"})


def parse_quantity(raw: Any) -> Quantity:
    """Read a number with an optional unit from any of the encodings amd-smi and friends use.

    Accepts ints/floats, ``{"value": x, "unit": u}`` objects (value may be "N/A"), strings with a
    unit glued or spaced (``"32 GT/s"``, ``"44.0°C"``, ``"1400.0W"``, ``"2000Mhz"``), and the
    N/A family. Booleans are not numbers here.
    """
    # The common cases in JSON output first, by exact type (a bool is no number): one parse reads thousands.
    if type(raw) is int:
        return Quantity(float(raw)) if raw not in _MAX_UINT_SENTINELS else Quantity(None, None, f"sentinel {raw}")
    if type(raw) is float:
        return Quantity(raw) if math.isfinite(raw) else Quantity(None, None, "not a number")
    if isinstance(raw, dict):
        if "value" not in raw:
            return Quantity(None, None, "object without value")
        value = raw["value"]
        # ``{"value": 141, "unit": "W"}`` is most of amd-smi's JSON: its number read here, not by a second call.
        if (type(value) is int and value not in _MAX_UINT_SENTINELS) or (type(value) is float and math.isfinite(value)):
            number: float | None = float(value)
            inner_unit: str | None = None
            inner_reason: str | None = None
        else:
            inner = parse_quantity(value)
            number, inner_unit, inner_reason = inner.value, inner.unit, inner.reason
        unit = raw.get("unit")
        unit_str = unit.strip() if isinstance(unit, str) else None
        if not unit_str or (unit_str not in _UNITS and na_reason(unit_str) is not None):
            unit_str = inner_unit
        return Quantity(number, unit_str, inner_reason)
    if isinstance(raw, str):
        return _text_quantity(raw) if len(raw) <= _CACHED_TEXT else _text_quantity.__wrapped__(raw)
    reason = na_reason(raw)
    if reason is not None:
        return Quantity(None, None, reason)
    if isinstance(raw, bool):
        return Quantity(None, None, f"boolean {raw}")
    if isinstance(raw, int | float):
        return Quantity(float(raw), None, None)
    return Quantity(None, None, f"unexpected {type(raw).__name__}")


@functools.lru_cache(maxsize=4096)
def _text_quantity(raw: str) -> Quantity:
    # Cached (a Quantity is immutable): the same strings ("500 MHz", "N/A", "16") recur on every GPU and sweep.
    reason = na_reason(raw)
    if reason is not None:
        return Quantity(None, None, reason)
    text = raw.strip().replace(",", "") if _looks_grouped(raw) else raw.strip()
    match = _NUM_UNIT.match(text)
    if match is None:
        return Quantity(None, None, f"not a number: {raw.strip()[:40]}")
    value = float(match.group(1))
    if math.isnan(value) or math.isinf(value):
        return Quantity(None, None, "not a number")
    unit = (match.group(2) or "").strip() or None
    return Quantity(value, unit, None)


_GROUPED = re.compile(r"\s*\d{1,3}(,\d{3})+(\.\d+)?\s*\S*\s*")


def _looks_grouped(text: str) -> bool:
    # "4,177,285" is a grouped number; "NPS1, SPX" is not. Most strings have no comma: no regex for them.
    return "," in text and _GROUPED.fullmatch(text) is not None


_TEMP_UNITS = {"c", "°c", "celsius", "degc", "c°", "\u2103"}
_BYTE_UNITS = {
    "b": 1,
    "bytes": 1,
    "byte": 1,
    "kb": 1024,
    "kib": 1024,
    "mb": 1024**2,
    "mib": 1024**2,
    "gb": 1024**3,
    "gib": 1024**3,
    "tb": 1024**4,
    "tib": 1024**4,
    "pb": 1024**5,
    "pib": 1024**5,
}
_FREQ_UNITS = {"hz": 1e-6, "khz": 1e-3, "mhz": 1.0, "ghz": 1e3}
_POWER_UNITS = {"w": 1.0, "mw": 1e-3, "uw": 1e-6, "kw": 1e3}
_RATE_UNITS = {"gb/s": 1.0, "mb/s": 1e-3, "kb/s": 1e-6, "tb/s": 1e3, "gbps": 1.0, "gbyte/s": 1.0}


def _scaled(q: Quantity, table: dict[str, float] | dict[str, int], default_unit: str) -> Quantity:
    if q.value is None:
        return q
    unit = (q.unit or default_unit).strip().lower()
    factor = table.get(unit)
    if factor is None:
        return Quantity(None, q.unit, f"unexpected unit {q.unit!r}")
    return Quantity(q.value * factor, None, None)


def to_celsius(raw: Any) -> Quantity:
    """Temperature in °C (amd-smi prints C or °C; rocm-smi glues °C)."""
    q = parse_quantity(raw)
    if q.value is None:
        return q
    if q.unit is None or q.unit.strip().lower() in _TEMP_UNITS:
        return Quantity(q.value, None, None)
    return Quantity(None, q.unit, f"unexpected unit {q.unit!r}")


def to_bytes(raw: Any, default_unit: str = "B") -> Quantity:
    """Size in bytes; binary multiples (amd-smi's MB/GB are MiB/GiB)."""
    return _scaled(parse_quantity(raw), _BYTE_UNITS, default_unit)


def to_mhz(raw: Any, default_unit: str = "MHz") -> Quantity:
    """Clock in MHz."""
    return _scaled(parse_quantity(raw), _FREQ_UNITS, default_unit)


def to_watts(raw: Any, default_unit: str = "W") -> Quantity:
    """Power in W."""
    return _scaled(parse_quantity(raw), _POWER_UNITS, default_unit)


def to_gbps(raw: Any, default_unit: str = "GB/s") -> Quantity:
    """Bandwidth in gigabytes per second."""
    return _scaled(parse_quantity(raw), _RATE_UNITS, default_unit)


def to_percent(raw: Any) -> Quantity:
    """Percentage 0-100; a share outside that range is no reading (an error code printed as a value)."""
    q = parse_quantity(raw)
    if q.value is None:
        return q
    if q.unit not in (None, "%"):
        return Quantity(None, q.unit, f"unexpected unit {q.unit!r}")
    if not 0 <= q.value <= 100:
        return Quantity(None, q.unit, f"not a percentage: {q.value:g}")
    return Quantity(q.value, None, None)


_HEX = re.compile(r"\s*0[xX][0-9a-fA-F]+\s*")


def to_int(raw: Any) -> Quantity:
    """Whole count (error counters, indices); hex strings like 0x74a1 are accepted."""
    if type(raw) is int:  # most counters: whole already
        return parse_quantity(raw)
    if isinstance(raw, str) and _HEX.fullmatch(raw):
        return Quantity(float(int(raw.strip(), 16)), None, None)
    q = parse_quantity(raw)
    if q.value is None:
        return q
    if q.value != int(q.value):
        return Quantity(None, q.unit, f"not a whole number: {q.value}")
    return Quantity(float(int(q.value)), q.unit, None)


def to_count(raw: Any) -> Quantity:
    """An event counter (ECC errors, PCIe replays): whole and never negative. -1 is a failed read printed
    as a value, not fewer than no errors: no reading, with why."""
    q = to_int(raw)
    if q.value is not None and q.value < 0:
        return Quantity(None, q.unit, f"negative count: {q.value:g}")
    return q


def as_int(q: Quantity) -> int | None:
    """The value of an integral Quantity, or None."""
    return None if q.value is None else int(q.value)


_BDF_FULL = re.compile(r"^([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})(?:\.([0-7]))?$")
_BDF_SHORT = re.compile(r"^([0-9a-fA-F]{2}):([0-9a-fA-F]{2})(?:\.([0-7]))?$")


def normalise_bdf(raw: Any) -> str | None:
    """PCI address to ``dddd:bb:dd.f`` lower case; accepts ``0000:05:00``, ``05:00.0``, rocminfo BDFID ints.

    rocminfo prints ``BDFID: 9728`` (decimal of bus<<8 | dev<<3 | fn); that form is accepted as int.
    """
    if isinstance(raw, bool) or raw is None:
        return None
    if isinstance(raw, int):
        if raw < 0 or raw > 0xFFFF:
            return None
        bus, dev, fn = raw >> 8, (raw >> 3) & 0x1F, raw & 0x7
        return f"0000:{bus:02x}:{dev:02x}.{fn}"
    if not isinstance(raw, str):
        return None
    text = raw.strip().strip("[]")
    m = _BDF_FULL.match(text)
    if m:
        domain = int(m.group(1), 16)
        return f"{domain:04x}:{m.group(2).lower()}:{m.group(3).lower()}.{m.group(4) or '0'}"
    m = _BDF_SHORT.match(text)
    if m:
        return f"0000:{m.group(1).lower()}:{m.group(2).lower()}.{m.group(3) or '0'}"
    return None
