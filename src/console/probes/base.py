"""What every probe parser returns, the one exception it may raise, and shared text clean-up.

Contract for every ``console.probes.<tool>`` module:

* ``detect(text) -> Detection | None``: does this text look like this tool's output, and which kind?
* ``parse(text, kind=None) -> ParsedOutput``: pure, no I/O. Raises only ``ParseError`` (with a
  one-line reason and the raw text kept) when nothing usable can be read. A tool *failure* that is
  readable (driver not loaded, ``met: FALSE``, ``#wrong`` > 0) is a successful parse with
  ``ok=False`` and the tool's messages verbatim in ``errors``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import Field, SerializeAsAny

from console.model.base import Model
from console.probes.ids import Tool


class ParseError(Exception):
    """Output that cannot be read as the tool's output. Carries a one-line reason and the raw text."""

    def __init__(self, reason: str, raw: str | bytes = "", tool: str | None = None) -> None:
        one_line = " ".join(reason.split())[:300]
        super().__init__(one_line)
        self.reason = one_line
        self.raw = raw
        self.tool = tool


class ParsedOutput(Model):
    """A parser's answer: which tool and kind, whether the tool judged itself OK, and the data."""

    tool: Tool
    kind: str = Field(description="subcommand, module or preset, e.g. 'static', 'gst', 'a2a'")
    ok: bool = Field(description="False when the output shows the tool failed or reported a failure")
    errors: list[str] = Field(default_factory=list, description="the tool's error messages, verbatim")
    warnings: list[str] = Field(default_factory=list, description="warnings worth showing, verbatim")
    summary: dict[str, Any] = Field(default_factory=dict)
    tool_version: str | None = None
    data: SerializeAsAny[Model] | None = None


@dataclass(frozen=True)
class Detection:
    """A detector's guess: the kind it saw and how sure it is (0..1)."""

    tool: Tool
    kind: str
    confidence: float


_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def to_text(data: str | bytes) -> str:
    """Decode tool output leniently: invalid UTF-8 becomes U+FFFD, CRLF/CR become LF, ANSI removed."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes | bytearray) else data
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    return _ANSI.sub("", text)


# srun --label ("  0: "), Open MPI --tag-output ("[1,0]<stdout>:"), kubectl/timestamps are the
# prefixes seen on real logs; they are stripped only when most lines carry them.
_SRUN_PREFIX = re.compile(r"^\s*\d+:(?: |$)")  # a blank labelled line is "  0:" once right-stripped
_MPI_PREFIX = re.compile(r"^\[\d+,\d+\]<(?:stdout|stderr)>:\s?")


def strip_launcher_prefixes(lines: list[str]) -> list[str]:
    """Remove srun/mpirun per-line prefixes when at least half of the non-empty lines carry one."""
    non_empty = [line for line in lines if line.strip()]
    if not non_empty:
        return lines
    for pattern in (_MPI_PREFIX, _SRUN_PREFIX):
        hits = sum(1 for line in non_empty if pattern.match(line))
        if hits * 2 >= len(non_empty):
            return [pattern.sub("", line, count=1) for line in lines]
    return lines


# kubectl logs --timestamps / journald-style RFC 3339 stamps, and the "host: " label pdsh and clush put
# on every line. Both come from how the log was fetched, whatever the tool: stripped before any parser.
_TIMESTAMP_PREFIX = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})? ")
_HOST_PREFIX = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*):(?: |$)", re.MULTILINE)
_NOT_HOSTS = {"error", "warning", "warn", "info", "note", "debug", "usage", "gpu", "agent", "name"}


def strip_log_prefixes(text: str) -> str:
    """Remove timestamp and single-host prefixes carried by (nearly) every line of a fetched log."""
    head = text.lstrip()[:80]
    if not (_TIMESTAMP_PREFIX.match(head) or _HOST_PREFIX.match(head)):
        return text  # the common case, decided without a pass over the lines
    lines = text.split("\n")
    if _share(lines, lambda line: _TIMESTAMP_PREFIX.match(line) is not None):
        lines = [_TIMESTAMP_PREFIX.sub("", line, count=1) for line in lines]
    first = _HOST_PREFIX.match(next((line for line in lines if line.strip()), ""))
    if first is not None and first.group(1).lower() not in _NOT_HOSTS:
        mark = f"{first.group(1)}: "  # a blank line of the host's is the label alone, right-stripped

        def labelled(line: str) -> bool:
            return line.startswith(mark) or line == mark[:-1]

        if _share(lines, labelled, least=3):
            lines = [line[len(mark) :] if labelled(line) else line for line in lines]
    return "\n".join(lines)


def _share(lines: list[str], carries: Callable[[str], bool], least: int = 1) -> bool:
    """True when at least 90 % of the non-empty lines (and ``least`` of them) satisfy ``carries``."""
    non_empty = [line for line in lines if line.strip()]
    hits = sum(1 for line in non_empty if carries(line))
    return hits >= least and hits * 10 >= len(non_empty) * 9


def clean_lines(data: str | bytes, *, strip_prefixes: bool = False) -> list[str]:
    """Decode, normalise newlines and rstrip every line; optionally drop launcher prefixes."""
    lines = [line.rstrip() for line in to_text(data).split("\n")]
    return strip_launcher_prefixes(lines) if strip_prefixes else lines
