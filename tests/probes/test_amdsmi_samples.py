"""Real amd-smi outputs (tests/fixtures/real/amd-smi): tool, kind, ok, counts and typed values read from each file."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from console.cli import main
from console.model.amdsmi import AmdSmiForm, AmdSmiResult
from console.probes import Tool, detect, parse_output
from console.probes.amdsmi import detect as amdsmi_detect

REAL = Path(__file__).parents[1] / "fixtures" / "real"
AMD = REAL / "amd-smi"


def _data(name: str) -> tuple[AmdSmiResult, dict[str, object], list[str]]:
    parsed = parse_output((AMD / name).read_bytes())
    assert parsed.tool is Tool.AMD_SMI
    assert isinstance(parsed.data, AmdSmiResult)
    return parsed.data, parsed.summary, parsed.errors


def _bad_pages(result: AmdSmiResult) -> None:
    for gpu in result.gpus:
        assert gpu.bad_pages is not None
        assert (gpu.bad_pages.retired, gpu.bad_pages.pending, gpu.bad_pages.unreservable) == ([], [], [])
        assert gpu.bad_pages.unavailable == {}


def _default_view(result: AmdSmiResult) -> None:
    gpu0 = result.gpus[0]
    assert (gpu0.identity.bdf, gpu0.identity.market_name) == ("0000:0c:00.0", "AMD Instinct MI300X")
    assert (gpu0.identity.compute_partition, gpu0.identity.memory_partition, gpu0.identity.oam_id) == ("SPX", "NPS1", 2)
    assert gpu0.metrics is not None
    assert (gpu0.metrics.power_w, gpu0.metrics.power_cap_w, gpu0.metrics.hotspot_temp_c) == (734, 750, 60)
    assert (gpu0.metrics.mem_util_pct, gpu0.metrics.gfx_util_pct) == (13, 98)
    assert gpu0.metrics.vram_used_bytes == 4976 * 2**20 and gpu0.metrics.vram_total_bytes == 196592 * 2**20
    assert gpu0.metrics.fan_pct is None and gpu0.metrics.unavailable["fan_pct"] == "N/A"
    assert gpu0.ecc is not None and gpu0.ecc.uncorrectable == 0
    assert [g.identity.bdf for g in result.gpus][-1] == "0000:df:00.0"
    assert result.versions is not None
    assert (result.versions.amdsmi_tool, result.versions.amdgpu_driver, result.versions.rocm) == (
        "26.0.0+eaa54ecc",
        "6.12.12",
        "7.0.0",
    )
    assert result.platform == "Linux Baremetal"
    assert len(result.processes) == 8
    assert {p.pid for p in result.processes} == {2427396} and result.processes[0].name == "rvs"
    assert result.processes[1].vram_bytes == int(2.2 * 2**30)


def _firmware(result: AmdSmiResult) -> None:
    firmware = result.gpus[0].firmware
    assert len(firmware) == 10
    assert firmware["CP_MEC1"] == "147" and firmware["VCN"] == "61.13.00.C" and firmware["PM"] == "85.110.0"


def _energy_watch(result: AmdSmiResult) -> None:
    assert result.form is AmdSmiForm.CSV
    assert len(result.samples) == 10
    gpu0 = [s for s in result.samples if s.gpu_index == 0]
    assert [s.timestamp for s in gpu0] == [1722967684, 1722967685, 1722967686, 1722967687, 1722967688]
    assert gpu0[0].metrics.energy_j == pytest.approx(18946473.99)
    # The record keeps the latest reading per GPU.
    assert result.gpus[1].metrics is not None and result.gpus[1].metrics.energy_j == pytest.approx(18792656.326)


def _power_json(result: AmdSmiResult) -> None:
    assert result.form is AmdSmiForm.JSON_LIST
    metrics = result.gpus[0].metrics
    assert metrics is not None
    assert metrics.power_w == 10 and metrics.throttle_status == "UNTHROTTLED"


def _usage_wrapped(result: AmdSmiResult) -> None:
    metrics = result.gpus[0].metrics
    assert metrics is not None and (metrics.gfx_util_pct, metrics.mem_util_pct) == (0, 0)
    engines = {e.engine: e.percents for e in result.engines}
    assert engines["vcn_activity"] == [0.0] * 4
    # 32 JPEG engines, one of them wrapped as "0" / "%" across two lines.
    assert engines["jpeg_activity"] == [0.0] * 32


def _monitor(result: AmdSmiResult) -> None:
    first, last = result.gpus[0].metrics, result.gpus[7].metrics
    assert first is not None and last is not None
    assert (first.power_w, first.power_cap_w, first.hotspot_temp_c, first.mem_temp_c) == (251, 1000, 55, 43)
    assert (first.gfx_clock_mhz, first.gfx_util_pct, first.mem_util_pct, first.mem_clock_mhz) == (144, 0, 0, 1900)
    assert (last.power_w, last.hotspot_temp_c, last.gfx_clock_mhz) == (257, 59, 149)


def _no_gpu(result: AmdSmiResult) -> None:
    assert result.form is AmdSmiForm.ERROR and result.gpus == []
    assert result.versions is not None
    assert (result.versions.amdsmi_tool, result.versions.amdsmi_lib, result.versions.rocm) == (
        "26.1.0+46cb0cc0",
        "26.1.0",
        "7.11.0",
    )


def _set_partition(result: AmdSmiResult) -> None:
    assert [p.gpu_index for p in result.partitions] == list(range(15))
    assert {p.memory_partition for p in result.partitions} == {"NPS4"}
    assert result.partitions[14].message == "Successfully set memory partition to NPS4"


def _static_asic(result: AmdSmiResult) -> None:
    gpu0, gpu1 = (g.identity for g in result.gpus)
    assert gpu0.market_name == "Aldebaran/MI200 [Instinct MI210"  # truncated pciids string, kept verbatim
    assert gpu1.market_name == "Instinct MI210"
    assert (gpu0.device_id, gpu0.vendor_id, gpu0.revision_id, gpu0.oam_id, gpu1.oam_id) == (
        "0x740f",
        "0x1002",
        "0x2",
        1,
        0,
    )
    assert gpu0.serial == "0xXXXXXXXXXXXXXX"


def _static_json(result: AmdSmiResult) -> None:
    assert result.form is AmdSmiForm.JSON_GPU_DATA
    identity = result.gpus[0].identity
    assert (identity.market_name, identity.device_id, identity.gfx_target, identity.compute_units) == (
        "AMD Instinct MI210",
        "0x740f",
        "gfx90a",
        104,
    )
    assert identity.oam_id is None and identity.unavailable["oam_id"] == "N/A"
    assert identity.product_name is None and "product_name" in identity.unavailable
    details = result.details[0]
    assert details.driver_version is not None and details.driver_version.startswith("Linuxversion6.14.0-24-generic")
    assert (details.max_pcie_width, details.max_pcie_speed_gts, details.pcie_interface_gen) == (16, 16, 4)
    assert (details.power_cap_w, details.slowdown_hotspot_temp_c, details.shutdown_vram_temp_c) == (300, 100, 99)
    assert details.vram_size_bytes == 65520 * 2**20 and details.vram_type == "HBM"
    assert details.vram_max_bandwidth_gbps is None and details.unavailable["vram_max_bandwidth_gbps"] == "N/A"
    assert details.ecc_block_state["XGMI_WAFL"] == "DISABLED" and details.ecc_block_state["UMC"] == "ENABLED"
    levels = {c.domain: c for c in details.clock_levels}
    assert levels["sys"].levels_mhz == [500, 800, 1700] and levels["sys"].current_level == 1
    assert levels["soc"].levels_mhz[-1] == 1333 and "vclk1" not in levels
    assert result.gpus[0].bad_pages is not None and result.gpus[0].bad_pages.threshold == 655


def _static_text_7x(result: AmdSmiResult) -> None:
    identity = result.gpus[0].identity
    assert (identity.bdf, identity.market_name, identity.device_id, identity.gfx_target) == (
        "0000:05:00.0",
        "AMD Instinct MI350X",
        "0x75a0",
        "gfx950",
    )
    assert (identity.vbios_version, identity.vbios_part_number, identity.product_name) == (
        "00154951",
        "113-M350-01-1K0-920A",
        "AMD Instinct MI350 OAM",
    )
    details = result.details[0]
    assert (details.driver_version, details.os_kernel_version) == ("6.18.3", "5.15.0-164-generic")
    assert (details.max_pcie_speed_gts, details.pcie_interface_gen, details.slot_type) == (32, 5, "OAM")
    pages = result.gpus[0].bad_pages
    assert pages is not None and pages.threshold is None and pages.unavailable["threshold"] == "N/A"


def _topology(result: AmdSmiResult) -> None:
    assert len(result.topology) == 56
    assert all(link.link_type == "XGMI" and link.hops == 1 and link.weight == 15 for link in result.topology)
    assert all(link.accessible and link.numa_bw_min_mbps == 50000 == link.numa_bw_max_mbps for link in result.topology)
    first = result.topology[0]
    assert (first.src_bdf, first.dst_bdf, first.src_index, first.dst_index) == ("0000:0c:00.0", "0000:22:00.0", 0, 1)


def _xgmi(result: AmdSmiResult) -> None:
    links = {(link.src_index, link.dst_index): link for link in result.xgmi_links}
    assert len(links) == 56 and (0, 0) not in links
    assert all(link.bit_rate_gbps == 32 and link.max_bandwidth_gbps == 512 for link in links.values())
    assert (links[(0, 1)].read_bytes, links[(0, 1)].write_bytes) == (2048, 1024)
    assert (links[(1, 0)].read_bytes, links[(2, 7)].read_bytes) == (0, 0)
    assert (links[(3, 2)].read_bytes, links[(7, 6)].dst_bdf) == (2048, "0000:bf:00.0")


Case = tuple[str, str, bool, int, Callable[[AmdSmiResult], None]]
CASES: list[Case] = [
    ("bad-pages-mi300x-none.txt", "bad-pages", True, 2, _bad_pages),
    ("default-view-mi300x-8gpu-rocm700.txt", "default", True, 8, _default_view),
    ("firmware-mi300x-gpu0.txt", "firmware", True, 1, _firmware),
    ("metric-energy-csv-watch-mi210.txt", "metric", True, 2, _energy_watch),
    ("metric-power-json-rocm610-list.json", "metric", True, 1, _power_json),
    ("metric-usage-wrapped-list-rocm610.txt", "metric", True, 1, _usage_wrapped),
    ("monitor-putm-mi350x.txt", "monitor", True, 8, _monitor),
    ("no-gpu-detected-error-amdsmi2610-rocm711.txt", "error", False, 0, _no_gpu),
    ("set-memory-partition-nps4-oserror-mi300x.txt", "partition", False, 15, _set_partition),
    ("static-asic-mi210-truncated-market-name.txt", "static", True, 2, _static_asic),
    ("static-json-mi210-rocm7-gpu_data-trimmed.json", "static", True, 1, _static_json),
    ("static-subset-mi350x-gpu0-rocm7x-text.txt", "static", True, 1, _static_text_7x),
    ("topology-mi300x-8gpu-rocm610-5tables.txt", "topology", True, 8, _topology),
    ("xgmi-mi300x-8gpu-rocm610-kb.txt", "xgmi", True, 8, _xgmi),
]


def test_every_sample_has_a_case() -> None:
    assert sorted(p.name for p in AMD.iterdir()) == sorted(case[0] for case in CASES)


@pytest.mark.parametrize(("name", "kind", "ok", "gpu_count", "check"), CASES, ids=[c[0] for c in CASES])
def test_real_sample(name: str, kind: str, ok: bool, gpu_count: int, check: Callable[[AmdSmiResult], None]) -> None:
    parsed = parse_output((AMD / name).read_bytes())
    assert (parsed.tool, parsed.kind, parsed.ok, parsed.summary["gpu_count"]) == (Tool.AMD_SMI, kind, ok, gpu_count)
    assert isinstance(parsed.data, AmdSmiResult)
    check(parsed.data)


def test_summaries_carry_the_counts_checks_need() -> None:
    assert _data("bad-pages-mi300x-none.txt")[1]["bad_pages_total"] == 0
    assert _data("xgmi-mi300x-8gpu-rocm610-kb.txt")[1]["links_down"] == 0
    topology = _data("topology-mi300x-8gpu-rocm610-5tables.txt")[1]
    assert (topology["links"], topology["xgmi_links"], topology["max_hops"]) == (56, 56, 1)
    default = _data("default-view-mi300x-8gpu-rocm700.txt")[1]
    assert (default["uncorrectable_total"], default["process_count"], default["max_hotspot_c"]) == (0, 8, 62)
    assert _data("firmware-mi300x-gpu0.txt")[1]["firmware_blocks"] == 10
    assert _data("metric-energy-csv-watch-mi210.txt")[1]["samples"] == 10


def test_failures_are_kept_verbatim() -> None:
    assert _data("no-gpu-detected-error-amdsmi2610-rocm711.txt")[2] == [
        "ERROR:root:Unable to detect any GPU devices, check amdgpu version and module status (sudo modprobe amdgpu)"
    ]
    assert _data("set-memory-partition-nps4-oserror-mi300x.txt")[2] == ["OSError: [Errno 24] Too many open files"]
    parsed = parse_output((AMD / "no-gpu-detected-error-amdsmi2610-rocm711.txt").read_bytes())
    assert parsed.tool_version == "26.1.0+46cb0cc0"


def test_rocm_smi_table_with_amdsmi_version_line_stays_rocm_smi() -> None:
    data = (REAL / "rocm-smi" / "concise-mi355x-8gpu-under-load-k8s-tab-artifacts.txt").read_text()
    own = amdsmi_detect(data)
    assert own is not None and own.confidence < 0.5
    found = detect(data)
    assert found is not None and found.tool is Tool.ROCM_SMI


@pytest.mark.parametrize(
    "path", sorted(p for p in REAL.rglob("*") if p.is_file() and "amd-smi" not in p.parts and p.suffix != ".md")
)
def test_other_tools_outputs_are_not_claimed(path: Path) -> None:
    found = amdsmi_detect(path.read_text(errors="replace"))
    assert found is None or found.confidence < 0.5, path.name


# --- through the CLI ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "code", "kind"),
    [
        ("topology-mi300x-8gpu-rocm610-5tables.txt", 0, "topology"),
        ("no-gpu-detected-error-amdsmi2610-rocm711.txt", 1, "error"),
        ("set-memory-partition-nps4-oserror-mi300x.txt", 1, "partition"),
        ("static-json-mi210-rocm7-gpu_data-trimmed.json", 0, "static"),
    ],
)
def test_cli_parse_json(name: str, code: int, kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", str(AMD / name), "--json"]) == code
    out = json.loads(capsys.readouterr().out)
    assert {"tool", "kind", "ok", "errors", "summary", "data"} <= set(out)
    assert (out["tool"], out["kind"], out["ok"]) == ("amd-smi", kind, code == 0)
    assert out["data"]["kind"] == kind


def test_cli_unreadable_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    truncated = tmp_path / "truncated.json"
    truncated.write_text((AMD / "static-json-mi210-rocm7-gpu_data-trimmed.json").read_text()[:400])
    assert main(["parse", str(truncated), "--as", "amd-smi", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "truncated or malformed" in captured.err


def test_default_view_cells_with_an_na_side_keep_the_other_side() -> None:
    """A secondary partition prints ``N/A/750 W`` and ``N/A/196592 MB``: the cap and total are still known."""
    text = (REAL / "amd-smi" / "default-view-mi300x-8gpu-rocm700.txt").read_text()
    text = text.replace("734/750 W", "N/A/750 W", 1).replace("4976/196592 MB", "N/A/196592 MB", 1)
    metrics = parse_output(text, tool=Tool.AMD_SMI).data.gpus[0].metrics  # type: ignore[union-attr]
    assert metrics is not None
    assert (metrics.power_w, metrics.power_cap_w) == (None, 750.0)
    assert (metrics.vram_used_bytes, metrics.vram_total_bytes) == (None, 196592 * 2**20)
    assert metrics.unavailable["power_w"].startswith("N/A")


def test_monitor_vram_usage_with_an_na_side_keeps_the_total() -> None:
    text = (
        "GPU  XCP  POWER   GPU_T   MEM_T   GFX_CLK   GFX%   MEM%   ENC%   DEC%      VRAM_USAGE\n"
        "  0    0  750 W   69 °C   52 °C  1278 MHz  100 %   43 %    N/A    0 %     2.0/192.0 GB\n"
        "  1    1    N/A     N/A     N/A       N/A    N/A    N/A    N/A    N/A      N/A/24.0 GB\n"
    )
    gpus = parse_output(text, tool=Tool.AMD_SMI).data.gpus  # type: ignore[union-attr]
    first, second = (g.metrics for g in gpus)
    assert first is not None and (first.vram_used_bytes, first.vram_total_bytes) == (2 * 2**30, 192 * 2**30)
    assert second is not None and (second.vram_used_bytes, second.vram_total_bytes) == (None, 24 * 2**30)


def test_a_table_row_cut_short_is_an_error_not_a_missing_gpu() -> None:
    text = (REAL / "amd-smi" / "monitor-putm-mi350x.txt").read_text().rstrip("\n")
    cut = text.rsplit("MHz", 2)[0] + "MHz\n"  # the last row loses its last two cells
    parsed = parse_output(cut, tool=Tool.AMD_SMI)
    assert parsed.ok is False and parsed.summary["gpu_count"] == 7
    assert parsed.errors[0].startswith("monitor row has 6 cells, header 9: 7")
    csv = "gpu,power_usage,hotspot_temperature\n0,250 W,55 C\n1,251 W\n"
    parsed = parse_output(csv, tool=Tool.AMD_SMI)
    assert parsed.ok is False and parsed.errors == ["CSV row does not fit its header: 1,251 W"]


@pytest.mark.parametrize(
    ("printed", "reason"),
    [
        ("N/A", "N/A"),
        ("Error reading bad pages", "not a bad-page listing: Error reading bad pages"),
        ("Bad page info not supported", "not a bad-page listing: Bad page info not supported"),
    ],
)
def test_a_bad_page_listing_other_than_none_found_is_unavailable_never_empty(printed: str, reason: str) -> None:
    # The real listing with GPU 1's RETIRED sentence replaced: only "No bad pages found." means no page.
    text = (AMD / "bad-pages-mi300x-none.txt").read_text()
    head, gpu1 = text.split("GPU: 1")
    parsed = parse_output(
        (head + "GPU: 1" + gpu1.replace("RETIRED: No bad pages found.", f"RETIRED: {printed}")).encode()
    )
    assert isinstance(parsed.data, AmdSmiResult)
    gpu0, gpu1_pages = (gpu.bad_pages for gpu in parsed.data.gpus)
    assert gpu0 is not None and gpu0.unavailable == {}
    assert gpu1_pages is not None and gpu1_pages.retired == [] and gpu1_pages.unavailable == {"retired": reason}


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ({"page_size": 4096, "status": "RESERVED"}, "a page record without its address"),
        ({"page_address": None, "page_size": 4096, "status": "RESERVED"}, "a page record without its address"),
        ("0x69c4b000", "a page record that is no mapping"),
    ],
)
def test_a_page_record_not_understood_makes_its_listing_unavailable(record: object, reason: str) -> None:
    # The listing amd-smi bad-pages --json prints for a GPU with retired pages (the simulator's form), with one
    # record it does not say an address in: dropped, the GPU read one retired page fewer than it has.
    listing = [
        {"page_address": 1774505984, "page_size": 4096, "status": "RESERVED"},
        record,
        {"page_address": 4893077504, "page_size": 4096, "status": "RESERVED"},
    ]
    document = [
        {"gpu": 0, "retired": "No bad pages found.", "pending": "No bad pages found.", "un_res": "No bad pages found."},
        {"gpu": 1, "retired": listing, "pending": "No bad pages found.", "un_res": "No bad pages found."},
    ]
    parsed = parse_output(json.dumps(document).encode())
    assert isinstance(parsed.data, AmdSmiResult)
    pages = parsed.data.gpus[1].bad_pages
    assert pages is not None and reason in pages.unavailable.get("retired", "")
    assert parsed.data.gpus[0].bad_pages is not None and parsed.data.gpus[0].bad_pages.unavailable == {}
