"""One pass over rocm-smi output: banners and sections, then each line to the reader of its view.

Sections open with ``==== Title ====`` and close with a plain ``====`` rule (the topology matrices
have no closing rule). Lines are dispatched by shape, not by position: ``GPU[n]`` lines anywhere,
a concise header opens a table, ``GPUn`` matrices under the topology titles, the tab-separated KFD
process table under ``KFD Processes``, and ``Key: value`` lines without a GPU are system facts.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from console.model.gpu import TopologyLink
from console.model.rocm import KfdProcess, RocmSmiDevice, RocmSmiReport
from console.probes.rocmsmi.concise import ConciseTable, table_columns
from console.probes.rocmsmi.fields import LINK_READERS, VERSION_KEYS, WHOLE, new_device, read_text, read_whole
from console.probes.rocmsmi.keyed import ClockList, fill_clock_from_levels, read_gpu_body, read_pair
from console.probes.values import na_reason

HEADER = "ROCm System Management Interface"
FOOTER = "End of ROCm SMI Log"
TOPOLOGY_SECTIONS = {
    "Weight between two GPUs": "weight",
    "Hops between two GPUs": "hops",
    "Link Type between two GPUs": "link_type",
    "Link accessibility between two GPUs": "accessible",
    "Bandwidth": "bandwidth",
}

_BANNER = re.compile(r"^={3,}(.*?)=*$")
_GPU_LINE = re.compile(r"^(?:(ERROR|WARNING|INFO):\s*)?GPU\[([0-9]{1,9})\]\s*:\s?(.*)$")
_JSON_TOPOLOGY = re.compile(
    r"^\(Topology\) (Weight|Hops|Link type|Link accessibility) between DRM devices ([0-9]{1,9}) and ([0-9]{1,9})$",
    re.IGNORECASE,
)
# Lines without a GPU prefix that mean rocm-smi itself failed (driver missing, library, crash). Errors
# logged before rocm-smi configures logging carry Python's default "ERROR:root:" prefix.
_GLOBAL_FAILURE = re.compile(
    r"^(ERROR:|Unable to load the rocm_smi library|ROCm SMI returned \d+|Driver not initialized|"
    r"Traceback \(most recent call last\)|[A-Z][A-Za-z_.]*(Error|Exception): )"
)
# --json with nothing to print (e.g. --showpids with no KFD process): an empty answer, not a failure.
NO_JSON_DATA = re.compile(r"^WARNING:(?:root:)?\s*No JSON data to report")
# Explanatory lines under the --shownodesbw matrix and the PID list; not system facts.
_NOTES = ("PID ", "Format:", '"0-0"')

# Pieces of a concise-table core reading: a row without any of them (all N/A) is a partial row.
_CORE = (
    ("identity", "device_id"),
    ("metrics", "hotspot_temp_c"),
    ("metrics", "edge_temp_c"),
    ("metrics", "power_w"),
    ("metrics", "gfx_clock_mhz"),
    ("metrics", "power_cap_w"),
)


def banner_title(stripped: str) -> str | None:
    """Title of a ``==== Title ====`` line, '' for a plain ``====`` rule, None for other lines."""
    match = _BANNER.match(stripped)
    if match is None or not stripped.endswith("="):
        return None
    return match.group(1).strip()


@dataclass
class _Position:
    """Where the reader is: section title, open table or matrix, supported-clock list, process columns."""

    section: str = ""
    table: ConciseTable | None = None
    matrix_columns: list[int] = field(default_factory=list)
    clocks: ClockList | None = None
    process_columns: list[str] = field(default_factory=list)


@dataclass
class Reader:
    """Collects devices, topology links, processes and the tool's own messages from one output."""

    devices: dict[int, RocmSmiDevice] = field(default_factory=dict)
    links: dict[tuple[int, int], TopologyLink] = field(default_factory=dict)
    report: RocmSmiReport = field(default_factory=RocmSmiReport)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    sections: set[str] = field(default_factory=set)
    tables: list[ConciseTable] = field(default_factory=list)
    recognised: bool = False
    no_json_data: bool = False
    saw_header: bool = False
    saw_footer: bool = False

    def device(self, index: int) -> RocmSmiDevice:
        """rocm-smi's device ``index``, created on first mention."""
        if index not in self.devices:
            self.devices[index] = new_device(index)
        return self.devices[index]

    def read_lines(self, lines: list[str], json_done: bool) -> None:
        """Read the text views; with ``json_done`` only GPU lines and failures are read around the JSON."""
        at = _Position()
        for line in lines:
            stripped = line.strip()
            if not stripped or set(stripped) <= {"-", "_"}:
                continue
            title = banner_title(stripped)
            gpu = _GPU_LINE.match(stripped)
            if title is not None:
                if title:
                    at = _Position(section=self._open_section(title))
            elif gpu:
                self.recognised = True
                at.clocks = self._gpu_line(gpu, at)
            elif json_done:
                self._global_line(stripped, facts=False)
            elif columns := table_columns(stripped):
                self.recognised = True
                at.table = ConciseTable.open(columns)
                self.tables.append(at.table)
            elif at.table is not None and at.table.feed(line, self.device, self.warnings):
                continue
            elif at.section in TOPOLOGY_SECTIONS:
                at.matrix_columns = self._matrix_line(TOPOLOGY_SECTIONS[at.section], stripped, at.matrix_columns)
            elif at.section == "KFD Processes":
                at.process_columns = self._process_line(stripped, at.process_columns)
            else:
                self._global_line(stripped, facts=True)

    def _open_section(self, title: str) -> str:
        self.recognised = True
        if title == HEADER:
            self.saw_header = True
        elif title == FOOTER:
            self.saw_footer = True
        else:
            self.sections.add(title)
        return title

    def _gpu_line(self, match: re.Match[str], at: _Position) -> ClockList | None:
        level, device, body = match.group(1), self.device(int(match.group(2))), match.group(3).strip()
        if level in ("ERROR", "WARNING"):
            self.warnings.append(match.group(0).strip())
            if "not supported" in body.lower() or "unsupported" in body.lower():
                device.unsupported.append(body)
            return at.clocks
        return read_gpu_body(device, body, at.section, at.clocks, self.warnings)

    def _matrix_line(self, metric: str, stripped: str, columns: list[int]) -> list[int]:
        """``GPU0  GPU1 ...`` sets the columns; ``GPU0  0  15 ...`` is a row (the diagonal is skipped)."""
        tokens = stripped.split()
        gpus = [re.fullmatch(r"GPU([0-9]{1,9})", token) for token in tokens]
        if all(gpus):
            return [int(m.group(1)) for m in gpus if m]
        if gpus[0] is None or not columns:
            return columns
        self.recognised = True
        source = int(gpus[0].group(1))
        for target, cell in zip(columns, tokens[1:], strict=False):
            if target != source:
                self._link_value(source, target, metric, cell)
        return columns

    def _link_value(self, source: int, target: int, metric: str, cell: str) -> None:
        link = self.links.setdefault((source, target), TopologyLink(src_index=source, dst_index=target))
        value, reason = LINK_READERS[metric](cell)
        attrs: tuple[str, ...] = (metric,)
        values: tuple[Any, ...] = (value,)
        if metric == "bandwidth":
            attrs = ("numa_bw_min_mbps", "numa_bw_max_mbps")
            values = value if value is not None else (None, None)
        for attr, item in zip(attrs, values, strict=True):
            if item is not None:
                setattr(link, attr, item)
            else:
                link.mark_unavailable(attr, reason or "unreadable")

    def _process_line(self, stripped: str, columns: list[str]) -> list[str]:
        """The tab-separated KFD table: ``PID  PROCESS NAME  GPU(s)  VRAM USED  SDMA USED  CU OCCUPANCY``."""
        cells = [cell.strip() for cell in re.split(r"\t|\s{2,}", stripped) if cell.strip()]
        if cells and cells[0] == "PID":
            return cells
        if not (cells and WHOLE.fullmatch(cells[0]) and columns):
            if "not supported" in stripped.lower():
                self.warnings.append(stripped)
            return columns
        row = dict(zip(columns, cells, strict=False))
        name = row.get("PROCESS NAME", "")
        self.report.processes.append(
            KfdProcess(
                pid=int(cells[0]),
                name=read_text(name)[0] if name != "UNKNOWN" else None,
                gpu_count=read_whole(row.get("GPU(s)", row.get("GPU", "")))[0],
                vram_bytes=read_whole(row.get("VRAM USED", ""))[0],
                sdma_usage=read_whole(row.get("SDMA USED", ""))[0],
                cu_occupancy=read_whole(row.get("CU OCCUPANCY", ""))[0],
            )
        )
        return columns

    def _global_line(self, stripped: str, facts: bool) -> None:
        """A line without a GPU: a failure of rocm-smi itself, a version line or a system fact."""
        if _GLOBAL_FAILURE.match(stripped):
            self.recognised = True
            (self.warnings if "GPU[" in stripped else self.errors).append(stripped)
        elif NO_JSON_DATA.match(stripped):
            self.recognised = self.no_json_data = True
            self.warnings.append(stripped)
        elif facts and stripped.startswith("AMDSMI Tool:"):
            for part in stripped.split("|"):
                self._system_value(*_split_pair(part))
        elif facts and not stripped.startswith(_NOTES):
            self._system_value(*_split_pair(stripped))

    def _system_value(self, key: str, value: str) -> None:
        name = VERSION_KEYS.get(key.lower())
        # Outside rocm-smi's banners (or its --version/--json output) a 'key: value' line is someone
        # else's: ssh, kubectl, the shell.
        ours = self.saw_header or name or self.report.layout == "json" or self.report.versions.rocm_smi
        if not key or not value or not ours:
            return
        self.report.system.setdefault(key, value)
        versions = self.report.versions
        if name and getattr(versions, name) is None and na_reason(value) is None:
            setattr(versions, name, value)
            self.recognised = self.recognised or name == "rocm_smi"  # ``rocm-smi --version`` has no banner
        topology = _JSON_TOPOLOGY.match(key)
        if topology:
            metric = {"weight": "weight", "hops": "hops", "link type": "link_type"}.get(topology.group(1).lower())
            a, b = int(topology.group(2)), int(topology.group(3))
            # --json prints each pair once; the matrices it comes from are symmetric.
            for pair in ((a, b), (b, a)):
                self._link_value(*pair, metric or "accessible", value)

    def read_json(self, payload: dict[str, Any]) -> None:
        """``{"card0": {"Key": "value"}, "system": {...}}``: the same keys as the ``GPU[n]`` lines."""
        self.recognised = True
        self.report.layout = "json"
        for name, values in payload.items():
            if not isinstance(values, dict):
                continue
            card = re.fullmatch(r"card([0-9]{1,9})", str(name))
            for key, value in values.items():
                text = value if isinstance(value, str) else json.dumps(value)
                if card:
                    read_pair(self.device(int(card.group(1))), str(key).strip().rstrip(":").strip(), text)
                elif name == "system":
                    self._system_value(str(key).strip(), text.strip())

    def finish(self) -> RocmSmiReport:
        """The report, devices in index order and links in (source, target) order."""
        report = self.report
        if self.tables:
            last = self.tables[-1]
            report.layout, report.temp_sensor, report.power_kind = last.layout, last.temp_sensor, last.power_kind
        elif report.layout is None and self.devices:
            report.layout = "keyed"
        for index in sorted(self.devices):
            device = self.devices[index]
            fill_clock_from_levels(device)
            device.shown_in_full = _shown_in_full(device)
            report.devices.append(device)
        report.topology = [self.links[pair] for pair in sorted(self.links)]
        return report


def _split_pair(text: str) -> tuple[str, str]:
    key, _, value = text.partition(":")
    return key.strip(), value.strip()


def _shown_in_full(device: RocmSmiDevice) -> bool:
    """False when rocm-smi printed N/A for the device ID and every core reading and gave none of them."""
    holders = {"identity": device.gpu.identity, "metrics": device.gpu.metrics}
    known = any((h := holders[o]) is not None and getattr(h, a) is not None for o, a in _CORE)
    missing = any((h := holders[o]) is not None and a in h.unavailable for o, a in _CORE)
    return known or not missing
