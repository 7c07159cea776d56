"""The per-GPU sections of ``amd-smi static``, ``metric``, ``firmware``, ``bad-pages``, ``list`` and ``process``.

Each builder returns a dict with the CLI's own (lower-case) keys and ``Q`` leaves; ``amdsmi_format``
prints it. Key order follows the CLI. Readings come from the node state plus this invocation's jitter,
so idle telemetry moves a little between runs while fault evidence (counters, states, versions) stays.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from console.sim.models import LinkState, SimGpu, SimNode
from console.sim.render.amdsmi_format import NA, Fmt, Q, celsius
from console.sim.specs import GpuModel, StackSpec, pcie_gen_speed

MB = 1024 * 1024
NO_BAD_PAGES = "No bad pages found."
NO_PROCESSES = "No running processes detected"


@dataclass(frozen=True)
class Gen:
    """What changed in amd-smi between the ROCm lines the simulator models."""

    rocm: tuple[int, ...]

    @classmethod
    def of(cls, stack: StackSpec) -> Gen:
        """Generation of the amd-smi shipped with ``stack``."""
        return cls(stack.rocm_tuple)

    @property
    def gpu_data(self) -> bool:
        """ROCm 7: static/metric/firmware JSON is ``{"gpu_data": [...]}`` instead of a list."""
        return self.rocm >= (7,)

    @property
    def folds_text(self) -> bool:
        """ROCm 6: text went through PyYAML, which folds long values."""
        return self.rocm < (7,)

    @property
    def violations(self) -> bool:
        """ROCm 6.3 added the violation (throttle) counters."""
        return self.rocm >= (6, 3)

    @property
    def scaled_traffic(self) -> bool:
        """ROCm 6.4: XGMI read/write totals auto-scale (KB/MB/GB) instead of always KB."""
        return self.rocm >= (6, 4)

    @property
    def static_partition(self) -> bool:
        """ROCm 7 moved partition info out of ``static``."""
        return self.rocm < (7,)


def _vary(rng: random.Random, value: float, spread: float) -> float:
    return value + rng.uniform(-spread, spread)


# ---------------------------------------------------------------------------------------------
# version / list


def version_fields(node: SimNode, gen: Gen) -> dict[str, str]:
    """``amd-smi version`` fields in print order (JSON keys)."""
    stack = node.stack
    fields = {
        "tool": "AMDSMI Tool",
        "version": stack.amdsmi_tool,
        "amdsmi_library_version": stack.amdsmi_lib,
        "rocm_version": stack.rocm,
    }
    if gen.rocm >= (7,):
        fields["amdgpu_version"] = stack.amdgpu_driver
        fields["amd_hsmp_driver_version"] = NA
    return fields


def version_line(node: SimNode, gen: Gen, drivers: bool = True) -> str:
    """The one-line text form; after an init failure the CLI prints it without the driver fields."""
    fields = version_fields(node, gen)
    parts = [
        f"AMDSMI Tool: {fields['version']}",
        f"AMDSMI Library version: {fields['amdsmi_library_version']}",
        f"ROCm version: {fields['rocm_version']}",
    ]
    if drivers and "amdgpu_version" in fields:
        parts += [
            f"amdgpu version: {fields['amdgpu_version']}",
            f"amd_hsmp version: {fields['amd_hsmp_driver_version']}",
        ]
    return " | ".join(parts)


def list_section(gpu: SimGpu, fmt: Fmt) -> dict[str, Any]:
    """``amd-smi list``: BDF, UUID, KFD ids and partition of one GPU."""
    prefix = "gpu_" if fmt is Fmt.CSV else ""
    return {
        f"{prefix}bdf": gpu.bdf,
        f"{prefix}uuid": gpu.uuid,
        "kfd_id": gpu.kfd_gpu_id,
        "node_id": gpu.kfd_node,
        "partition_id": 0,
    }


# ---------------------------------------------------------------------------------------------
# static


STATIC_SECTIONS = ("asic", "bus", "vbios", "limit", "driver", "board", "ras", "partition", "numa", "vram", "clock")
_RAS_BLOCKS = ("UMC", "SDMA", "GFX", "MMHUB", "ATHUB", "PCIE_BIF", "HDP", "XGMI_WAFL", "DF", "SMN", "SEM", "MP0", "MP1")
_RAS_BLOCKS_OFF = {"ATHUB", "DF", "SMN", "SEM", "MP0", "MP1"}


def _asic(node: SimNode, gpu: SimGpu) -> dict[str, Any]:
    spec = node.spec
    return {
        "market_name": spec.market_name,
        "vendor_id": "0x1002",
        "vendor_name": "Advanced Micro Devices Inc. [AMD/ATI]",
        "subvendor_id": "0x1002",
        "device_id": f"0x{spec.device_id}",
        "subsystem_id": f"0x{spec.subsystem_id}",
        "rev_id": f"0x{spec.revision_id}",
        "asic_serial": gpu.asic_serial,
        "oam_id": gpu.oam_id,
        "num_compute_units": spec.compute_units,
        "target_graphics_version": spec.gfx_target,
    }


def _bus(node: SimNode, gpu: SimGpu) -> dict[str, Any]:
    spec = node.spec
    return {
        "bdf": gpu.bdf,
        "max_pcie_width": spec.pcie_width,
        "max_pcie_speed": Q(int(spec.pcie_speed_gts), "GT/s"),
        "pcie_interface_version": f"Gen {spec.pcie_gen}",
        "slot_type": "OAM",
    }


def _vbios(node: SimNode, gpu: SimGpu) -> dict[str, Any]:
    spec = node.spec
    return {
        "name": f"AMD {spec.model.value}",
        "build_date": "2024/09/12 16:22",
        "part_number": spec.vbios_part_number,
        "version": gpu.vbios_version,
    }


def _limit(node: SimNode, gpu: SimGpu) -> dict[str, Any]:
    spec = node.spec
    edge = spec.model is GpuModel.MI250X
    return {
        "max_power": Q(int(spec.power_cap_w), "W"),
        "min_power": Q(0, "W"),
        "socket_power": Q(int(gpu.power_cap_w), "W"),
        "slowdown_edge_temperature": celsius(int(spec.slowdown_hotspot_c) - 5) if edge else NA,
        "slowdown_hotspot_temperature": celsius(int(spec.slowdown_hotspot_c)),
        "slowdown_vram_temperature": celsius(int(spec.slowdown_vram_c)),
        "shutdown_edge_temperature": celsius(int(spec.shutdown_hotspot_c) - 5) if edge else NA,
        "shutdown_hotspot_temperature": celsius(int(spec.shutdown_hotspot_c)),
        "shutdown_vram_temperature": celsius(int(spec.shutdown_vram_c)),
    }


def _driver(node: SimNode, gpu: SimGpu) -> dict[str, Any]:
    return {"name": "amdgpu", "version": node.stack.amdgpu_driver}


def _board(node: SimNode, gpu: SimGpu) -> dict[str, Any]:
    spec = node.spec
    return {
        "model_number": f"102-{spec.device_id.upper()}-0C",
        "product_serial": gpu.serial,
        "fru_id": f"113-{spec.model.value}-100-{gpu.serial[-6:]}",
        "product_name": f"{spec.market_name} OAM",
        "manufacturer_name": "AMD",
    }


def _ras(node: SimNode, gpu: SimGpu) -> dict[str, Any]:
    retired = sum(1 for page in gpu.bad_pages if page.status == "retired")
    return {
        "eeprom_version": "0x30000",
        "bad_page_threshold": gpu.bad_page_threshold,
        "bad_page_threshold_exceeded": "TRUE" if retired >= gpu.bad_page_threshold else "FALSE",
        "parity_schema": "DISABLED",
        "single_bit_schema": "DISABLED",
        "double_bit_schema": "DISABLED",
        "poison_schema": "ENABLED",
        "ecc_block_state": {block: "DISABLED" if block in _RAS_BLOCKS_OFF else "ENABLED" for block in _RAS_BLOCKS},
    }


def _partition(node: SimNode, gpu: SimGpu) -> dict[str, Any]:
    return {"compute_partition": "SPX", "memory_partition": "NPS1", "partition_id": 0}


def _numa(node: SimNode, gpu: SimGpu) -> dict[str, Any]:
    return {"node": gpu.numa_node, "affinity": gpu.numa_node}


def _vram(node: SimNode, gpu: SimGpu) -> dict[str, Any]:
    spec = node.spec
    return {
        "type": "HBM",
        "vendor": spec.vram_vendor,
        "size": Q(spec.vram_bytes // MB, "MB"),
        "bit_width": spec.vram_bit_width,
        "max_bandwidth": Q(int(spec.hbm_bandwidth_gbps), "GB/s"),
    }


def _levels(current: int, levels: list[int]) -> dict[str, Any]:
    return {
        "current level": current,
        "frequency_levels": {f"Level {n}": f"{mhz} MHz" for n, mhz in enumerate(levels)},
    }


def _clock(node: SimNode, gpu: SimGpu) -> dict[str, Any]:
    spec = node.spec
    return {
        "sys": _levels(0, [spec.gfx_clock_min_mhz, spec.gfx_clock_max_mhz]),
        "mem": _levels(1, [spec.mem_clock_min_mhz, spec.mem_clock_mhz]),
        "df": _levels(0, [1200, spec.fclk_mhz]),
        "soc": _levels(0, [27, spec.socclk_mhz]),
        "dcef": NA,
        "vclk0": _levels(0, [29, 1400]),
        "vclk1": NA,
        "dclk0": _levels(0, [22, 1143]),
        "dclk1": NA,
    }


_STATIC_BUILDERS = {
    "asic": _asic,
    "bus": _bus,
    "vbios": _vbios,
    "limit": _limit,
    "driver": _driver,
    "board": _board,
    "ras": _ras,
    "partition": _partition,
    "numa": _numa,
    "vram": _vram,
    "clock": _clock,
}


def static_section(node: SimNode, gpu: SimGpu, sections: list[str], gen: Gen) -> dict[str, Any]:
    """``amd-smi static`` for one GPU, limited to ``sections`` (in the CLI's order)."""
    wanted = [name for name in STATIC_SECTIONS if name in sections]
    if not gen.static_partition and "partition" in wanted:
        wanted.remove("partition")
    return {name: _STATIC_BUILDERS[name](node, gpu) for name in wanted}


# ---------------------------------------------------------------------------------------------
# metric


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
            power_w=round(_vary(rng, gpu.power_w, gpu.power_w * 0.03)),
            hotspot_c=round(_vary(rng, gpu.hotspot_c, 1.0)),
            mem_c=round(_vary(rng, gpu.mem_c, 1.0)),
            edge_c=None if gpu.edge_c is None else round(_vary(rng, gpu.edge_c, 1.0)),
            gfx_mhz=round(_vary(rng, gpu.gfx_clock_mhz, gpu.gfx_clock_mhz * 0.04)),
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
        "total_uncorrectable_count": uncorrectable,
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


# ---------------------------------------------------------------------------------------------
# firmware / bad pages / process


def firmware_section(gpu: SimGpu, fmt: Fmt) -> dict[str, Any]:
    """``amd-smi firmware``: a list of {fw_id, fw_version}; text numbers the entries ``FW n``."""
    entries = [{"fw_id": block, "fw_version": version} for block, version in gpu.firmware.items()]
    if fmt is Fmt.TEXT:
        return {"fw_list": {f"FW {n}": entry for n, entry in enumerate(entries)}}
    return {"fw_list": entries}


_PAGE_STATUS = {"retired": "RESERVED", "pending": "PENDING", "unreservable": "UNRESERVABLE"}


def bad_pages_section(gpu: SimGpu, kinds: list[str]) -> dict[str, Any]:
    """``amd-smi bad-pages``: retired / pending / un_res lists, or the 'No bad pages found.' sentinel."""
    values: dict[str, Any] = {}
    for key, status in (("retired", "retired"), ("pending", "pending"), ("un_res", "unreservable")):
        if key not in kinds:
            continue
        pages = [
            {"page_address": page.address, "page_size": page.size_bytes, "status": _PAGE_STATUS[page.status]}
            for page in gpu.bad_pages
            if page.status == status
        ]
        # The CLI unwraps a single entry into a bare object.
        values[key] = (pages[0] if len(pages) == 1 else pages) if pages else NO_BAD_PAGES
    return values


def process_section(gpu: SimGpu) -> dict[str, Any]:
    """``amd-smi process`` on an idle node: the 'no processes' sentinel."""
    return {"process_list": [{"process_info": NO_PROCESSES}]}


def link_state_letter(state: LinkState) -> str:
    """U / D letters of ``amd-smi xgmi --link-status`` (a degraded link still trains up)."""
    return "D" if state is LinkState.DOWN else "U"
