"""Simulated RVS: layouts against the real samples, parser round trips, and one test per fault's evidence."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.probes import parse_output
from console.sim.commands import Delivery
from console.sim.faults import FaultKind
from console.sim.models import build_node
from console.sim.render.rvs import rvs_timestamp
from console.sim.specs import GpuModel
from tests.sim.simcore_helpers import NODE, cluster, fault, run

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "rvs"
RESULT = re.compile(r"^\[RESULT\] \[[ \d]{6,}\.\d+ *\] ")


def _parse(text: str):  # type: ignore[no-untyped-def]
    return parse_output(text)


def _lines(text: str) -> list[str]:
    return text.splitlines()


@pytest.mark.parametrize(
    ("seconds", "stamp"),
    [
        (2456.047741, "[  2456.47741 ]"),
        (1101992.016545, "[1101992.16545 ]"),
        (209228.305186, "[209228.305186]"),
        (82145.821495, "[ 82145.821495]"),
    ],
)
def test_timestamp_drops_leading_zeros_of_the_microseconds_like_rvs(seconds: float, stamp: str) -> None:
    assert rvs_timestamp(seconds) == stamp


def test_gpu_list_matches_the_0_0_60202_sample_layout() -> None:
    sample = _lines((REAL / "rvs-g-mi300x-v060202.txt").read_text())
    out = run(cluster(GpuModel.MI300X, rocm="6.2.2"), "rvs", "-g").stdout
    lines = [line for line in _lines(out) if line]
    assert lines[0] == sample[0] == "ROCm Validation Suite (version 0.0.60202)"
    assert "Supported GPUs available:\n\n0000:" in out  # the pre-1.0 blank line
    gpu_line = re.compile(
        r"^0000:[0-9a-f]{2}:00\.0 - GPU\[[ \d]\d - [ \d]{4}\d\] AMD Instinct MI300X \(Device 29857\)$"
    )
    assert all(gpu_line.match(line) for line in sample[4:])
    assert sum(bool(gpu_line.match(line)) for line in lines) == 8


def test_gpu_list_of_rvs_1_1_has_no_blank_line_and_uses_kfd_ids() -> None:
    spec = cluster(GpuModel.MI300X, rocm="6.4.1")
    out = run(spec, "rvs", "-g").stdout
    assert "Supported GPUs available:\n0000:" in out
    node = build_node(spec, NODE)
    for gpu in node.gpus:
        assert f"{gpu.bdf} - GPU[{gpu.kfd_node:2d} - {gpu.kfd_gpu_id:5d}]" in out


def test_summary_box_matches_the_rvs_1_3_mi355x_sample() -> None:
    sample = _lines((REAL / "rvs-summary-mi355x-8gpu-rvs130-allpass.txt").read_text())
    reply = run(cluster(GpuModel.MI355X, rocm="7.0.2"), "rvs")
    lines = _lines(reply.stdout)
    start = lines.index(sample[0])
    box = lines[start : start + len(sample) - 1]
    # Everything but the GPU identities is the same text: overview, borders, action table.
    for ours, theirs in zip(box, sample, strict=False):
        if "AMD Instinct" in theirs or re.match(r"\| \d - \d - ", theirs):
            assert len(ours) == len(theirs)
        else:
            assert ours == theirs
    assert re.match(r"^\[RESULT\] \[[ \d]{6}\.\d+ *\] \[module_terminate\] PCIe monitoring ended", lines[-1])
    assert reply.exit_status == 0


def test_gst_lines_follow_the_sample_grammar() -> None:
    sample = _lines((REAL / "gst-mi300x-fp16-single-action-truncated.txt").read_text())
    out = run(cluster(GpuModel.MI300X), "rvs", "-c", "conf/MI300X/gst_single.conf").stdout
    assert all(RESULT.match(line) for line in _lines(out))
    final = re.compile(r"\[gst-\d+Tflops-\w+-rand-\w+\] \[GPU:: \d+\] GFLOPS \d+ Target GFLOPS: \d+ met: (TRUE|FALSE)$")
    assert final.search(sample[-1])
    assert sum(bool(final.search(line)) for line in _lines(out)) == 8 * 5  # 8 GPUs x 5 MI300X dtypes
    assert "Action name :gst-639Tflops-4K4K8K-rand-fp16" in out


@pytest.mark.parametrize("model", list(GpuModel))
def test_default_conf_parses_and_passes_on_every_healthy_model(model: GpuModel) -> None:
    # RVS 1.3 (ROCm 7.0.2): older RVS prints no summary box, which parsers may take for a cut log.
    reply = run(cluster(model, rocm="7.0.2"), "rvs")
    parsed = _parse(reply.stdout)
    assert parsed.tool == "rvs"
    assert parsed.ok, parsed.errors
    assert parsed.summary.get("gpu_count") == 8


@pytest.mark.parametrize(
    ("conf", "kind"),
    [
        ("gst_single.conf", "gst"),
        ("iet_single.conf", "iet"),
        ("pebb_single.conf", "pebb"),
        ("pbqt_single.conf", "pbqt"),
        ("peqt_single.conf", "peqt"),
        ("gm_single.conf", "gm"),
        ("mem.conf", "mem"),
        ("babel.conf", "babel"),
        ("gpup_single.conf", "gpup"),
        ("tst_single.conf", "tst"),
    ],
)
def test_each_module_conf_parses_as_that_module(conf: str, kind: str) -> None:
    parsed = _parse(run(cluster(GpuModel.MI300X), "rvs", "-c", f"conf/MI300X/{conf}").stdout)
    assert parsed.kind == kind
    assert parsed.ok, parsed.errors


def test_level_run_prints_the_launcher_preamble() -> None:
    out = run(cluster(GpuModel.MI300X), "rvs", "-r", "2").stdout
    assert out.startswith("Detected platform is: MI300X\nTest level is: 2\nUsing configuration file: ")
    assert "Module name :pbqt" in out and "Module name :gst" not in out


def test_unknown_conf_file_is_an_rvs_error() -> None:
    reply = run(cluster(), "rvs", "-c", "conf/nosuch.conf")
    assert reply.stderr == "RVS-ERROR [CLI] conf/nosuch.conf file is missing.\n"
    assert reply.exit_status == 255


def test_rvs_gst_low_fails_met_on_that_gpu_only() -> None:
    spec = cluster(GpuModel.MI300X, faults=[fault(FaultKind.RVS_GST_LOW, gpu=3)])
    out = run(spec, "rvs", "-c", "gst_single.conf").stdout
    slow = build_node(spec, NODE).gpu_by_slot(3)
    assert slow is not None
    failed = [line for line in _lines(out) if "met: FALSE" in line]
    assert failed and all(f"[GPU:: {slow.kfd_gpu_id}]" in line for line in failed)
    parsed = _parse(out)
    assert not parsed.ok
    assert any(str(slow.kfd_gpu_id) in error for error in parsed.errors)


def test_rvs_gst_low_marks_gst_fail_in_the_summary_box() -> None:
    spec = cluster(GpuModel.MI355X, faults=[fault(FaultKind.RVS_GST_LOW, gpu=0)])
    out = run(spec, "rvs").stdout
    assert "| action_6                         | GST            | FAIL            |" in out
    assert "| action_7                         | BABEL          | PASS            |" in out


def test_hbm_bandwidth_low_shows_in_mem_and_babel_bandwidth() -> None:
    spec = cluster(GpuModel.MI300X, faults=[fault(FaultKind.HBM_BANDWIDTH_LOW, gpu=2, factor=0.6)])
    mem = run(spec, "rvs", "-c", "mem.conf").stdout
    rates = [float(m) for m in re.findall(r"bandwidth = ([\d.]+)GB/s", mem)]
    assert len(rates) == 8
    assert min(rates) < 0.65 * max(rates)
    slow = build_node(spec, NODE).gpu_by_slot(2)
    assert slow is not None
    babel = run(spec, "rvs", "-c", "babel.conf").stdout
    copy = {
        int(cells[0]): float(cells[2]) for cells in (line.split() for line in _lines(babel)) if cells[1:2] == ["Copy"]
    }
    assert copy[slow.kfd_gpu_id] < 0.65 * max(copy.values())


def test_gpu_missing_leaves_seven_gpus_everywhere() -> None:
    spec = cluster(GpuModel.MI355X, faults=[fault(FaultKind.GPU_MISSING, gpu=5)])
    assert run(spec, "rvs", "-g").stdout.count("AMD Instinct MI355X") == 7
    out = run(spec, "rvs").stdout
    assert "| GPUs                             | 7                                |" in out
    assert _parse(out).summary.get("gpu_count") == 7


def test_xgmi_link_down_shows_peers_false_for_the_pair() -> None:
    spec = cluster(GpuModel.MI300X, faults=[fault(FaultKind.XGMI_LINK_DOWN, gpu=1, peer=4)])
    node = build_node(spec, NODE)
    a, b = node.gpu_by_slot(1), node.gpu_by_slot(4)
    assert a is not None and b is not None
    out = run(spec, "rvs", "-c", "pbqt_single.conf").stdout
    down = [line for line in _lines(out) if "peers:false" in line]
    assert len(down) == 2
    assert all(a.bdf in line and b.bdf in line for line in down)
    assert "p2p-bandwidth[ 1/54]" in out  # the pair is not measured


def test_power_throttle_fails_iet() -> None:
    spec = cluster(GpuModel.MI300X, faults=[fault(FaultKind.POWER_THROTTLE, gpu=6)])
    out = run(spec, "rvs", "-c", "iet_single.conf").stdout
    assert len([line for line in _lines(out) if line.endswith("pass: FALSE")]) == 1
    assert not _parse(out).ok


def test_pcie_downtrained_gen_fails_the_speed_check_of_peqt() -> None:
    spec = cluster(GpuModel.MI300X, faults=[fault(FaultKind.PCIE_DOWNTRAINED_GEN, gpu=0)])
    out = run(spec, "rvs", "-c", "peqt_single.conf").stdout
    assert "[pcie_act_2] peqt false" in out and "[pcie_act_1] peqt true" in out


def test_driver_not_loaded_means_no_gpu() -> None:
    spec = cluster(faults=[fault(FaultKind.DRIVER_NOT_LOADED)])
    reply = run(spec, "rvs", "-c", "gst_single.conf")
    assert reply.stderr == "RVS-ERROR [CLI] No platform support for the detected GPU or no GPU detected !\n"
    assert reply.exit_status == 255
    assert "No supported GPUs available." in run(spec, "rvs", "-g").stdout
    assert not _parse(reply.stdout + reply.stderr).ok


def test_tool_missing_is_a_shell_not_found() -> None:
    reply = run(cluster(faults=[fault(FaultKind.TOOL_MISSING, program="rvs")]), "rvs", "-g")
    assert (reply.exit_status, reply.stderr) == (127, "sh: 1: rvs: not found\n")


def test_readings_vary_between_invocations_but_not_within_one() -> None:
    spec = cluster()
    first = run(spec, "rvs", "-c", "gst_single.conf", invocation=1).stdout
    assert first == run(spec, "rvs", "-c", "gst_single.conf", invocation=1).stdout
    assert first != run(spec, "rvs", "-c", "gst_single.conf", invocation=2).stdout


def test_duration_is_scaled_by_the_time_factor() -> None:
    reply = run(cluster(), "rvs", "-c", "gst_single.conf")
    assert 3 < reply.duration_s < 20  # ~150 s of GST at the default time factor 20
    assert reply.delivery is Delivery.NORMAL


_WORDS = st.sampled_from(["-c", "-r", "-g", "-i", "-d", "-h", "-t", "--version", "rvs.conf", "gst_single.conf", "3"])


@settings(max_examples=150, deadline=None)
@given(st.lists(_WORDS | st.text(max_size=12), max_size=5))
def test_any_command_line_gives_a_reply(args: list[str]) -> None:
    reply = run(cluster(), "rvs", *args)
    assert isinstance(reply.stdout, str) and isinstance(reply.exit_status, int)


def test_rvs_peqt_word_prints_every_peqt_verdict_as_that_word() -> None:
    out = run(cluster(GpuModel.MI300X, faults=[fault(FaultKind.RVS_PEQT_WORD)]), "rvs", "-r", "3").stdout
    assert "[pcie_act_1] peqt FAILED" in out and "peqt true" not in out
    assert _parse(out).summary["fail_count"] is None


def test_rvs_gpu_unseen_leaves_that_gpu_out_of_every_module() -> None:
    spec = cluster(GpuModel.MI300X, faults=[fault(FaultKind.RVS_GPU_UNSEEN, gpu=3)])
    unseen = build_node(spec, NODE).gpu_by_slot(3)
    assert unseen is not None
    out = run(spec, "rvs", "-r", "3").stdout
    assert f"GPU:: {unseen.kfd_gpu_id}]" not in out
    parsed = _parse(out)
    assert parsed.ok and parsed.summary["gpu_count"] == 7


def test_rvs_stops_early_ends_after_the_first_conf_entry_with_status_0() -> None:
    # The level's first entry is peqt, which prints its three capability checks as three actions.
    reply = run(cluster(GpuModel.MI300X, faults=[fault(FaultKind.RVS_STOPS_EARLY)]), "rvs", "-r", "3")
    assert reply.exit_status == 0 and reply.stdout.count("Action name") == 3
    assert reply.stdout.rstrip().endswith("[pcie_act_3] peqt true")
    parsed = _parse(reply.stdout)
    assert parsed.ok and "gpu_count" not in parsed.summary
