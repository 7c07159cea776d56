"""How TransferBench prints: table borders, numbers, device labels. Shared by its table readers."""

from __future__ import annotations

import math
import re

from console.probes.values import parse_quantity

# v1.67+ tables draw Unicode borders ("│", "┼", "─") mixed with ASCII rules; reading them as
# ASCII lets one set of patterns serve every layout generation.
_BORDERS = str.maketrans({"│": "|", "┃": "|", "─": "-", "━": "-", **dict.fromkeys("┼┬┴├┤┌┐└┘", "+")})
_RULE = re.compile(r"^[\s|+=-]*$")
DEVICE = re.compile(r"\b(CPU|GPU|NIC)\s*(\d+)\b")
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)", re.IGNORECASE)
CELL = re.compile(r"N/A|" + NUMBER.pattern, re.IGNORECASE)


def ascii_borders(line: str) -> str:
    """The line with box-drawing characters replaced by ``|``, ``-`` and ``+``."""
    return line.translate(_BORDERS)


def is_rule(line: str) -> bool:
    """A separator line made only of dashes, pluses, bars and equals signs (not an empty line)."""
    return bool(line.strip()) and bool(_RULE.match(line))


def number(token: str) -> tuple[float | None, str | None]:
    """A printed value and, when it is not a usable number (``N/A``, ``nan``, junk), the reason."""
    try:
        value = float(token)
    except ValueError:
        return None, parse_quantity(token).reason or token
    return (value, None) if math.isfinite(value) else (None, "not a number")


def cells(text: str) -> list[str] | None:
    """Split a row of values (``N/A`` or numbers, spaces, commas or bars between); None if anything else."""
    tokens = [token for token in re.split(r"[\s,|]+", text.strip()) if token]
    if not all(CELL.fullmatch(token) for token in tokens):
        return None
    return tokens
