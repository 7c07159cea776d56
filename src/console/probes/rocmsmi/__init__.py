"""Parser for ``rocm-smi`` (the legacy ROCm SMI CLI, still shipped in ROCm 7): text views and ``--json``.

Kinds: ``concise`` (the default table, in all three header generations, and ``--showhw``), ``all``
(``-a`` and the other ``--show*`` flags: ``GPU[n]\\t\\t: Key: value`` sections), ``showid`` (``-i``),
``topology`` (``--showtopo`` matrices and ``--showtoponuma``), ``json`` (``--json``) and ``version``
(``--version``). Every view yields the same report: one ``RocmSmiDevice`` per GPU or logical
partition (shared GPU model inside, so it joins with amd-smi and rocminfo on ``gpu.identity.bdf``;
rocm-smi's GUID is the KFD gpu_id), topology links and KFD processes. How each view is read lives in
``reader`` and the modules it uses.

Counting: ``gpu_count`` counts devices shown in full. Secondary partitions that rocm-smi prints as
all-N/A rows (ROCm 6.4, DPX/TPX/CPX) are listed but counted in ``partial_count`` instead, so a GPU
count check does not pass on rows that carry no data.
"""

from __future__ import annotations

import json
import re
from typing import Any

from console.model.rocm import RocmSmiReport
from console.probes.base import Detection, ParsedOutput, ParseError, clean_lines
from console.probes.ids import Tool
from console.probes.rocmsmi.concise import table_columns
from console.probes.rocmsmi.reader import FOOTER, HEADER, NO_JSON_DATA, TOPOLOGY_SECTIONS, Reader, banner_title

KINDS = ("concise", "all", "showid", "topology", "json", "version")
_KIND_ALIASES = {
    "default": "concise",
    "showhw": "concise",
    "showallinfo": "all",
    "-a": "all",
    "-i": "showid",
    "showtopo": "topology",
    "showtoponuma": "topology",
    "--json": "json",
}

_VERSION_LINE = re.compile(r"^ROCM-SMI version:", re.MULTILINE)
_KEYED_LINE = re.compile(r"^GPU\[[0-9]{1,9}\][ \t]*:", re.MULTILINE)
_JSON_CARD = re.compile(r'\{\s*"(?:card\d+|system)"\s*:\s*\{')
# rocm-smi's own start-up failures, printed before any banner.
_OWN_FAILURE = re.compile(
    r"Driver not initialized \(amdgpu not found in modules\)|Unable to load the rocm_smi library|"
    r"ROCm SMI returned \d+ \(the expected value is 0\)"
)


def detect(text: str) -> Detection | None:
    """rocm-smi by its banner, ``GPU[n]\\t\\t:`` lines, a concise table header, ``{"card0": {`` or its failures."""
    lines = text.splitlines()
    if HEADER in text or FOOTER in text:
        titles = {title for line in lines if (title := banner_title(line.strip()))}
        return Detection(Tool.ROCM_SMI, _kind_of(titles, any(map(table_columns, lines))), 0.95)
    if _JSON_CARD.search(text):
        return Detection(Tool.ROCM_SMI, "json", 0.9)
    if _VERSION_LINE.search(text):
        return Detection(Tool.ROCM_SMI, "version", 0.9)
    if len(_KEYED_LINE.findall(text)) >= 2:
        return Detection(Tool.ROCM_SMI, "all", 0.85)
    if any(map(table_columns, lines[:200])):
        return Detection(Tool.ROCM_SMI, "concise", 0.85)
    if _OWN_FAILURE.search(text):
        return Detection(Tool.ROCM_SMI, "all", 0.8)
    if NO_JSON_DATA.search(text.lstrip()):
        return Detection(Tool.ROCM_SMI, "json", 0.8)
    return None


def parse(text: str, kind: str | None = None) -> ParsedOutput:
    """Parse any rocm-smi view into per-GPU records, topology links and KFD processes.

    Driver/library failures, a crash, a missing ``End of ROCm SMI Log`` footer or no GPU data at all
    give ``ok=False`` with the tool's lines in ``errors``. ``WARNING: No JSON data to report`` is an
    empty answer (``--showpids --json`` with no process prints it), so it stays ``ok`` with a warning.
    """
    wanted = _KIND_ALIASES.get(kind, kind) if kind else None
    if wanted is not None and wanted not in KINDS:
        raise ParseError(f"unknown rocm-smi kind {kind!r}; expected one of {', '.join(KINDS)}", tool=Tool.ROCM_SMI)
    lines = clean_lines(text, strip_prefixes=True)
    reader = Reader()
    payload = _json_payload("\n".join(lines)) if wanted in (None, "json") else None
    if payload is not None:
        reader.read_json(payload)
    reader.read_lines(lines, json_done=payload is not None)
    if not reader.recognised:
        raise ParseError(
            "expected rocm-smi output: a 'ROCm System Management Interface' banner, 'GPU[n] : key: value' lines, "
            'a concise table header or --json {"card0": ...}',
            tool=Tool.ROCM_SMI,
        )
    report = reader.finish()
    errors = reader.errors
    if reader.saw_header and not reader.saw_footer and payload is None:
        errors.append(f"output ends before '{FOOTER}': rocm-smi did not finish")
    if not (report.devices or report.topology or report.processes or report.system or errors or reader.no_json_data):
        errors.append("rocm-smi printed no GPU data")
    return ParsedOutput(
        tool=Tool.ROCM_SMI,
        kind=wanted or _kind_of_reader(reader, json_seen=payload is not None),
        ok=not errors,
        errors=errors,
        warnings=reader.warnings,
        summary=_summary(report),
        tool_version=report.versions.rocm_smi,
        data=report,
    )


def _kind_of_reader(reader: Reader, json_seen: bool) -> str:
    if json_seen or reader.no_json_data:
        return "json"
    if reader.report.versions.rocm_smi and not (reader.devices or reader.saw_header):
        return "version"
    return _kind_of(reader.sections, bool(reader.tables))


def _kind_of(titles: set[str], has_table: bool) -> str:
    titles = titles - {HEADER, FOOTER}
    if {"Concise Info", "Concise Hardware Info"} & titles or (has_table and not titles):
        return "concise"
    if titles and titles <= {*TOPOLOGY_SECTIONS, "Numa Nodes"}:
        return "topology"
    if titles == {"ID"}:
        return "showid"
    return "all"


def _json_payload(text: str) -> dict[str, Any] | None:
    """The first ``{"card0": ...}`` object in the text (noise lines may precede it), or None."""
    match = _JSON_CARD.search(text)
    if match is None:
        return None
    try:
        payload, _ = json.JSONDecoder().raw_decode(text, match.start())
    except ValueError as exc:
        raise ParseError(f"rocm-smi --json output is not valid JSON: {exc}", tool=Tool.ROCM_SMI) from None
    return payload if isinstance(payload, dict) else None


def _summary(report: RocmSmiReport) -> dict[str, Any]:
    full = [d for d in report.devices if d.shown_in_full]
    identities = [d.gpu.identity for d in full]
    metrics = [d.gpu.metrics for d in full if d.gpu.metrics is not None]
    temps = [t for m in metrics for t in (m.hotspot_temp_c, m.edge_temp_c) if t is not None]
    powers = [m.power_w for m in metrics if m.power_w is not None]
    return {
        "gpu_count": len(full),
        "device_count": len(report.devices),
        "partial_count": len(report.devices) - len(full),
        "layout": report.layout,
        "device_ids": sorted({i.device_id for i in identities if i.device_id}),
        "compute_partitions": sorted({i.compute_partition for i in identities if i.compute_partition}),
        "memory_partitions": sorted({i.memory_partition for i in identities if i.memory_partition}),
        "max_temp_c": max(temps, default=None),
        "total_power_w": round(sum(powers), 1) if powers else None,
        "power_caps_w": sorted({m.power_cap_w for m in metrics if m.power_cap_w is not None}),
        "topology_links": len(report.topology),
        "processes": len(report.processes),
    }
