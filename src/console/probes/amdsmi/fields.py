"""Reading one leaf of an amd-smi tree: where it may live, and how its value is encoded.

A leaf may be a number, a ``{"value", "unit"}`` object (value possibly ``"N/A"``), a unit-bearing
string (``"32 GT/s"``, ``"N/A mV"``), a ``[..]`` list rendered as text, a list, or an ``xcp_N`` dict.
Every helper is total: a value it cannot read becomes None with a reason, never an exception.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeGuard

from console.model.base import WithUnavailable
from console.probes.values import (
    Quantity,
    na_reason,
    parse_quantity,
    said_no_value,
    to_bytes,
    to_celsius,
    to_count,
    to_gbps,
    to_int,
    to_mhz,
    to_percent,
    to_watts,
)

Converter = Callable[[Any], Quantity]


class _Absent:
    """The key is not in the output at all (as opposed to present with N/A)."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()


_NOT_MAPPINGS = frozenset({str, int, float, bool, list, type(None), _Absent})


def is_mapping(value: Any) -> TypeGuard[Mapping[Any, Any]]:
    """``isinstance(value, Mapping)``, answered by exact type for the plain dicts and scalars of parsed output.

    The ABC's own check costs ~0.3 us a call through its Python ``__instancecheck__``, and a parse makes
    thousands: one per leaf read.
    """
    kind = type(value)
    return kind is dict or (kind not in _NOT_MAPPINGS and isinstance(value, Mapping))


def lookup(tree: Mapping[str, Any], path: str) -> Any:
    """The value at dotted ``path`` (``"asic.market_name"``) or ABSENT."""
    if "." not in path:  # most paths are one key: no split, no loop
        return tree.get(path, ABSENT) if is_mapping(tree) else ABSENT
    node: Any = tree
    for part in path.split("."):
        if not (type(node) is dict or is_mapping(node)) or part not in node:  # parsed JSON: plain dicts
            return ABSENT
        node = node[part]
    return node


def pick(tree: Mapping[str, Any], paths: Iterable[str]) -> Any:
    """The first of ``paths`` present in ``tree`` (a present N/A counts), else ABSENT."""
    if not (type(tree) is dict or is_mapping(tree)):
        return ABSENT
    for path in paths:
        # A one-key path is read here: ~30 aliases are tried per GPU entry, most of them absent.
        value = tree.get(path, ABSENT) if "." not in path else lookup(tree, path)
        if value is not ABSENT:
            return value
    return ABSENT


def finite_int(q: Quantity) -> int | None:
    """The integral value of ``q`` when finite, else None (overflowed unit scaling is no number)."""
    if q.value is None or not math.isfinite(q.value):
        return None
    return int(q.value)


def number_field(
    values: dict[str, Any],
    unavailable: dict[str, str],
    name: str,
    raw: Any,
    convert: Converter,
    *,
    integer: bool = False,
) -> None:
    """Put ``name``'s value read from ``raw`` in ``values``, or why there is none in ``unavailable``."""
    if raw is ABSENT:
        return
    q = convert(raw)
    value: float | int | None = finite_int(q) if integer else q.value
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        unavailable[name] = q.reason or "not a number"
        return
    values[name] = value


def assign_number(target: WithUnavailable, name: str, raw: Any, convert: Converter, *, integer: bool = False) -> None:
    """Set ``target.name`` from ``raw``; N/A or unreadable values are recorded in ``unavailable``."""
    values: dict[str, Any] = {}
    number_field(values, target.unavailable, name, raw, convert, integer=integer)
    if values:
        setattr(target, name, values[name])


def split_pair(value: str) -> tuple[str, str]:
    """A ``used/total`` cell split in two, either side possibly ``N/A`` (``N/A/300 W``, ``734/N/A W``)."""
    text = value.strip()
    if text[:4].upper() == "N/A/":
        return text[:3], text[4:]
    left, _, right = text.partition("/")
    return left, right


def text_of(raw: Any) -> str | None:
    """A string leaf as printed (``{"value": ..}`` objects unwrapped); None for N/A and empty values."""
    if type(raw) is str:  # most leaves
        text = raw.strip()
        return None if na_reason(text) is not None else text
    if raw is ABSENT:  # an alias not printed: most of those read
        return None
    if is_mapping(raw):
        raw = raw.get("value", ABSENT)
    if raw is ABSENT or raw is None or is_mapping(raw) or isinstance(raw, list):
        return None
    text = str(raw).strip()
    return None if na_reason(text) is not None else text


def text_field(values: dict[str, Any], unavailable: dict[str, str], name: str, raw: Any) -> None:
    """Put ``name``'s text read from ``raw`` (stripped) in ``values``, or why there is none in ``unavailable``."""
    if raw is ABSENT:
        return
    text = text_of(raw)
    if text is None:
        reason = na_reason(raw) if not (is_mapping(raw) or isinstance(raw, list)) else "not a single value"
        unavailable[name] = reason or "N/A"
        return
    values[name] = text


def to_gts(raw: Any) -> Quantity:
    """PCIe link speed in GT/s (older releases print MT/s)."""
    q = parse_quantity(raw)
    if q.value is None:
        return q
    unit = (q.unit or "GT/s").strip().lower()
    if unit in ("gt/s", "gts"):
        return Quantity(q.value)
    if unit in ("mt/s", "mts"):
        return Quantity(q.value / 1000)
    return Quantity(None, q.unit, f"unexpected unit {q.unit!r}")


def to_mbps(raw: Any) -> Quantity:
    """PCIe bandwidth in Mb/s as amd-smi reports it."""
    q = parse_quantity(raw)
    if q.value is None:
        return q
    factors = {"mb/s": 1.0, "gb/s": 1000.0, "kb/s": 0.001}
    factor = factors.get((q.unit or "Mb/s").strip().lower())
    return Quantity(q.value * factor) if factor is not None else Quantity(None, q.unit, f"unexpected unit {q.unit!r}")


def to_joules(raw: Any) -> Quantity:
    """Energy counter in J."""
    q = parse_quantity(raw)
    if q.value is None:
        return q
    factors = {"j": 1.0, "kj": 1e3, "mj": 1e-3, "uj": 1e-6}
    factor = factors.get((q.unit or "J").strip().lower())
    return Quantity(q.value * factor) if factor is not None else Quantity(None, q.unit, f"unexpected unit {q.unit!r}")


def to_megabytes_as_bytes(raw: Any) -> Quantity:
    """amd-smi memory sizes default to MB (binary)."""
    return to_bytes(raw, default_unit="MB")


def to_bytes_default(raw: Any) -> Quantity:
    """Process memory: raw bytes unless a unit is printed."""
    return to_bytes(raw, default_unit="B")


def to_pcie_gen(raw: Any) -> Quantity:
    """``Gen 5`` -> 5."""
    if isinstance(raw, str):
        match = re.search(r"(\d+)", raw)
        if match and raw.strip().lower().startswith("gen"):
            return Quantity(float(match.group(1)))
    return to_int(raw)


def leaves(value: Any) -> list[Any]:
    """Every scalar under ``value``: list items, ``xcp_N`` dict values, ``[a, b]`` strings split."""
    if is_mapping(value):
        if "value" in value and "unit" in value:
            return [value]
        return [leaf for item in value.values() for leaf in leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in leaves(item)]
    if isinstance(value, str) and value.strip().startswith("[") and value.strip().endswith("]"):
        return [part.strip() for part in value.strip()[1:-1].split(",") if part.strip()]
    return [value]


def max_of(value: Any, convert: Converter) -> Quantity:
    """The largest readable number under ``value`` (per-XCP and per-engine lists)."""
    kind = type(value)
    if kind is int or kind is float or (kind is dict and "value" in value and "unit" in value):
        q = convert(value)  # one reading, as most are: no list of leaves
        if q.value is not None:
            return Quantity(q.value)
        # The reading's own reason: "not a number: lots" is no "N/A" (``values.said_no_value``).
        return Quantity(None, None, q.reason or ("N/A" if kind is dict else na_reason(value)))
    numbers = [q.value for q in (convert(leaf) for leaf in leaves(value)) if q.value is not None]
    if not numbers:
        if not (is_mapping(value) or isinstance(value, list)):
            return Quantity(None, None, convert(value).reason or na_reason(value))
        # A leaf printed and not read says so, before the N/A of the others.
        reasons = [reason for leaf in leaves(value) if (reason := convert(leaf).reason) is not None]
        return Quantity(None, None, next((r for r in reasons if not said_no_value(r)), "N/A"))
    return Quantity(max(numbers))


# Re-exported so the mapping tables name every converter from one place.
__all__ = [
    "ABSENT",
    "Converter",
    "assign_number",
    "finite_int",
    "is_mapping",
    "leaves",
    "lookup",
    "max_of",
    "number_field",
    "pick",
    "text_field",
    "text_of",
    "to_bytes_default",
    "to_celsius",
    "to_count",
    "to_gbps",
    "to_gts",
    "to_int",
    "to_joules",
    "to_mbps",
    "to_megabytes_as_bytes",
    "to_mhz",
    "to_pcie_gen",
    "to_percent",
    "to_watts",
]
