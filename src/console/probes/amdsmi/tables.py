"""amd-smi's fixed-width tables: ``monitor``, ``xgmi`` (metric, link status, port status),
``topology`` matrices, ``partition --current`` and ``ras --cper`` listings.

Cells are padded to fixed widths but logs lose trailing spaces and swap them for TABs, so rows are
split on whitespace and re-assembled into cells by grammar: a number takes the unit that follows it
(``251 W``, ``55 °C``, ``2 KB``), ``N/A`` stands alone, and ``2.0/ 64.0 GB`` is one cell.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from console.model.amdsmi import CperRecord, PartitionState, XgmiPortStatus
from console.model.gpu import LinkStatus, TopologyLink, XgmiLink
from console.probes.amdsmi.cper import afid_values
from console.probes.amdsmi.fields import finite_int, split_pair, to_int
from console.probes.values import Quantity, na_reason, normalise_bdf, parse_quantity, to_bytes

_UNITS = {
    "w", "mw", "kw", "°c", "c", "mhz", "ghz", "khz", "%", "b", "kb", "mb", "gb", "tb", "pb", "kib", "mib", "gib",
    "mb/s", "gb/s", "kb/s", "gt/s", "mt/s", "mv", "v", "j", "ms", "us", "ns", "s", "rpm",
}  # fmt: skip


def cells(text: str) -> list[str]:
    """Split a table row into cells: numbers keep their unit, ``a/ b`` fractions stay together."""
    found: list[str] = []
    joining = False
    for token in text.split():
        if joining and found:
            found[-1] += token
            joining = token.endswith("/")
            continue
        last = found[-1] if found else ""
        if found and token.lower() in _UNITS and (last[-1:].isdigit() or last.upper() == "N/A") and " " not in last:
            found[-1] = f"{last} {token}"
        else:
            found.append(token)
        joining = token.endswith("/")
    return found


# --- monitor ---------------------------------------------------------------------------------

_MONITOR_COLUMNS = {
    "TIMESTAMP": "timestamp", "GPU": "gpu", "XCP": "xcp", "POWER": "power_usage", "PWR_CAP": "max_power",
    "GPU_T": "hotspot_temperature", "GPU_TEMP": "hotspot_temperature", "MEM_T": "memory_temperature",
    "MEM_TEMP": "memory_temperature", "GFX_CLK": "gfx_clk", "GFX_CLOCK": "gfx_clk", "GFX%": "gfx",
    "GFX_UTIL": "gfx", "MEM%": "mem", "MEM_UTIL": "mem", "MEM_CLOCK": "mem_clock", "ENC%": "encoder",
    "ENC_UTIL": "encoder", "DEC%": "decoder", "DEC_UTIL": "decoder", "VCLOCK": "vclock", "ENC_CLOCK": "vclock",
    "DCLOCK": "dclock", "DEC_CLOCK": "dclock", "SINGLE_ECC": "single_bit_ecc", "DOUBLE_ECC": "double_bit_ecc",
    "PCIE_REPLAY": "pcie_replay", "VRAM_USED": "vram_used", "VRAM_FREE": "vram_free", "VRAM_TOTAL": "vram_total",
    "VRAM%": "vram_percent", "VRAM_USAGE": "vram_usage", "PCIE_BW": "pcie_bw",
}  # fmt: skip
# monitor --violation columns -> the metric ``throttle`` keys they abbreviate
_MONITOR_VIOLATIONS = {
    "PVIOL": "ppt_violation_activity",
    "TVIOL": "socket_thermal_violation_activity",
    "TVIOL_ACTIVE": "socket_thermal_violation_status",
    "PHOT_TVIOL": "prochot_violation_activity",
    "VR_TVIOL": "vr_thermal_violation_activity",
    "HBM_TVIOL": "hbm_thermal_violation_activity",
    "GFX_CLKVIOL": "gfx_clk_below_host_limit_violation_activity",
}


def is_monitor_header(line: str) -> bool:
    """``GPU  POWER  GPU_T ...`` (optionally after ``TIMESTAMP``) with at least two known columns."""
    tokens = line.split()
    if not tokens:
        return False
    start = 1 if tokens[0] == "TIMESTAMP" else 0
    known = [t for t in tokens if t in _MONITOR_COLUMNS or t in _MONITOR_VIOLATIONS]
    return len(tokens) > start and tokens[start] == "GPU" and len(known) >= 3


def parse_monitor(
    lines: list[str], misfits: list[str] | None = None, unread: list[str] | None = None
) -> list[dict[str, Any]]:
    """Rows of every monitor table (watch mode repeats the header) as metric-shaped entries.

    A GPU row with more or fewer cells than its header (cut off, or garbled) goes to ``misfits``. The
    ``PROCESS INFO:`` table that ``monitor -q`` prints below (``GPU NAME PID GTT_MEM ...``) is no GPU row:
    each of its rows joins the last row of its GPU as a process; one that does not fit goes to ``unread``.
    """
    rows: list[dict[str, Any]] = []
    latest: dict[str, dict[str, Any]] = {}  # GPU cell -> its last row, for the process table below
    header: list[str] | None = None
    processes = False
    for line in lines:
        if is_monitor_header(line):
            header, processes = line.split(), False
            continue
        if _PROCESS_TITLE.match(line):
            header, processes = None, True
            continue
        values = cells(line)
        if processes:
            _monitor_process(line, values, latest, unread)
            continue
        if header is None or not values or not values[0].isdigit():
            continue
        if len(values) != len(header):
            if misfits is not None:
                misfits.append(f"monitor row has {len(values)} cells, header {len(header)}: {line.strip()}")
            continue
        entry = _monitor_entry(header, values)
        rows.append(entry)
        latest[str(entry.get("gpu"))] = entry
    return rows


_PROCESS_TITLE = re.compile(r"^\s*PROCESS INFO\s*:\s*$")
_PROCESS_COLUMNS = ("gpu", "name", "pid", "gtt_mem", "cpu_mem", "vram_mem", "mem_usage", "gfx", "enc")


def _monitor_process(line: str, values: list[str], latest: dict[str, dict[str, Any]], unread: list[str] | None) -> None:
    """One row of the process table under ``monitor -q``: its header, a process, or a line not understood."""
    if not values or (values[0] == "GPU" and "PID" in values):
        return
    owner = latest.get(values[0])
    if len(values) != len(_PROCESS_COLUMNS) or owner is None or not values[2].isdigit():
        if unread is not None:
            unread.append(f"monitor process row not read: {line.strip()[:200]}")
        return
    owner.setdefault("process_list", []).append(dict(zip(_PROCESS_COLUMNS[1:], values[1:], strict=True)))


def _monitor_entry(header: list[str], values: list[str]) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    for column, value in zip(header, values, strict=True):
        if column in _MONITOR_VIOLATIONS:
            entry.setdefault("throttle", {})[_MONITOR_VIOLATIONS[column]] = value
        elif column == "VRAM_USAGE" and "/" in value:
            used, rest = split_pair(value)
            total, _, unit = rest.strip().partition(" ")
            entry["vram_used"], entry["vram_total"] = f"{used.strip()} {unit}", f"{total} {unit}"
        else:
            entry[_MONITOR_COLUMNS.get(column, column.lower())] = value
    return entry


# --- xgmi ------------------------------------------------------------------------------------

# Maxima of the field's width that amd-smi prints for a rate it has not got: 65535 Gb/s bit rate and
# 4294967295 Gb/s max bandwidth on GPUs without XGMI before ROCm 7.12 (ROCm/amdsmi CHANGELOG), never a rate.
_PLACEHOLDER_MAXIMA = frozenset({2**16 - 1, 2**32 - 1, 2**64 - 1})
# Old releases print the bit_rate, max_bandwidth and link_type cells without a space between them when a
# value fills its column: "65535 Gb/s4294967295 Gb/sN/A".
_GLUED_UNIT = re.compile(r"(Gb/s|GB/s|Mb/s)(?=[\dN])")


def xgmi_rate(raw: Any) -> Quantity:
    """An XGMI bit rate or bandwidth in Gb/s; a placeholder maximum is "not reported" (``sentinel <n>``)."""
    q = parse_quantity(raw)
    if q.value is None:
        return Quantity(None, None, q.reason)
    if (q.unit or "Gb/s").lower() not in ("gb/s", "gbps"):
        return Quantity(None, q.unit, f"unexpected unit {q.unit!r}")
    if q.value in _PLACEHOLDER_MAXIMA:
        return Quantity(None, None, f"sentinel {int(q.value)}: a placeholder maximum, not a rate")
    return Quantity(q.value, None, None)


_GPU_ROW = re.compile(r"^\s*GPU(\d+)\s+(\S+)\s*(.*)$")
_RW_ROW = re.compile(r"^\s*(Read|Write)\s+(.*)$", re.IGNORECASE)
_STATUS_WORDS = {"U": LinkStatus.UP, "D": LinkStatus.DOWN, "X": LinkStatus.DISABLED, "SELF": LinkStatus.SELF}


@dataclass
class XgmiTables:
    """What the xgmi tables showed: directed links, per-port states and the GPUs seen."""

    links: list[XgmiLink] = field(default_factory=list)
    ports: list[XgmiPortStatus] = field(default_factory=list)
    gpus: list[tuple[int, str | None]] = field(default_factory=list)


def is_xgmi_title(line: str) -> bool:
    """Titles printed by ``amd-smi xgmi``."""
    return bool(re.match(r"^\s*(LINK METRIC TABLE|XGMI LINK STATUS|GPU LINK PORT STATUS)\s*:?\s*$", line))


def link_status(word: str) -> LinkStatus:
    """``U``/``D``/``X``/``SELF`` (or ``U/U`` for multi-link pairs) -> LinkStatus."""
    if "/" not in word:  # one link per pair, as nearly always: its word says it all (112 words per node)
        return _STATUS_WORDS.get(word.strip().upper(), LinkStatus.UNKNOWN)
    states = {_STATUS_WORDS.get(part.strip().upper(), LinkStatus.UNKNOWN) for part in word.split("/")}
    for status in (LinkStatus.DOWN, LinkStatus.DISABLED, LinkStatus.SELF, LinkStatus.UNKNOWN):
        if status in states:
            return status
    return LinkStatus.UP if states else LinkStatus.UNKNOWN


def parse_xgmi(lines: list[str]) -> XgmiTables:
    """Link metrics (bit rate, max bandwidth, read/write traffic) and U/D/X link states."""
    tables = XgmiTables()
    section = ""
    columns: list[str] = []
    metric_rows: list[tuple[int, str | None, list[str], dict[str, list[str]]]] = []
    status_rows: list[tuple[int, str | None, list[str]]] = []
    for line in lines:
        if is_xgmi_title(line):
            section = line.strip().rstrip(":")
            continue
        tokens = line.split()
        if "bdf" in tokens and not _GPU_ROW.match(line):
            columns = (
                tokens[tokens.index("link_type") + 1 :] if "link_type" in tokens else tokens[tokens.index("bdf") + 1 :]
            )
            # ROCm 6.4's ``xgmi --link-status`` heads its rows "bdf link_status": a word per port of the GPU
            # ("U U U U D U D X"), not per peer GPU as the GPU-column table before and after it.
            per_port = "port_num" in tokens or columns == ["link_status"]
            section = "GPU LINK PORT STATUS" if per_port else section or "LINK METRIC TABLE"
            continue
        row = _GPU_ROW.match(line)
        if row:
            index, bdf, rest = int(row.group(1)), normalise_bdf(row.group(2)), row.group(3)
            if section == "LINK METRIC TABLE":
                metric_rows.append((index, bdf, cells(_GLUED_UNIT.sub(r"\1 ", rest)), {}))
            else:
                status_rows.append((index, bdf, rest.split()))
            continue
        rw = _RW_ROW.match(line)
        if rw and metric_rows and section == "LINK METRIC TABLE":
            metric_rows[-1][3][rw.group(1).lower()] = cells(rw.group(2))
    gpus = [(index, bdf) for index, bdf, *_ in metric_rows] or [(index, bdf) for index, bdf, _ in status_rows]
    tables.gpus = gpus
    destinations = _destinations(columns, gpus)
    links: dict[tuple[int, int], XgmiLink] = {}
    for index, bdf, info, traffic in metric_rows:
        for position, (dst_index, dst_bdf) in enumerate(destinations):
            if dst_index == index:
                continue
            link = _metric_link((index, bdf), (dst_index, dst_bdf), info, traffic, position)
            links[(index, dst_index)] = link
    for index, bdf, words in status_rows:
        if section == "GPU LINK PORT STATUS" or len(words) != len(destinations):
            tables.ports.append(XgmiPortStatus(gpu_index=index, bdf=bdf, ports=[link_status(w) for w in words]))
            continue
        for (dst_index, dst_bdf), word in zip(destinations, words, strict=True):
            if dst_index == index:
                continue
            link = links.setdefault(
                (index, dst_index), XgmiLink(src_index=index, dst_index=dst_index, src_bdf=bdf, dst_bdf=dst_bdf)
            )
            link.status = link_status(word)
    tables.links = list(links.values())
    return tables


def _destinations(columns: list[str], gpus: list[tuple[int, str | None]]) -> list[tuple[int, str | None]]:
    # Column labels are BDFs (6.x) or GPUn (7.x); map each to a known GPU row when possible.
    by_bdf = {bdf: index for index, bdf in gpus if bdf}
    by_index = dict(gpus)
    found: list[tuple[int, str | None]] = []
    for position, label in enumerate(columns):
        bdf = normalise_bdf(label)
        gpu = re.fullmatch(r"GPU(\d+)", label)
        if bdf is not None:
            found.append((by_bdf.get(bdf, position), bdf))
        elif gpu:
            index = int(gpu.group(1))
            found.append((index, by_index.get(index)))
    return found or gpus


def _metric_link(
    src: tuple[int, str | None],
    dst: tuple[int, str | None],
    info: list[str],
    traffic: dict[str, list[str]],
    position: int,
) -> XgmiLink:
    link = XgmiLink(src_index=src[0], dst_index=dst[0], src_bdf=src[1], dst_bdf=dst[1])
    for name, cell in zip(("bit_rate_gbps", "max_bandwidth_gbps"), info[:2], strict=False):
        q = xgmi_rate(cell)
        if q.value is None:
            link.mark_unavailable(name, q.reason or "N/A")
        else:
            setattr(link, name, q.value)
    for name, key in (("read_bytes", "read"), ("write_bytes", "write")):
        row = traffic.get(key, [])
        if position >= len(row):
            link.mark_unavailable(name, "absent in output")
            continue
        q = to_bytes(row[position], default_unit="KB")
        value = finite_int(q)
        if value is None:
            link.mark_unavailable(name, q.reason or "N/A")
        else:
            setattr(link, name, value)
    return link


# --- topology --------------------------------------------------------------------------------

_TOPOLOGY_TITLE = re.compile(r"^\s*([A-Z][A-Z0-9 _-]*?) TABLE\s*:?\s*$")


def is_topology_title(line: str) -> bool:
    """``ACCESS TABLE:``, ``WEIGHT TABLE:``, ``HOPS TABLE:``, ``LINK TYPE TABLE:``, ``NUMA BW TABLE:``..."""
    match = _TOPOLOGY_TITLE.match(line)
    return bool(match) and match is not None and match.group(1) != "LINK METRIC"


def parse_topology(lines: list[str]) -> list[TopologyLink]:
    """One link per ordered GPU pair (diagonal excluded), filled from every matrix present."""
    links: dict[tuple[int, int], TopologyLink] = {}
    table = ""
    columns: list[str | None] = []
    row_index = 0
    for line in lines:
        title = _TOPOLOGY_TITLE.match(line)
        if title:
            table, columns, row_index = title.group(1).strip(), [], 0
            continue
        tokens = line.split()
        if not table or not tokens:
            continue
        if not columns:
            labels = [t for t in tokens if normalise_bdf(t) or re.fullmatch(r"gpu_?\d+", t, re.IGNORECASE)]
            columns = [normalise_bdf(label) for label in labels]
            continue
        src_bdf = normalise_bdf(tokens[0])
        if src_bdf is None or len(tokens) - 1 != len(columns):
            continue
        for dst_index, (dst_bdf, cell) in enumerate(zip(columns, tokens[1:], strict=True)):
            if dst_index == row_index:
                continue
            link = links.get((row_index, dst_index))
            if link is None:
                link = TopologyLink(src_index=row_index, dst_index=dst_index, src_bdf=src_bdf, dst_bdf=dst_bdf)
                links[(row_index, dst_index)] = link
            _fill_topology(link, table, cell)
        row_index += 1
    return list(links.values())


def _fill_topology(link: TopologyLink, table: str, cell: str) -> None:
    reason = na_reason(cell)
    if table == "ACCESS":
        link.accessible = {"ENABLED": True, "DISABLED": False}.get(cell.upper())
    elif table in ("WEIGHT", "HOPS"):
        name = "weight" if table == "WEIGHT" else "hops"
        value = finite_int(to_int(cell))
        if value is None:
            link.mark_unavailable(name, reason or f"not a number: {cell}")
        else:
            setattr(link, name, value)
    elif table == "LINK TYPE":
        link.link_type = cell.upper() if reason is None else None
    elif table == "NUMA BW":
        low, sep, high = cell.partition("-")
        if reason is None and sep and low.isdigit() and high.isdigit():
            link.numa_bw_min_mbps, link.numa_bw_max_mbps = float(low), float(high)
        else:
            link.mark_unavailable("numa_bw_min_mbps", reason or f"unreadable: {cell}")


# --- partition and CPER listings ---------------------------------------------------------------


def parse_partition_table(lines: list[str]) -> list[PartitionState]:
    """``partition --current``: GPU_ID MEMORY ACCELERATOR_TYPE ACCELERATOR_PROFILE_INDEX PARTITION_ID."""
    states: list[PartitionState] = []
    header: list[str] | None = None
    for line in lines:
        tokens = line.split()
        if "GPU_ID" in tokens and ("MEMORY" in tokens or "ACCELERATOR_TYPE" in tokens):
            header = tokens
            continue
        if header is None or not tokens or not tokens[0].isdigit():
            if tokens and not tokens[0].isdigit():
                header = None
            continue
        row = dict(zip(header, tokens, strict=False))
        ids = [int(part) for part in row.get("PARTITION_ID", "").split(",") if part.strip().isdigit()]
        states.append(
            PartitionState(
                gpu_index=int(tokens[0]),
                memory_partition=_mode(row.get("MEMORY")),
                compute_partition=_mode(row.get("ACCELERATOR_TYPE")),
                profile_index=finite_int(to_int(row.get("ACCELERATOR_PROFILE_INDEX"))),
                partition_ids=ids,
            )
        )
    return states


def _mode(word: str | None) -> str | None:
    return None if word is None or na_reason(word) is not None else word.upper()


_SEVERITY = re.compile(
    r"^(fatal|boot|unknown|non[-_]?fatal[-_a-z]*|corrected|uncorrected|recoverable|informational)$", re.IGNORECASE
)
_DATE_OR_TIME = re.compile(r"^\d{2,4}[-/]\d{1,2}[-/]\d{1,4}$|^\d{1,2}:\d{2}(:\d{2})?$")


def is_cper_header(line: str) -> bool:
    """The header of ``amd-smi ras --cper``: names a severity and a GPU column."""
    lowered = line.lower()
    return "severity" in lowered and "gpu" in lowered and ":" not in lowered


# Lines amd-smi prints inside a CPER listing that are no record: said by triage or meant for a terminal.
_CPER_CHATTER = re.compile(r"press ctrl|dumping cper|no cper|warning|^~?\$|^-+$", re.IGNORECASE)


def parse_cper(lines: list[str], unread: list[str] | None = None) -> list[CperRecord]:
    """CPER rows: time, GPU, severity, the file the record was saved to and its AFIDs.

    The AFID column (``list of afids``, printed with ``--folder``) holds space-separated ids, ``-`` for
    none, ``decode failed`` or ``Error fetching AFIDs``, or 2^64-1 for a record the tool could not decode:
    each is kept, and what is no id is said in ``afid_note``. Column order is tolerated. A line of the
    table that is no record goes to ``unread`` (never silently dropped).
    """
    records: list[CperRecord] = []
    in_table = has_afids = False
    for line in lines:
        if is_cper_header(line):
            in_table, has_afids = True, "afid" in line.lower()
            continue
        tokens = line.split()
        if not in_table or not tokens:
            continue
        at = next((i for i, t in enumerate(tokens) if _SEVERITY.match(t)), None)
        if at is None:
            if unread is not None and not _CPER_CHATTER.search(line.strip()):
                unread.append(line.strip())
            continue
        severity = tokens[at]
        gpu = next((int(t) for t in tokens[:at] if t.isascii() and t.isdigit() and len(t) <= 3), None)
        stamp = " ".join(t for t in tokens[:at] if _DATE_OR_TIME.match(t)) or None
        rest = tokens[at + 1 :]
        file_name = next((t for t in rest if t.lower().endswith((".cper", ".bin"))), None)
        cell = rest[rest.index(file_name) + 1 :] if file_name is not None else rest
        afids, note, invalid = afid_values(cell) if has_afids else ([], None, False)
        records.append(
            CperRecord(
                gpu_index=gpu,
                timestamp=stamp,
                severity=severity.lower(),
                file_name=file_name,
                afids=afids,
                afid_note=note,
                afid_unknown=invalid,
            )
        )
    return records
