"""rocm-smi's concise table (the default view) and its ``--showhw`` sibling.

Three header generations:

* ROCm <= 5.x: ``GPU  Temp (DieEdge)  AvgPwr  SCLK  MCLK  Fan  Perf  PwrCap  VRAM%  GPU%``, and before it
  (ROC-smi 2017 to ROCm 2.x) ``GPU  [DID]  Temp  AvgPwr  SCLK  MCLK  [PCLK]  Fan  Perf  [PwrCap  SCLK OD
  MCLK OD | OverDrive  ECC]  [GPU%]``, temperatures as ``31.0c``;
* ROCm 6.0-6.2: ``Device  [Model : Revision]  Temp  Power  Partitions ...`` plus a second header line
  ``Name (20 chars)  (Junction)  (Socket)  (Mem, Compute)``, and under each GPU row a line with its
  name cut at 20 characters;
* ROCm 6.3+/7.x: ``Device  Node  IDs  Temp  Power  Partitions ...`` with ``(DID, GUID)``,
  ``(Junction)``, ``(Socket)``, ``(Mem, Compute, ID)`` on the second header line.

Columns are padded with spaces to the widest cell, but loggers trim or replace that padding, so rows
are split on whitespace: a token ending in ``,`` joins the next (``0x74a1, 55354``, ``NPS1, SPX, 0``)
and ``[0x74a1 : 0x00]`` stays one cell. Cells glue their units (``44.0°C``, ``1400.0W``, ``2000Mhz``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from console.model.gpu import EccBlock, EccCounts
from console.model.rocm import RocmSmiDevice
from console.probes.rocmsmi.fields import FIELDS, WHOLE, assign

# Header labels that contain a space, then any other word.
_LABEL = re.compile(
    r"\[Model : Revision\]|Temp \(DieEdge\)|GFX VER|GFX RAS|SDMA RAS|UMC RAS|PARTITION ID|SCLK OD|MCLK OD|\S+"
)
# header label -> canonical field (see fields.FIELDS) or a cell that holds several
_COLUMNS = {
    "Device": "index",
    "GPU": "index",
    "Node": "kfd_node",
    "NODE": "kfd_node",
    "IDs": "ids",
    "[Model : Revision]": "model_revision",
    "Temp": "temp",
    "Temp (DieEdge)": "temp",
    "Power": "power_w",
    "AvgPwr": "power_w",
    "Partitions": "partitions",
    "SCLK": "gfx_clock_mhz",
    "MCLK": "mem_clock_mhz",
    "Fan": "fan_pct",
    "Perf": "perf_level",
    "PwrCap": "power_cap_w",
    "VRAM%": "vram_used_pct",
    "GPU%": "gfx_util_pct",
    "DID": "device_id",
    "GUID": "kfd_gpu_id",
    "GFX VER": "gfx_target",
    "VBIOS": "vbios_version",
    "BUS": "bdf",
    "PARTITION ID": "partition_id",
    "GFX RAS": "ras:GFX",
    "SDMA RAS": "ras:SDMA",
    "UMC RAS": "ras:UMC",
}
# sensor named on the second header line -> GpuMetrics field; rocm-smi's default label is edge
_TEMP_FIELDS = {"junction": "hotspot_temp_c", "edge": "edge_temp_c", "dieedge": "edge_temp_c", "memory": "mem_temp_c"}


def table_columns(line: str) -> list[str]:
    """Column keys when ``line`` is a concise or ``--showhw`` header, else []."""
    labels = _LABEL.findall(line)
    if not labels or labels[0] not in ("Device", "GPU"):
        return []
    return [_COLUMNS.get(label, label) for label in labels] if sum(x in _COLUMNS for x in labels) >= 4 else []


def split_cells(line: str) -> list[str]:
    """Split a row on whitespace, keeping ``a, b`` and ``[a : b]`` cells whole."""
    cells: list[str] = []
    pending: list[str] = []
    depth = 0
    for token in line.split():
        pending.append(token)
        depth = max(0, depth + token.count("[") - token.count("]"))
        if depth == 0 and not token.endswith(","):
            cells.append(" ".join(pending))
            pending = []
    if pending:
        cells.append(" ".join(pending))
    return cells


@dataclass
class ConciseTable:
    """A table being read: its columns, what its Temp and Power columns measure, and the last row read."""

    columns: list[str]
    layout: str
    temp_sensor: str | None = None
    power_kind: str | None = None
    last: RocmSmiDevice | None = None

    @classmethod
    def open(cls, columns: list[str]) -> ConciseTable:
        """A table for the header whose column keys are ``columns``."""
        if "ids" in columns:
            layout = "concise-6.3"
        elif "model_revision" in columns:
            layout = "concise-6.0"
        elif "bdf" in columns or "gfx_target" in columns:
            layout = "showhw"
        else:
            layout = "concise-5.x"
        return cls(
            columns=columns,
            layout=layout,
            temp_sensor="edge" if "temp" in columns else None,
            power_kind="average" if "power_w" in columns else None,
        )

    def feed(self, line: str, device: Callable[[int], RocmSmiDevice], warnings: list[str]) -> bool:
        """Read one line under the header; False when the line is not part of the table."""
        cells = split_cells(line)
        if not WHOLE.fullmatch(cells[0]):
            if self.last is None:
                self._subheader(line)
            elif self.layout == "concise-6.0":
                self._name_line(self.last, line.strip())
            else:
                return False
            return True
        if len(cells) != len(self.columns):
            warnings.append(f"concise row has {len(cells)} cells, header {len(self.columns)}: {line.strip()}")
            return True
        self.last = device(int(cells[0]))
        for key, cell in zip(self.columns, cells, strict=True):
            self._cell(self.last, key, cell)
        return True

    def _subheader(self, line: str) -> None:
        """``(Junction)`` names the temperature sensor, ``(Socket)`` or ``(Avg)`` the power reading."""
        for word in re.findall(r"\(([A-Za-z_0-9]+)\)", line):
            label = word.lower()
            if label in ("socket", "avg", "average"):
                self.power_kind = "socket" if label == "socket" else "average"
            elif "temp" in self.columns:
                self.temp_sensor = label

    @staticmethod
    def _name_line(device: RocmSmiDevice, name: str) -> None:
        device.properties["Name (20 chars)"] = name
        if len(name) >= 20:  # cut at 20 characters: a cut name would not match other tools' names
            device.gpu.identity.mark_unavailable("market_name", f"truncated by rocm-smi: {name!r}")
        else:
            assign(device, "market_name", name)

    def _cell(self, device: RocmSmiDevice, key: str, cell: str) -> None:
        parts = [part.strip() for part in cell.split(",")]
        if key == "ids" and len(parts) == 2:
            assign(device, "device_id", parts[0])
            assign(device, "kfd_gpu_id", parts[1])
        elif key == "model_revision":
            inner = [part.strip() for part in cell.strip("[] ").split(":")]
            if len(inner) == 2:
                assign(device, "device_id", inner[0])
                assign(device, "revision_id", inner[1])
        elif key == "partitions" and len(parts) in (2, 3):
            for name, part in zip(("memory_partition", "compute_partition", "partition_id"), parts, strict=False):
                assign(device, name, part)
        elif key == "temp":
            field = _TEMP_FIELDS.get(self.temp_sensor or "")
            if field:
                assign(device, field, cell)
            else:  # a sensor the shared model has no field for (e.g. HBM)
                device.properties[f"Temp ({self.temp_sensor})"] = cell
        elif key.startswith("ras:"):
            if device.gpu.ecc is None:
                device.gpu.ecc = EccCounts()
            device.gpu.ecc.blocks.append(EccBlock(block=key.removeprefix("ras:"), state=cell))
        elif key in FIELDS:
            assign(device, key, cell)
        else:
            device.properties[key] = cell
