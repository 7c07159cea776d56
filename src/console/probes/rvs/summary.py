"""The parts of RVS output that are not result lines: the ``rvs -g`` GPU list and the RVS >= 1.3 summary box.

The summary box (printed last by a completed run) looks like::

    |                 ROCm Validation Suite (RVS) Summary                 |
    | RVS version                      | 1.3.0                            |
    | AMD Instinct MI355X - 21010      | AMD Instinct MI355X - 56525      |   <- name - gpu_id
    | 0 - 3 - 0000:0a:00.0             | 1 - 5 - 0000:23:00.0             |   <- index - node - BDF
    | action_1                         | GPUP           | PASS            |

The grid has one or two GPUs per row and, from RVS 1.6, no column-title rows. Cells are read by
content, not by column position, so padding changes and lost trailing spaces do not matter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from console.model.rvs import RvsAction, RvsGpu, RvsOverview
from console.probes.rvs.units import small_int
from console.probes.values import na_reason, normalise_bdf

SUMMARY_TITLE = "ROCm Validation Suite (RVS) Summary"

_BANNER = re.compile(r"ROCm Validation Suite \(version\s+([^)\s]+)\s*\)")
# 0000:05:00.0 - GPU[ 2 - 28851] AMD Instinct MI300X (Device 29857); old builds print 05:00.0.
_GPU_LIST_LINE = re.compile(
    r"(?P<bdf>(?:[0-9A-Fa-f]{4,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s+-\s+"
    r"GPU\[\s*(?P<node>\d+)\s*-\s*(?P<gpu_id>\d+)\s*\]\s*(?P<rest>.*)$"
)
_DEVICE_SUFFIX = re.compile(r"\(Device\s+(?P<device>\d+)\)\s*$")
_NO_GPUS = re.compile(r"No supported GPUs available", re.IGNORECASE)
_GRID_NAME = re.compile(r"^(?P<name>.*\S)\s+-\s+(?P<gpu_id>\d+)$")
_GRID_IDS = re.compile(r"^(?P<index>\d+)\s*-\s*(?P<node>\d+)\s*-\s*(?P<bdf>\S+)$")
_BORDER = re.compile(r"^\+[-=+]*\+?$")
_BOX_PART = re.compile(r"(?:^|\s)(?P<box>\+[-=+]{3,}\+?|\|.*)$")
_VERDICTS = {"PASS": True, "FAIL": False}


def parse_banner(line: str) -> str | None:
    """The version of a ``ROCm Validation Suite (version 0.0.60202)`` banner line."""
    match = _BANNER.search(line)
    return match.group(1) if match else None


def parse_gpu_list_line(line: str) -> RvsGpu | None:
    """One ``rvs -g`` line as an ``RvsGpu`` (device id converted from decimal to hex), or None."""
    match = _GPU_LIST_LINE.search(line)
    if match is None:
        return None
    rest = match.group("rest").strip()
    device_id = None
    device = _DEVICE_SUFFIX.search(rest)
    if device is not None:
        number = small_int(device.group("device"))
        device_id = None if number is None else f"0x{number:04x}"
        rest = rest[: device.start()].strip()
    return RvsGpu(
        gpu_id=small_int(match.group("gpu_id")),
        node_id=small_int(match.group("node")),
        bdf=normalise_bdf(match.group("bdf")),
        name=rest or None,
        device_id=device_id,
    )


def is_no_gpu_line(line: str) -> bool:
    """``rvs -g`` found nothing it supports."""
    return bool(_NO_GPUS.search(line))


@dataclass
class SummaryBox:
    """What the summary box holds; ``complete`` is False when the box was cut before its action table ended."""

    overview: RvsOverview = field(default_factory=RvsOverview)
    gpus: list[RvsGpu] = field(default_factory=list)
    actions: list[RvsAction] = field(default_factory=list)
    failed_rows: list[str] = field(default_factory=list)
    complete: bool = False


def box_part(line: str) -> str | None:
    """The part of ``line`` drawn by the summary box (a ``+---+`` border or a ``| cell |`` row), after any
    logger prefix such as a timestamp; None when the line is not part of a box."""
    match = _BOX_PART.search(line.rstrip())
    return match.group("box") if match else None


def is_summary_title(line: str) -> bool:
    """The box's title row."""
    part = box_part(line)
    return part is not None and SUMMARY_TITLE.lower() in part.lower()


def _cells(line: str) -> list[str]:
    inner = line.strip().strip("|")
    return [cell.strip() for cell in inner.split("|")]


def parse_summary_box(lines: list[str]) -> SummaryBox:
    """Read the box whose rows are ``lines`` (title first)."""
    box = SummaryBox()
    in_actions = False
    pending_names: list[tuple[str, int | None]] = []
    border_after_action = False
    for line in lines:
        stripped = line.strip()
        if _BORDER.match(stripped):
            border_after_action = border_after_action or bool(in_actions and box.actions)
            continue
        texts = [cell for cell in _cells(stripped) if cell]
        if not texts or is_summary_title(stripped) or texts == ["System Overview"]:
            continue
        if [text.lower() for text in texts[:3]] == ["action name", "module", "result"]:
            in_actions = True
            continue
        if in_actions:
            _add_action_row(box, texts, stripped)
            border_after_action = False
            continue
        if texts[0] in ("GPU Name - GPU ID", "ID - Node ID - BDF"):
            continue
        ids = [_GRID_IDS.match(text) for text in texts]
        if all(ids):
            _add_grid_ids(box, pending_names, [m for m in ids if m is not None])
            pending_names = []
            continue
        names = [_GRID_NAME.match(text) for text in texts]
        if all(names) and not _is_overview_key(texts[0]):
            pending_names = [(m.group("name"), small_int(m.group("gpu_id"))) for m in names if m is not None]
            continue
        if len(texts) == 2:
            _add_overview_row(box.overview, texts[0], texts[1])
    box.complete = bool(box.actions) and border_after_action
    return box


_OVERVIEW_FIELDS = {
    "operating system": "operating_system",
    "rvs version": "rvs_version",
    "rocm version": "rocm_version",
    "amdgpu version": "amdgpu_version",
}


def _is_overview_key(text: str) -> bool:
    return text.lower() in _OVERVIEW_FIELDS or text.lower() == "gpus"


def _add_overview_row(overview: RvsOverview, key: str, value: str) -> None:
    name = _OVERVIEW_FIELDS.get(key.lower())
    if key.lower() == "gpus":
        count = small_int(value)
        if count is None:
            overview.mark_unavailable("gpu_count", value)
        overview.gpu_count = count
    elif name is None:
        overview.other[key] = value
    elif na_reason(value) is not None:
        overview.mark_unavailable(name, value)
    else:
        setattr(overview, name, value)


def _add_grid_ids(box: SummaryBox, names: list[tuple[str, int | None]], ids: list[re.Match[str]]) -> None:
    for position, match in enumerate(ids):
        name, gpu_id = names[position] if position < len(names) else (None, None)
        box.gpus.append(
            RvsGpu(
                gpu_id=gpu_id,
                node_id=small_int(match.group("node")),
                index=small_int(match.group("index")),
                bdf=normalise_bdf(match.group("bdf")),
                name=name,
            )
        )


def _add_action_row(box: SummaryBox, texts: list[str], line: str) -> None:
    if len(texts) < 3:
        return
    name, module, verdict = texts[0], texts[1], texts[2]
    passed = _VERDICTS.get(verdict.upper())
    box.actions.append(RvsAction(name=name, module=module.lower(), passed=passed))
    if passed is False:
        box.failed_rows.append(line)
