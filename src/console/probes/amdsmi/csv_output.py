"""amd-smi ``--csv`` outputs: a header row naming flattened leaf keys, then one row per GPU (or process).

In watch mode (``-w N``) a ``'CTRL' + 'C' to stop watching output:`` banner comes first and the header
is repeated for every iteration, so rows are collected under whichever header precedes them.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field

from console.probes.amdsmi.text_output import normalise_key

_HEADER_FIELD = re.compile(r"^[a-z][a-z0-9_%]*$")
_WATCH_BANNER = re.compile(r"to stop watching output", re.IGNORECASE)


@dataclass
class CsvDocument:
    """Rows keyed by header field, in output order; ``watch`` when the output came from ``-w``.

    ``skipped`` keeps rows whose width differs from their header (truncated or mangled lines).
    """

    rows: list[dict[str, str]] = field(default_factory=list)
    headers: list[list[str]] = field(default_factory=list)
    watch: bool = False
    skipped: list[str] = field(default_factory=list)


def split_csv_line(line: str) -> list[str]:
    """One CSV record (quoted fields may hold commas: ``"NPS1, SPX"``)."""
    try:
        return next(csv.reader([line]), [])
    except csv.Error:
        return line.split(",")


def is_csv_header(line: str) -> bool:
    """A header row: comma-separated lower-case identifiers including ``gpu``."""
    if "," not in line:
        return False
    fields = [normalise_key(f) for f in split_csv_line(line.strip())]
    return "gpu" in fields and all(_HEADER_FIELD.match(f) for f in fields)


def parse_csv(lines: list[str]) -> CsvDocument:
    """Collect the rows of every header block; rows that do not fit their header are kept aside."""
    document = CsvDocument()
    header: list[str] | None = None
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if _WATCH_BANNER.search(line):
            document.watch = True
            continue
        if is_csv_header(line):
            fields = [normalise_key(f) for f in split_csv_line(line)]
            if header is not None and fields == header:
                document.watch = True
            elif fields not in document.headers:
                document.headers.append(fields)
            header = fields
            continue
        if header is None or "," not in line:
            continue
        values = split_csv_line(line)
        if len(values) != len(header):
            document.skipped.append(line)
            continue
        document.rows.append({key: value.strip() for key, value in zip(header, values, strict=True)})
    return document
