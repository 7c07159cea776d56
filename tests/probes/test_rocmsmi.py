"""rocm-smi parser: real outputs from Instinct nodes, the other documented layouts, CLI, and fuzzing.

The real samples only cover the concise table (6.3+/7.x) and ``-i``. The other views are written
below in rocm-smi's own layout (``GPU[n]\\t\\t: Key: value``, 90-character banners, two-line 6.0
header, ``--json`` strings), modelled on outputs published in ROCm issues, with values changed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console.cli import main
from console.probes import ParseError, Tool, parse_output, rocmsmi
from console.probes.base import to_text
from tests.conftest import REAL
from tests.probes.fuzz import FUZZ_SETTINGS, assert_total, mangled_outputs

SAMPLES = REAL / "rocm-smi"


def _banner(title: str = "", width: int = 90) -> str:
    """rocm-smi's printLogSpacer: the title centred in '=' (odd lengths get one more '=')."""
    if not title:
        return "=" * width
    title = f" {title} " + ("=" if len(f" {title} ") % 2 else "")
    side = "=" * ((width - len(title)) // 2)
    return side + title + side


def _section(title: str, *lines: str) -> str:
    return "\n".join([_banner(title), *lines, _banner()])


ALL_INFO = "\n".join(
    [
        "",
        "",
        _banner("ROCm System Management Interface"),
        _section("Version of System Component", "Driver version: 6.8.5"),
        _section(
            "ID",
            "GPU[0]\t\t: Device Name: \t\tAMD Instinct MI300X",
            "GPU[0]\t\t: Device ID: \t\t0x74a1",
            "GPU[0]\t\t: Device Rev: \t\t0x00",
            "GPU[0]\t\t: Subsystem ID: \t0x74a1",
            "GPU[0]\t\t: GUID: \t\t28851",
            "GPU[1]\t\t: Device Name: \t\tAMD Instinct MI300X",
            "GPU[1]\t\t: Device ID: \t\t0x74a1",
            "GPU[1]\t\t: Device Rev: \t\t0x00",
            "GPU[1]\t\t: Subsystem ID: \t0x74a1",
            "GPU[1]\t\t: GUID: \t\t4045",
        ),
        _section("Unique ID", "GPU[0]\t\t: Unique ID: 0x5c3a1e7fd0b1a2c3", "GPU[1]\t\t: Unique ID: N/A"),
        _section("VBIOS", "GPU[0]\t\t: VBIOS version: 113-M3000100-103", "GPU[1]\t\t: VBIOS version: 113-M3000100-103"),
        _section(
            "Temperature",
            "GPU[0]\t\t: Temperature (Sensor junction) (C): 41.0",
            "GPU[0]\t\t: Temperature (Sensor memory) (C): 35.0",
            "GPU[1]\t\t: Temperature (Sensor junction) (C): 44.0",
            "GPU[1]\t\t: Temperature (Sensor memory) (C): 37.0",
        ),
        _section(
            "Current clock frequencies",
            "GPU[0]\t\t: fclk clock level: 0: (1200Mhz)",
            "GPU[0]\t\t: mclk clock level: 0: (900Mhz)",
            "GPU[0]\t\t: sclk clock level: S: (131Mhz)",
            "GPU[0]\t\t: pcie clock level: 1 (32.0GT/s x16)",
            "GPU[1]\t\t: mclk clock level: 0: (900Mhz)",
            "GPU[1]\t\t: sclk clock level: 1: (2100Mhz)",
        ),
        _section("Current Fan Metric", "GPU[0]\t\t: Not supported", "GPU[1]\t\t: Not supported"),
        _section(
            "Show Performance Level", "GPU[0]\t\t: Performance Level: auto", "GPU[1]\t\t: Performance Level: auto"
        ),
        _section(
            "OverDrive Level",
            "GPU[0]\t\t: get_overdrive_level_sclk, Not supported on the given system",
            "GPU[1]\t\t: get_overdrive_level_sclk, Not supported on the given system",
        ),
        _section(
            "Power Cap",
            "GPU[0]\t\t: Max Graphics Package Power (W): 750.0",
            "GPU[1]\t\t: Max Graphics Package Power (W): 750.0",
        ),
        _section(
            "Power Consumption",
            "GPU[0]\t\t: Current Socket Graphics Package Power (W): 139.0",
            "GPU[1]\t\t: Current Socket Graphics Package Power (W): 612.0",
        ),
        _section(
            "Supported clock frequencies",
            "GPU[0]\t\t: ",
            "GPU[0]\t\t: Supported mclk frequencies on GPU0",
            "GPU[0]\t\t: 0: 900Mhz *",
            "GPU[0]\t\t: 1: 1100Mhz",
            "GPU[0]\t\t: 2: 1300Mhz",
            "GPU[0]\t\t: ",
            "GPU[0]\t\t: Supported sclk frequencies on GPU0",
            "GPU[0]\t\t: S: 131Mhz *",
            "GPU[0]\t\t: 0: 500Mhz",
            "GPU[0]\t\t: 1: 2100Mhz",
            "GPU[0]\t\t: ",
            "GPU[0]\t\t: Supported PCIe frequencies on GPU0",
            "GPU[0]\t\t: 0: 2.5GT/s x16",
            "GPU[0]\t\t: 1: 32.0GT/s x16 *",
            "GPU[0]\t\t: ",
            "-" * 90,
        ),
        _section(
            "% time GPU is busy",
            "GPU[0]\t\t: GPU use (%): 0",
            "GPU[0]\t\t: GFX Activity: 50288",
            "GPU[1]\t\t: GPU use (%): 97",
            "GPU[1]\t\t: GFX Activity: 9931240",
        ),
        _section(
            "Current Memory Use",
            "GPU[0]\t\t: GPU memory use (%): 0",
            "GPU[0]\t\t: Memory Activity: 0",
            "GPU[1]\t\t: GPU memory use (%): 41",
            "GPU[1]\t\t: Memory Activity: 88210",
        ),
        _section("PCIe Replay Counter", "GPU[0]\t\t: PCIe Replay Count: 0", "GPU[1]\t\t: PCIe Replay Count: 12"),
        _section("Serial Number", "GPU[0]\t\t: Serial Number: 692312000101", "GPU[1]\t\t: Serial Number: N/A"),
        _section(
            "KFD Processes",
            "KFD process information:",
            "PID    \tPROCESS NAME\tGPU(s)\tVRAM USED\tSDMA USED\tCU OCCUPANCY\t",
            "2212871\tpython3     \t1     \t4194304  \t0        \t76          \t",
            "2212990\tUNKNOWN     \t0     \tUNKNOWN  \tUNKNOWN  \tUNKNOWN     \t",
        ),
        _section("GPUs Indexed by PID", "PID 2212871 is using 1 DRM device(s)", "1 "),
        _section(
            "GPU Memory clock frequencies and voltages",
            "GPU[0]\t\t: OD_SCLK:",
            "GPU[0]\t\t: 0: 500Mhz",
            "GPU[0]\t\t: 1: 2100Mhz",
        ),
        _section(
            "Current voltage",
            "GPU[0]\t\t: get_volt_metric, Not supported on the given system",
            "GPU[1]\t\t: get_volt_metric, Not supported on the given system",
        ),
        _section("PCI Bus ID", "GPU[0]\t\t: PCI Bus: 0000:0C:00.0", "GPU[1]\t\t: PCI Bus: 0000:22:00.0"),
        _section(
            "Firmware Information",
            "GPU[0]\t\t: get_firmware_version_ASD, Not supported on the given system",
            "GPU[0]\t\t: MEC firmware version: \t155",
            "GPU[0]\t\t: SMC firmware version: \t00.85.112.00",
            "GPU[0]\t\t: VCN firmware version: \t0x0611300c",
            "GPU[1]\t\t: MEC firmware version: \t155",
        ),
        _section(
            "Product Info",
            "GPU[0]\t\t: Card Series: \t\tAMD Instinct MI300X OAM",
            "GPU[0]\t\t: Card Model: \t\t0x74a1",
            "GPU[0]\t\t: Card Vendor: \t\tAdvanced Micro Devices, Inc. [AMD/ATI]",
            "GPU[0]\t\t: Card SKU: \t\tM3000100",
            "GPU[0]\t\t: Node ID: \t\t2",
            "GPU[0]\t\t: GFX Version: \t\tgfx942",
            "GPU[1]\t\t: Card Series: \t\tAMD Instinct MI300X OAM",
            "GPU[1]\t\t: Node ID: \t\t3",
            "GPU[1]\t\t: GFX Version: \t\tgfx942",
        ),
        _section("Pages Info"),
        _section(
            "Consumed Energy",
            "GPU[0]\t\t: Energy counter: 5104503354501",
            "GPU[0]\t\t: Accumulated Energy (uJ): 78098902297472.05",
        ),
        _section(
            "Current Compute Partition", "GPU[0]\t\t: Compute Partition: SPX", "GPU[1]\t\t: Compute Partition: SPX"
        ),
        _section(
            "Current Memory Partition", "GPU[0]\t\t: Memory Partition: NPS1", "GPU[1]\t\t: Memory Partition: NPS1"
        ),
        _banner("End of ROCm SMI Log"),
        "",
    ]
)

# ROCm 6.0-6.2: model and revision in brackets, a second line per GPU with the name (cut at 20 chars).
CONCISE_60 = """
========================================= ROCm System Management Interface =========================================
=================================================== Concise Info ===================================================
Device  [Model : Revision]    Temp        Power     Partitions      SCLK    MCLK    Fan  Perf  PwrCap  VRAM%  GPU%
        Name (20 chars)       (Junction)  (Socket)  (Mem, Compute)
====================================================================================================================
0       [0x74a1 : 0x00]       35.0°C      133.0W    NPS1, SPX       131Mhz  900Mhz  0%   auto  750.0W    0%   0%
        AMD Instinct MI300X
1       [0x74a5 : 0x00]       37.0°C      131.0W    NPS1, CPX       132Mhz  900Mhz  0%   auto  750.0W    0%   0%
        AMD Instinct MI325X OAM
====================================================================================================================
=============================================== End of ROCm SMI Log ================================================
"""

# ROCm 5.x on an MI250X: the secondary die has no power reading and no cap of its own.
CONCISE_5X = """
======================= ROCm System Management Interface =======================
================================= Concise Info =================================
GPU  Temp (DieEdge)  AvgPwr  SCLK    MCLK     Fan  Perf    PwrCap  VRAM%  GPU%
0    35.0c           90.0W   800Mhz  1600Mhz  0%   manual  560.0W    0%   0%
1    36.0c           N/A     800Mhz  1600Mhz  0%   manual  0.0W      0%   0%
GPU[2]\t\t: get_power_cap, Not supported on the given system
2    34.0c           88.0W   None    1600Mhz  0%   auto    Unsupported  3%  100%
================================================================================
============================= End of ROCm SMI Log ==============================
"""

SHOWHW = """
========================================== ROCm System Management Interface ==========================================
=============================================== Concise Hardware Info ================================================
GPU  NODE  DID     GUID   GFX VER  GFX RAS  SDMA RAS  UMC RAS  VBIOS             BUS           PARTITION ID
0    2     0x74a1  28851  gfx942   ENABLED  ENABLED   ENABLED  113-M3000100-103  0000:0C:00.0  0
1    3     0x74a1  4045   gfx942   ENABLED  ENABLED   ENABLED  113-M3000100-103  0000:22:00.0  0
======================================================================================================================
================================================ End of ROCm SMI Log =================================================
"""

TOPOLOGY = """

======================= ROCm System Management Interface =======================
=========================== Weight between two GPUs ============================
       GPU0         GPU1         GPU2         GPU3
GPU0   0            15           15           N/A
GPU1   15           0            15           15
GPU2   15           15           0            15
GPU3   N/A          15           15           0

============================ Hops between two GPUs =============================
       GPU0         GPU1         GPU2         GPU3
GPU0   0            1            1            1
GPU1   1            0            1            1
GPU2   1            1            0            1
GPU3   1            1            1            0

========================== Link Type between two GPUs ==========================
       GPU0         GPU1         GPU2         GPU3
GPU0   0            XGMI         XGMI         XXXX
GPU1   XGMI         0            XGMI         XGMI
GPU2   XGMI         XGMI         0            PCIE
GPU3   XXXX         XGMI         PCIE         0

================================== Numa Nodes ==================================
GPU[0]\t\t: (Topology) Numa Node: 0
GPU[0]\t\t: (Topology) Numa Affinity: 0
GPU[1]\t\t: (Topology) Numa Node: 0
GPU[1]\t\t: (Topology) Numa Affinity: 0
GPU[2]\t\t: (Topology) Numa Node: 1
GPU[2]\t\t: (Topology) Numa Affinity: 1
GPU[3]\t\t: (Topology) Numa Node: 1
GPU[3]\t\t: (Topology) Numa Affinity: 1
============================= End of ROCm SMI Log ==============================
"""

JSON_ALL = json.dumps(
    {
        "card0": {
            "Device Name": "AMD Instinct MI300X",
            "Device ID": "0x74a1",
            "GUID": "28851",
            "Temperature (Sensor junction) (C)": "52.0",
            "Temperature (Sensor memory) (C)": "40.0",
            "sclk clock speed:": "(2100Mhz)",
            "sclk clock level:": "1",
            "mclk clock speed:": "(1300Mhz)",
            "Current Socket Graphics Package Power (W)": "702.0",
            "Max Graphics Package Power (W)": "750.0",
            "GPU use (%)": "100",
            "GPU Memory Allocated (VRAM%)": "87",
            "PCI Bus": "0000:0C:00.0",
            "MEC firmware version": "155",
            "Serial Number": "N/A",
            "Compute Partition": "SPX",
        },
        "card1": {
            "Device Name": "AMD Instinct MI300X",
            "Device ID": "N/A",
            "GUID": "4045",
            "Temperature (Sensor junction) (C)": "N/A",
            "Current Socket Graphics Package Power (W)": "N/A",
            "PCI Bus": "0000:22:00.0",
        },
        "system": {
            "Driver version": "6.8.5",
            "(Topology) Weight between DRM devices 0 and 1": "15",
            "(Topology) Link type between DRM devices 0 and 1": "XGMI",
        },
    },
    indent=4,
)

# Real runs print noise before the JSON (here a deprecation warning), and sometimes no JSON at all.
JSON_WITH_NOISE = "WARNING: rocm-smi is deprecated; use amd-smi\n" + JSON_ALL + "\n"
JSON_NO_DATA = "WARNING: No JSON data to report\n"
VERSION = "ROCM-SMI version: 3.0.0+1d5b6b5\nROCM-SMI-LIB version: 7.5.0\n"
# Logged before rocm-smi sets its log format, hence Python's default "LEVEL:logger:" prefix.
DRIVER_NOT_LOADED = "ERROR:root:Driver not initialized (amdgpu not found in modules)\n"
CRASHED = "\n".join(
    [
        _banner("ROCm System Management Interface"),
        _section("ID", "GPU[0]\t\t: Device ID: \t\t0x74a1"),
        "Traceback (most recent call last):",
        '  File "/opt/rocm/libexec/rocm_smi/rocm_smi.py", line 3947, in <module>',
        "OSError: [Errno 24] Too many open files",
    ]
)


def _read(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


_PATH_PART = re.compile(r"\.?(\w+)|\[(-?\d+)\]|\['([^']*)'\]")


def dotted(obj: Any, path: str) -> Any:
    """Follow ``a.b[0]['key']`` through models, lists and dicts (shared with the rocminfo tests)."""
    for attr, index, key in _PATH_PART.findall(path):
        obj = getattr(obj, attr) if attr else obj[int(index)] if index else obj[key]
    return obj


# (source, kind, ok, summary subset, {dotted path into data: value})
CASES: list[tuple[str, str, bool, dict[str, Any], dict[str, Any]]] = [
    (
        "concise-mi300x-8gpu-rocm642.txt",
        "concise",
        True,
        {"gpu_count": 8, "device_ids": ["0x74a1"], "power_caps_w": [750.0], "compute_partitions": ["SPX"]},
        {
            "layout": "concise-6.3",
            "temp_sensor": "junction",
            "power_kind": "socket",
            "devices[0].gpu.identity.kfd_node": 2,
            "devices[0].gpu.identity.kfd_gpu_id": 55354,
            "devices[0].gpu.metrics.hotspot_temp_c": 51.0,
            "devices[0].gpu.metrics.power_w": 152.0,
            "devices[3].gpu.metrics.gfx_clock_mhz": 133.0,
            "devices[5].gpu.identity.kfd_gpu_id": 705,
            "devices[7].gpu.metrics.mem_clock_mhz": 900.0,
            "devices[7].gpu.identity.memory_partition": "NPS1",
            "devices[7].perf_level": "auto",
        },
    ),
    (
        "concise-mi350x-8gpu-rocm70.txt",
        "concise",
        True,
        {"gpu_count": 8, "device_ids": ["0x75a0"], "power_caps_w": [1000.0], "max_temp_c": 67.0},
        {
            "devices[0].gpu.identity.kfd_node": 3,
            "devices[3].gpu.identity.kfd_node": 2,
            "devices[6].gpu.identity.kfd_gpu_id": 5014,
            "devices[0].gpu.metrics.power_w": 256.0,
            "devices[0].gpu.metrics.mem_clock_mhz": 1900.0,
        },
    ),
    (
        "concise-mi355x-8gpu-under-load-k8s-tab-artifacts.txt",
        "concise",
        True,
        {"gpu_count": 8, "device_ids": ["0x75a3"], "power_caps_w": [1400.0], "total_power_w": 10055.0},
        {
            "devices[0].gpu.metrics.power_w": 1224.0,
            "devices[7].gpu.metrics.power_w": 1317.0,
            "devices[0].gpu.metrics.gfx_clock_mhz": 2358.0,
            "devices[4].gpu.metrics.gfx_util_pct": 100.0,
            "devices[0].gpu.metrics.gfx_util_pct": 93.0,
            "devices[2].vram_used_pct": 98.0,
            "versions.rocm": "7.1.2",
            "versions.amdsmi_tool": "24.6.2+2b02a07",
            "versions.amdsmi_lib": "24.6.2.0",
        },
    ),
    (
        # TPX MI300A: rows 1-2 are secondary partitions printed as N/A. They are listed (device_count 3)
        # but not counted as GPUs (gpu_count 1): they carry no reading, and counting them would let a
        # GPU-count check pass on data that is not there. partial_count says how many there were.
        "concise-mi300a-tpx-NA.txt",
        "concise",
        True,
        {"gpu_count": 1, "device_count": 3, "partial_count": 2, "device_ids": ["0x74a0"], "power_caps_w": [550.0]},
        {
            "devices[0].gpu.identity.compute_partition": "TPX",
            "devices[0].gpu.metrics.hotspot_temp_c": 30.0,
            "devices[0].gpu.metrics.power_w": 120.0,
            "devices[0].gpu.metrics.gfx_clock_mhz": 94.0,
            "devices[0].gpu.metrics.mem_clock_mhz": 1300.0,
            "devices[0].shown_in_full": True,
            "devices[1].shown_in_full": False,
            "devices[1].gpu.identity.device_id": None,
            "devices[1].gpu.identity.unavailable['device_id']": "N/A",
            "devices[1].gpu.identity.partition_id": 1,
            "devices[1].gpu.identity.kfd_gpu_id": 8689,
            "devices[1].gpu.metrics.power_w": None,
            "devices[1].gpu.metrics.unavailable['power_w']": "N/A",
            "devices[2].perf_level": None,
            "devices[2].unavailable['perf_level']": "n/a",
            "devices[2].gpu.identity.kfd_gpu_id": 43505,
        },
    ),
    (
        # DPX MI300X, rocm-smi 6.4.1: the second partition of each GPU prints N/A for its IDs.
        "showid-mi300x-dpx-16part-NA.txt",
        "showid",
        True,
        {"gpu_count": 8, "device_count": 16, "partial_count": 8, "device_ids": ["0x74a1"]},
        {
            "layout": "keyed",
            "devices[0].gpu.identity.market_name": "AMD Instinct MI300X",
            "devices[0].gpu.identity.device_id": "0x74a1",
            "devices[0].gpu.identity.revision_id": "0x00",
            "devices[0].gpu.identity.subsystem_id": "0x74a1",
            "devices[0].gpu.identity.kfd_gpu_id": 10931,
            "devices[1].gpu.identity.kfd_gpu_id": 6834,
            "devices[1].gpu.identity.unavailable['subsystem_id']": "N/A",
            "devices[1].shown_in_full": False,
            "devices[15].gpu.identity.kfd_gpu_id": 37627,
        },
    ),
    (
        "inline:ALL_INFO",
        "all",
        True,
        {"gpu_count": 2, "processes": 2, "power_caps_w": [750.0], "total_power_w": 751.0},
        {
            "versions.amdgpu_driver": "6.8.5",
            "devices[0].gpu.identity.bdf": "0000:0c:00.0",
            "devices[0].gpu.identity.uuid": "0x5c3a1e7fd0b1a2c3",
            "devices[1].gpu.identity.unavailable['uuid']": "N/A",
            "devices[0].gpu.identity.vbios_version": "113-M3000100-103",
            "devices[0].gpu.identity.product_name": "AMD Instinct MI300X OAM",
            "devices[0].gpu.identity.gfx_target": "gfx942",
            "devices[1].gpu.identity.kfd_node": 3,
            "devices[0].gpu.metrics.hotspot_temp_c": 41.0,
            "devices[0].gpu.metrics.mem_temp_c": 35.0,
            "devices[0].gpu.metrics.gfx_clock_mhz": 131.0,
            "devices[1].gpu.metrics.gfx_clock_mhz": 2100.0,
            "devices[0].gpu.metrics.pcie.speed_gts": 32.0,
            "devices[0].gpu.metrics.pcie.width": 16,
            "devices[1].gpu.metrics.pcie.replay_count": 12,
            "devices[1].gpu.metrics.power_w": 612.0,
            "devices[1].gpu.metrics.gfx_util_pct": 97.0,
            "devices[1].gpu.metrics.mem_util_pct": 41.0,
            "devices[0].gpu.metrics.energy_j": pytest.approx(78098902.297, rel=1e-9),
            "devices[0].gpu.firmware['MEC']": "155",
            "devices[0].gpu.firmware['SMC']": "00.85.112.00",
            "devices[0].gpu.identity.serial": "692312000101",
            "devices[0].unsupported": [
                "Current Fan Metric",
                "get_overdrive_level_sclk",
                "get_volt_metric",
                "get_firmware_version_ASD",
            ],
            "devices[0].supported_clocks['sclk'][0].level": "S",
            "devices[0].supported_clocks['sclk'][0].current": True,
            "devices[0].supported_clocks['sclk'][2].mhz": 2100.0,
            "devices[0].supported_clocks['PCIe'][1].text": "32.0GT/s x16",
            "devices[0].supported_clocks['PCIe'][1].mhz": None,
            "devices[0].properties['GFX Activity']": "50288",
            "processes[0].pid": 2212871,
            "processes[0].name": "python3",
            "processes[0].vram_bytes": 4194304,
            "processes[0].cu_occupancy": 76,
            "processes[1].name": None,
            "processes[1].vram_bytes": None,
        },
    ),
    (
        "inline:CONCISE_60",
        "concise",
        True,
        {"gpu_count": 2, "device_ids": ["0x74a1", "0x74a5"], "compute_partitions": ["CPX", "SPX"]},
        {
            "layout": "concise-6.0",
            "devices[0].gpu.identity.revision_id": "0x00",
            "devices[0].gpu.identity.market_name": "AMD Instinct MI300X",
            "devices[1].gpu.identity.market_name": None,
            "devices[1].properties['Name (20 chars)']": "AMD Instinct MI325X OAM",
            "devices[1].gpu.metrics.hotspot_temp_c": 37.0,
            "devices[1].gpu.identity.partition_id": None,
        },
    ),
    (
        "inline:CONCISE_5X",
        "concise",
        True,
        {"gpu_count": 3, "power_caps_w": [560.0], "max_temp_c": 36.0},
        {
            "layout": "concise-5.x",
            "temp_sensor": "edge",
            "power_kind": "average",
            "devices[0].gpu.metrics.edge_temp_c": 35.0,
            "devices[0].gpu.metrics.gfx_clock_mhz": 800.0,
            "devices[0].perf_level": "manual",
            "devices[1].gpu.metrics.power_w": None,
            "devices[1].gpu.metrics.power_cap_w": None,
            "devices[1].gpu.metrics.unavailable['power_cap_w']": "0 W reported: no power cap on this device",
            "devices[2].gpu.metrics.gfx_clock_mhz": None,
            "devices[2].gpu.metrics.unavailable['gfx_clock_mhz']": "None",
            "devices[2].gpu.metrics.unavailable['power_cap_w']": "Unsupported",
            "devices[2].unsupported": ["get_power_cap"],
            "devices[2].vram_used_pct": 3.0,
        },
    ),
    (
        "inline:SHOWHW",
        "concise",
        True,
        {"gpu_count": 2, "device_ids": ["0x74a1"]},
        {
            "layout": "showhw",
            "devices[1].gpu.identity.bdf": "0000:22:00.0",
            "devices[1].gpu.identity.kfd_gpu_id": 4045,
            "devices[0].gpu.identity.gfx_target": "gfx942",
            "devices[0].gpu.identity.vbios_version": "113-M3000100-103",
            "devices[0].gpu.ecc.blocks[2].block": "UMC",
            "devices[0].gpu.ecc.blocks[2].state": "ENABLED",
        },
    ),
    (
        "inline:TOPOLOGY",
        "topology",
        True,
        {"topology_links": 12},
        {
            "topology[0].src_index": 0,
            "topology[0].dst_index": 1,
            "topology[0].weight": 15,
            "topology[0].hops": 1,
            "topology[0].link_type": "XGMI",
            "topology[2].weight": None,
            "topology[2].link_type": None,
            "topology[2].unavailable": {"weight": "N/A", "link_type": "XXXX: rocm-smi could not read the link type"},
            "topology[8].link_type": "PCIE",  # GPU2 -> GPU3
            "devices[2].numa_node": 1,
            "devices[3].numa_affinity": 1,
        },
    ),
    (
        "inline:JSON_WITH_NOISE",
        "json",
        True,
        {"gpu_count": 1, "device_count": 2, "partial_count": 1, "topology_links": 2},
        {
            "layout": "json",
            "devices[0].gpu.metrics.hotspot_temp_c": 52.0,
            "devices[0].gpu.metrics.gfx_clock_mhz": 2100.0,
            "devices[0].gpu.metrics.mem_clock_mhz": 1300.0,
            "devices[0].gpu.metrics.power_w": 702.0,
            "devices[0].vram_used_pct": 87.0,
            "devices[0].gpu.identity.bdf": "0000:0c:00.0",
            "devices[0].gpu.identity.unavailable['serial']": "N/A",
            "devices[0].gpu.firmware['MEC']": "155",
            "devices[1].gpu.identity.bdf": "0000:22:00.0",
            "devices[1].gpu.metrics.unavailable['hotspot_temp_c']": "N/A",
            "versions.amdgpu_driver": "6.8.5",
            "topology[1].src_index": 1,
            "topology[1].weight": 15,
            "topology[1].link_type": "XGMI",
        },
    ),
]

# Outputs where rocm-smi itself failed: parsed, ok=False, the tool's own lines in errors.
FAILURES: list[tuple[str, str, list[str]]] = [
    ("inline:DRIVER_NOT_LOADED", "all", [DRIVER_NOT_LOADED.strip()]),
    (
        "inline:CRASHED",
        "showid",
        [
            "Traceback (most recent call last):",
            "OSError: [Errno 24] Too many open files",
            "output ends before 'End of ROCm SMI Log': rocm-smi did not finish",
        ],
    ),
]


def _source(name: str) -> str:
    if name.startswith("inline:"):
        value = globals()[name.removeprefix("inline:")]
        assert isinstance(value, str)
        return value
    return _read(name)


@pytest.mark.parametrize(("source", "kind", "ok", "summary", "fields"), CASES, ids=[c[0] for c in CASES])
def test_parses_sample(source: str, kind: str, ok: bool, summary: dict[str, Any], fields: dict[str, Any]) -> None:
    result = parse_output(_source(source), tool=Tool.ROCM_SMI)
    assert (result.tool, result.kind, result.ok) == (Tool.ROCM_SMI, kind, ok), result.errors
    assert {key: result.summary[key] for key in summary} == summary
    for path, expected in fields.items():
        assert dotted(result.data, path) == expected, path


@pytest.mark.parametrize(("source", "kind", "errors"), FAILURES, ids=[f[0] for f in FAILURES])
def test_tool_failures_are_parsed_not_ok(source: str, kind: str, errors: list[str]) -> None:
    result = parse_output(_source(source), tool=Tool.ROCM_SMI)
    assert (result.kind, result.ok) == (kind, False)
    assert result.errors == errors


def test_version_output() -> None:
    result = parse_output(VERSION, tool=Tool.ROCM_SMI)
    assert (result.kind, result.ok, result.tool_version) == ("version", True, "3.0.0+1d5b6b5")
    assert result.data is not None and result.data.model_dump()["system"]["ROCM-SMI-LIB version"] == "7.5.0"


def test_no_json_data_is_an_empty_answer_not_a_failure() -> None:
    # rocm-smi --showpids --json prints this when no process holds a GPU: nothing to report is fine.
    result = parse_output(JSON_NO_DATA, tool=Tool.ROCM_SMI)
    assert (result.kind, result.ok, result.errors) == ("json", True, [])
    assert result.warnings == [JSON_NO_DATA.strip()]
    assert (result.summary["gpu_count"], result.summary["processes"]) == (0, 0)


@pytest.mark.parametrize(
    ("source", "kind"),
    [
        ("inline:JSON_NO_DATA", "json"),
        ("inline:VERSION", "version"),
        ("concise-mi300x-8gpu-rocm642.txt", "concise"),
        ("concise-mi355x-8gpu-under-load-k8s-tab-artifacts.txt", "concise"),
        ("showid-mi300x-dpx-16part-NA.txt", "showid"),
        ("inline:ALL_INFO", "all"),
        ("inline:TOPOLOGY", "topology"),
        ("inline:JSON_ALL", "json"),
        ("inline:DRIVER_NOT_LOADED", "all"),
    ],
)
def test_detects_kind(source: str, kind: str) -> None:
    found = rocmsmi.detect(_source(source))
    assert found is not None and (found.tool, found.kind) == (Tool.ROCM_SMI, kind)


def test_concise_table_followed_by_amdsmi_line_is_rocm_smi_with_high_confidence() -> None:
    found = rocmsmi.detect(_read("concise-mi355x-8gpu-under-load-k8s-tab-artifacts.txt"))
    assert found is not None and found.confidence >= 0.9


def test_missing_footer_means_the_run_did_not_finish() -> None:
    text = _read("concise-mi300x-8gpu-rocm642.txt")
    cut = text[: text.index("5       7")]
    result = parse_output(cut, tool=Tool.ROCM_SMI)
    assert not result.ok
    assert result.errors == ["output ends before 'End of ROCm SMI Log': rocm-smi did not finish"]
    assert result.summary["gpu_count"] == 5


def test_lost_padding_crlf_and_launcher_prefixes_do_not_change_the_result() -> None:
    text = _read("concise-mi350x-8gpu-rocm70.txt")
    expected = parse_output(text, tool=Tool.ROCM_SMI).model_dump()
    mangled = "\r\n".join(f"[1,0]<stdout>:{line.rstrip()}" for line in text.split("\n"))
    assert parse_output(mangled.encode(), tool=Tool.ROCM_SMI).model_dump() == expected


def test_secondary_partition_rows_keep_their_identity_but_no_readings() -> None:
    # What the N/A rows are: KFD node and GUID are real, every reading is None with the tool's word.
    device = parse_output(_read("concise-mi300a-tpx-NA.txt"), tool=Tool.ROCM_SMI).data.devices[2]  # type: ignore[union-attr]
    assert device.gpu.identity.kfd_node == 3
    assert device.gpu.metrics is not None
    assert device.gpu.metrics.hotspot_temp_c is None
    assert device.gpu.metrics.unavailable["hotspot_temp_c"] == "N/A"
    assert device.gpu.metrics.gfx_util_pct is None


@pytest.mark.parametrize(
    "text",
    ["", "hello world\n", "Device  Node  Temp\n", '{"gpu_data": []}', "GPU: 0\n    BDF: 0000:0c:00.0\n"],
)
def test_unrelated_text_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError) as info:
        parse_output(text, tool=Tool.ROCM_SMI)
    assert "expected rocm-smi output" in info.value.reason


def test_broken_json_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="not valid JSON"):
        parse_output(JSON_ALL[: len(JSON_ALL) // 2], tool=Tool.ROCM_SMI)


def test_unknown_kind_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="unknown rocm-smi kind"):
        parse_output(_read("concise-mi300x-8gpu-rocm642.txt"), tool=Tool.ROCM_SMI, kind="bogus")


def test_kind_aliases_are_accepted() -> None:
    result = parse_output(TOPOLOGY, tool=Tool.ROCM_SMI, kind="showtoponuma")
    assert result.kind == "topology"


@pytest.mark.parametrize("name", sorted(p.name for p in SAMPLES.iterdir()))
def test_detection_across_all_parsers_picks_rocm_smi(name: str) -> None:
    assert parse_output(_read(name)).tool is Tool.ROCM_SMI


def _cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["parse", *argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)  # exactly one JSON object, or json.loads fails


def test_cli_prints_one_json_object_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, obj = _cli_json(capsys, str(SAMPLES / "concise-mi300x-8gpu-rocm642.txt"), "--as", "rocm-smi")
    assert code == 0
    assert (obj["tool"], obj["kind"], obj["ok"]) == ("rocm-smi", "concise", True)
    assert obj["summary"]["gpu_count"] == 8
    assert obj["data"]["devices"][0]["gpu"]["identity"]["device_id"] == "0x74a1"


def test_cli_exits_1_when_rocm_smi_failed(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text(DRIVER_NOT_LOADED)
    code, obj = _cli_json(capsys, str(path), "--as", "rocm-smi")
    assert code == 1
    assert obj["errors"] == [DRIVER_NOT_LOADED.strip()]


def test_cli_exits_2_on_unreadable_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("not a gpu tool\n")
    assert main(["parse", str(path), "--as", "rocm-smi", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "expected rocm-smi output" in captured.err


INLINE = (
    "ALL_INFO",
    "CONCISE_60",
    "CONCISE_5X",
    "SHOWHW",
    "TOPOLOGY",
    "JSON_ALL",
    "JSON_NO_DATA",
    "CRASHED",
    "VERSION",
)


@pytest.fixture(scope="session")
def fuzz_samples(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Real samples plus the inline layouts, as files for the shared mangling strategy."""
    folder = tmp_path_factory.mktemp("rocm-smi-inline")
    for name in INLINE:
        (folder / name).write_text(globals()[name], encoding="utf-8")
    return sorted(SAMPLES.iterdir()) + sorted(folder.iterdir())


@FUZZ_SETTINGS
@given(data=st.data(), kind=st.sampled_from([None, *rocmsmi.KINDS]))
def test_any_input_gives_a_result_or_a_parse_error(
    fuzz_samples: list[Path], data: st.DataObject, kind: str | None
) -> None:
    raw = data.draw(mangled_outputs(fuzz_samples))
    assert_total(rocmsmi.parse, to_text(raw), kind)
