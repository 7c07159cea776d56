"""Simulated TransferBench: layouts against the real samples, internal consistency, and each fault's evidence."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.probes import parse_output
from console.sim.faults import FaultKind
from console.sim.models import ClusterSpec
from console.sim.render.transferbench import parse_bytes
from console.sim.specs import GpuModel
from tests.sim.simcore_helpers import cluster, fault, run

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "transferbench"
TRANSFER = re.compile(
    r"^     Transfer (\d+)  \| +([\d.]+) GB/s \| +([\d.]+) ms \| +(\d+) bytes \| F(\d) -> G(\d{3}):(\d{3}) -> F(\d)$"
)


def _parse(text: str):  # type: ignore[no-untyped-def]
    return parse_output(text)


def _on_version(spec: ClusterSpec, version: str) -> ClusterSpec:
    spec.nodes[0].stack.transferbench = version
    return spec


@pytest.mark.parametrize(("text", "count"), [("64M", 64 * 1024**2), ("256K", 256 * 1024), ("1G", 1024**3), ("12", 12)])
def test_byte_counts_use_binary_suffixes(text: str, count: int) -> None:
    assert parse_bytes(text) == count


def test_a2a_matches_the_v1_60_sample_up_to_the_first_transfer() -> None:
    sample = (REAL / "a2a-64M-8CU-mi300x-v160-full.txt").read_text().splitlines()
    out = run(_on_version(cluster(GpuModel.MI300X), "1.60"), "TransferBench", "a2a", "64M", "8").stdout.splitlines()
    first_executor = sample.index(
        " Executor: GPU 00 |  315.552 GB/s |    1.489 ms |    469762048 bytes | 326.317 GB/s (sum)"
    )
    assert out[:first_executor] == sample[:first_executor]  # banner, env dump, benchmark heading
    assert sum(bool(TRANSFER.match(line)) for line in out) == 56
    for marker in (
        "Summary: [67108864 bytes per Transfer]",
        sample[sample.index("Summary: [67108864 bytes per Transfer]") + 2],
    ):
        assert marker in out
    assert [line[:32] for line in out[-3:]] == [line[:32] for line in sample[-3:]]


def test_a2a_summary_is_consistent_with_the_transfers() -> None:
    out = run(cluster(GpuModel.MI300X), "TransferBench", "a2a").stdout
    rates = [float(match.group(2)) for match in map(TRANSFER.match, out.splitlines()) if match]
    for match in filter(None, map(TRANSFER.match, out.splitlines())):
        assert float(match.group(3)) == pytest.approx(int(match.group(4)) / float(match.group(2)) / 1e6, abs=0.002)
    average = float(re.search(r"Average   bandwidth \(GPU Timed\): +([\d.]+) GB/s", out).group(1))  # type: ignore[union-attr]
    assert average == pytest.approx(sum(rates) / len(rates), abs=0.002)
    assert "268435456 bytes per Transfer" in out  # v1.59+ default size


def test_p2p_matches_the_v1_62_mi350x_sample_layout() -> None:
    sample = (REAL / "p2p-mi350x.txt").read_text().splitlines()
    out = run(_on_version(cluster(GpuModel.MI350X), "1.62"), "TransferBench", "p2p").stdout.splitlines()
    start = out.index(sample[0])
    ours = out[start : start + len(sample)]
    assert len(ours) == len(sample)
    for mine, theirs in zip(ours, sample, strict=True):
        assert re.sub(r"\d", "9", mine) == re.sub(r"\d", "9", theirs) or (mine.split()[:3] == theirs.split()[:3])
        assert len(mine) == len(theirs)
    parsed = _parse("\n".join(out))
    assert parsed.ok and parsed.summary["avg_uni_gbps"] == pytest.approx(57.3, rel=0.04)


def test_a2asweep_v1_67_layout_matches_the_docs_sample() -> None:
    sample = (REAL / "a2asweep-mi300x-v167.txt").read_text().splitlines()
    out = run(_on_version(cluster(GpuModel.MI300X), "1.67"), "TransferBench", "a2asweep").stdout.splitlines()
    section = out.index("[AllToAll Related]")
    assert out[section : section + len(sample) - 7] == sample[: len(sample) - 7]
    assert out[-7:-6] == sample[-7:-6] and out[-8] == "Blocksize: 256"
    ours = {int(line.split()[0]): [float(v) for v in line.split()[1:]] for line in out[-6:]}
    theirs = {int(line.split()[0]): [float(v) for v in line.split()[1:]] for line in sample[-6:]}
    assert ours.keys() == theirs.keys()
    assert ours[16][1] == pytest.approx(theirs[16][1], rel=0.06)  # ~319 GB/s slowest GPU at 16 CUs, unroll 2
    assert ours[4][0] < ours[16][1] and ours[32][5] < ours[16][1]  # starved at few CUs, past the knee at 32x8


def test_a2asweep_before_v1_67_prints_min_and_max_per_unroll() -> None:
    out = run(_on_version(cluster(GpuModel.MI355X), "1.62"), "TransferBench", "a2asweep").stdout
    assert "#CUs\\Unroll  1(Min)   1(Max)   2(Min)   2(Max) " in out
    assert "NUM_CUS              =            6 : 4,8,12,16,24,32" in out


def test_healthcheck_is_gfx942_only() -> None:
    reply = run(cluster(GpuModel.MI355X), "TransferBench", "healthcheck")
    assert reply.exit_status == 1
    assert "[WARN] healthcheck preset is currently not supported on this hardware\n" in reply.stdout
    assert "       Detected 8 x [gfx950] with [256] subexecutors per GPU\n" in reply.stdout
    assert _parse(reply.stdout).summary["unsupported"] is True


def test_healthcheck_passes_on_a_healthy_mi300x_with_hbm_tests_from_v1_63() -> None:
    reply = run(_on_version(cluster(GpuModel.MI300X), "1.67"), "TransferBench", "healthcheck")
    assert reply.exit_status == 0
    assert "Testing HBM performance [READ]             ........PASS\n" in reply.stdout
    assert "Testing all-to-all XGMI copies             ........PASS\n" in reply.stdout
    older = run(_on_version(cluster(GpuModel.MI300X), "1.59"), "TransferBench", "healthcheck").stdout
    assert "HBM" not in older and "Testing unidirectional host to device copy ........PASS" in older


def test_hbm_bandwidth_low_fails_the_healthcheck_hbm_test() -> None:
    spec = _on_version(cluster(GpuModel.MI300X, faults=[fault(FaultKind.HBM_BANDWIDTH_LOW, gpu=2)]), "1.67")
    reply = run(spec, "TransferBench", "healthcheck")
    assert reply.exit_status == 1
    assert "Testing HBM performance [READ]             ........FAIL (1 test(s))\n GPU 02: Measured: " in reply.stdout
    assert "Criteria: 4830.60 GB/s" in reply.stdout
    assert not _parse(reply.stdout).ok


def test_xgmi_link_down_fails_the_pair_in_healthcheck_and_a2a() -> None:
    spec = cluster(GpuModel.MI300X, faults=[fault(FaultKind.XGMI_LINK_DOWN, gpu=1, peer=4)])
    check = run(spec, "TransferBench", "healthcheck").stdout
    assert "Testing all-to-all XGMI copies             ........FAIL (2 test(s))" in check
    assert re.search(r" GPU 01 to GPU 04: +[\d.]+ GB/s      Criteria:  43.65 GB/s", check)
    parsed = _parse(run(spec, "TransferBench", "a2a").stdout)
    assert parsed.summary["slowest_pair"] in ("GPU1->GPU4", "GPU4->GPU1")
    assert parsed.summary["min_gbps"] < 20


def test_transferbench_pair_slow_shows_one_slow_pair_in_p2p() -> None:
    spec = cluster(GpuModel.MI350X, faults=[fault(FaultKind.TRANSFERBENCH_PAIR_SLOW, gpu=3, peer=6)])
    out = run(spec, "TransferBench", "p2p").stdout
    row = next(line for line in out.splitlines() if line.startswith("  GPU 03  ->"))
    cells = [float(value) for value in row.split()[3:]]
    assert cells[2 + 6] < 0.7 * cells[2 + 5]
    assert _parse(out).summary["slowest_pair"] in ("GPU3->GPU6", "GPU6->GPU3")


def test_pcie_downtrained_width_fails_the_host_copies() -> None:
    spec = cluster(GpuModel.MI300X, faults=[fault(FaultKind.PCIE_DOWNTRAINED_WIDTH, gpu=5)])
    out = run(spec, "TransferBench", "healthcheck").stdout
    assert "Testing unidirectional host to device copy ........FAIL (1 test(s))\n GPU 05: Measured: " in out


def test_gpu_missing_shrinks_a2a_and_disables_healthcheck() -> None:
    spec = cluster(GpuModel.MI300X, faults=[fault(FaultKind.GPU_MISSING, gpu=0)])
    assert "(42 Transfers)" in run(spec, "TransferBench", "a2a").stdout
    assert "Detected 7 x [gfx942]" in run(spec, "TransferBench", "healthcheck").stdout


def test_driver_not_loaded_is_a_hip_error() -> None:
    reply = run(cluster(faults=[fault(FaultKind.DRIVER_NOT_LOADED)]), "TransferBench", "a2a")
    assert reply.exit_status == 1 and "[ERROR] HIP Error: no ROCm-capable device is detected" in reply.stdout


def test_unknown_config_file_and_usage() -> None:
    assert run(cluster(), "TransferBench", "nosuch.cfg").exit_status == 1
    assert "Usage: TransferBench config <N>" in run(cluster(), "TransferBench").stdout


_WORDS = st.sampled_from(["a2a", "p2p", "healthcheck", "a2asweep", "64M", "8", "1G", "x"])


@settings(max_examples=60, deadline=None)
@given(st.lists(_WORDS | st.text(max_size=6), max_size=3))
def test_any_command_line_gives_a_reply(args: list[str]) -> None:
    reply = run(cluster(), "TransferBench", *args)
    assert isinstance(reply.stdout, str) and reply.exit_status in (0, 1)
