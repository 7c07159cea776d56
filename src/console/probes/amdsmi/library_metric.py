"""``amd-smi metric --json`` from the amdsmi library: the sections the metric probe asks the command for.

The probe runs ``metric -m -p -t -P -e -x -v`` (memory use, power, temperature, PCIe, ECC, XGMI error
status, violations); this writes those sections as AMD's CLI writes them from the same calls
(ROCm/amdsmi ``amdsmi_cli/amdsmi_commands.py``, ``metric_gpu``, ROCm 6.3, whose violation section is
``throttle``), with the value shapes of ``py-interface/amdsmi_interface.py``. Left out, as no check reads
them: the PCIe throughput counters (``amdsmi_get_gpu_pci_throughput`` samples for a second), the
visible-VRAM and GTT sizes, and power management's on/off state.

As for ``static``: "not supported" is N/A, any other failure fails the probe.
"""

from __future__ import annotations

from typing import Any

from console.probes.amdsmi.library import (
    NOT_AVAILABLE,
    AmdSmiLibrary,
    LibraryGpu,
    expect_dict,
    quantity,
)
from console.probes.amdsmi.library_static import gt_per_s

_MEBIBYTE = 1024 * 1024
# pcie_metric key of amdsmi_get_pcie_info -> the key ``metric --pcie`` prints.
_PCIE_COUNTERS = {
    "pcie_replay_count": "replay_count",
    "pcie_l0_to_recovery_count": "l0_to_recovery_count",
    "pcie_replay_roll_over_count": "replay_roll_over_count",
    "pcie_nak_sent_count": "nak_sent_count",
    "pcie_nak_received_count": "nak_received_count",
    "pcie_lc_perf_other_end_recovery_count": "lc_perf_other_end_recovery",
}
# amdsmi_get_violation_status key suffix -> the ``throttle`` key stem the CLI prints.
_VIOLATIONS = {
    "prochot_thrm": "prochot",
    "ppt_pwr": "ppt",
    "socket_thrm": "socket_thermal",
    "vr_thrm": "vr_thermal",
    "hbm_thrm": "hbm_thermal",
}


def metric_entry(library: AmdSmiLibrary, gpu: LibraryGpu) -> dict[str, Any]:
    """One GPU's entry of ``amd-smi metric -m -p -t -P -e -x -v --json``."""
    return {
        "power": _power(library, gpu),
        "temperature": _temperature(library, gpu),
        "pcie": _pcie(library, gpu),
        "ecc": _ecc(library, gpu),
        "xgmi_err": _xgmi_error(library, gpu),
        "mem_usage": _memory(library, gpu),
        "throttle": _throttle(library, gpu),
    }


def _power(library: AmdSmiLibrary, gpu: LibraryGpu) -> dict[str, Any]:
    info = expect_dict(library.call("amdsmi_get_power_info", gpu), "amdsmi_get_power_info", gpu)
    info = info if isinstance(info, dict) else {}
    # The CLI keeps the last of current / average that is not N/A: average where both are read.
    socket = NOT_AVAILABLE
    for key in ("current_socket_power", "average_socket_power"):
        if info.get(key, NOT_AVAILABLE) != NOT_AVAILABLE:
            socket = info[key]
    table = expect_dict(library.call("amdsmi_get_gpu_metrics_info", gpu), "amdsmi_get_gpu_metrics_info", gpu)
    throttled = table.get("throttle_status", NOT_AVAILABLE) if isinstance(table, dict) else NOT_AVAILABLE
    return {
        "socket_power": quantity(socket, "W"),
        **{key: quantity(info.get(key, NOT_AVAILABLE), "mV") for key in ("gfx_voltage", "soc_voltage", "mem_voltage")},
        "throttle_status": throttled if throttled == NOT_AVAILABLE else "THROTTLED" if throttled else "UNTHROTTLED",
    }


def _temperature(library: AmdSmiLibrary, gpu: LibraryGpu) -> dict[str, Any]:
    def read(sensor: str, metric: str) -> Any:
        kind = library.enum("AmdSmiTemperatureType", sensor)
        return library.call("amdsmi_get_temp_metric", gpu, kind, library.enum("AmdSmiTemperatureMetric", metric))

    edge = read("EDGE", "CURRENT")
    if read("EDGE", "CRITICAL") == 0:  # the CLI's rule: no edge limit, no edge sensor (MI300X)
        edge = NOT_AVAILABLE
    return {
        "edge": quantity(edge, "C"),
        "hotspot": quantity(read("HOTSPOT", "CURRENT"), "C"),
        "mem": quantity(read("VRAM", "CURRENT"), "C"),
    }


def _pcie(library: AmdSmiLibrary, gpu: LibraryGpu) -> dict[str, Any] | str:
    info = expect_dict(library.call("amdsmi_get_pcie_info", gpu), "amdsmi_get_pcie_info", gpu)
    link = info.get("pcie_metric", NOT_AVAILABLE) if isinstance(info, dict) else NOT_AVAILABLE
    link = expect_dict(link, "amdsmi_get_pcie_info pcie_metric", gpu)
    if not isinstance(link, dict):
        return NOT_AVAILABLE
    pcie: dict[str, Any] = {
        "width": link.get("pcie_width", NOT_AVAILABLE),
        "speed": quantity(gt_per_s(link.get("pcie_speed", NOT_AVAILABLE)), "GT/s"),
        "bandwidth": quantity(link.get("pcie_bandwidth", NOT_AVAILABLE), "Mb/s"),
    }
    for key, printed in _PCIE_COUNTERS.items():
        if key in link:
            pcie[printed] = link[key]
    return pcie


def _ecc(library: AmdSmiLibrary, gpu: LibraryGpu) -> dict[str, Any]:
    total = expect_dict(library.call("amdsmi_get_gpu_total_ecc_count", gpu), "amdsmi_get_gpu_total_ecc_count", gpu)
    if not isinstance(total, dict):
        names = ("total_correctable_count", "total_uncorrectable_count", "total_deferred_count")
        return dict.fromkeys((*names, "cache_correctable_count", "cache_uncorrectable_count"), NOT_AVAILABLE)
    ecc = {
        f"total_{kind}_count": total.get(f"{kind}_count", NOT_AVAILABLE)
        for kind in ("correctable", "uncorrectable", "deferred")
    }
    # The CLI's cache counts: the total less the memory controller's (UMC) share.
    umc_block = library.enum("AmdSmiGpuBlock", "UMC")
    umc = expect_dict(library.call("amdsmi_get_gpu_ecc_count", gpu, umc_block), "amdsmi_get_gpu_ecc_count", gpu)
    for kind in ("correctable", "uncorrectable"):
        whole, memory = ecc[f"total_{kind}_count"], umc.get(f"{kind}_count") if isinstance(umc, dict) else None
        both = isinstance(whole, int) and isinstance(memory, int)
        ecc[f"cache_{kind}_count"] = whole - memory if both else NOT_AVAILABLE
    return ecc


def _xgmi_error(library: AmdSmiLibrary, gpu: LibraryGpu) -> Any:
    status = library.call("amdsmi_gpu_xgmi_error_status", gpu)
    if status == NOT_AVAILABLE:
        return status
    try:  # the library returns AmdSmiXgmiStatus's value; the CLI prints the C enum's name
        return f"AMDSMI_XGMI_STATUS_{library.module.AmdSmiXgmiStatus(status).name}"
    except (AttributeError, ValueError):
        return str(status)  # a status this console does not know: the parser says so, it never reads as none


def _memory(library: AmdSmiLibrary, gpu: LibraryGpu) -> dict[str, Any]:
    vram = library.enum("AmdSmiMemoryType", "VRAM")
    total = library.call("amdsmi_get_gpu_memory_total", gpu, vram)
    used = library.call("amdsmi_get_gpu_memory_usage", gpu, vram)
    total_mb = total // _MEBIBYTE if isinstance(total, int) else NOT_AVAILABLE
    used_mb = used // _MEBIBYTE if isinstance(used, int) else NOT_AVAILABLE
    free_mb = total_mb - used_mb if isinstance(total_mb, int) and isinstance(used_mb, int) else NOT_AVAILABLE
    return {
        "total_vram": quantity(total_mb, "MB"),
        "used_vram": quantity(used_mb, "MB"),
        "free_vram": quantity(free_mb, "MB"),
    }


def _throttle(library: AmdSmiLibrary, gpu: LibraryGpu) -> dict[str, Any]:
    status = library.optional("amdsmi_get_violation_status", gpu)  # ROCm 6.3 on; MI300 and later only
    status = expect_dict(status, "amdsmi_get_violation_status", gpu)
    read = status if isinstance(status, dict) else {}
    throttle: dict[str, Any] = {"accumulation_counter": read.get("acc_counter", NOT_AVAILABLE)}
    for suffix, stem in _VIOLATIONS.items():
        throttle[f"{stem}_accumulated"] = read.get(f"acc_{suffix}", NOT_AVAILABLE)
    for suffix, stem in _VIOLATIONS.items():
        active = read.get(f"active_{suffix}", NOT_AVAILABLE)
        throttle[f"{stem}_violation_status"] = (
            "ACTIVE" if active is True else "NOT ACTIVE" if active is False else active
        )
    for suffix, stem in _VIOLATIONS.items():
        throttle[f"{stem}_violation_activity"] = _percent(read.get(f"per_{suffix}", NOT_AVAILABLE))
    return throttle


def _percent(value: Any) -> Any:
    # Newer libraries give one share per partition (XCP) as a list.
    if isinstance(value, list):
        return [quantity(item, "%") for item in value]
    return quantity(value, "%")
