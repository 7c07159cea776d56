"""``amd-smi static --json`` from the amdsmi library: the sections the checks and the report read.

Written as AMD's CLI writes them from the same calls (ROCm/amdsmi ``amdsmi_cli/amdsmi_commands.py``,
``static_gpu``, ROCm 6.3; the RAS threshold as the 7.x CLI reads it) with the value shapes of
``py-interface/amdsmi_interface.py``: ``asic``, ``bus``, ``vbios``, ``limit``, ``driver``, ``board``,
``ras``, ``partition``, ``numa``, ``vram`` and ``process_isolation``. Left out: ``clock`` (DPM levels,
one ``amdsmi_get_clk_freq`` per clock domain, and no check reads them), ``cache``, ``soc_pstate`` and
``xgmi_plpd``; ``static`` through the command prints them, and nothing judged depends on them.

The CLI turns a failed call into N/A and goes on; here only "not supported" is N/A, and any other
failure fails the probe (``LibraryCallError``), so a broken read is never mistaken for a healthy one.
The exception is the bad-page threshold, documented as needing root: refused, it is N/A, as
``amd-smi static`` run without root prints it.
"""

from __future__ import annotations

from typing import Any

from console.probes.amdsmi.library import (
    NOT_AVAILABLE,
    STATUS_NO_PERM,
    AmdSmiLibrary,
    LibraryGpu,
    expect_dict,
    member_name,
    quantity,
)

_ASIC_KEYS = (
    "market_name", "vendor_id", "vendor_name", "subvendor_id", "device_id", "subsystem_id", "rev_id",
    "asic_serial", "oam_id", "num_compute_units", "target_graphics_version",
)  # fmt: skip
_TEMPERATURE_LIMITS = (
    ("slowdown_edge_temperature", "EDGE", "CRITICAL"),
    ("slowdown_hotspot_temperature", "HOTSPOT", "CRITICAL"),
    ("slowdown_vram_temperature", "VRAM", "CRITICAL"),
    ("shutdown_edge_temperature", "EDGE", "EMERGENCY"),
    ("shutdown_hotspot_temperature", "HOTSPOT", "EMERGENCY"),
    ("shutdown_vram_temperature", "VRAM", "EMERGENCY"),
)
# amdsmi_vram_type_t and amdsmi_vram_vendor_type_t (include/amd_smi/amdsmi.h): older libraries return
# the number, newer ones the vendor's name; the CLI prints the name without its prefix.
_VRAM_TYPES = {
    0: "UNKNOWN", 1: "HBM", 2: "HBM2", 3: "HBM2E", 4: "HBM3", 10: "DDR2", 11: "DDR3", 12: "DDR4",
    17: "GDDR1", 18: "GDDR2", 19: "GDDR3", 20: "GDDR4", 21: "GDDR5", 22: "GDDR6", 23: "GDDR7",
}  # fmt: skip
_VRAM_VENDORS = {
    1: "SAMSUNG", 2: "INFINEON", 3: "ELPIDA", 4: "ETRON", 5: "NANYA", 6: "HYNIX", 7: "MOSEL", 8: "WINBOND",
    9: "ESMT", 15: "MICRON",
}  # fmt: skip
_UINT16_UNSET = 0xFFFF  # what amdsmi_get_gpu_ras_feature_info holds for a field it could not read


def static_entry(library: AmdSmiLibrary, gpu: LibraryGpu) -> dict[str, Any]:
    """One GPU's entry of ``amd-smi static --json``."""
    return {
        "asic": _asic(library, gpu),
        "bus": _bus(library, gpu),
        "vbios": _blanks_na(library, gpu, "amdsmi_get_gpu_vbios_info"),
        "limit": _limit(library, gpu),
        "driver": _driver(library, gpu),
        "board": _blanks_na(library, gpu, "amdsmi_get_gpu_board_info"),
        "ras": _ras(library, gpu),
        "partition": _partition(library, gpu),
        "numa": {
            "node": library.call("amdsmi_topo_get_numa_node_number", gpu),
            "affinity": library.call("amdsmi_get_gpu_topo_numa_affinity", gpu),
        },
        "vram": _vram(library, gpu),
        "process_isolation": _isolation(library.optional("amdsmi_get_gpu_process_isolation", gpu)),
    }


def _isolation(status: Any) -> Any:
    # The library answers the isolation switch as a number; the CLI prints Enabled / Disabled.
    return status if status == NOT_AVAILABLE else "Enabled" if status else "Disabled"


def _asic(library: AmdSmiLibrary, gpu: LibraryGpu) -> dict[str, Any]:
    # amdsmi_get_gpu_asic_info already formats ids as hex strings and the serial as 0x%016X.
    asic: dict[str, Any] = dict.fromkeys(_ASIC_KEYS, NOT_AVAILABLE)
    info = expect_dict(library.call("amdsmi_get_gpu_asic_info", gpu), "amdsmi_get_gpu_asic_info", gpu)
    if isinstance(info, dict):
        asic.update(info)
    asic["subsystem_id"] = library.call("amdsmi_get_gpu_subsystem_id", gpu)
    return asic


def _bus(library: AmdSmiLibrary, gpu: LibraryGpu) -> dict[str, Any]:
    bus: dict[str, Any] = {"bdf": library.call("amdsmi_get_gpu_device_bdf", gpu)}
    pcie = expect_dict(library.call("amdsmi_get_pcie_info", gpu), "amdsmi_get_pcie_info", gpu)
    fixed = pcie.get("pcie_static", NOT_AVAILABLE) if isinstance(pcie, dict) else NOT_AVAILABLE
    fixed = expect_dict(fixed, "amdsmi_get_pcie_info pcie_static", gpu)
    if not isinstance(fixed, dict):
        return {**bus, "max_pcie_width": NOT_AVAILABLE, "max_pcie_speed": NOT_AVAILABLE}
    version = fixed.get("pcie_interface_version", NOT_AVAILABLE)
    return {
        **bus,
        "max_pcie_width": fixed.get("max_pcie_width", NOT_AVAILABLE),
        "max_pcie_speed": quantity(gt_per_s(fixed.get("max_pcie_speed", NOT_AVAILABLE)), "GT/s"),
        "pcie_interface_version": f"Gen {version}" if isinstance(version, int) and version > 0 else version,
        "slot_type": fixed.get("slot_type", NOT_AVAILABLE),
    }


def gt_per_s(mega_transfers: Any) -> Any:
    """The library's PCIe speed in MT/s as the CLI prints it in GT/s (16000 -> 16, 2500 -> 2.5)."""
    if not isinstance(mega_transfers, int | float) or isinstance(mega_transfers, bool):
        return mega_transfers
    return round(mega_transfers / 1000) if mega_transfers % 1000 == 0 else round(mega_transfers / 1000, 1)


def _blanks_na(library: AmdSmiLibrary, gpu: LibraryGpu, call: str) -> dict[str, Any] | str:
    """A dict of strings where the library leaves an empty string for what the board does not state."""
    info = expect_dict(library.call(call, gpu), call, gpu)
    if not isinstance(info, dict):
        return info
    return {k: NOT_AVAILABLE if isinstance(v, str) and not v.strip() else v for k, v in info.items()}


def _limit(library: AmdSmiLibrary, gpu: LibraryGpu) -> dict[str, Any]:
    caps = expect_dict(library.call("amdsmi_get_power_cap_info", gpu), "amdsmi_get_power_cap_info", gpu)
    limit: dict[str, Any] = {}
    for key, field in (("max_power", "max_power_cap"), ("min_power", "min_power_cap"), ("socket_power", "power_cap")):
        microwatts = caps.get(field, NOT_AVAILABLE) if isinstance(caps, dict) else NOT_AVAILABLE
        limit[key] = quantity(_watts(microwatts), "W")
    for key, sensor, metric in _TEMPERATURE_LIMITS:
        value = library.call(
            "amdsmi_get_temp_metric",
            gpu,
            library.enum("AmdSmiTemperatureType", sensor),
            library.enum("AmdSmiTemperatureMetric", metric),
        )
        # The CLI's rule: an edge limit of 0 is a GPU without an edge sensor (MI300X), so N/A.
        limit[key] = quantity(NOT_AVAILABLE if sensor == "EDGE" and value == 0 else value, "C")
    return limit


def _watts(microwatts: Any) -> Any:
    """amdsmi_get_power_cap_info gives microwatts; the CLI prints watts (int(x / 1e6) for an int)."""
    if isinstance(microwatts, bool) or not isinstance(microwatts, int | float):
        return microwatts
    return int(microwatts / 1_000_000) if isinstance(microwatts, int) else microwatts / 1_000_000


def _driver(library: AmdSmiLibrary, gpu: LibraryGpu) -> dict[str, Any]:
    info = expect_dict(library.call("amdsmi_get_gpu_driver_info", gpu), "amdsmi_get_gpu_driver_info", gpu)
    if not isinstance(info, dict):
        return {"name": NOT_AVAILABLE, "version": NOT_AVAILABLE}
    return {"name": info.get("driver_name", NOT_AVAILABLE), "version": info.get("driver_version", NOT_AVAILABLE)}


def _ras(library: AmdSmiLibrary, gpu: LibraryGpu) -> dict[str, Any]:
    ras: dict[str, Any] = {"eeprom_version": NOT_AVAILABLE}
    features = expect_dict(library.call("amdsmi_get_gpu_ras_feature_info", gpu), "amdsmi_get_gpu_ras_feature_info", gpu)
    threshold = library.optional("amdsmi_get_gpu_bad_page_threshold", gpu, na_statuses=(STATUS_NO_PERM,))
    ras["bad_page_threshold"] = threshold
    ras["bad_page_threshold_exceeded"] = _threshold_exceeded(library, gpu, threshold)
    for key, value in features.items() if isinstance(features, dict) else ():
        if isinstance(value, int) and not isinstance(value, bool) and value == _UINT16_UNSET:
            ras[key] = NOT_AVAILABLE
        elif key == "eeprom_version":
            ras[key] = value
        else:  # the correction schemas are flags: the CLI prints them ENABLED / DISABLED
            ras[key] = "ENABLED" if value else "DISABLED"
    states = library.call("amdsmi_get_gpu_ras_block_features_enabled", gpu)
    if isinstance(states, list):
        ras["ecc_block_state"] = {
            str(state.get("block")): member_name(state.get("status")) for state in states if isinstance(state, dict)
        }
    else:
        ras["ecc_block_state"] = NOT_AVAILABLE
    return ras


def _threshold_exceeded(library: AmdSmiLibrary, gpu: LibraryGpu, threshold: Any) -> str:
    """``True`` when more pages are retired (RESERVED) than the threshold, as the 7.x CLI works it out."""
    if isinstance(threshold, bool) or not isinstance(threshold, int):
        return NOT_AVAILABLE
    pages = library.call("amdsmi_get_gpu_bad_page_info", gpu)
    if pages == NOT_AVAILABLE:
        return NOT_AVAILABLE
    retired = sum(1 for p in pages if isinstance(p, dict) and member_name(p.get("status")) == "RESERVED")
    return "True" if retired > threshold else "False"


def _partition(library: AmdSmiLibrary, gpu: LibraryGpu) -> dict[str, Any]:
    kfd = library.call("amdsmi_get_gpu_kfd_info", gpu)
    return {
        "compute_partition": library.call("amdsmi_get_gpu_compute_partition", gpu),
        "memory_partition": library.call("amdsmi_get_gpu_memory_partition", gpu),
        "partition_id": kfd.get("current_partition_id", NOT_AVAILABLE) if isinstance(kfd, dict) else NOT_AVAILABLE,
    }


def _vram(library: AmdSmiLibrary, gpu: LibraryGpu) -> dict[str, Any]:
    info = expect_dict(library.call("amdsmi_get_gpu_vram_info", gpu), "amdsmi_get_gpu_vram_info", gpu)
    if not isinstance(info, dict):
        return dict.fromkeys(("type", "vendor", "size", "bit_width"), NOT_AVAILABLE)
    kind, vendor = info.get("vram_type", NOT_AVAILABLE), info.get("vram_vendor", NOT_AVAILABLE)
    vram: dict[str, Any] = {
        "type": _VRAM_TYPES.get(kind, NOT_AVAILABLE) if isinstance(kind, int) else member_name(kind),
        "vendor": _VRAM_VENDORS.get(vendor, NOT_AVAILABLE) if isinstance(vendor, int) else _vendor_name(vendor),
        "size": quantity(info.get("vram_size", NOT_AVAILABLE), "MB"),
        "bit_width": info.get("vram_bit_width", NOT_AVAILABLE),
    }
    if "vram_max_bandwidth" in info:  # newer libraries (the 7.x CLI prints it)
        vram["max_bandwidth"] = quantity(info["vram_max_bandwidth"], "GB/s")
    return vram


def _vendor_name(vendor: Any) -> str:
    text = member_name(vendor).removeprefix("VRAM_VENDOR__")
    return NOT_AVAILABLE if "PLACEHOLDER" in text else text
