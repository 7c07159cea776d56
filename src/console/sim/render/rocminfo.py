"""``rocminfo`` on a simulated node: system attributes, CPU agents, then GPU agents in KFD node order.

Every field is printed as rocminfo's ``%-25s%-35s`` pair after its indent, so values carry trailing
spaces; a few fields (runtime version, features) print their value unpadded, as the real tool does.
"""

from __future__ import annotations

from console.sim.commands import SimContext, SimReply
from console.sim.models import SimGpu, SimNode
from console.sim.specs import GpuModel


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
