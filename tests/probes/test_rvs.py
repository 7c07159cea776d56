"""RVS parser on the real outputs in tests/fixtures/real/rvs: file in -> kind, ok, summary and typed fields out."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from console import probes
from console.cli import main
from console.model.rvs import RvsGpuResult, RvsResult
from console.probes import Tool, parse_output
from console.probes import rvs as rvs_probe

RVS_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "rvs"


def _results(data: RvsResult, metric: str) -> list[RvsGpuResult]:
    return [r for r in data.results if r.metric == metric]


def _check_gpu_list(data: RvsResult) -> None:
    assert data.version == "0.0.60202"
    assert [g.gpu_id for g in data.gpus] == [28851, 23018, 29122, 22683, 53458, 63883, 53667, 63738]
    assert data.bdf_of(28851) == "0000:05:00.0"
    assert data.bdf_of(63738) == "0000:e5:00.0"
    assert data.bdf_of(12345) is None
    assert [g.node_id for g in data.gpus] == list(range(2, 10))
    assert {g.name for g in data.gpus} == {"AMD Instinct MI300X"}
    assert {g.device_id for g in data.gpus} == {"0x74a1"}  # printed in decimal: Device 29857
    records = data.gpu_records()
    assert records[4].identity.kfd_gpu_id == 53458 and records[4].identity.bdf == "0000:85:00.0"


def _check_summary(data: RvsResult) -> None:
    assert data.summary_box
    assert data.version == "1.3.0"
    assert data.overview is not None
    assert data.overview.operating_system == "Ubuntu 24.04.3 LTS"
    assert data.overview.rocm_version == "7.0.2-56"
    assert data.overview.amdgpu_version == "6.14.14"
    assert data.overview.gpu_count == 8
    assert [(a.name, a.module, a.passed) for a in data.actions][:3] == [
        ("action_1", "gpup", True),
        ("action_2", "peqt", True),
        ("action_3", "pebb", True),
    ]
    assert all(a.passed for a in data.actions) and len(data.actions) == 9
    by_id = {g.gpu_id: g for g in data.gpus}
    assert (by_id[21010].index, by_id[21010].node_id, by_id[21010].bdf) == (0, 3, "0000:0a:00.0")
    assert (by_id[8465].index, by_id[8465].node_id, by_id[8465].bdf) == (7, 6, "0000:f1:00.0")
    assert by_id[28720].name == "AMD Instinct MI355X"
    assert data.results == []  # the trailing module_terminate line is a message, not a measurement


def _check_gst(data: RvsResult) -> None:
    (final,) = _results(data, "gflops")
    assert final.gpu is not None and final.gpu.gpu_id == 55354
    assert (final.value, final.target, final.passed, final.unit) == (738615.0, 639000.0, True, "GFLOPS")
    assert final.action == "gst-639Tflops-4K4K8K-rand-fp16"
    samples = [r.value for r in _results(data, "gflops_sample")]
    assert samples == [738501.0, 736974.0, 738615.0, 733394.0, 734481.0, 738615.0]
    assert [(a.name, a.module) for a in data.actions] == [("gst-639Tflops-4K4K8K-rand-fp16", "gst")]


def _check_config_error(data: RvsResult) -> None:
    assert [(a.name, a.module, a.passed) for a in data.actions] == [("gpustress", "gst", False)]
    assert data.results == []


def _check_cli_failure(data: RvsResult) -> None:
    assert [(a.name, a.module, a.passed) for a in data.actions] == [("action_1", "gst", False)]


def _check_mem(data: RvsResult) -> None:
    bandwidths = _results(data, "bandwidth")
    assert len(bandwidths) == 8
    assert bandwidths[0].value == pytest.approx(2003.017090)
    assert {r.label for r in bandwidths} == {"Test 11"}
    assert all(r.gpu is None for r in bandwidths)  # mem lines carry no GPU id


def _check_pbqt(data: RvsResult) -> None:
    peers = _results(data, "peers")
    assert [(p.gpu.gpu_id, p.peer.gpu_id) for p in peers if p.gpu and p.peer] == [(28851, 23018), (28851, 29122)]
    assert {(p.text, p.value, p.hop) for p in peers} == {("true", 15.0, "xGMI:15")}
    first = _results(data, "bandwidth")[0]
    assert (first.value, first.transfer, first.direction, first.duration_s) == (
        48.962,
        "1/56",
        "unidirectional",
        1.462462,
    )
    assert first.peer is not None and first.peer.bdf == "0000:26:00.0"
    assert data.bdf_of(22683) == "0000:65:00.0"


def _check_peqt(data: RvsResult) -> None:
    assert [(r.action, r.passed) for r in data.results] == [("pcie_act_1", True), ("pcie_act_17", True)]
    assert [(a.name, a.passed) for a in data.actions] == [
        ("pcie_act_1", True),
        ("pcie_act_2", None),
        ("pcie_act_17", True),
    ]


def _check_gm(data: RvsResult) -> None:
    metrics = [(r.metric, r.value, r.passed) for r in data.results]
    assert metrics == [
        ("temp_violations", 0.0, True),
        ("clock_violations", 0.0, True),
        ("mem_clock_violations", 0.0, True),
        ("fan_violations", 0.0, True),
        ("power_violations", 0.0, True),
    ]
    assert {r.gpu.gpu_id for r in data.results if r.gpu} == {28851}


def _check_iet(data: RvsResult) -> None:
    power = {(r.gpu.gpu_id, r.value) for r in _results(data, "power_w_sample") if r.gpu}
    assert power == {(28851, 127.0), (23018, 123.0)}
    verdicts = [(r.gpu.gpu_id, r.passed) for r in _results(data, "verdict") if r.gpu]
    assert verdicts == [(29122, True), (23018, True), (28851, True)]  # order as printed, not sorted
    assert {r.module for r in data.results} == {"iet"}
    assert [a.name for a in data.actions] == ["iet-620W-1K-rand-dgemm", "iet-wait-750W-28K-rand-dgemm"]


@dataclass(frozen=True)
class Case:
    """One real file and what the parser must read from it."""

    file: str
    kind: str
    ok: bool
    summary: dict[str, Any]
    check: Callable[[RvsResult], None]
    errors: tuple[str, ...] = field(default=())


CASES = [
    Case(
        "rvs-g-mi300x-v060202.txt",
        "gpu-list",
        True,
        {"gpu_count": 8, "pass_count": 0, "fail_count": 0},
        _check_gpu_list,
    ),
    Case(
        "rvs-summary-mi355x-8gpu-rvs130-allpass.txt",
        "summary",
        True,
        {
            "gpu_count": 8,
            "pass_count": 9,
            "fail_count": 0,
            "actions": 9,
            "modules": sorted(["gpup", "peqt", "pebb", "pbqt", "iet", "gst", "babel", "mem", "pesm"]),
        },
        _check_summary,
    ),
    Case(
        "gst-mi300x-fp16-single-action-truncated.txt",
        "gst",
        True,
        {"gpu_count": 1, "pass_count": 1, "fail_count": 0, "min_gflops": 738615.0},
        _check_gst,
    ),
    Case(
        "gst-config-missing-key-error.txt",
        "error",
        False,
        {"pass_count": 0, "fail_count": 0, "modules": ["gst"]},
        _check_config_error,
        (
            "RVS-ERROR [GST] [gpustress] key 'target_stress' was not found",
            "RVS-ERROR [gst] [gpustress] Action failed to run successfully.",
        ),
    ),
    Case(
        "cli-module-load-failure-2019.txt",
        "error",
        False,
        {"modules": ["gst"], "results": 0},
        _check_cli_failure,
        (
            "RVS-ERROR [CLI] could not load .so '/root/RVS/build/bin//libgst.so'",
            "RVS-ERROR [CLI] reason: '/opt/rocm/lib/librocblas.so.0: undefined symbol: "
            "_ZN8hip_impl22hipLaunchKernelGGLImplEmRK4dim3S2_jP12ihipStream_tPPv'",
            "RVS-ERROR [CLI] module 'gst' not available.",
            "RVS-ERROR [CLI] action 'action_1' could not crate action object in module 'gst'",
        ),
    ),
    Case(
        "mem-grep-bandwidth-mi300x.txt",
        "mem",
        True,
        {"min_bandwidth_gbps": 1994.768433, "max_bandwidth_gbps": 2006.810059, "results": 8},
        _check_mem,
    ),
    Case(
        "pbqt-single-mi300x-excerpt.txt",
        "pbqt",
        True,
        {"gpu_count": 4, "min_bandwidth_gbps": 48.577, "max_bandwidth_gbps": 48.962},
        _check_pbqt,
    ),
    Case("peqt-single-mi300x-excerpt.txt", "peqt", True, {"pass_count": 2, "fail_count": 0}, _check_peqt),
    Case(
        "gm-single-mi300x-excerpt.txt",
        "gm",
        True,
        {"gpu_count": 1, "pass_count": 5, "gm_violations": 0},
        _check_gm,
    ),
    Case(
        "iet-single-mi300x-excerpt.txt",
        "iet",
        True,
        {"gpu_count": 3, "pass_count": 3, "fail_count": 0, "max_power_w": 127.0},
        _check_iet,
    ),
]


def test_every_sample_has_a_case() -> None:
    assert sorted(p.name for p in RVS_DIR.iterdir()) == sorted(c.file for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.file for c in CASES])
def test_real_sample(case: Case) -> None:
    raw = (RVS_DIR / case.file).read_bytes()
    result = parse_output(raw, tool=Tool.RVS)
    assert (result.tool, result.kind, result.ok) == (Tool.RVS, case.kind, case.ok)
    for key, value in case.summary.items():
        assert result.summary[key] == value, key
    if case.errors:
        assert result.errors == list(case.errors)
    elif case.ok:
        assert result.errors == []
    assert isinstance(result.data, RvsResult)
    case.check(result.data)
    json.loads(result.model_dump_json())


@pytest.mark.parametrize("case", CASES, ids=[c.file for c in CASES])
def test_detects_rvs_and_its_kind(case: Case) -> None:
    found = rvs_probe.detect((RVS_DIR / case.file).read_text())
    assert found is not None
    assert (found.tool, found.kind) == (Tool.RVS, case.kind)
    assert found.confidence >= 0.85


def test_detection_through_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    # Only the RVS parser registered: detection finds it among the registry's tools alone.
    monkeypatch.setattr(probes, "_PARSERS", {Tool.RVS: rvs_probe})
    result = parse_output((RVS_DIR / "rvs-summary-mi355x-8gpu-rvs130-allpass.txt").read_bytes())
    assert (result.tool, result.kind) == (Tool.RVS, "summary")
    assert probes.detect(b"just some text\nwithout markers\n") is None


def test_other_parsers_do_not_outbid_rvs() -> None:
    assert len(probes._PARSERS) == len(Tool)  # every tool's parser takes part
    for path in sorted(RVS_DIR.iterdir()):
        found = probes.detect(path.read_bytes())
        assert found is not None and found.tool is Tool.RVS, path.name


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    code = main(["parse", *args, "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip() else {}, captured.err


def test_cli_prints_one_json_object_and_exit_0_on_pass(capsys: pytest.CaptureFixture[str]) -> None:
    code, obj, _ = _cli(capsys, str(RVS_DIR / "rvs-summary-mi355x-8gpu-rvs130-allpass.txt"), "--as", "rvs")
    assert code == 0
    assert (obj["tool"], obj["kind"], obj["ok"]) == ("rvs", "summary", True)
    assert obj["summary"]["gpu_count"] == 8
    assert obj["data"]["actions"][8] == {"name": "action_9", "module": "pesm", "passed": True}


def test_cli_exit_1_on_tool_failure(capsys: pytest.CaptureFixture[str]) -> None:
    code, obj, _ = _cli(capsys, str(RVS_DIR / "gst-config-missing-key-error.txt"), "--as", "rvs")
    assert code == 1
    assert (obj["kind"], obj["ok"]) == ("error", False)
    assert obj["errors"][1] == "RVS-ERROR [gst] [gpustress] Action failed to run successfully."


def test_cli_exit_2_when_not_rvs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello\nworld\n")
    code, obj, err = _cli(capsys, str(path), "--as", "rvs")
    assert (code, obj) == (2, {})
    assert "no RVS output found" in err


def test_cli_kind_override(capsys: pytest.CaptureFixture[str]) -> None:
    code, obj, _ = _cli(capsys, str(RVS_DIR / "gst-mi300x-fp16-single-action-truncated.txt"), "--as", "rvs:gst")
    assert (code, obj["kind"]) == (0, "gst")


def test_unknown_kind_is_a_parse_error() -> None:
    with pytest.raises(probes.ParseError, match="unknown rvs kind"):
        rvs_probe.parse((RVS_DIR / "gm-single-mi300x-excerpt.txt").read_text(), "nonsense")


@pytest.mark.parametrize("word", ["FAILED", "N/A", "unknown"])
def test_a_peqt_verdict_word_not_understood_leaves_no_failure_count(word: str) -> None:
    # A word other than true/false may well be a failure: counting it as neither would read as 0 failed.
    text = (RVS_DIR / "peqt-single-mi300x-excerpt.txt").read_text()
    result = parse_output(text.replace("[pcie_act_17] peqt true", f"[pcie_act_17] peqt {word}"), tool=Tool.RVS)
    assert result.summary["pass_count"] == 1
    assert result.summary["fail_count"] is None
    assert f"peqt verdict {word!r} is neither true nor false" in result.summary["fail_count_unread"]
    assert any("[pcie_act_17] peqt" in warning for warning in result.warnings)


def test_a_failed_peqt_verdict_still_counts_beside_one_not_understood() -> None:
    text = (RVS_DIR / "peqt-single-mi300x-excerpt.txt").read_text()
    text = text.replace("[pcie_act_1] peqt true", "[pcie_act_1] peqt false").replace(
        "[pcie_act_17] peqt true", "[pcie_act_17] peqt FAILED"
    )
    result = parse_output(text, tool=Tool.RVS)
    assert (result.ok, result.summary["fail_count"]) == (False, 1)
