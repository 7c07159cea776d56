"""amd-smi outputs (ROCm 6.x and 7.x): JSON, human-readable text, CSV, tables and the default box view.

``parse`` finds the payload by content (never by line position), reads it into per-GPU entries with
lower_snake_case keys whatever the form, and maps those onto the shared GPU model. Failure messages
(driver not loaded, no GPU, tracebacks, ``Error code: -N``) make ``ok`` False and are kept verbatim;
the ``AMDSMI Tool: ...`` version line fills the stack versions wherever it appears.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from console.model.amdsmi import AmdSmiForm, AmdSmiResult, MetricSample, PartitionState
from console.model.gpu import GpuIdentity, GpuMetrics, GpuRecord, LinkStatus, StackVersions
from console.probes.amdsmi.box import is_box_view, parse_box
from console.probes.amdsmi.cper import CperRead, is_cper_json, is_header_dump, parse_cper_json, parse_header_dump
from console.probes.amdsmi.csv_output import is_csv_header, parse_csv
from console.probes.amdsmi.errors import Triage, is_message_line, triage
from console.probes.amdsmi.fields import finite_int, is_mapping, text_of, to_int
from console.probes.amdsmi.json_output import JsonPayload, find_json_documents, is_amdsmi_json, read_payload
from console.probes.amdsmi.links import topology_links, xgmi_links, xgmi_ports
from console.probes.amdsmi.records import (
    adopt_orphans,
    details_of,
    engines_of,
    firmware_of,
    infer_kind,
    metrics_of,
    partition_of,
    processes_of,
    record_of,
)
from console.probes.amdsmi.tables import (
    XgmiTables,
    is_cper_header,
    is_monitor_header,
    is_topology_title,
    is_xgmi_title,
    parse_cper,
    parse_monitor,
    parse_partition_table,
    parse_topology,
    parse_xgmi,
)
from console.probes.amdsmi.text_output import parse_text
from console.probes.base import Detection, ParsedOutput, ParseError, clean_lines
from console.probes.ids import Tool

KINDS = (
    "version", "list", "static", "metric", "firmware", "xgmi", "topology", "ras", "bad-pages", "process",
    "monitor", "partition", "default", "error",
)  # fmt: skip

_CONFIDENCE = {
    AmdSmiForm.JSON_LIST: 0.95,
    AmdSmiForm.JSON_GPU_DATA: 0.95,
    AmdSmiForm.JSON_WATCH: 0.95,
    AmdSmiForm.BOX: 0.95,
    AmdSmiForm.TEXT: 0.9,
    AmdSmiForm.TABLE: 0.9,
    AmdSmiForm.CSV: 0.85,
}
# Said in the output's warnings and summary: what is not in the text was filtered out, not reported absent.
FRAGMENT_NOTE = "read as a fragment: amd-smi text without its GPU header or section lines (grep-filtered?)"
_FRAGMENT_CONFIDENCE = 0.6  # key lines alone are weaker evidence than a whole output's layout
_ROCM_SMI_MARKERS = re.compile(r"ROCm System Management Interface|^GPU\[\d+\]\s*:", re.MULTILINE)
_AMDSMI_ERROR_WORDS = re.compile(r"amdgpu|amd[-_]?smi|GPU devices|Error code:", re.IGNORECASE)
_XGMI_METRIC_HEADER = re.compile(r"\bbdf\b.*\bbit_rate\b")


def detect(text: str) -> Detection | None:
    """amd-smi output and its kind, from content alone; rocm-smi outputs are left to rocm-smi."""
    try:
        result, found = _read_all(text)
    except ParseError:
        return None
    if _ROCM_SMI_MARKERS.search(text):
        # Some wrappers print rocm-smi's table followed by amd-smi's version line.
        return Detection(Tool.AMD_SMI, result.kind, 0.2)
    if found.fragment:
        confidence = _FRAGMENT_CONFIDENCE
    elif result.form in _CONFIDENCE:
        confidence = _CONFIDENCE[result.form]
    elif found.versions is not None:
        confidence = 0.9
    else:
        confidence = 0.5 if any(_AMDSMI_ERROR_WORDS.search(e) for e in found.errors) else 0.3
    return Detection(Tool.AMD_SMI, result.kind, confidence)


def parse(text: str, kind: str | None = None) -> ParsedOutput:
    """Parse any amd-smi output; raises ParseError only when nothing of amd-smi can be read."""
    if kind == "ras" and text.strip() == "[]":
        # The refactored CLI's ``--json`` with no record: an empty list, which says nothing of a GPU.
        result, found = AmdSmiResult(kind="ras", form=AmdSmiForm.JSON_LIST), Triage()
    else:
        result, found = _read_all(text)
    if kind and kind in KINDS and result.form is not AmdSmiForm.ERROR:
        result.kind = kind
    summary = summarise(result)
    if found.fragment:
        summary["fragment"] = True
    return ParsedOutput(
        tool=Tool.AMD_SMI,
        kind=result.kind,
        ok=not found.errors,
        errors=found.errors,
        warnings=found.warnings,
        summary=summary,
        tool_version=result.versions.amdsmi_tool if result.versions else None,
        data=result,
    )


def _read_all(text: str) -> tuple[AmdSmiResult, Triage]:
    clean = _clean_json(text)
    if clean is not None:
        return clean, Triage()
    lines = clean_lines(text, strip_prefixes=True)
    found = triage(lines)
    try:
        result = _read_payload(lines, found)
    except RecursionError:
        raise ParseError("amd-smi JSON is nested too deeply to read") from None
    if result is None:
        if found.versions is not None and not found.errors:
            result = AmdSmiResult(kind="version", form=AmdSmiForm.TEXT)
        elif found.errors:
            result = AmdSmiResult(kind="error", form=AmdSmiForm.ERROR)
        else:
            raise ParseError(_nothing_found(lines))
    if found.versions is not None:
        result.versions = found.versions
    return result, found


def _clean_json(text: str) -> AmdSmiResult | None:
    """Fast path for the common case, a bare JSON document: no noise lines to triage one by one."""
    body = text.strip()
    if body[:1] not in ("{", "[") or body[-1:] not in ("}", "]"):
        return None
    try:
        document = json.loads(body)
    except ValueError:
        return None
    if is_cper_json([document]):
        return None  # read by _read_payload, which keeps what a CPER form does not explain
    if not is_amdsmi_json([document]):
        return None
    return _from_json(read_payload([document]))


def _nothing_found(lines: list[str]) -> str:
    if any(line.lstrip()[:1] in ("{", "[") for line in lines):
        return "amd-smi JSON is truncated or malformed: no complete document with a 'gpu' entry or 'gpu_data'"
    return "expected amd-smi output: JSON, 'GPU: N' blocks, a monitor/xgmi/topology table, CSV or 'AMDSMI Tool:'"


def _read_payload(lines: list[str], found: Triage) -> AmdSmiResult | None:
    """The output's content; rows of a table that do not fit its header are errors in ``found``."""
    if is_header_dump(lines):
        return _from_cper(parse_header_dump(lines), found, AmdSmiForm.TEXT)
    documents = find_json_documents("\n".join(lines))
    if documents and is_cper_json(documents):
        return _from_cper(parse_cper_json(documents), found, AmdSmiForm.JSON_LIST)
    if documents and is_amdsmi_json(documents):
        return _from_json(read_payload(documents))
    if is_box_view(lines):
        return _from_box(lines)
    if any(is_xgmi_title(line) or _XGMI_METRIC_HEADER.search(line) for line in lines):
        return _from_xgmi_tables(parse_xgmi(lines))
    if any(is_topology_title(line) for line in lines):
        return _from_topology_tables(lines)
    if any(is_monitor_header(line) for line in lines):
        entries = parse_monitor(lines, found.errors, found.warnings)
        watch = any("timestamp" in entry for entry in entries)
        return _from_entries(entries, AmdSmiForm.TABLE, watch=watch, kind="monitor") if entries else None
    if any(is_csv_header(line) for line in lines):
        table = parse_csv(lines)
        found.errors += [f"CSV row does not fit its header: {line}" for line in table.skipped]
        watch = table.watch or any("timestamp" in row for row in table.rows)
        return _from_entries(list(table.rows), AmdSmiForm.CSV, watch=watch) if table.rows else None
    document = parse_text(lines, ignored=is_message_line)
    if document.fragment:
        fragment = _from_entries([adopt_orphans(gpu) for gpu in document.gpus], AmdSmiForm.TEXT, watch=False)
        if fragment is not None:
            found.fragment = True
            found.warnings.append(FRAGMENT_NOTE)
            return fragment
    elif document.gpus:
        return _from_entries(document.gpus, AmdSmiForm.TEXT, watch=False)
    partitions = parse_partition_table(lines)
    if partitions:
        return _from_partitions(partitions, AmdSmiForm.TABLE)
    if any(is_cper_header(line) for line in lines):
        unread: list[str] = []
        records = parse_cper([line for line in lines if not is_message_line(line)], unread)
        found.warnings.extend(f"not a CPER record: {line[:200]}" for line in unread)
        return AmdSmiResult(kind="ras", form=AmdSmiForm.TABLE, cper=records)
    return None


def _from_cper(read: CperRead, found: Triage, form: AmdSmiForm) -> AmdSmiResult:
    found.warnings.extend(read.warnings)
    found.errors.extend(read.errors)
    return AmdSmiResult(kind="ras", form=form, cper=read.records, cper_gpus=read.listed)


def _from_entries(
    entries: Sequence[Mapping[str, Any]], form: AmdSmiForm, *, watch: bool, kind: str | None = None
) -> AmdSmiResult | None:
    kind = kind or infer_kind(entries)
    if kind is None:
        return None
    result = AmdSmiResult(kind=kind, form=form)
    for group in _by_gpu(entries):
        base = group[-1] if watch else group[0]
        record = record_of(base)
        for extra in group[1:]:
            for block, version in firmware_of(extra).items():
                record.firmware.setdefault(block, version)
        result.gpus.append(record)
        identity = record.identity
        details = details_of(base, identity)
        if details is not None:
            result.details.append(details)
        partition = partition_of(base, identity)
        if partition is not None:
            result.partitions.append(partition)
        result.engines.extend(engines_of(base, identity.index))
        for entry in group if not watch else [base]:
            result.processes.extend(processes_of(entry, identity.index, identity.bdf))
        if kind == "process":
            result.process_gpus.append(identity.index if identity.index is not None else len(result.process_gpus))
        if watch:
            result.samples.extend(_sample(entry) for entry in group)
    return result


def _by_gpu(entries: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    # CSV prints one row per firmware block or process, watch modes one entry per iteration.
    groups: dict[Any, list[Mapping[str, Any]]] = {}
    for position, entry in enumerate(entries):
        index = finite_int(to_int(entry.get("gpu")))
        groups.setdefault(index if index is not None else f"#{position}", []).append(entry)
    return list(groups.values())


def _sample(entry: Mapping[str, Any]) -> MetricSample:
    return MetricSample(
        timestamp=finite_int(to_int(entry.get("timestamp"))),
        gpu_index=finite_int(to_int(entry.get("gpu"))),
        xcp=finite_int(to_int(entry.get("xcp"))),
        metrics=metrics_of(entry) or GpuMetrics(),
    )


def _from_json(payload: JsonPayload) -> AmdSmiResult | None:
    entries = payload.gpu_entries
    tables = payload.tables
    watch = payload.form is AmdSmiForm.JSON_WATCH
    result = _from_entries(entries, payload.form, watch=watch) if entries else None
    # `xgmi --link-status --json` may also come as a plain GPU list whose entries carry the U/D/X row.
    status_rows = tables.get("link_status", []) or [
        e for e in entries if is_mapping(e) and isinstance(e.get("link_status"), list)
    ]
    if "xgmi_metric" in tables or status_rows or (result is not None and result.kind == "xgmi"):
        metric_entries = [e for e in tables.get("xgmi_metric", []) if is_mapping(e)] or entries
        result = result or _from_entries(metric_entries, payload.form, watch=False, kind="xgmi")
        if result is None:
            result = _identities_only(status_rows, payload.form, "xgmi")
        result.kind = "xgmi"
        result.xgmi_links = xgmi_links(metric_entries, status_rows)
        result.xgmi_ports = xgmi_ports(tables.get("link_port_status", []))
    elif result is not None and result.kind == "topology":
        result.topology = topology_links(entries)
    if "current_partition" in tables:
        partitions = [_partition_row(row) for row in tables["current_partition"] if is_mapping(row)]
        result = result or _from_partitions(partitions, payload.form)
        result.partitions = partitions
    if payload.version is not None:
        versions = _json_versions(payload.version)
        result = result or AmdSmiResult(kind="version", form=payload.form)
        result.versions = versions
    return result


def _identities_only(rows: list[Any], form: AmdSmiForm, kind: str) -> AmdSmiResult:
    result = AmdSmiResult(kind=kind, form=form)
    for row in rows:
        if is_mapping(row):
            result.gpus.append(GpuRecord(identity=record_of(row).identity))
    return result


def _partition_row(row: Mapping[str, Any]) -> PartitionState:
    ids = [int(p) for p in re.findall(r"\d+", str(row.get("partition_id", "")))]
    return PartitionState(
        gpu_index=finite_int(to_int(row.get("gpu_id", row.get("gpu")))),
        memory_partition=(text_of(row.get("memory")) or "").upper() or None,
        compute_partition=(text_of(row.get("accelerator_type")) or "").upper() or None,
        profile_index=finite_int(to_int(row.get("accelerator_profile_index"))),
        partition_ids=ids,
    )


def _from_partitions(partitions: list[PartitionState], form: AmdSmiForm) -> AmdSmiResult:
    result = AmdSmiResult(kind="partition", form=form, partitions=partitions)
    for state in partitions:
        identity = GpuIdentity(
            index=state.gpu_index, compute_partition=state.compute_partition, memory_partition=state.memory_partition
        )
        result.gpus.append(GpuRecord(identity=identity))
    return result


def _json_versions(version: Mapping[str, Any]) -> StackVersions:
    versions = StackVersions()
    for field_name, key in (
        ("amdsmi_tool", "version"),
        ("amdsmi_lib", "amdsmi_library_version"),
        ("rocm", "rocm_version"),
        ("amdgpu_driver", "amdgpu_version"),
        ("hsmp_driver", "amd_hsmp_driver_version"),
    ):
        if key in version:
            value = text_of(version[key])
            if value is None:
                versions.mark_unavailable(field_name, str(version[key]))
            else:
                setattr(versions, field_name, value)
    return versions


def _from_box(lines: list[str]) -> AmdSmiResult:
    view = parse_box(lines)
    result = _from_entries(view.entries, AmdSmiForm.BOX, watch=False, kind="default") or AmdSmiResult(
        kind="default", form=AmdSmiForm.BOX
    )
    result.processes = view.processes
    result.versions = view.versions
    result.platform = view.platform
    return result


def _from_xgmi_tables(tables: XgmiTables) -> AmdSmiResult:
    result = AmdSmiResult(kind="xgmi", form=AmdSmiForm.TABLE, xgmi_links=tables.links, xgmi_ports=tables.ports)
    result.gpus = [GpuRecord(identity=GpuIdentity(index=index, bdf=bdf)) for index, bdf in tables.gpus]
    return result


def _from_topology_tables(lines: list[str]) -> AmdSmiResult:
    links = parse_topology(lines)
    result = AmdSmiResult(kind="topology", form=AmdSmiForm.TABLE, topology=links)
    seen: dict[int | None, str | None] = {}
    for link in links:
        seen.setdefault(link.src_index, link.src_bdf)
        seen.setdefault(link.dst_index, link.dst_bdf)
    result.gpus = [GpuRecord(identity=GpuIdentity(index=i, bdf=b)) for i, b in sorted(seen.items(), key=_index_key)]
    return result


def _index_key(item: tuple[int | None, str | None]) -> int:
    return item[0] if item[0] is not None else -1


def summarise(result: AmdSmiResult) -> dict[str, Any]:
    """Counts a check or an operator wants at a glance; keys appear only where they apply."""
    summary: dict[str, Any] = {"gpu_count": len(result.gpus), "form": result.form.value}
    ecc = [g.ecc for g in result.gpus if g.ecc is not None]
    for key, name in (
        ("correctable", "correctable_total"),
        ("uncorrectable", "uncorrectable_total"),
        ("deferred", "deferred_total"),
    ):
        values = [getattr(e, key) for e in ecc if getattr(e, key) is not None]
        if values:
            summary[name] = sum(values)
    pages = [g.bad_pages for g in result.gpus if g.bad_pages is not None]
    if result.kind == "bad-pages" or any(p.retired or p.pending or p.unreservable for p in pages):
        summary["bad_pages_total"] = sum(len(p.retired) + len(p.pending) + len(p.unreservable) for p in pages)
        summary["bad_pages_pending"] = sum(len(p.pending) for p in pages)
    if result.xgmi_links or result.xgmi_ports:
        summary["links"] = len(result.xgmi_links)
        down = [link for link in result.xgmi_links if link.status in (LinkStatus.DOWN, LinkStatus.DISABLED)]
        port_down = sum(port in (LinkStatus.DOWN, LinkStatus.DISABLED) for p in result.xgmi_ports for port in p.ports)
        summary["links_down"] = len(down) + port_down
        rates = [link.bit_rate_gbps for link in result.xgmi_links if link.bit_rate_gbps is not None]
        if rates:
            summary["min_bit_rate_gbps"] = min(rates)
    if result.topology:
        summary["links"] = len(result.topology)
        summary["xgmi_links"] = sum(1 for link in result.topology if link.link_type == "XGMI")
        hops = [link.hops for link in result.topology if link.hops is not None]
        if hops:
            summary["max_hops"] = max(hops)
        summary["inaccessible"] = sum(1 for link in result.topology if link.accessible is False)
    if result.kind in ("process", "default") or result.processes:
        summary["process_count"] = len(result.processes)
    if result.kind == "firmware":
        summary["firmware_blocks"] = max((len(g.firmware) for g in result.gpus), default=0)
    if result.samples:
        summary["samples"] = len(result.samples)
    for key in ("memory_partition", "compute_partition"):
        modes = sorted({getattr(p, key) for p in result.partitions if getattr(p, key)})
        if modes:
            summary[f"{key}s"] = modes
    if result.cper:
        summary["cper_records"] = len(result.cper)
        summary["cper_fatal"] = sum(1 for record in result.cper if record.severity == "fatal")
    hotspots = [g.metrics.hotspot_temp_c for g in result.gpus if g.metrics and g.metrics.hotspot_temp_c is not None]
    if hotspots:
        summary["max_hotspot_c"] = max(hotspots)
    return summary


__all__ = ["KINDS", "detect", "parse", "summarise"]
