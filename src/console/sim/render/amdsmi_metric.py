"""The per-GPU sections of ``amd-smi metric``: readings of this invocation plus the node's counters.

Telemetry (power, temperatures, clocks) is jittered per invocation; counters (ECC, PCIe, violations,
XGMI errors) come straight from the node state so fault evidence is the same on every run.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from console.sim.models import SimGpu, SimNode
from console.sim.render.amdsmi_format import NA, Q, celsius
from console.sim.render.amdsmi_sections import MB, Gen, vary
from console.sim.specs import GpuModel, pcie_gen_speed

METRIC_SECTIONS = (
    "usage",
    "power",
    "clock",
    "temperature",
    "pcie",
    "ecc",
    "ecc_blocks",
    "fan",
    "voltage_curve",
    "overdrive",
    "perf_level",
    "xgmi_err",
    "energy",
    "mem_usage",
    "throttle",
)


@dataclass
class Reading:
    """Jittered telemetry of one GPU for one invocation."""

    power_w: int
    hotspot_c: int
    mem_c: int
    edge_c: int | None
    gfx_mhz: int
    mem_mhz: int
    vram_used_mb: int

    @classmethod
    def take(cls, gpu: SimGpu, rng: random.Random) -> Reading:
        """Readings of ``gpu`` now: idle values with a little noise."""
        return cls(
            power_w=round(vary(rng, gpu.power_w, gpu.power_w * 0.03)),
            hotspot_c=round(vary(rng, gpu.hotspot_c, 1.0)),
            mem_c=round(vary(rng, gpu.mem_c, 1.0)),
            edge_c=None if gpu.edge_c is None else round(vary(rng, gpu.edge_c, 1.0)),
            gfx_mhz=round(vary(rng, gpu.gfx_clock_mhz, gpu.gfx_clock_mhz * 0.04)),
            mem_mhz=round(gpu.mem_clock_mhz),
            vram_used_mb=gpu.vram_used_bytes // MB,
        )


def _usage(node: SimNode, gpu: SimGpu, reading: Reading, rng: random.Random, gen: Gen) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "gfx_activity": Q(round(gpu.gfx_util_pct), "%"),
        "umc_activity": Q(round(gpu.mem_util_pct), "%"),
        "mm_activity": NA,
        "vcn_activity": [Q(0, "%")] * 4,
        "jpeg_activity": [Q(0, "%")] * 32,
    }
    if gen.violations:
        usage["gfx_busy_inst"] = {"xcp_0": [Q(0, "%")] * node.spec.xcds}
        usage["jpeg_busy"] = {"xcp_0": [Q(0, "%")] * 32}
        usage["vcn_busy"] = {"xcp_0": [Q(0, "%")] * 4}
    return usage


def _power(node: SimNode, gpu: SimGpu, reading: Reading, rng: random.Random, gen: Gen) -> dict[str, Any]:
    return {
        "socket_power": Q(reading.power_w, "W"),
        "gfx_voltage": NA,
        "soc_voltage": NA,
        "mem_voltage": NA,
        "throttle_status": gpu.throttle_status if node.spec.model is GpuModel.MI250X else NA,
        "power_management": "ENABLED",
    }


def _clock_entry(mhz: int | None, low: int, high: int) -> dict[str, Any]:
    """One clock domain; a domain the GPU does not have is all N/A."""
    if mhz is None:
        return {"clk": NA, "min_clk": NA, "max_clk": NA, "clk_locked": NA, "deep_sleep": NA}
    return {
        "clk": Q(mhz, "MHz"),
        "min_clk": Q(low, "MHz"),
        "max_clk": Q(high, "MHz"),
        "clk_locked": "DISABLED",
        "deep_sleep": "ENABLED" if mhz < low else "DISABLED",
    }


def _metric_clock(node: SimNode, gpu: SimGpu, reading: Reading, rng: random.Random, gen: Gen) -> dict[str, Any]:
    spec = node.spec
    clocks: dict[str, Any] = {}
    for xcd in range(8):
        mhz = max(reading.gfx_mhz + rng.randrange(-4, 5), 1) if xcd < spec.xcds else None
        clocks[f"gfx_{xcd}"] = _clock_entry(mhz, spec.gfx_clock_min_mhz, spec.gfx_clock_max_mhz)
    clocks["mem_0"] = _clock_entry(reading.mem_mhz, spec.mem_clock_min_mhz, spec.mem_clock_mhz)
    for name, idle, high in (("vclk", 29, 1400), ("dclk", 22, 1143)):
        for engine in range(4):
            clocks[f"{name}_{engine}"] = _clock_entry(idle, idle, high)
    return clocks


def _temperature(node: SimNode, gpu: SimGpu, reading: Reading, rng: random.Random, gen: Gen) -> dict[str, Any]:
    return {
        "edge": NA if reading.edge_c is None else celsius(reading.edge_c),
        "hotspot": celsius(reading.hotspot_c),
        "mem": celsius(reading.mem_c),
    }


def _pcie(node: SimNode, gpu: SimGpu, reading: Reading, rng: random.Random, gen: Gen) -> dict[str, Any]:
    return {
        "width": gpu.pcie_width,
        "speed": Q(int(pcie_gen_speed(gpu.pcie_gen)), "GT/s"),
        "bandwidth": Q(rng.randrange(10, 400), "Mb/s"),
        "replay_count": gpu.pcie_replay_count,
        "l0_to_recovery_count": gpu.pcie_l0_to_recovery_count,
        "replay_roll_over_count": 0,
        "nak_sent_count": gpu.pcie_nak_sent_count,
        "nak_received_count": gpu.pcie_nak_received_count,
        "current_bandwidth_sent": NA,
        "current_bandwidth_received": NA,
        "max_packet_size": NA,
    }


def _ecc(node: SimNode, gpu: SimGpu, reading: Reading, rng: random.Random, gen: Gen) -> dict[str, Any]:
    umc = gpu.ecc["UMC"]
    correctable, uncorrectable = gpu.ecc_total("correctable"), gpu.ecc_total("uncorrectable")
    return {
        "total_correctable_count": correctable,
        # A failed RAS query printed as its error value, as a counter.
        "total_uncorrectable_count": -1 if gpu.impossible == "ecc" else uncorrectable,
        "total_deferred_count": gpu.ecc_total("deferred"),
        "cache_correctable_count": correctable - umc.correctable,
        "cache_uncorrectable_count": uncorrectable - umc.uncorrectable,
    }


def _ecc_blocks(node: SimNode, gpu: SimGpu, reading: Reading, rng: random.Random, gen: Gen) -> dict[str, Any]:
    return {
        block: {
            "correctable_count": counts.correctable,
            "uncorrectable_count": counts.uncorrectable,
            "deferred_count": counts.deferred,
        }
        for block, counts in gpu.ecc.items()
    }


def _fan(node: SimNode, gpu: SimGpu, reading: Reading, rng: random.Random, gen: Gen) -> dict[str, Any]:
    return {"speed": NA, "max": NA, "rpm": NA, "usage": NA}


def _voltage_curve(node: SimNode, gpu: SimGpu, reading: Reading, rng: random.Random, gen: Gen) -> dict[str, Any]:
    return {f"point_{point}_{what}": NA for point in range(3) for what in ("frequency", "voltage")}


def _xgmi_status(gpu: SimGpu) -> str:
    errors = sum(link.error_count for link in gpu.xgmi.values())
    if not errors:
        return "AMDSMI_XGMI_STATUS_NO_ERRORS"
    return "AMDSMI_XGMI_STATUS_MULTIPLE_ERRORS" if errors > 1 else "AMDSMI_XGMI_STATUS_ERROR"


def _energy(node: SimNode, gpu: SimGpu, reading: Reading, rng: random.Random, gen: Gen) -> dict[str, Any]:
    # The accumulator only grows; a fresh draw per invocation keeps it moving forward.
    joules = (gpu.energy_uj + rng.randrange(10**6, 10**9)) / 1e6
    return {"total_energy_consumption": Q(round(joules, 3), "J")}


def _mem_usage(node: SimNode, gpu: SimGpu, reading: Reading, rng: random.Random, gen: Gen) -> dict[str, Any]:
    total = node.spec.vram_bytes // MB
    used = reading.vram_used_mb
    gtt_total = node.host_memory_bytes // MB // 2
    return {
        "total_vram": Q(total, "MB"),
        "used_vram": Q(used, "MB"),
        "free_vram": Q(total - used, "MB"),
        "total_visible_vram": Q(total, "MB"),
        "used_visible_vram": Q(used, "MB"),
        "free_visible_vram": Q(total - used, "MB"),
        "total_gtt": Q(gtt_total, "MB"),
        "used_gtt": Q(11, "MB"),
        "free_gtt": Q(gtt_total - 11, "MB"),
    }


_VIOLATION_NAMES = (
    ("prochot", "PHOT_TVIOL"),
    ("ppt", "PVIOL"),
    ("socket_thermal", "TVIOL"),
    ("vr_thermal", "VR_TVIOL"),
    ("hbm_thermal", "HBM_TVIOL"),
)


def _throttle(node: SimNode, gpu: SimGpu, reading: Reading, rng: random.Random, gen: Gen) -> dict[str, Any]:
    supported = bool(gpu.violations_pct)
    counter = rng.randrange(10**6, 10**7)
    result: dict[str, Any] = {"accumulation_counter": counter if supported else NA}
    for name, key in _VIOLATION_NAMES:
        pct = gpu.violations_pct.get(key, 0.0)
        result[f"{name}_accumulated"] = int(counter * pct / 100) if supported else NA
    for name, key in _VIOLATION_NAMES:
        active = gpu.violations_pct.get(key, 0.0) > 0
        result[f"{name}_violation_status"] = ("ACTIVE" if active else "NOT ACTIVE") if supported else NA
    for name, key in _VIOLATION_NAMES:
        pct = gpu.violations_pct.get(key, 0.0)
        result[f"{name}_violation_activity"] = Q(round(pct), "%") if supported else NA
        if supported and gpu.impossible == "throttle" and "thermal" in name:
            result[f"{name}_violation_activity"] = Q(-3, "%")  # a failed read printed as a share
    return result


_METRIC_BUILDERS = {
    "usage": _usage,
    "power": _power,
    "clock": _metric_clock,
    "temperature": _temperature,
    "pcie": _pcie,
    "ecc": _ecc,
    "ecc_blocks": _ecc_blocks,
    "fan": _fan,
    "voltage_curve": _voltage_curve,
    "energy": _energy,
    "mem_usage": _mem_usage,
    "throttle": _throttle,
}


def metric_section(node: SimNode, gpu: SimGpu, sections: list[str], gen: Gen, rng: random.Random) -> dict[str, Any]:
    """``amd-smi metric`` for one GPU, limited to ``sections`` (in the CLI's order)."""
    reading = Reading.take(gpu, rng)
    values: dict[str, Any] = {}
    for name in METRIC_SECTIONS:
        if name not in sections or (name == "throttle" and not gen.violations):
            continue
        if name == "overdrive":
            values["overdrive"] = Q(0, "%")
            values["mem_overdrive"] = Q(0, "%")
        elif name == "perf_level":
            values["perf_level"] = "AMDSMI_DEV_PERF_LEVEL_AUTO"
        elif name == "xgmi_err":
            values["xgmi_err"] = _xgmi_status(gpu)
        else:
            values[name] = _METRIC_BUILDERS[name](node, gpu, reading, rng, gen)
    return values
