"""amd-smi forms the real samples do not cover, written with the key names the amd-smi CLI source prints.

Each input follows ``amdsmi_cli/amdsmi_commands.py`` / ``amdsmi_logger.py`` (ROCm 6.x and 7.x): key names,
value/unit objects, ``xcp_N`` dicts, text rendering (upper-case keys, 4-space nesting, repeated keys
for lists of dicts) and table headers.
"""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console.model.amdsmi import AmdSmiForm, AmdSmiResult
from console.model.gpu import LinkStatus
from console.probes import ParseError, Tool, parse_output
from console.probes.amdsmi import detect, parse
from console.probes.amdsmi.json_output import normalise
from console.probes.values import to_count, to_percent


def _result(text: str) -> AmdSmiResult:
    parsed = parse(text)
    assert isinstance(parsed.data, AmdSmiResult)
    return parsed.data


def _vu(value: object, unit: str) -> dict[str, object]:
    return {"value": value, "unit": unit}


METRIC_7X = {
    "gpu_data": [
        {
            "gpu": 0,
            "usage": {
                "gfx_activity": _vu(97, "%"),
                "umc_activity": _vu(41, "%"),
                "mm_activity": "N/A",
                "vcn_activity": [_vu(0, "%"), "N/A", "N/A", "N/A"],
                "jpeg_activity": ["N/A"],
                "gfx_busy_inst": {"xcp_0": [_vu(96, "%"), _vu(98, "%"), "N/A"], "xcp_1": ["N/A", "N/A", "N/A"]},
            },
            "power": {
                "socket_power": _vu(712, "W"),
                "gfx_voltage": "N/A",
                "throttle_status": "N/A",
                "power_management": "ENABLED",
            },
            "clock": {
                "gfx_0": {"clk": _vu(2100, "MHz"), "min_clk": _vu(500, "MHz")},
                "mem_0": {"clk": _vu(1300, "MHz")},
            },
            "temperature": {"edge": "N/A", "hotspot": _vu(71, "C"), "mem": _vu(58, "C")},
            "pcie": {
                "width": 16,
                "speed": _vu(32, "GT/s"),
                "bandwidth": _vu(1234, "Mb/s"),
                "replay_count": 3,
                "l0_to_recovery_count": 120,
                "replay_roll_over_count": 0,
                "nak_sent_count": 0,
                "nak_received_count": "N/A",
            },
            "ecc": {
                "total_correctable_count": 5,
                "total_uncorrectable_count": 1,
                "total_deferred_count": 3,
                "cache_correctable_count": 2,
                "cache_uncorrectable_count": 0,
            },
            "ecc_blocks": {
                "UMC": {"correctable_count": 3, "uncorrectable_count": 1, "deferred_count": 3},
                "SDMA": {"correctable_count": 0, "uncorrectable_count": 0, "deferred_count": 0},
            },
            "mem_usage": {"total_vram": _vu(196592, "MB"), "used_vram": _vu(4976, "MB"), "free_vram": "N/A"},
            "energy": {"total_energy_consumption": _vu(123456.789, "J")},
            "throttle": {
                "accumulation_counter": 1000,
                "ppt_accumulated": 20,
                "ppt_violation_status": {"xcp_0": ["ACTIVE"]},
                "ppt_violation_activity": _vu(12, "%"),
                "socket_thermal_violation_activity": "N/A",
                "low_utilization_violation_activity": {"xcp_0": [_vu(3, "%")], "xcp_1": [_vu(7, "%")]},
            },
        }
    ]
}


def test_7x_metric_json_value_objects_na_and_xcp() -> None:
    parsed = parse(json.dumps(METRIC_7X))
    assert (parsed.kind, parsed.ok) == ("metric", True)
    result = _result(json.dumps(METRIC_7X))
    assert result.form is AmdSmiForm.JSON_GPU_DATA
    metrics = result.gpus[0].metrics
    assert metrics is not None
    assert (metrics.power_w, metrics.gfx_clock_mhz, metrics.mem_clock_mhz) == (712, 2100, 1300)
    assert (metrics.hotspot_temp_c, metrics.mem_temp_c, metrics.edge_temp_c) == (71, 58, None)
    assert metrics.unavailable["edge_temp_c"] == "N/A" and metrics.unavailable["throttle_status"] == "N/A"
    assert (metrics.gfx_util_pct, metrics.mem_util_pct, metrics.energy_j) == (97, 41, 123456.789)
    assert (metrics.vram_total_bytes, metrics.vram_used_bytes) == (196592 * 2**20, 4976 * 2**20)
    assert metrics.pcie is not None
    assert (metrics.pcie.speed_gts, metrics.pcie.width, metrics.pcie.bandwidth_mbps) == (32, 16, 1234)
    assert (metrics.pcie.replay_count, metrics.pcie.l0_to_recovery_count, metrics.pcie.nak_received_count) == (
        3,
        120,
        None,
    )
    violations = {v.name: v for v in metrics.violations}
    assert (violations["PVIOL"].percent, violations["PVIOL"].active, violations["PVIOL"].accumulated) == (12, True, 20)
    assert violations["LOW_UTILVIOL"].percent == 7  # worst XCP
    assert "TVIOL" not in violations  # N/A only: nothing to report
    ecc = result.gpus[0].ecc
    assert ecc is not None and (ecc.correctable, ecc.uncorrectable, ecc.cache_correctable) == (5, 1, 2)
    assert ecc.deferred == 3  # its own count, not another's: a deferred error FAILs the GPU
    assert {b.block: (b.uncorrectable, b.deferred) for b in ecc.blocks} == {"UMC": (1, 3), "SDMA": (0, 0)}
    assert parsed.summary["uncorrectable_total"] == 1
    busy = {(e.engine, e.xcp): e.percents for e in result.engines}
    assert busy[("gfx_busy_inst", 0)] == [96, 98, None] and busy[("gfx_busy_inst", 1)] == [None] * 3
    assert busy[("vcn_activity", None)] == [0, None, None, None]
    assert result.details == []  # metric clocks are not static clock levels


def test_noise_before_json_and_version_line_after() -> None:
    text = (
        "/opt/rocm/libexec/amdsmi_cli/amdsmi_helpers.py:60: SyntaxWarning: invalid escape sequence '\\d'\n"
        "  match = re.search('\\d+', text)\n"
        + json.dumps([{"gpu": 0, "power": {"socket_power": _vu(90, "W")}}], indent=4)
        + "\nAMDSMI Tool: 25.4.2+aca1101 | AMDSMI Library version: 25.4.0 | ROCm version: N/A\n"
    )
    parsed = parse(text)
    assert (parsed.kind, parsed.ok, parsed.tool_version) == ("metric", True, "25.4.2+aca1101")
    assert len(parsed.warnings) == 2 and "SyntaxWarning" in parsed.warnings[0]
    result = _result(text)
    assert result.versions is not None and result.versions.rocm is None
    assert result.versions.unavailable["rocm"] == "N/A"


def test_process_json_idle_and_busy() -> None:
    busy = {
        "name": "python3",
        "pid": 4242,
        "memory_usage": {"gtt_mem": _vu(2097152, "B"), "cpu_mem": _vu(0, "B"), "vram_mem": _vu(1073741824, "B")},
        "mem_usage": _vu(1075838976, "B"),
        "usage": {"gfx": _vu(0, "ns"), "enc": _vu(0, "ns")},
        "cu_occupancy": 0,
        "evicted_time": _vu(0, "ms"),
    }
    text = json.dumps(
        [
            {"gpu": 0, "process_list": [{"process_info": "No running processes detected"}]},
            {"gpu": 1, "process_list": [{"process_info": busy}]},
        ]
    )
    parsed = parse(text)
    assert (parsed.kind, parsed.summary["gpu_count"], parsed.summary["process_count"]) == ("process", 2, 1)
    result = _result(text)
    assert result.process_gpus == [0, 1]
    process = result.processes[0]
    assert (process.gpu_index, process.pid, process.name, process.vram_bytes) == (1, 4242, "python3", 2**30)


def test_process_text_repeated_process_info() -> None:
    text = """GPU: 0
    PROCESS_INFO:
        NAME: rvs
        PID: 100
        MEMORY_USAGE:
            GTT_MEM: 2.0 MB
            CPU_MEM: 0.0 B
            VRAM_MEM: 1.5 GB
        MEM_USAGE: 1.5 GB
    PROCESS_INFO:
        NAME: python3
        PID: 101
        MEMORY_USAGE:
            GTT_MEM: 0.0 B
            CPU_MEM: 0.0 B
            VRAM_MEM: 512.0 MB
GPU: 1
    PROCESS_INFO: No running processes detected
"""
    result = _result(text)
    assert result.kind == "process"
    assert [(p.gpu_index, p.pid, p.vram_bytes) for p in result.processes] == [
        (0, 100, int(1.5 * 2**30)),
        (0, 101, 512 * 2**20),
    ]


def test_xgmi_json_7x_with_link_status() -> None:
    def metric(gpu: int, bdf: str, peers: list[tuple[int, str]]) -> dict[str, object]:
        links = [
            {"gpu": g, "bdf": b, "read": _vu(10 * g, "KB"), "write": "N/A" if g == gpu else _vu(5, "KB")}
            for g, b in peers
        ]
        return {
            "gpu": gpu,
            "bdf": bdf,
            "link_metrics": {
                "bit_rate": _vu(38, "Gb/s"),
                "max_bandwidth": _vu(608, "Gb/s"),
                "link_type": "XGMI",
                "links": links,
            },
        }

    peers = [(0, "0000:05:00.0"), (1, "0000:15:00.0")]
    document = {
        "xgmi_metric": [[metric(0, "0000:05:00.0", peers), metric(1, "0000:15:00.0", peers)]],
        "link_status": [
            {"gpu": 0, "bdf": "0000:05:00.0", "link_status": ["SELF", "U"]},
            {"gpu": 1, "bdf": "0000:15:00.0", "link_status": ["D", "SELF"]},
        ],
    }
    parsed = parse(json.dumps(document))
    assert (parsed.kind, parsed.summary["gpu_count"], parsed.summary["links"], parsed.summary["links_down"]) == (
        "xgmi",
        2,
        2,
        1,
    )
    links = {(link.src_index, link.dst_index): link for link in _result(json.dumps(document)).xgmi_links}
    assert links[(0, 1)].status is LinkStatus.UP and links[(1, 0)].status is LinkStatus.DOWN
    assert (links[(0, 1)].bit_rate_gbps, links[(0, 1)].max_bandwidth_gbps, links[(0, 1)].read_bytes) == (38, 608, 10240)


def test_xgmi_link_status_table() -> None:
    text = """
XGMI LINK STATUS:
       bdf           GPU0          GPU1          GPU2
GPU0   0000:05:00.0  SELF          U             U
GPU1   0000:15:00.0  U             SELF          D
GPU2   0000:65:00.0  U             X             SELF


Legend:
  SELF = Current GPU
  U / D / X = Link is Up / Down / Disabled
"""
    parsed = parse(text)
    assert (parsed.kind, parsed.summary["gpu_count"], parsed.summary["links"], parsed.summary["links_down"]) == (
        "xgmi",
        3,
        6,
        2,
    )
    links = {(link.src_index, link.dst_index): link for link in _result(text).xgmi_links}
    assert links[(1, 2)].status is LinkStatus.DOWN and links[(2, 1)].status is LinkStatus.DISABLED
    assert links[(1, 2)].dst_bdf == "0000:65:00.0"


def test_topology_json_links_list() -> None:
    def link(gpu: int, bdf: str, kind: str, hops: int) -> dict[str, object]:
        return {
            "gpu": gpu,
            "bdf": bdf,
            "weight": 15 * hops,
            "link_status": "ENABLED",
            "link_type": kind,
            "num_hops": hops,
            "bandwidth": "N/A" if kind == "SELF" else "50000-100000",
        }

    document = [
        {
            "gpu": 0,
            "bdf": "0000:05:00.0",
            "links": [link(0, "0000:05:00.0", "SELF", 0), link(1, "0000:15:00.0", "PCIE", 2)],
        },
        {
            "gpu": 1,
            "bdf": "0000:15:00.0",
            "links": [link(0, "0000:05:00.0", "PCIE", 2), link(1, "0000:15:00.0", "SELF", 0)],
        },
    ]
    parsed = parse(json.dumps(document))
    assert (parsed.kind, parsed.summary["links"], parsed.summary["xgmi_links"], parsed.summary["max_hops"]) == (
        "topology",
        2,
        0,
        2,
    )
    first = _result(json.dumps(document)).topology[0]
    assert (first.link_type, first.weight, first.numa_bw_min_mbps, first.numa_bw_max_mbps) == (
        "PCIE",
        30,
        50000,
        100000,
    )


def test_partition_and_version_json() -> None:
    partition = {
        "current_partition": [
            {
                "gpu_id": 0,
                "memory": "NPS1",
                "accelerator_type": "CPX",
                "accelerator_profile_index": 3,
                "partition_id": "0,1,2,3",
            }
        ]
    }
    parsed = parse(json.dumps(partition))
    assert (parsed.kind, parsed.summary["gpu_count"], parsed.summary["compute_partitions"]) == ("partition", 1, ["CPX"])
    assert _result(json.dumps(partition)).partitions[0].partition_ids == [0, 1, 2, 3]
    version = [
        {
            "tool": "AMDSMI Tool",
            "version": "26.0.2+1",
            "amdsmi_library_version": "26.0.2",
            "rocm_version": "7.0.2",
            "amdgpu_version": "6.14.14",
        }
    ]
    parsed = parse(json.dumps(version))
    assert (parsed.kind, parsed.ok, parsed.tool_version) == ("version", True, "26.0.2+1")
    versions = _result(json.dumps(version)).versions
    assert versions is not None and versions.amdgpu_driver == "6.14.14"


def test_version_line_with_driver_fields() -> None:
    parsed = parse(
        "AMDSMI Tool: 26.0.2+f1 | AMDSMI Library version: 26.0.2 | ROCm version: 7.0.2"
        " | amdgpu version: 6.14.14 | hsmp version: N/A\n"
    )
    assert (parsed.kind, parsed.ok, parsed.summary["gpu_count"]) == ("version", True, 0)
    versions = _result("AMDSMI Tool: 1 | amdgpu version: 6.14.14 | hsmp version: N/A").versions
    assert versions is not None and versions.amdgpu_driver == "6.14.14" and versions.unavailable["hsmp_driver"] == "N/A"


def test_monitor_rocm62_columns_with_watch_timestamps() -> None:
    text = """TIMESTAMP  GPU  POWER  GPU_TEMP  MEM_TEMP  GFX_UTIL  GFX_CLOCK  MEM_UTIL  MEM_CLOCK  VRAM_USED  VRAM_TOTAL
1722967684    0  745 W     70 °C     55 °C     100 %   2100 MHz      40 %   1300 MHz   8000 MB  196592 MB
1722967684    1    N/A       N/A       N/A       N/A        N/A       N/A        N/A        N/A        N/A
1722967685    0  748 W     71 °C     55 °C     100 %   2100 MHz      41 %   1300 MHz   8010 MB  196592 MB
"""
    parsed = parse(text)
    assert (parsed.kind, parsed.summary["gpu_count"], parsed.summary["samples"]) == ("monitor", 2, 3)
    result = _result(text)
    gpu0, gpu1 = (g.metrics for g in result.gpus)
    assert gpu0 is not None and gpu1 is not None
    assert (gpu0.power_w, gpu0.hotspot_temp_c, gpu0.vram_used_bytes) == (748, 71, 8010 * 2**20)
    assert gpu1.power_w is None and gpu1.unavailable["power_w"] == "N/A"


def test_monitor_default_view_vram_usage_fraction() -> None:
    text = """GPU  XCP  POWER   GPU_T   MEM_T   GFX_CLK   GFX%   MEM%   ENC%   DEC%      VRAM_USAGE
  0    0  140 W   40 °C   32 °C   132 MHz    0 %    0 %    N/A    0 %    2.0/ 64.0 GB
"""
    metrics = _result(text).gpus[0].metrics
    assert metrics is not None
    assert (metrics.vram_used_bytes, metrics.vram_total_bytes) == (2 * 2**30, 64 * 2**30)


def test_text_scalar_lists_do_not_break_nesting() -> None:
    text = """GPU: 0
    PROFILE:
        AVAILABLE_PROFILES:
            - BOOTUP_DEFAULT
            - COMPUTE
        CURRENT: COMPUTE
    ASIC:
        MARKET_NAME: AMD Instinct MI325X
        DEVICE_ID: 0x74a5
"""
    result = _result(text)
    assert result.kind == "static"
    assert (result.gpus[0].identity.market_name, result.gpus[0].identity.device_id) == ("AMD Instinct MI325X", "0x74a5")


def test_json_watch_entries_and_concatenated_documents() -> None:
    def entry(stamp: int, gpu: int, watts: int) -> dict[str, object]:
        return {"timestamp": stamp, "gpu": gpu, "power": {"socket_power": _vu(watts, "W")}}

    listed = json.dumps([entry(100, 0, 500), entry(100, 1, 510), entry(101, 0, 520), entry(101, 1, 530)])
    concatenated = json.dumps([entry(100, 0, 500)]) + "\n" + json.dumps([entry(101, 0, 520)])
    for text, gpus, samples in ((listed, 2, 4), (concatenated, 1, 2)):
        result = _result(text)
        assert (result.form, len(result.gpus), len(result.samples)) == (AmdSmiForm.JSON_WATCH, gpus, samples)
        metrics = result.gpus[0].metrics
        assert metrics is not None and metrics.power_w == 520


def test_box_view_72_header_lines() -> None:
    text = """+------------------------------------------------------------------------------+
| AMD-SMI            26.2.2+abc                                                 |
| amdgpu Version:    6.16.13                                                   |
| ROCm Version:      7.2.1                                                     |
| Platform:          Linux Baremetal                                           |
|-------------------------------------+----------------------------------------|
| BDF                        GPU-Name | Mem-Uti   Temp   UEC       Power-Usage |
| GPU  HIP-ID  OAM-ID  Partition-Mode | GFX-Uti    Fan               Mem-Usage |
|=====================================+========================================|
| 0000:03:00.0    AMD Instinct MI210  | 0 %      35 °C   N/A            42/300 W |
|   0       0     N/A        N/A/N/A  | 0 %        0 %             10/65520 MB |
+-------------------------------------+----------------------------------------+
"""
    parsed = parse(text)
    assert (parsed.kind, parsed.tool_version, parsed.summary["gpu_count"]) == ("default", "26.2.2+abc", 1)
    result = _result(text)
    assert result.versions is not None and (result.versions.amdgpu_driver, result.versions.rocm) == ("6.16.13", "7.2.1")
    gpu = result.gpus[0]
    assert gpu.identity.oam_id is None and gpu.identity.market_name == "AMD Instinct MI210"
    assert gpu.metrics is not None and (gpu.metrics.power_w, gpu.metrics.power_cap_w, gpu.metrics.fan_pct) == (
        42,
        300,
        0,
    )
    assert gpu.ecc is not None and gpu.ecc.uncorrectable is None


def test_bad_pages_text_with_pages() -> None:
    text = """GPU: 0
    RETIRED:
        PAGE_ADDRESS: 0x5c7e000
        PAGE_SIZE: 4096
        STATUS: RESERVED
        PAGE_ADDRESS: 0x5c7f000
        PAGE_SIZE: 4096
        STATUS: RESERVED
    PENDING: No bad pages found.
    UN_RES: N/A
"""
    parsed = parse(text)
    assert (parsed.kind, parsed.summary["bad_pages_total"], parsed.summary["bad_pages_pending"]) == ("bad-pages", 2, 0)
    pages = _result(text).gpus[0].bad_pages
    assert pages is not None
    assert [(p.address, p.size_bytes) for p in pages.retired] == [("0x5c7e000", 4096), ("0x5c7f000", 4096)]
    assert pages.unavailable["unreservable"] == "N/A"


def test_set_partition_error_code_and_traceback() -> None:
    text = """Traceback (most recent call last):
  File "/opt/rocm/libexec/amdsmi_cli/amdsmi_cli.py", line 140, in <module>
    amd_smi_commands.set_value(args)
amdsmi.amdsmi_exception.AmdSmiLibraryException: Error code:
	-2 | AMDSMI_STATUS_INVAL - Invalid parameters
GPU: 0
    ACCELERATOR_PARTITION: [AMDSMI_STATUS_INVAL] Unable to set accelerator partition to CPX
"""
    parsed = parse(text)
    assert parsed.ok is False
    assert "Traceback (most recent call last):" in parsed.errors
    assert "amdsmi.amdsmi_exception.AmdSmiLibraryException: Error code:" in parsed.errors
    assert "ACCELERATOR_PARTITION: [AMDSMI_STATUS_INVAL] Unable to set accelerator partition to CPX" in parsed.errors


@pytest.mark.parametrize(
    "line",
    [
        "ERROR:root:Unable to get devices, driver not initialized (amdgpu not found in modules)",
        "PermissionError: [Errno 13] Permission denied: '/sys/class/drm/card1/device/current_compute_partition'",
        "amd-smi: error: argument -g/--gpu: invalid choice",
    ],
)
def test_error_only_outputs(line: str) -> None:
    parsed = parse(f"{line}\n")
    assert (parsed.kind, parsed.ok, parsed.errors, parsed.summary["gpu_count"]) == ("error", False, [line], 0)


def test_launcher_prefixes_crlf_and_tabs() -> None:
    lines = ["GPU: 0", "    ASIC:", "        MARKET_NAME: AMD Instinct MI300X\t\t", "        DEVICE_ID: 0x74a1"]
    srun = "\r\n".join(f"  0: {line}" for line in lines)
    mpi = "\n".join(f"[1,0]<stdout>:{line}" for line in lines)
    for text in (srun, mpi):
        identity = _result(text).gpus[0].identity
        assert (identity.market_name, identity.device_id) == ("AMD Instinct MI300X", "0x74a1")


def test_csv_static_and_process_rows() -> None:
    static = (
        "gpu,market_name,device_id,max_pcie_width,max_pcie_speed\n"
        "0,AMD Instinct MI300X,0x74a1,16,32\n1,AMD Instinct MI300X,0x74a1,16,N/A\n"
    )
    result = _result(static)
    assert (result.kind, result.form, len(result.gpus)) == ("static", AmdSmiForm.CSV, 2)
    assert result.details[1].max_pcie_speed_gts is None and result.details[0].max_pcie_speed_gts == 32
    process = (
        "gpu,name,pid,gtt_mem,cpu_mem,vram_mem,mem_usage\n"
        "0,python3,17,0,0,1048576,1048576\n0,rvs,18,0,0,2097152,2097152\n"
    )
    result = _result(process)
    assert (result.kind, len(result.gpus)) == ("process", 1)
    assert [(p.pid, p.vram_bytes) for p in result.processes] == [(17, 2**20), (18, 2 * 2**20)]


def test_cper_listing() -> None:
    # Layout assumed from `amd-smi ras --cper` docs (timestamp, GPU, severity, file); columns may be reordered.
    text = """timestamp            gpu_id  severity     file_name
2025/05/01 10:00:00  0       fatal        fatal-1.cper
2025/05/01 10:05:00  3       corrected    corrected-2.cper
"""
    parsed = parse(text)
    assert (parsed.kind, parsed.summary["cper_records"], parsed.summary["cper_fatal"]) == ("ras", 2, 1)
    record = _result(text).cper[1]
    assert (record.gpu_index, record.severity, record.file_name, record.timestamp) == (
        3,
        "corrected",
        "corrected-2.cper",
        "2025/05/01 10:05:00",
    )


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\n",
        "hello world\n",
        '{"card0": {"Temperature (Sensor edge) (C)": "35.0"}}',
        '{"gpu_data": [{"gpu": 0,',
    ],
)
def test_nothing_readable_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError) as raised:
        parse(text)
    assert raised.value.reason
    assert detect(text) is None


def test_caller_kind_is_kept_for_payloads() -> None:
    parsed = parse_output(json.dumps(METRIC_7X), tool=Tool.AMD_SMI, kind="metric")
    assert parsed.kind == "metric"
    found = detect(json.dumps(METRIC_7X))
    assert found is not None and (found.kind, found.confidence) == ("metric", 0.95)


def test_link_status_json_as_plain_gpu_list() -> None:
    """`amd-smi xgmi -l --json` printed as a GPU list whose entries carry the U/D/X row."""
    text = (
        '[{"gpu": 0, "bdf": "0000:0c:00.0", "link_status": ["SELF", "U", "D"]},'
        ' {"gpu": 1, "bdf": "0000:22:00.0", "link_status": ["U", "SELF", "U"]},'
        ' {"gpu": 2, "bdf": "0000:38:00.0", "link_status": ["D", "U", "SELF"]}]'
    )
    result = parse_output(text, Tool.AMD_SMI, "xgmi")
    states = {(link.src_index, link.dst_index): link.status.value for link in result.data.xgmi_links}  # type: ignore[union-attr]
    assert states == {(0, 1): "up", (0, 2): "down", (1, 0): "up", (1, 2): "up", (2, 0): "down", (2, 1): "up"}


def test_only_a_value_unit_object_is_kept_as_decoded() -> None:
    # The key normaliser leaves {"value", "unit"} leaves as they are; any other two-key object is normalised.
    decoded = {
        "Power": {"Value": 1, "Unit": "W"},
        "Limit": {"unit": "W", "Cap Key": 5},
        "t": {"value": [{"Level 0": 2}], "unit": ""},
    }
    assert normalise(decoded) == {
        "power": {"value": 1, "unit": "W"},
        "limit": {"unit": "W", "cap_key": 5},
        "t": {"value": [{"level_0": 2}], "unit": ""},
    }


def test_impossible_counts_and_shares_are_no_readings_with_why() -> None:
    # A failed read printed as a value (-1 errors, -3 % or 250 % throttled) is neither 0 nor a number to judge.
    document = copy.deepcopy(METRIC_7X)
    entry = document["gpu_data"][0]
    entry["ecc"]["total_uncorrectable_count"] = -1
    entry["pcie"]["replay_count"] = -2
    entry["throttle"]["ppt_violation_activity"] = _vu(250, "%")
    entry["throttle"]["low_utilization_violation_activity"] = {"xcp_0": [_vu(-3, "%")], "xcp_1": [_vu(7, "%")]}
    result = _result(json.dumps(document))
    ecc, metrics = result.gpus[0].ecc, result.gpus[0].metrics
    assert ecc is not None and metrics is not None and metrics.pcie is not None
    assert (ecc.uncorrectable, ecc.unavailable["uncorrectable"]) == (None, "negative count: -1")
    assert (metrics.pcie.replay_count, metrics.pcie.unavailable["replay_count"]) == (None, "negative count: -2")
    assert metrics.unavailable["violation.PVIOL"] == "not a percentage: 250"
    assert metrics.unavailable["violation.LOW_UTILVIOL"] == "not a percentage: -3"
    assert "violation TVIOL" not in metrics.unavailable  # N/A: a counter this GPU lacks, not a failed read


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12))
def test_a_share_is_read_only_within_0_to_100(value: float) -> None:
    q = to_percent(_vu(value, "%"))
    assert (q.value is not None) == (0 <= value <= 100)
    assert q.value is not None or q.reason == f"not a percentage: {value:g}"


@given(st.integers(min_value=-(2**40), max_value=2**40).filter(lambda v: v not in (2**16 - 1, 2**32 - 1)))
def test_a_count_is_read_only_when_not_negative(value: int) -> None:
    q = to_count(value)
    assert (q.value, q.reason) == ((value, None) if value >= 0 else (None, f"negative count: {value:g}"))
