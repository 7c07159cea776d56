"""``rocm-smi`` and ``rocminfo`` on a simulated node.

rocm-smi: the concise table (ROCm 6.0-6.2 layout with a name line per GPU, or the 6.3+ layout with
Node/IDs columns), ``-i``/``--showid``, ``--showtoponuma``, ``-a`` (a subset of its sections) and
``--version``. Columns are as wide as their widest cell plus two; rows are padded to the table width.
rocminfo: system attributes, CPU agents then GPU agents in KFD node order, ``%-25s%-35s`` fields.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from console.sim.commands import SimContext, SimReply, program_name
from console.sim.models import SimGpu, SimNode
from console.sim.render.amdsmi_sections import MB, Reading
from console.sim.specs import GpuModel, pcie_gen_speed

_DEGREE = "\N{DEGREE SIGN}C"
_CALL_S = (0.3, 1.2)
NO_DRIVER = "ERROR:root:Driver not initialized (amdgpu not found in modules)\n"


def _banner(title: str, width: int) -> str:
    """'==== title ====' centred in ``width`` columns (extra '=' on the right), or a plain rule."""
    if not title:
        return "=" * width
    left = (width - len(title) - 2) // 2
    return "=" * left + f" {title} " + "=" * (width - len(title) - 2 - left)


def _smi_name(node: SimNode) -> str:
    # The MI250X reports its PCI-ID name, which rocm-smi cuts at 20 characters.
    return "AMD INSTINCT MI200 (MCM) OAM AC MBA"[:20] if node.gpu_model is GpuModel.MI250X else node.spec.market_name


# ---------------------------------------------------------------------------------------------
# concise table


def _concise_rows(node: SimNode, rng: random.Random, legacy: bool) -> list[list[str]]:
    """Cells of each GPU row; on MI250X the secondary die of each package has no power sensor."""
    spec = node.spec
    rows = []
    for gpu in node.gpus:
        reading = Reading.take(gpu, rng)
        secondary = spec.model is GpuModel.MI250X and gpu.slot % 2 == 1
        temp = reading.edge_c if reading.edge_c is not None else reading.hotspot_c
        vram_pct = round(100 * reading.vram_used_mb / (spec.vram_bytes // MB))
        ids = (
            [f"[0x{spec.subsystem_id} : 0x{spec.revision_id}]"]
            if legacy
            else [str(gpu.kfd_node), f"0x{spec.device_id},".ljust(10) + str(gpu.kfd_gpu_id)]
        )
        partitions = "N/A, N/A" if spec.model is GpuModel.MI250X else ("NPS1, SPX" if legacy else "NPS1, SPX, 0")
        rows.append(
            [
                str(gpu.index),
                *ids,
                f"{float(temp):.1f}{_DEGREE}",
                "N/A" if secondary else f"{float(reading.power_w):.1f}W",
                partitions,
                f"{reading.gfx_mhz}Mhz",
                f"{reading.mem_mhz}Mhz",
                "0%",
                "auto",
                "0.0W" if secondary else f"{gpu.power_cap_w:.1f}W",
                f"{vram_pct}%",
                f"{round(gpu.gfx_util_pct)}%",
            ]
        )
    return rows


def concise(node: SimNode, rng: random.Random, legacy: bool) -> str:
    """The default ``rocm-smi`` view in the layout of the node's ROCm line."""
    edge = node.spec.model is GpuModel.MI250X
    temp, power = ("(Edge)", "(Avg)") if edge else ("(Junction)", "(Socket)")
    if legacy:
        head = ["Device", "[Model : Revision]", "Temp", "Power", "Partitions"]
        sub = ["", "Name (20 chars)", temp, power, "(Mem, Compute)"]
    else:
        head = ["Device", "Node", "IDs", "Temp", "Power", "Partitions"]
        sub = ["", "", "(DID,     GUID)", temp, power, "(Mem, Compute, ID)"]
    head += ["SCLK", "MCLK", "Fan", "Perf", "PwrCap", "VRAM%", "GPU%"]
    sub += [""] * 7
    rows = _concise_rows(node, rng, legacy)
    widths = [max(len(cell) for cell in column) + 2 for column in zip(head, sub, *rows, strict=True)]
    if legacy:
        # The 6.0-6.2 model column is sized for the 20-character name line below each row.
        widths[1] = max(widths[1], 22)
    table_width = sum(widths)
    banner_width = table_width if legacy else table_width + 1

    def line(cells: list[str]) -> str:
        return "".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True))

    vram = len(head) - 2
    out = ["", "", _banner("ROCm System Management Interface", banner_width)]
    out += [_banner("Concise Info", banner_width), line(head), line(sub), _banner("", banner_width)]
    for row in rows:
        if legacy:
            # 6.x right-aligns VRAM% within its column.
            row[vram] = row[vram].rjust(4)
        out.append(line(row))
        if legacy:
            out.append((" " * widths[0] + _smi_name(node)).ljust(table_width))
    out += [_banner("", banner_width), _banner("End of ROCm SMI Log", banner_width)]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# --show* sections


_SECTION_WIDTH = 90
_FW_NAMES = {
    "CP_MEC1": "MEC",
    "CP_MEC2": "MEC2",
    "RLC": "RLC",
    "SDMA0": "SDMA",
    "SDMA1": "SDMA2",
    "VCN": "VCN",
    "PSP_SOSDRV": "SOS",
    "TA_RAS": "TA RAS",
    "TA_XGMI": "TA XGMI",
    "PM": "SMC",
}


def _field(gpu: SimGpu, key: str, value: object, tabs: str = "") -> str:
    return f"GPU[{gpu.index}]\t\t: {key}: {tabs}{value}"


def _id_lines(node: SimNode, gpu: SimGpu, rng: random.Random) -> list[str]:
    spec = node.spec
    return [
        _field(gpu, "Device Name", spec.market_name, "\t\t"),
        _field(gpu, "Device ID", f"0x{spec.device_id}", "\t\t"),
        _field(gpu, "Device Rev", f"0x{spec.revision_id}", "\t\t"),
        _field(gpu, "Subsystem ID", f"0x{spec.subsystem_id}", "\t"),
        _field(gpu, "GUID", gpu.kfd_gpu_id, "\t\t"),
    ]


def _unique_id_lines(node: SimNode, gpu: SimGpu, rng: random.Random) -> list[str]:
    return [_field(gpu, "Unique ID", gpu.asic_serial.lower())]


def _vbios_lines(node: SimNode, gpu: SimGpu, rng: random.Random) -> list[str]:
    return [_field(gpu, "VBIOS version", node.spec.vbios_part_number)]


def _temperature_lines(node: SimNode, gpu: SimGpu, rng: random.Random) -> list[str]:
    reading = Reading.take(gpu, rng)
    edge = "N/A" if reading.edge_c is None else f"{float(reading.edge_c):.1f}"
    return [
        _field(gpu, "Temperature (Sensor edge) (C)", edge),
        _field(gpu, "Temperature (Sensor junction) (C)", f"{float(reading.hotspot_c):.1f}"),
        _field(gpu, "Temperature (Sensor memory) (C)", f"{float(reading.mem_c):.1f}"),
    ]


def _clock_lines(node: SimNode, gpu: SimGpu, rng: random.Random) -> list[str]:
    reading = Reading.take(gpu, rng)
    return [
        _field(gpu, "fclk clock level", f"0: ({node.spec.fclk_mhz}Mhz)"),
        _field(gpu, "mclk clock level", f"0: ({reading.mem_mhz}Mhz)"),
        _field(gpu, "sclk clock level", f"0: ({reading.gfx_mhz}Mhz)"),
        _field(gpu, "socclk clock level", f"0: ({node.spec.socclk_mhz}Mhz)"),
        _field(gpu, "pcie clock level", f"0: ({pcie_gen_speed(gpu.pcie_gen):.1f}GT/s x{gpu.pcie_width})"),
    ]


def _perf_lines(node: SimNode, gpu: SimGpu, rng: random.Random) -> list[str]:
    return [_field(gpu, "Performance Level", "auto")]


def _power_cap_lines(node: SimNode, gpu: SimGpu, rng: random.Random) -> list[str]:
    return [_field(gpu, "Max Graphics Package Power (W)", f"{gpu.power_cap_w:.1f}")]


def _power_lines(node: SimNode, gpu: SimGpu, rng: random.Random) -> list[str]:
    reading = Reading.take(gpu, rng)
    label = "Average" if node.gpu_model is GpuModel.MI250X else "Current Socket"
    return [_field(gpu, f"{label} Graphics Package Power (W)", f"{float(reading.power_w):.1f}")]


def _memory_lines(node: SimNode, gpu: SimGpu, rng: random.Random) -> list[str]:
    return [
        _field(gpu, "VRAM Total Memory (B)", node.spec.vram_bytes),
        _field(gpu, "VRAM Total Used Memory (B)", gpu.vram_used_bytes),
    ]


def _firmware_lines(node: SimNode, gpu: SimGpu, rng: random.Random) -> list[str]:
    return [
        _field(gpu, f"{_FW_NAMES[block]} firmware version", version, "\t") for block, version in gpu.firmware.items()
    ]


def _product_lines(node: SimNode, gpu: SimGpu, rng: random.Random) -> list[str]:
    spec = node.spec
    return [
        _field(gpu, "Card Series", spec.market_name, "\t\t"),
        _field(gpu, "Card Model", f"0x{spec.device_id}", "\t\t"),
        _field(gpu, "Card Vendor", "Advanced Micro Devices, Inc. [AMD/ATI]", "\t\t"),
        _field(gpu, "Card SKU", spec.vbios_part_number.split("-")[1], "\t\t"),
        _field(gpu, "Subsystem ID", f"0x{spec.subsystem_id}", "\t"),
        _field(gpu, "Device Rev", f"0x{spec.revision_id}", "\t\t"),
        _field(gpu, "Node ID", gpu.kfd_node, "\t\t"),
        _field(gpu, "GUID", gpu.kfd_gpu_id, "\t\t"),
        _field(gpu, "GFX Version", spec.gfx_target, "\t\t"),
    ]


def _numa_lines(node: SimNode, gpu: SimGpu, rng: random.Random) -> list[str]:
    return [_field(gpu, "(Topology) Numa Node", gpu.numa_node), _field(gpu, "(Topology) Numa Affinity", gpu.numa_node)]


Section = Callable[[SimNode, SimGpu, random.Random], list[str]]
_SECTIONS: dict[str, tuple[str, Section]] = {
    "id": ("ID", _id_lines),
    "uniqueid": ("Unique ID", _unique_id_lines),
    "vbios": ("VBIOS", _vbios_lines),
    "temp": ("Temperature", _temperature_lines),
    "clocks": ("Current clock frequencies", _clock_lines),
    "perflevel": ("Show Performance Level", _perf_lines),
    "maxpower": ("Power Cap", _power_cap_lines),
    "power": ("Power Consumption", _power_lines),
    "meminfo": ("Memory Usage (Bytes)", _memory_lines),
    "fwinfo": ("Firmware Information", _firmware_lines),
    "productname": ("Product Info", _product_lines),
    "toponuma": ("Numa Nodes", _numa_lines),
}
_OPTIONS = {
    "-i": "id", "--showid": "id", "--showuniqueid": "uniqueid", "-v": "vbios", "--showvbios": "vbios",
    "-t": "temp", "--showtemp": "temp", "-c": "clocks", "--showclocks": "clocks", "--showperflevel": "perflevel",
    "-M": "maxpower", "--showmaxpower": "maxpower", "-P": "power", "--showpower": "power",
    "--showmeminfo": "meminfo", "-f": "fwinfo", "--showfwinfo": "fwinfo", "--showproductname": "productname",
    "--showtoponuma": "toponuma",
}  # fmt: skip
_ALL = (
    "id",
    "uniqueid",
    "vbios",
    "temp",
    "clocks",
    "perflevel",
    "maxpower",
    "power",
    "meminfo",
    "fwinfo",
    "productname",
)


def sections(node: SimNode, rng: random.Random, names: list[str]) -> str:
    """``rocm-smi --show...`` sections, each in its 90-column banner, between the log banners."""
    out = ["", "", _banner("ROCm System Management Interface", _SECTION_WIDTH)]
    for name in names:
        title, lines = _SECTIONS[name]
        out.append(_banner(title, _SECTION_WIDTH))
        for gpu in node.gpus:
            out += lines(node, gpu, rng)
        out.append(_banner("", _SECTION_WIDTH))
    out.append(_banner("End of ROCm SMI Log", _SECTION_WIDTH))
    return "\n".join(out) + "\n"


def rocm_smi(ctx: SimContext, argv: list[str]) -> SimReply:
    """Answer one ``rocm-smi`` invocation."""
    node, rng = ctx.node, ctx.rng
    duration = ctx.duration(rng.uniform(*_CALL_S))
    args = argv[1:]
    if "--version" in args:
        text = f"ROCM-SMI version: {node.stack.rocm_smi}\nROCM-SMI-LIB version: {node.stack.rocm_smi_lib}\n"
        return SimReply(text, duration_s=duration)
    if not node.driver_loaded:
        # rocm-smi logs the failure and still exits 0.
        return SimReply("", NO_DRIVER, 0, duration)
    unknown = [arg for arg in args if arg not in _OPTIONS and arg not in ("-a", "--showallinfo", "vram")]
    if unknown:
        return SimReply(
            "", f"usage: rocm-smi [-h] ...\nrocm-smi: error: unrecognized arguments: {unknown[0]}\n", 2, duration
        )
    if not args:
        return SimReply(concise(node, rng, legacy=node.stack.rocm_tuple < (6, 3)), duration_s=duration)
    names = list(_ALL) if {"-a", "--showallinfo"} & set(args) else []
    names += [_OPTIONS[arg] for arg in args if arg in _OPTIONS and _OPTIONS[arg] not in names]
    return SimReply(sections(node, rng, names), duration_s=duration)


# ---------------------------------------------------------------------------------------------
# rocminfo


def _kv(indent: int, label: str, value: object = "", pad: bool = True) -> str:
    """rocminfo's ``%-25s%-35s`` field, indented; some fields print their value unpadded."""
    text = str(value)
    return " " * indent + label.ljust(25) + (text.ljust(35) if pad and value != "" else text)


def _hex(value: int) -> str:
    return f"{value}(0x{value:x})"


def _pool(number: int, segment: str, size_kb: int, accessible: bool, allocatable: bool = True) -> list[str]:
    granule = "4KB" if allocatable else "0KB"
    return [
        _kv(4, f"Pool {number}"),
        _kv(6, "Segment:", segment),
        _kv(6, "Size:", f"{_hex(size_kb)} KB"),
        _kv(6, "Allocatable:", "TRUE" if allocatable else "FALSE"),
        _kv(6, "Alloc Granule:", granule),
        _kv(6, "Alloc Alignment:", granule),
        _kv(6, "Accessible by all:", "TRUE" if accessible else "FALSE"),
    ]


def _dims(indent: int, label: str, value: int) -> list[str]:
    return [" " * indent + label, *(_kv(indent + 2, axis, _hex(value)) for axis in "xyz")]


def _cpu_agent(node: SimNode, number: int, socket: int) -> list[str]:
    size_kb = node.host_memory_bytes // 2 // 1024 - 4096 * (socket + 1)
    lines = [_kv(0, "*******"), _kv(0, f"Agent {number}"), _kv(0, "*******")]
    lines += [
        _kv(2, "Name:", node.cpu_model),
        _kv(2, "Uuid:", "CPU-XX"),
        _kv(2, "Marketing Name:", node.cpu_model),
        _kv(2, "Vendor Name:", "CPU"),
        _kv(2, "Feature:", "None specified"),
        _kv(2, "Profile:", "FULL_PROFILE"),
        _kv(2, "Float Round Mode:", "NEAR"),
        _kv(2, "Max Queue Number:", _hex(0)),
        _kv(2, "Queue Min Size:", _hex(0)),
        _kv(2, "Queue Max Size:", _hex(0)),
        _kv(2, "Queue Type:", "MULTI"),
        _kv(2, "Node:", socket),
        _kv(2, "Device Type:", "CPU"),
        _kv(2, "Cache Info:"),
        _kv(4, "L1:", f"{_hex(32768)} KB"),
        _kv(2, "Chip ID:", _hex(0)),
        _kv(2, "ASIC Revision:", _hex(0)),
        _kv(2, "Cacheline Size:", _hex(64)),
        _kv(2, "Max Clock Freq. (MHz):", 3700),
        _kv(2, "BDFID:", 0),
        _kv(2, "Internal Node ID:", socket),
        _kv(2, "Compute Unit:", node.cores_per_socket * 2),
        _kv(2, "SIMDs per CU:", 0),
        _kv(2, "Shader Engines:", 0),
        _kv(2, "Shader Arrs. per Eng.:", 0),
        _kv(2, "WatchPts on Addr. Ranges:", 1),
        _kv(2, "Features:", "None", pad=False),
        _kv(2, "Pool Info:"),
        *_pool(1, "GLOBAL; FLAGS: FINE GRAINED", size_kb, True),
        *_pool(2, "GLOBAL; FLAGS: KERNARG, FINE GRAINED", size_kb, True),
        *_pool(3, "GLOBAL; FLAGS: COARSE GRAINED", size_kb, True),
        _kv(2, "ISA Info:"),
    ]
    return lines


def _gpu_agent(node: SimNode, gpu: SimGpu, number: int) -> list[str]:
    spec = node.spec
    gfx90a = spec.model is GpuModel.MI250X
    vram_kb = spec.vram_bytes // 1024 - 16384
    caches = [("L1:", 16 if gfx90a else 32), ("L2:", 8192 if gfx90a else 32768)]
    if not gfx90a:
        caches.append(("L3:", 262144))
    isa = f"amdgcn-amd-amdhsa--{spec.gfx_target}:sramecc+:xnack-"
    lines = [_kv(0, "*******"), _kv(0, f"Agent {number}"), _kv(0, "*******")]
    lines += [
        _kv(2, "Name:", spec.gfx_target),
        _kv(2, "Uuid:", "GPU-" + gpu.asic_serial[2:].lower()),
        _kv(2, "Marketing Name:", spec.market_name),
        _kv(2, "Vendor Name:", "AMD"),
        _kv(2, "Feature:", "KERNEL_DISPATCH"),
        _kv(2, "Profile:", "BASE_PROFILE"),
        _kv(2, "Float Round Mode:", "NEAR"),
        _kv(2, "Max Queue Number:", _hex(128)),
        _kv(2, "Queue Min Size:", _hex(64)),
        _kv(2, "Queue Max Size:", _hex(131072)),
        _kv(2, "Queue Type:", "MULTI"),
        _kv(2, "Node:", gpu.kfd_node),
        _kv(2, "Device Type:", "GPU"),
        _kv(2, "Cache Info:"),
        *(_kv(4, name, f"{_hex(kb)} KB") for name, kb in caches),
        _kv(2, "Chip ID:", _hex(int(spec.device_id, 16))),
        _kv(2, "ASIC Revision:", _hex(int(spec.revision_id, 16))),
        _kv(2, "Cacheline Size:", _hex(128 if gfx90a else 64)),
        _kv(2, "Max Clock Freq. (MHz):", spec.gfx_clock_max_mhz),
        _kv(2, "BDFID:", gpu.bus << 8),
        _kv(2, "Internal Node ID:", gpu.kfd_node),
        _kv(2, "Compute Unit:", spec.compute_units),
        _kv(2, "SIMDs per CU:", spec.simds_per_cu),
        _kv(2, "Shader Engines:", 8 if gfx90a else spec.xcds * 4),
        _kv(2, "Shader Arrs. per Eng.:", 1),
        _kv(2, "WatchPts on Addr. Ranges:", 4),
        _kv(2, "Coherent Host Access:", "FALSE"),
        _kv(2, "Features:", "KERNEL_DISPATCH ", pad=False),
        _kv(2, "Fast F16 Operation:", "TRUE"),
        _kv(2, "Wavefront Size:", _hex(64)),
        _kv(2, "Workgroup Max Size:", _hex(1024)),
        *_dims(2, "Workgroup Max Size per Dimension:", 1024),
        _kv(2, "Max Waves Per CU:", _hex(32)),
        _kv(2, "Max Work-item Per CU:", _hex(2048)),
        _kv(2, "Grid Max Size:", _hex(4294967295)),
        *_dims(2, "Grid Max Size per Dimension:", 4294967295),
        _kv(2, "Max fbarriers/Workgrp:", 32),
        _kv(2, "Packet Processor uCode::", gpu.firmware.get("CP_MEC1", "0")),
        _kv(2, "SDMA engine uCode::", gpu.firmware.get("SDMA0", "0")),
        _kv(2, "IOMMU Support::", "None"),
        _kv(2, "Pool Info:"),
        *_pool(1, "GLOBAL; FLAGS: COARSE GRAINED", vram_kb, False),
        *_pool(2, "GLOBAL; FLAGS: EXTENDED FINE GRAINED", vram_kb, False),
        *_pool(3, "GLOBAL; FLAGS: FINE GRAINED", vram_kb, False),
        *_pool(4, "GROUP", 64, False, allocatable=False),
        _kv(2, "ISA Info:"),
        _kv(4, "ISA 1"),
        _kv(6, "Name:", isa),
        _kv(6, "Machine Models:", "HSA_MACHINE_MODEL_LARGE"),
        _kv(6, "Profiles:", "HSA_PROFILE_BASE"),
        _kv(6, "Default Rounding Mode:", "NEAR"),
        _kv(6, "Default Rounding Mode:", "NEAR"),
        _kv(6, "Fast f16:", "TRUE"),
        _kv(6, "Workgroup Max Size:", _hex(1024)),
        *_dims(6, "Workgroup Max Size per Dimension:", 1024),
        _kv(6, "Grid Max Size:", _hex(4294967295)),
        *_dims(6, "Grid Max Size per Dimension:", 4294967295),
        _kv(6, "FBarrier Max Size:", 32),
    ]
    return lines


def rocminfo_text(node: SimNode) -> str:
    """Full ``rocminfo`` output: system attributes, 2 CPU agents, then the GPUs in KFD node order."""
    stack = node.stack
    lines = [
        "ROCk module is loaded",
        _kv(0, "=====================", pad=False),
        _kv(0, "HSA System Attributes", pad=False),
        _kv(0, "=====================", pad=False),
        _kv(0, "Runtime Version:", stack.hsa_runtime, pad=False),
        _kv(0, "Runtime Ext Version:", stack.hsa_ext_version, pad=False),
        _kv(0, "System Timestamp Freq.:", "1000.000000MHz", pad=False),
        _kv(0, "Sig. Max Wait Duration:", "18446744073709551615 (0xFFFFFFFFFFFFFFFF) (timestamp count)", pad=False),
        _kv(0, "Machine Model:", "LARGE"),
        _kv(0, "System Endianness:", "LITTLE"),
        _kv(0, "Mwaitx:", "DISABLED", pad=False),
        _kv(0, "DMAbuf Support:", "YES", pad=False),
        "",
        _kv(0, "=========="),
        _kv(0, "HSA Agents"),
        _kv(0, "=========="),
    ]
    for socket in range(node.cpu_sockets):
        lines += _cpu_agent(node, socket + 1, socket)
    for number, gpu in enumerate(sorted(node.gpus, key=lambda gpu: gpu.kfd_node), start=node.cpu_sockets + 1):
        lines += _gpu_agent(node, gpu, number)
    lines.append(_kv(0, "*** Done ***"))
    return "\n".join(lines) + "\n"


def rocminfo(ctx: SimContext, argv: list[str]) -> SimReply:
    """Answer one ``rocminfo`` invocation."""
    node = ctx.node
    duration = ctx.duration(ctx.rng.uniform(0.2, 0.8))
    if not node.driver_loaded:
        return SimReply("ROCk module is NOT loaded, possibly no GPU devices\n", "", 1, duration)
    return SimReply(rocminfo_text(node), duration_s=duration)


_PROGRAMS: dict[str, Callable[[SimContext, list[str]], SimReply]] = {"rocm-smi": rocm_smi, "rocminfo": rocminfo}


def handle(ctx: SimContext, argv: list[str]) -> SimReply:
    """Dispatch ``rocm-smi`` and ``rocminfo`` (both live in this module)."""
    return _PROGRAMS[program_name(argv)](ctx, argv)
