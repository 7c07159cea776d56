"""The default view of ``amd-smi`` with no arguments (ROCm 7.0+): an nvidia-smi-like box.

Header lines carry the tool, amdgpu and ROCm versions and the platform; each GPU takes two rows
(``BDF name | mem-util temp UEC power/cap`` then ``GPU HIP-ID OAM-ID partition | gfx-util fan
used/total memory``); a second box lists processes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from console.model.gpu import GpuProcess, StackVersions
from console.probes.amdsmi.fields import finite_int, split_pair, to_int
from console.probes.amdsmi.tables import cells
from console.probes.values import na_reason, normalise_bdf, to_bytes

_BOX_EDGE = re.compile(r"^\s*[+|][-=+|]{20,}\s*$")
_HEADER_VERSIONS = re.compile(
    r"(?:AMD-SMI|amd-smi)\s+(?P<tool>\S+)|amdgpu\s+version:\s*(?P<amdgpu>\S+)|ROCm\s+version:\s*(?P<rocm>\S+)",
    re.IGNORECASE,
)
_LABELLED = re.compile(r"^\s*(amdgpu|ROCm|VBIOS|OS kernel|FW PLDM) Version:\s*(\S+)", re.IGNORECASE)
_FIRST_ROW = re.compile(r"^\s*([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(.*?)\s*$")
_SECOND_ROW = re.compile(r"^\s*(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$")


@dataclass
class BoxView:
    """GPU rows (metric-shaped entries), processes, versions and platform of the default view."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    processes: list[GpuProcess] = field(default_factory=list)
    versions: StackVersions | None = None
    platform: str | None = None


def is_box_view(lines: list[str]) -> bool:
    """A ``+----+`` frame with an ``AMD-SMI`` header line."""
    return any(_BOX_EDGE.match(line) for line in lines) and any(re.match(r"^\s*\|\s*AMD-SMI\b", line) for line in lines)


def _inner(line: str) -> list[str] | None:
    # Box rows are "| left | right |"; a log may have lost the closing bar.
    stripped = line.strip()
    if not stripped.startswith("|") or _BOX_EDGE.match(line):
        return None
    return [part.strip() for part in stripped.strip("|").split("|")]


def parse_box(lines: list[str]) -> BoxView:
    """Read every part of the default view that is present."""
    view = BoxView()
    versions = StackVersions()
    pending: dict[str, Any] | None = None
    in_processes = False
    for line in lines:
        parts = _inner(line)
        if parts is None:
            continue
        joined = " ".join(parts)
        if joined.startswith("AMD-SMI") or _LABELLED.match(joined):
            _read_versions(joined, versions)
            continue
        if joined.startswith("Platform:"):
            view.platform = joined.partition(":")[2].strip() or None
            continue
        if joined.startswith("Processes:"):
            in_processes = True
            continue
        if in_processes:
            process = _process(joined)
            if process is not None:
                view.processes.append(process)
            continue
        if len(parts) < 2:
            continue
        first = _FIRST_ROW.match(parts[0])
        if first:
            pending = _first_row(first.group(1), first.group(2), cells(parts[1]))
            view.entries.append(pending)
            continue
        second = _SECOND_ROW.match(parts[0])
        if second and pending is not None:
            _second_row(pending, second, cells(parts[1]))
            pending = None
    if versions.amdsmi_tool or versions.rocm or versions.amdgpu_driver:
        view.versions = versions
    return view


def _read_versions(text: str, versions: StackVersions) -> None:
    labelled = _LABELLED.match(text)
    if labelled:
        field_name = {"amdgpu": "amdgpu_driver", "rocm": "rocm"}.get(labelled.group(1).lower())
        if field_name and na_reason(labelled.group(2)) is None:
            setattr(versions, field_name, labelled.group(2))
        return
    for match in _HEADER_VERSIONS.finditer(text):
        for group, name in (("tool", "amdsmi_tool"), ("amdgpu", "amdgpu_driver"), ("rocm", "rocm")):
            value = match.group(group)
            if value and na_reason(value) is None:
                setattr(versions, name, value)


def _first_row(bdf: str, name: str, right: list[str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"bdf": normalise_bdf(bdf), "market_name": name}
    # Mem-Uti, Temp, UEC, Power-Usage ("734/750 W" = usage / cap)
    for key, value in zip(("umc_activity", "hotspot_temperature", "uec", "power"), right, strict=False):
        if key == "power" and "/" in value:
            usage, cap = split_pair(value)
            unit = cap.split()[-1] if len(cap.split()) > 1 else "W"
            entry["power_usage"], entry["max_power"] = f"{usage.strip()} {unit}", cap.strip()
        else:
            entry["power_usage" if key == "power" else key] = value
    return entry


def _second_row(entry: dict[str, Any], row: re.Match[str], right: list[str]) -> None:
    entry["gpu"] = row.group(1)
    entry["hip_id"] = row.group(2)
    entry["oam_id"] = row.group(3)
    compute, _, memory = row.group(4).partition("/")
    entry["partition"] = {"accelerator_partition": compute, "memory_partition": memory or "N/A"}
    # GFX-Uti, Fan, Mem-Usage ("4976/196592 MB" = used / total)
    for key, value in zip(("gfx_activity", "fan", "mem_usage"), right, strict=False):
        if key == "mem_usage" and "/" in value:
            used, total = split_pair(value)
            unit = total.split()[-1] if len(total.split()) > 1 else "MB"
            entry["used_vram"], entry["total_vram"] = f"{used.strip()} {unit}", total.strip()
        elif key != "mem_usage":
            entry[key] = value


def _process(text: str) -> GpuProcess | None:
    tokens = text.split()
    if len(tokens) < 3 or not tokens[0].isdigit() or not tokens[1].isdigit():
        return None
    rest = cells(" ".join(tokens[2:]))
    name_parts = []
    while rest and not rest[0][:1].isdigit() and rest[0].upper() != "N/A":
        name_parts.append(rest.pop(0))
    # GTT_MEM, VRAM_MEM, MEM_USAGE, CU %, [SDMA]
    vram = rest[1] if len(rest) > 1 else None
    return GpuProcess(
        gpu_index=finite_int(to_int(tokens[0])),
        pid=int(tokens[1]),
        name=" ".join(name_parts) or None,
        vram_bytes=finite_int(to_bytes(vram)) if vram is not None else None,
    )
