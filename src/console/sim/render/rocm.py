"""``rocm-smi`` on a simulated node (``rocminfo`` lives in ``render.rocminfo``; both dispatch from here).

The concise table (ROCm 6.0-6.2 layout with a name line per GPU, or the 6.3+ layout with
Node/IDs columns), ``-i``/``--showid``, ``--showtoponuma``, ``-a`` (a subset of its sections) and
``--version``. Columns are as wide as their widest cell plus two; rows are padded to the table width.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from console.sim.commands import SimContext, SimReply, program_name
from console.sim.models import SimGpu, SimNode
from console.sim.render.amdsmi_metric import Reading
from console.sim.render.amdsmi_sections import MB
from console.sim.render.rocminfo import rocminfo
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


_PROGRAMS: dict[str, Callable[[SimContext, list[str]], SimReply]] = {"rocm-smi": rocm_smi, "rocminfo": rocminfo}


def handle(ctx: SimContext, argv: list[str]) -> SimReply:
    """Dispatch ``rocm-smi`` and ``rocminfo`` (both live in this module)."""
    return _PROGRAMS[program_name(argv)](ctx, argv)
