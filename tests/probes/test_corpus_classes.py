"""The classes of misread the corpus of real outputs showed (tests/fixtures/corpus/, INDEX.md), one test each.

Each test reads the real sample that showed the class, and where the fix is a rule, a variant of it that the
rule must still catch (a cut, a fault), so the fix is for the class and not for the sample.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from console.checks import CheckPack, load_packs
from console.checks.single import judge_output, probes_reading
from console.model.amdsmi import AmdSmiResult
from console.model.gpu import LinkStatus
from console.model.transferbench import TransferBenchResult
from console.probes import ParsedOutput, Tool, parse_output

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"
AMDSMI = CORPUS / "amd-smi"
HEALTHY_RCCL = CORPUS.parent / "real" / "rccl-tests" / "all_reduce_perf-mi300x-mpi-np8-rccl2223-full.txt"


@pytest.fixture(scope="module")
def packs() -> dict[str, CheckPack]:
    return load_packs([])


def _judged(parsed: ParsedOutput, pack: CheckPack) -> tuple[str, dict[str, str], dict[str, str]]:
    """The roll-up, each finding's status by check id (the worst of its subjects), and the checks not applicable."""
    verdict = judge_output(pack, parsed, probes_reading(parsed))
    worst: dict[str, Any] = {}
    for finding in verdict.findings:
        if finding.check_id not in worst or finding.status.severity > worst[finding.check_id].severity:
            worst[finding.check_id] = finding.status
    return verdict.verdict.status.value, {k: v.value for k, v in worst.items()}, verdict.not_applicable


def _row_above(line: str, size: int) -> bool:
    """An rccl-tests result row of a size above ``size`` bytes."""
    first = line.split()[:1]
    return bool(first) and first[0].isdigit() and int(first[0]) > size


def _parse(path: Path) -> ParsedOutput:
    return parse_output(path.read_bytes())


# --- amd-smi metric with one section: the others are not applicable, not UNKNOWN ----------------------------------


def test_a_single_section_metric_output_passes_when_healthy(packs: dict[str, CheckPack]) -> None:
    parsed = _parse(AMDSMI / "metric-throttle-2gpu-mi300-rocm630-excerpt.txt")
    status, checks, not_applicable = _judged(parsed, packs["MI300X"])
    assert status == "PASS", checks
    assert checks["throttle.thermal"] == checks["throttle.power"] == "PASS"
    assert not_applicable["ecc.uncorrectable"].startswith("not in this output")
    assert not_applicable["thermal.hotspot"].startswith("not in this output")


def test_an_ecc_block_output_with_an_uncorrectable_error_still_fails(packs: dict[str, CheckPack]) -> None:
    text = (AMDSMI / "metric-ecc-block-7blocks-rocm612.txt").read_text()
    hdp = text.index("HDP:")
    broken = text[:hdp] + text[hdp:].replace("UNCORRECTABLE_COUNT: 0", "UNCORRECTABLE_COUNT: 3", 1)
    status, checks, _ = _judged(parse_output(broken, tool=Tool.AMD_SMI), packs["MI300X"])
    assert status == "FAIL" and checks["ecc.uncorrectable"] == "FAIL"


def test_a_value_printed_na_is_still_judged_not_dropped(packs: dict[str, CheckPack]) -> None:
    # Printed N/A is "not reported", judged as in a sweep: only a value not printed at all does not apply.
    text = (AMDSMI / "metric-throttle-2gpu-mi300-rocm630-excerpt.txt").read_text()
    gpu1 = text.index("GPU: 1")
    cut = text[:gpu1] + text[gpu1:].replace("PPT_VIOLATION_ACTIVITY: 0 %", "PPT_VIOLATION_ACTIVITY: N/A")
    status, checks, _ = _judged(parse_output(cut, tool=Tool.AMD_SMI), packs["MI300X"])
    assert (status, checks["throttle.power"]) == ("UNKNOWN", "UNKNOWN")


# --- amd-smi monitor: judged like metric output; its process table is no GPU row ----------------------------------


def test_monitor_is_judged_like_metric_output(packs: dict[str, CheckPack]) -> None:
    parsed = _parse(AMDSMI / "monitor-ptumv-8gpu-mi300x-rocm610.txt")
    assert (parsed.kind, parsed.ok, parsed.summary["gpu_count"]) == ("monitor", True, 8)
    status, checks, not_applicable = _judged(parsed, packs["MI300X"])
    assert status == "PASS" and checks["thermal.hotspot"] == "PASS"
    assert not_applicable["ecc.uncorrectable"].startswith("not in this output")


def test_a_hot_gpu_in_monitor_output_fails(packs: dict[str, CheckPack]) -> None:
    # The 103 C hotspot of `monitor -q` under RVS: read, with its process table, and judged.
    parsed = _parse(AMDSMI / "monitor-q-process-table-103C-rocm620.txt")
    assert parsed.ok, parsed.errors
    assert isinstance(parsed.data, AmdSmiResult)
    assert [(p.gpu_index, p.name, p.pid) for p in parsed.data.processes] == [(0, "rvs", 1564865)]
    status, checks, _ = _judged(parsed, packs["MI300X"])
    assert status == "FAIL" and checks["thermal.hotspot"] == "FAIL"


def test_a_process_row_that_does_not_fit_is_said_not_a_failed_output() -> None:
    text = (AMDSMI / "monitor-process-mi300x-1gpu-amdsmi2530.txt").read_text()
    parsed = parse_output(text.replace("2266127", "2266127 extra words"), tool=Tool.AMD_SMI)
    assert parsed.ok
    assert any(w.startswith("monitor process row not read:") for w in parsed.warnings)


# --- XGMI: placeholder maxima and the ROCm 6.4 per-port link status -----------------------------------------------


def test_the_65535_xgmi_placeholder_is_not_a_rate() -> None:
    parsed = _parse(AMDSMI / "xgmi-metric-65535-placeholder-2gpu-no-xgmi-before-rocm712.txt")
    assert parsed.ok and isinstance(parsed.data, AmdSmiResult)
    links = parsed.data.xgmi_links
    assert links and all(link.bit_rate_gbps is None and link.max_bandwidth_gbps is None for link in links)
    assert all(link.unavailable["bit_rate_gbps"].startswith("sentinel 65535") for link in links)
    assert all(link.unavailable["max_bandwidth_gbps"].startswith("sentinel 4294967295") for link in links)
    assert "min_bit_rate_gbps" not in parsed.summary


def test_a_real_rate_glued_to_its_neighbour_is_still_read() -> None:
    text = (AMDSMI / "xgmi-metric-65535-placeholder-2gpu-no-xgmi-before-rocm712.txt").read_text()
    parsed = parse_output(text.replace("65535 Gb/s4294967295", "32 Gb/s512"), tool=Tool.AMD_SMI)
    assert isinstance(parsed.data, AmdSmiResult)
    assert {(link.bit_rate_gbps, link.max_bandwidth_gbps) for link in parsed.data.xgmi_links} == {(32.0, 512.0)}


def test_the_rocm64_link_status_is_read_per_port_and_a_down_port_fails(packs: dict[str, CheckPack]) -> None:
    parsed = _parse(AMDSMI / "xgmi-link-status-links-down-rocm640-excerpt.txt")
    assert isinstance(parsed.data, AmdSmiResult)
    assert parsed.data.xgmi_links == []  # no word is a peer GPU's
    ports = {row.gpu_index: row.ports for row in parsed.data.xgmi_ports}
    assert ports[0].count(LinkStatus.DOWN) == 2 and ports[0][-1] is LinkStatus.DISABLED
    status, checks, _ = _judged(parsed, packs["MI300X"])
    assert status == "FAIL" and checks["xgmi.link_up"] == "FAIL"


def test_the_rocm64_link_status_with_every_port_up_passes(packs: dict[str, CheckPack]) -> None:
    text = (AMDSMI / "xgmi-link-status-links-down-rocm640-excerpt.txt").read_text().replace(" D ", " U ")
    status, checks, _ = _judged(parse_output(text, tool=Tool.AMD_SMI), packs["MI300X"])
    assert (status, checks["xgmi.link_up"]) == ("PASS", "PASS")


# --- rccl-tests: a rule needs the sizes it is stated at -----------------------------------------------------------


def test_a_paste_short_of_the_large_sizes_never_passes_the_busbw_floor(packs: dict[str, CheckPack]) -> None:
    parsed = _parse(CORPUS / "rccl-tests" / "all_reduce_perf-mi300x-g8-develop83d38d9-first-row-only.txt")
    verdict = judge_output(packs["MI300X"], parsed, probes_reading(parsed))
    busbw = [f for f in verdict.findings if f.check_id == "rccl.busbw"]
    assert [f.status.value for f in busbw] == ["UNKNOWN"]
    assert "sizes not covered: the largest size run is 8388608 bytes" in busbw[0].message
    assert verdict.verdict.status.value != "PASS"


def test_a_whole_run_whose_large_rows_were_lost_is_unknown(packs: dict[str, CheckPack]) -> None:
    # The healthy 8-GPU run asked for 16 GB; a paste that keeps its footer but lost the rows from 16 MB on.
    lines = HEALTHY_RCCL.read_text().splitlines(keepends=True)
    kept = [
        line for line in lines if not (line.split()[:1] and line.split()[0].isdigit() and int(line.split()[0]) > 2**23)
    ]
    parsed = parse_output("".join(kept), tool=Tool.RCCL_TESTS)
    status, checks, _ = _judged(parsed, packs["MI300X"])
    assert (status, checks["rccl.busbw"]) == ("UNKNOWN", "UNKNOWN")


def test_a_whole_run_not_asked_for_large_sizes_is_not_judged_on_them(packs: dict[str, CheckPack]) -> None:
    # Azure's VF run asked -e 128M and printed its footer: no size was lost, the floor does not apply.
    path = CORPUS.parent / "real" / "rccl-tests" / "all_reduce_perf-mi300x-vf-azure-g8.txt"
    status, checks, not_applicable = _judged(_parse(path), packs["MI300X"])
    assert "rccl.busbw" not in checks and not_applicable["rccl.busbw"].startswith("not in this output (sizes")
    assert status == "PASS"


def test_a_table_tail_without_small_sizes_does_not_judge_small_message_time(packs: dict[str, CheckPack]) -> None:
    path = CORPUS.parent / "real" / "rccl-tests" / "all_reduce_perf-mi355x-g8-oci-large-sizes-only.txt"
    status, checks, not_applicable = _judged(_parse(path), packs["MI355X"])
    assert "rccl.small_latency" not in checks
    assert not_applicable["rccl.small_latency"].startswith("not in this output (sizes not covered")
    assert status == "PASS" and checks["rccl.busbw"] == "PASS"


# --- RVS: the summary box's PASS stands for the lines an author elided --------------------------------------------


def test_an_abridged_rvs_action_with_a_passing_summary_passes() -> None:
    parsed = _parse(CORPUS / "rvs" / "gst-mi355x-rvs1675-rocm721-docs-abridged.txt")
    assert parsed.ok, parsed.errors
    lost = [w for w in parsed.warnings if w.startswith("lost in the paste:")]
    assert len(lost) == 1 and "GPU 36479" in lost[0]


def test_an_rvs_action_whose_gpu_printed_no_verdict_without_the_box_is_incomplete() -> None:
    text = (CORPUS / "rvs" / "gst-mi355x-rvs1675-rocm721-docs-abridged.txt").read_text()
    parsed = parse_output(text[: text.index("+====")], tool=Tool.RVS)
    assert not parsed.ok
    assert any("printed no result for GPU 36479" in e for e in parsed.errors)


def test_an_rvs_action_the_box_fails_keeps_its_unfinished_gpus() -> None:
    text = (CORPUS / "rvs" / "gst-mi355x-rvs1675-rocm721-docs-abridged.txt").read_text()
    failed = text.replace("| GST            | PASS            |", "| GST            | FAIL            |")
    parsed = parse_output(failed, tool=Tool.RVS)
    assert not parsed.ok
    assert any("printed no result for GPU 36479" in e for e in parsed.errors)


# --- TransferBench: the old layout and an abort in the tool's words -----------------------------------------------


def test_the_old_pipe_layout_is_read() -> None:
    parsed = _parse(CORPUS / "transferbench" / "configfile-show-iterations-old-pipe-layout-2023.txt")
    assert (parsed.tool, parsed.kind, parsed.ok) == (Tool.TRANSFERBENCH, "config", True)
    assert isinstance(parsed.data, TransferBenchResult)
    transfer = parsed.data.tests[0].transfers[0]
    assert (transfer.gbps, transfer.size_bytes) == (33.52, 67108864)


def test_a_cpuset_abort_fails_with_the_tools_words() -> None:
    parsed = _parse(CORPUS / "transferbench" / "p2p-abort-cpuset-memory-policy-helios.txt")
    assert (parsed.tool, parsed.ok) == (Tool.TRANSFERBENCH, False)
    assert parsed.errors[0] == (
        "Transfer 0: DST 0: CPU 2 on rank 0 cannot allocate memory due to process memory policy/cpuset"
    )


# --- rocm-smi: the concise layout of ROC-smi 2017 to ROCm 2.x -----------------------------------------------------


@pytest.mark.parametrize(
    ("name", "devices"),
    [("concise-rocm24-2gpu-NA-power.txt", 2), ("concise-rocm21-pclk-empty-sysfs-warning.txt", 1)],
)
def test_the_old_concise_layout_is_read(name: str, devices: int) -> None:
    parsed = _parse(CORPUS / "rocm-smi" / name)
    assert (parsed.tool, parsed.ok) == (Tool.ROCM_SMI, True), parsed.errors
    assert parsed.summary["device_count"] == devices
    assert not [w for w in parsed.warnings if w.startswith("concise row has")]


# --- packs for MI210 and MI300A -----------------------------------------------------------------------------------


def test_mi210_and_mi300a_have_packs(packs: dict[str, CheckPack]) -> None:
    assert {"MI210", "MI300A"} <= set(packs)


def test_an_idle_mi210_default_view_passes_on_its_pack(packs: dict[str, CheckPack]) -> None:
    parsed = _parse(AMDSMI / "default-view-mi210-1gpu-amdsmi2622-rocm723-cut.txt")
    status, checks, _ = _judged(parsed, packs["MI210"])
    assert status == "PASS", checks
