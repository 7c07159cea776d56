"""Turning fleet data into short, safe, styled text: glyphs, status styles, sparklines, numbers.

Styles are Textual style strings naming semantic theme variables (``$health-crit``), resolved
against the active theme when painted, so no colour is ever written here. Every string that came
from a node or an operator goes through ``safe()`` first: control characters (escape sequences,
bidi overrides) are replaced, and the text is never parsed as markup by the callers.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from console.inert import is_live
from console.model.findings import Status

STATUS_GLYPH: dict[Status | None, str] = {
    Status.PASS: "✓",
    Status.WARN: "!",
    Status.FAIL: "✗",
    Status.UNKNOWN: "?",
    Status.SKIP: "–",
    None: "·",
}
STATUS_STYLE: dict[Status | None, str] = {
    Status.PASS: "$health-ok",
    Status.WARN: "bold $health-warn",
    Status.FAIL: "bold $health-crit",
    Status.UNKNOWN: "bold $health-unknown",
    Status.SKIP: "$health-skip",
    None: "$health-none",
}
# Worst first: the order of the severity sort and of the summary bar.
SEVERITY_ORDER: tuple[Status | None, ...] = (Status.FAIL, Status.UNKNOWN, Status.WARN, Status.PASS, Status.SKIP, None)
_REPLACEMENT = "\N{REPLACEMENT CHARACTER}"
_SPARKS = "▁▂▃▄▅▆▇█"


def safe(text: object) -> str:
    """``text`` with the characters a terminal acts on (ESC, C1, BEL, bidi overrides, ...: ``console.inert``)
    replaced, one line."""
    value = str(text)
    if value.isprintable():
        return value
    return "".join(" " if ch in "\t\r\n" else _REPLACEMENT if is_live(ch) else ch for ch in value)


def safe_block(text: str) -> str:
    """Multi-line ``text`` (raw probe output) with control characters made visible, newlines kept."""
    lines = []
    for raw in text.replace("\r\n", "\n").split("\n"):
        line = raw.expandtabs(8)
        if line.isprintable():
            lines.append(line)
            continue
        lines.append(
            "".join(chr(0x2400 + ord(ch)) if ord(ch) < 0x20 else _REPLACEMENT if is_live(ch) else ch for ch in line)
        )
    return "\n".join(lines)


def status_label(status: Status | None) -> str:
    """``✗ FAIL`` style label; ``· —`` before a verdict."""
    return f"{STATUS_GLYPH[status]} {status.value if status is not None else '—'}"


def severity_rank(status: Status | None) -> int:
    """0 for the worst status (FAIL), growing towards 'not judged yet'."""
    return SEVERITY_ORDER.index(status)


def sparkline(values: Sequence[float | None], width: int = 12) -> str:
    """The last ``width`` values as block characters scaled to their own range; gaps as spaces."""
    window = list(values)[-width:]
    known = [v for v in window if v is not None]
    if not known:
        return ""
    low, high = min(known), max(known)
    span = high - low
    out = []
    for value in window:
        if value is None:
            out.append(" ")
        elif span <= 0:
            out.append(_SPARKS[len(_SPARKS) // 2])
        else:
            out.append(_SPARKS[min(len(_SPARKS) - 1, int((value - low) / span * len(_SPARKS)))])
    return "".join(out)


def number(value: float | int | None, fmt: str = "{:.0f}", unit: str = "") -> str:
    """A figure with its unit, or ``n/a`` (never 0) when the tool did not report it."""
    if value is None:
        return "n/a"
    return fmt.format(value) + unit


def gib(value: int | None) -> str:
    """Bytes as GiB with one decimal, ``n/a`` when unknown."""
    return "n/a" if value is None else f"{value / 2**30:.1f}"


def clock(at: float | None) -> str:
    """``HH:MM:SS`` local time, blank when never."""
    if at is None:
        return ""
    return time.strftime("%H:%M:%S", time.localtime(at))


def age(seconds: float) -> str:
    """How long ago, in the largest whole unit: ``40 s``, ``14 min``, ``3 h``, ``2 days``."""
    seconds = max(0.0, seconds)
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            count = int(seconds // size)
            return f"{count} {'day' if unit == 'days' and count == 1 else unit}"
    return f"{int(seconds)} s"


def duration(seconds: float | None) -> str:
    """``1:05`` / ``1:02:03`` for an ETA; ``--:--`` when unknown."""
    if seconds is None:
        return "--:--"
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
