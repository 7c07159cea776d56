"""The per-GPU sections of ``amd-smi static``, ``firmware``, ``bad-pages``, ``list`` and ``process``.

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
from console.sim.specs import GpuModel, StackSpec

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


def vary(rng: random.Random, value: float, spread: float) -> float:
    """``value`` moved by up to ``spread`` either way."""
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
