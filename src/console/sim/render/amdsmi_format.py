"""amd-smi's three output encodings (JSON, human text, CSV) from one tree of per-GPU values.

The CLI builds a dict per device and hands it to its logger, which prints it as indented JSON, as a
YAML-like text (upper-cased keys, 4 spaces per level) or as flattened CSV. This module does the same
from ``Q`` leaves (a number and its unit), so a section is written once and printed three ways.

ROCm 6.x text came from PyYAML, which folds long values at 80 columns with a 2-space continuation
indent (doubled to 12 by the logger's clean-up); 7.x uses a hand-written dumper that never folds.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

NA = "N/A"
DEGREE = "\N{DEGREE SIGN}C"


class Fmt(StrEnum):
    """Output encoding chosen by ``--json`` / ``--csv`` (text by default)."""

    TEXT = "text"
    JSON = "json"
    CSV = "csv"


@dataclass(frozen=True)
class Q:
    """A reading with its unit; ``text_unit`` overrides the unit in text (temperatures print as °C)."""

    value: int | float | str
    unit: str
    text_unit: str | None = None


def celsius(value: int | float | str) -> Q:
    """A temperature: unit ``C`` in JSON, ``°C`` in text."""
    return Q(value, "C", DEGREE)


def resolve(tree: Any, fmt: Fmt) -> Any:
    """Replace every ``Q`` leaf by its encoding in ``fmt``; lists of readings become '[a, b]' in text."""
    if isinstance(tree, Q):
        if tree.value == NA:
            return {"value": NA, "unit": tree.unit} if fmt is Fmt.JSON else NA
        if fmt is Fmt.JSON:
            return {"value": tree.value, "unit": tree.unit}
        if fmt is Fmt.CSV:
            return tree.value
        return f"{tree.value} {tree.text_unit or tree.unit}"
    if isinstance(tree, dict):
        return {key: resolve(value, fmt) for key, value in tree.items()}
    if isinstance(tree, list):
        items = [resolve(item, fmt) for item in tree]
        if fmt is Fmt.TEXT and tree and all(isinstance(item, Q | str) for item in tree):
            return "[" + ", ".join(str(item) for item in items) + "]"
        return items
    return tree


def dump_json(document: Any) -> str:
    """JSON as the CLI prints it: 4-space indent, non-ASCII escaped, trailing newline."""
    return json.dumps(document, indent=4) + "\n"


# ---------------------------------------------------------------------------------------------
# Human-readable text


_YAML_WIDTH = 80
_YAML_SPECIAL_START = set("[]{},#&*!|>'\"%@`-?:")
_YAML_RESERVED = re.compile(
    r"^(?:yes|no|on|off|true|false|null|~|y|n|[-+]?\d[\d_]*(?:\.\d*)?(?:e[-+]?\d+)?|0x[0-9a-f_]+|\.inf|\.nan)$",
    re.IGNORECASE,
)


def _yaml_quoted(value: str) -> bool:
    """Whether PyYAML would single-quote this string (matters only for the column count)."""
    return (
        not value
        or value[0] in _YAML_SPECIAL_START
        or value != value.strip()
        or ": " in value
        or " #" in value
        or bool(_YAML_RESERVED.match(value))
    )


def _fold(indent: int, key: str, value: str) -> list[str]:
    """One YAML ``key: value`` line folded the way PyYAML folds at 80 columns (before clean-up)."""
    head = " " * indent + f"{key}: "
    quote = "'" if _yaml_quoted(value) else ""
    lines = [head + quote]
    column = len(lines[0])
    words = value.split(" ")
    for number, word in enumerate(words):
        # PyYAML breaks only at a single space, once the text written so far passes the width.
        if number and column > _YAML_WIDTH and word and words[number - 1]:
            lines.append(" " * (indent + 2))
            column = indent + 2
        elif number:
            lines[-1] += " "
            column += 1
        lines[-1] += word
        column += len(word)
    return lines


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _dump(tree: dict[str, Any], depth: int, fold: bool) -> list[str]:
    """YAML-like lines at 2 spaces per level, as PyYAML (``fold``) or the 7.x dumper print them."""
    pad = "  " * depth
    lines: list[str] = []
    for key, value in tree.items():
        if isinstance(value, dict):
            lines.extend([f"{pad}{key}:", *_dump(value, depth + 1, fold)] if value else [f"{pad}{key}: {NA}"])
        elif isinstance(value, list):
            lines.append(f"{pad}{key}:" if value else f"{pad}{key}: {NA}")
            # PyYAML keeps block sequences at the key's indent; the 7.x dumper indents them one level.
            item_pad = pad if fold else pad + "  "
            for item in value:
                if isinstance(item, dict):
                    entry = _dump(item, depth + 1, fold)
                    lines.extend([item_pad + "- " + entry[0].lstrip(), *entry[1:]] if fold else entry)
                else:
                    lines.append(f"{item_pad}- {_scalar(item)}")
        elif fold:
            lines.extend(_fold(len(pad), key, _scalar(value)))
        else:
            lines.append(f"{pad}{key}: {_scalar(value)}")
    return lines


def _clean(line: str) -> str:
    """The CLI's clean-up: drop quotes, turn the first '-' of the key into a space, double indents."""
    parts = line.replace("'", "").split(":")
    parts[0] = parts[0].replace("-", " ", 1).replace("  ", "    ")
    return ":".join(parts)


def _upper_keys(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {str(key).upper(): _upper_keys(value) for key, value in tree.items()}
    if isinstance(tree, list):
        return [_upper_keys(item) for item in tree]
    return tree


def device_text(device: str, index: int, values: dict[str, Any], fold: bool) -> str:
    """One device block: ``GPU: 0`` then its values indented, each line cleaned like the CLI does."""
    lines = [f"{device.upper()}: {index}", *_dump(_upper_keys(values), 1, fold)]
    return "".join(_clean(line) + "\n" for line in lines)


def devices_text(blocks: list[tuple[int, dict[str, Any]]], fold: bool, device: str = "gpu") -> str:
    """Several device blocks, each followed by a blank line, then print()'s own newline."""
    return "".join(device_text(device, index, values, fold) + "\n" for index, values in blocks) + "\n"


# ---------------------------------------------------------------------------------------------
# CSV


def flatten(tree: dict[str, Any]) -> dict[str, Any]:
    """The logger's CSV flattening: nested keys join with '_' when a dict holds several values."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        if not isinstance(value, dict):
            flat[key] = value
        elif len(value) > 1:
            lifted = {
                (child if parent == "gfx" else f"{parent}_{child}") if isinstance(sub, dict) else parent: leaf
                for parent, sub in value.items()
                for child, leaf in (sub.items() if isinstance(sub, dict) else [(parent, sub)])
            }
            flat.update(flatten(lifted))
        else:
            flat.update(flatten(value))
    return flat


def dump_csv(rows: list[dict[str, Any]]) -> str:
    """CSV as the CLI prints it: header from the first row, missing cells N/A, CRLF rows, final newline."""
    if not rows:
        return ""
    header: list[str] = list(rows[0])
    for row in rows[1:]:
        header.extend(key for key in row if key not in header)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, header, restval=NA)
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue() + "\n"
