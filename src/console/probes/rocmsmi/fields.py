"""How rocm-smi's strings map onto the shared GPU model: readers per field and the key tables.

The concise table, ``GPU[n]`` lines and ``--json`` name the same facts differently (``PwrCap``,
``Max Graphics Package Power (W)``); each is mapped to one canonical field here, and ``assign`` stores
it on the right object. An N/A-like string never becomes a zero: the field stays None and the tool's
word goes into that object's ``unavailable`` map.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from console.model.base import WithUnavailable
from console.model.gpu import GpuIdentity, GpuMetrics, GpuRecord, PcieLink
from console.model.rocm import RocmSmiDevice
from console.probes.values import (
    Quantity,
    na_reason,
    normalise_bdf,
    parse_quantity,
    to_bytes,
    to_celsius,
    to_mhz,
    to_percent,
    to_watts,
)

Reader = Callable[[str], tuple[Any, str | None]]
"""Reads one of the tool's strings: (value, None) or (None, why there is no value)."""

# Whole numbers as rocm-smi prints them; the cap keeps int() away from absurd lengths.
WHOLE = re.compile(r"[0-9]{1,30}")


def read_text(raw: str) -> tuple[Any, str | None]:
    """The string itself, or None with the tool's N/A word."""
    reason = na_reason(raw)
    return (None, reason) if reason else (raw.strip(), None)


def _lower(raw: str) -> tuple[Any, str | None]:
    value, reason = read_text(raw)
    return (value.lower() if value else None), reason


def _hex_id(raw: str) -> tuple[Any, str | None]:
    value, reason = read_text(raw)
    if value is None or re.fullmatch(r"0[xX][0-9a-fA-F]+", value):
        return (value.lower() if value else None), reason
    return None, f"not a hex id: {value[:40]}"


def read_whole(raw: str) -> tuple[Any, str | None]:
    """A count or index; anything else is None with a reason."""
    value, reason = read_text(raw)
    if value is None or WHOLE.fullmatch(value):
        return (int(value) if value else None), reason
    return None, f"not a whole number: {value[:40]}"


def _pci_address(raw: str) -> tuple[Any, str | None]:
    value, reason = read_text(raw)
    bdf = normalise_bdf(value) if value else None
    return (bdf, None) if bdf else (None, reason or f"not a PCI address: {str(value)[:40]}")


def _unit(convert: Callable[[Any], Quantity], scale: float = 1.0, whole: bool = False) -> Reader:
    def read(raw: str) -> tuple[Any, str | None]:
        q = convert(raw)
        if q.value is None:
            return None, q.reason
        return (int(q.value * scale) if whole else q.value * scale), None

    return read


def _power_cap(raw: str) -> tuple[Any, str | None]:
    value, reason = _unit(to_watts)(raw)
    # rocm-smi prints 0.0W for devices without a cap of their own (MI200 secondary die).
    return (None, "0 W reported: no power cap on this device") if value == 0 else (value, reason)


def _link_type(raw: str) -> tuple[Any, str | None]:
    value, reason = read_text(raw)
    if value is not None and value.upper() == "XXXX":
        return None, "XXXX: rocm-smi could not read the link type"
    return (value.upper() if value else None), reason


def _accessible(raw: str) -> tuple[Any, str | None]:
    value = {"true": True, "false": False}.get(raw.strip().lower())
    return (value, None) if value is not None else (None, na_reason(raw) or f"unexpected value {raw[:20]!r}")


def _min_max(raw: str) -> tuple[Any, str | None]:
    """``--shownodesbw`` cells: ``50000-50000`` (min-max), or N/A for non-XGMI pairs."""
    low, sep, high = raw.strip().partition("-")
    if sep and WHOLE.fullmatch(low) and WHOLE.fullmatch(high):
        return (float(low), float(high)), None
    return None, na_reason(raw) or f"unexpected value {raw[:20]!r}"


# matrix name -> reader of one cell (the bandwidth reader gives a (min, max) pair)
LINK_READERS: dict[str, Reader] = {
    "weight": read_whole,
    "hops": read_whole,
    "link_type": _link_type,
    "accessible": _accessible,
    "bandwidth": _min_max,
}

# canonical field -> (which object holds it, attribute, how to read the tool's string)
FIELDS: dict[str, tuple[str, str, Reader]] = {
    "index": ("identity", "index", read_whole),
    "kfd_node": ("identity", "kfd_node", read_whole),
    "kfd_gpu_id": ("identity", "kfd_gpu_id", read_whole),
    "device_id": ("identity", "device_id", _hex_id),
    "revision_id": ("identity", "revision_id", _hex_id),
    "subsystem_id": ("identity", "subsystem_id", read_text),
    "market_name": ("identity", "market_name", read_text),
    "product_name": ("identity", "product_name", read_text),
    "serial": ("identity", "serial", read_text),
    "uuid": ("identity", "uuid", read_text),
    "vbios_version": ("identity", "vbios_version", read_text),
    "gfx_target": ("identity", "gfx_target", _lower),
    "bdf": ("identity", "bdf", _pci_address),
    "memory_partition": ("identity", "memory_partition", read_text),
    "compute_partition": ("identity", "compute_partition", read_text),
    "partition_id": ("identity", "partition_id", read_whole),
    "edge_temp_c": ("metrics", "edge_temp_c", _unit(to_celsius)),
    "hotspot_temp_c": ("metrics", "hotspot_temp_c", _unit(to_celsius)),
    "mem_temp_c": ("metrics", "mem_temp_c", _unit(to_celsius)),
    "power_w": ("metrics", "power_w", _unit(to_watts)),
    "power_cap_w": ("metrics", "power_cap_w", _power_cap),
    "gfx_clock_mhz": ("metrics", "gfx_clock_mhz", _unit(to_mhz)),
    "mem_clock_mhz": ("metrics", "mem_clock_mhz", _unit(to_mhz)),
    "fan_pct": ("metrics", "fan_pct", _unit(to_percent)),
    "gfx_util_pct": ("metrics", "gfx_util_pct", _unit(to_percent)),
    "mem_util_pct": ("metrics", "mem_util_pct", _unit(to_percent)),
    "vram_total_bytes": ("metrics", "vram_total_bytes", _unit(to_bytes, whole=True)),
    "vram_used_bytes": ("metrics", "vram_used_bytes", _unit(to_bytes, whole=True)),
    "energy_j": ("metrics", "energy_j", _unit(parse_quantity, scale=1e-6)),  # printed in uJ
    "replay_count": ("pcie", "replay_count", read_whole),
    "perf_level": ("device", "perf_level", _lower),
    "vram_used_pct": ("device", "vram_used_pct", _unit(to_percent)),
    "numa_node": ("device", "numa_node", read_whole),
    "numa_affinity": ("device", "numa_affinity", read_whole),
}

# GPU[n] line and --json keys (lower case, trailing ':' dropped) -> canonical field
KEYS = {
    "device name": "market_name",
    "card series": "product_name",
    "device id": "device_id",
    "gpu id": "device_id",  # ROCm 4.x name of the PCI device id
    "device rev": "revision_id",
    "subsystem id": "subsystem_id",
    "guid": "kfd_gpu_id",  # rocm-smi's GUID is the KFD gpu_id RVS prints
    "node id": "kfd_node",
    "gfx version": "gfx_target",
    "unique id": "uuid",
    "serial number": "serial",
    "vbios version": "vbios_version",
    "pci bus": "bdf",
    "compute partition": "compute_partition",
    "memory partition": "memory_partition",
    "temperature (sensor edge) (c)": "edge_temp_c",
    "temperature (sensor junction) (c)": "hotspot_temp_c",
    "temperature (sensor memory) (c)": "mem_temp_c",
    "max graphics package power (w)": "power_cap_w",
    "current socket graphics package power (w)": "power_w",
    "average graphics package power (w)": "power_w",
    "gpu use (%)": "gfx_util_pct",
    "gpu memory use (%)": "mem_util_pct",
    "gpu memory allocated (vram%)": "vram_used_pct",
    "performance level": "perf_level",
    "pcie replay count": "replay_count",
    "vram total memory (b)": "vram_total_bytes",
    "vram total used memory (b)": "vram_used_bytes",
    "accumulated energy (uj)": "energy_j",
    "(topology) numa node": "numa_node",
    "(topology) numa affinity": "numa_affinity",
    "fan speed (%)": "fan_pct",
}

# system-level keys (rocm-smi --version, -a's driver section, the amd-smi version line) -> StackVersions field
VERSION_KEYS = {
    "driver version": "amdgpu_driver",
    "rocm-smi version": "rocm_smi",
    "amdsmi tool": "amdsmi_tool",
    "amdsmi library version": "amdsmi_lib",
    "rocm version": "rocm",
}


def new_device(index: int) -> RocmSmiDevice:
    """An empty record for rocm-smi's device ``index``."""
    return RocmSmiDevice(index=index, gpu=GpuRecord(identity=GpuIdentity(index=index)))


def holder(device: RocmSmiDevice, name: str) -> WithUnavailable:
    """The object that holds fields of kind ``name`` (identity, metrics, pcie, device), created on demand."""
    record = device.gpu
    if name == "identity":
        return record.identity
    if name == "device":
        return device
    if record.metrics is None:
        record.metrics = GpuMetrics()
    if name == "metrics":
        return record.metrics
    if record.metrics.pcie is None:
        record.metrics.pcie = PcieLink()
    return record.metrics.pcie


def assign(device: RocmSmiDevice, name: str, raw: str) -> None:
    """Store canonical field ``name`` read from ``raw``; the first known value wins, N/A is recorded."""
    where, attr, read = FIELDS[name]
    value, reason = read(raw)
    owner = holder(device, where)
    if value is not None:
        if getattr(owner, attr) is None:
            setattr(owner, attr, value)
            owner.unavailable.pop(attr, None)
    elif getattr(owner, attr) is None:
        owner.mark_unavailable(attr, reason or "unreadable")
