"""TransferBench parser: real preset outputs in, typed tables/summary out; mangled logs never crash it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import pytest
from hypothesis import given

from console.cli import main
from console.model.transferbench import Direction, TransferBenchResult
from console.probes import ParsedOutput, ParseError, Tool, parse_output, transferbench
from console.probes.base import to_text
from tests.probes.fuzz import FUZZ_SETTINGS, assert_total, mangled_outputs

SAMPLES = Path(__file__).parents[1] / "fixtures" / "real" / "transferbench"
A2A = SAMPLES / "a2a-64M-8CU-mi300x-v160-full.txt"
A2A_SWEEP = SAMPLES / "a2asweep-mi300x-v167.txt"
CONFIG_HIP_ERROR = SAMPLES / "configfile-example-mi350x-hip-error.txt"
NIC_RINGS = SAMPLES / "nicrings-4node-mi350x-v167.txt"
P2P = SAMPLES / "p2p-mi350x.txt"


def parsed(text: str | bytes, kind: str | None = None) -> tuple[ParsedOutput, TransferBenchResult]:
    result = parse_output(text, tool=Tool.TRANSFERBENCH, kind=kind)
    assert isinstance(result.data, TransferBenchResult)
    return result, result.data


def cut_before(text: str, marker: str) -> str:
    return text[: text.index(marker)]


class RealCase(NamedTuple):
    path: Path
    kind: str
    ok: bool
    min_gbps: float | None
    slowest_pair: str | None
    gpu_count: int | None
    avg_gbps: float | None
    version: str | None


REAL_CASES = [
    RealCase(A2A, "a2a", True, 45.095, "GPU7->GPU0", 8, 46.552, "1.60.00"),
    RealCase(P2P, "p2p", True, 37.99, "GPU1->GPU7", 8, 57.32, None),
    RealCase(A2A_SWEEP, "a2asweep", True, None, None, 8, None, None),
    RealCase(NIC_RINGS, "nicrings", True, 31.32, None, 8, None, None),
    RealCase(CONFIG_HIP_ERROR, "unknown", False, None, None, None, None, "1.62.00"),
]


@pytest.mark.parametrize("case", REAL_CASES, ids=[case.path.name for case in REAL_CASES])
def test_real_outputs(case: RealCase) -> None:
    result, _ = parsed(case.path.read_bytes())
    assert (result.tool, result.kind, result.ok) == (Tool.TRANSFERBENCH, case.kind, case.ok)
    assert result.tool_version == case.version
    summary = result.summary
    assert (summary["min_gbps"], summary["slowest_pair"]) == (case.min_gbps, case.slowest_pair)
    assert (summary["gpu_count"], summary["avg_gbps"]) == (case.gpu_count, case.avg_gbps)
    json.loads(result.model_dump_json())


def test_a2a_v160_matrix_tests_and_environment() -> None:
    result, data = parsed(A2A.read_text())
    assert result.errors == [] and result.warnings == []
    assert result.summary["aggregate_gpu_gbps"] == 2606.891
    assert result.summary["aggregate_cpu_gbps"] == 1937.924
    assert data.bytes_per_transfer == 67108864
    assert data.banner == "TransferBench v1.60.00 (with NIC support)"
    assert (data.env["GFX_UNROLL"].value, data.env["GFX_UNROLL"].section) == ("2", "Common")
    assert data.env["USE_FINE_GRAIN"].section == "AllToAll Related"
    assert data.env["CLOSEST_NIC"].value == "auto"
    # 56 directly connected pairs, the N/A diagonal is not a measurement.
    assert len(data.matrix) == 56
    cell = {(e.src_index, e.dst_index): e.gbps for e in data.matrix}
    assert (cell[(0, 7)], cell[(7, 0)], cell[(3, 4)]) == (45.21, 45.095, 45.142)
    (test,) = data.tests
    assert (len(test.executors), len(test.transfers)) == (8, 56)
    executor = test.executors[7]
    assert (executor.device_type, executor.index, executor.gbps, executor.sum_gbps) == ("GPU", 7, 314.759, 325.207)
    transfer = test.transfers[6]
    assert transfer.descriptor == "F0 -> G000:008 -> F7"
    assert (transfer.gbps, transfer.duration_ms, transfer.size_bytes) == (45.21, 1.484, 67108864)
    assert (transfer.executor, transfer.executor_index, transfer.subexecutors) == ("G", 0, 8)
    assert [(m.letter, m.index) for m in transfer.srcs + transfer.dsts] == [("F", 0), ("F", 7)]
    assert test.aggregate is not None
    assert (test.aggregate.gbps, test.aggregate.size_bytes, test.aggregate.overhead_ms) == (1937.924, 3758096384, 0.447)


def test_p2p_matrices_directions_and_averages() -> None:
    result, data = parsed(P2P.read_text())
    assert result.summary["min_uni_gbps"] == 46.66
    assert result.summary["min_bi_gbps"] == 37.99
    assert (result.summary["avg_uni_gbps"], result.summary["avg_bi_gbps"]) == (57.32, 54.32)

    def gbps(direction: Direction, src: tuple[str, int], dst: tuple[str, int], reverse: bool = False) -> float | None:
        (entry,) = [
            e
            for e in data.matrix
            if (e.direction, e.src_type, e.src_index, e.dst_type, e.dst_index, e.reverse)
            == (direction, *src, *dst, reverse)
        ]
        return entry.gbps

    assert gbps(Direction.UNI, ("GPU", 7), ("GPU", 1)) == 46.66
    assert gbps(Direction.UNI, ("GPU", 0), ("GPU", 0)) == 2132.28  # local copy, kept but not a link
    assert gbps(Direction.UNI, ("CPU", 1), ("CPU", 0)) == 104.88
    assert gbps(Direction.BI, ("GPU", 3), ("GPU", 6)) == 38.96
    # '<-' row of GPU 03: the GPU 06 -> GPU 03 transfer running during the 03<->06 pair test.
    assert gbps(Direction.BI, ("GPU", 6), ("GPU", 3), reverse=True) == 40.37
    assert gbps(Direction.BI, ("GPU", 1), ("GPU", 7), reverse=True) == 37.99
    assert not [
        e for e in data.matrix if e.direction == Direction.BI and (e.src_type, e.src_index) == (e.dst_type, e.dst_index)
    ]
    averages = {(a.direction, a.src_type, a.dst_type): a.gbps for a in data.averages}
    assert averages[(Direction.UNI, "CPU", "CPU")] == 103.69
    assert averages[(Direction.BI, "GPU", "CPU")] == 49.66
    assert data.bytes_per_transfer == 268435456


def test_p2p_cut_inside_the_bidirectional_matrix_is_incomplete() -> None:
    result, _ = parsed(cut_before(P2P.read_text(), "  GPU 05  ->     55.12"))
    assert result.ok is False
    assert result.errors == [
        "incomplete: p2p bidirectional matrix has no averages line",
        *(f"incomplete: p2p bidirectional matrix has no row for GPU {k:02d}" for k in (5, 6, 7)),
    ]


def test_p2p_matrix_without_one_devices_rows_is_incomplete() -> None:
    # Whole lines, every other row and both averages lines there: only the missing row says it.
    text = P2P.read_text()
    lost = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("  GPU 03"))
    assert lost != text
    result, _ = parsed(lost)
    assert result.ok is False
    assert result.errors == [f"incomplete: p2p {way}directional matrix has no row for GPU 03" for way in ("uni", "bi")]


def test_a2asweep_grid() -> None:
    result, data = parsed(A2A_SWEEP.read_text())
    assert (result.summary["best_gbps"], result.summary["best_config"]) == (325.88, "32 CUs, unroll 2")
    assert len(data.sweep) == 36
    first = data.sweep[0]
    assert (first.block_size, first.num_cus, first.unroll, first.statistic, first.gbps) == (256, 4, 1, "min", 120.38)
    assert data.env["UNROLLS"].value == "6"
    assert data.env["UNROLLS"].description == "1,2,3,4,6,8"


def test_a2asweep_failed_combination_fails_the_run() -> None:
    text = A2A_SWEEP.read_text().replace("120.38", "  0.00")
    result, data = parsed(text)
    assert result.ok is False
    assert data.sweep[0].gbps is None
    assert result.errors == ["a2asweep: 1 of 36 combinations failed (printed 0.00 GB/s)"]


def test_nicrings_box_drawing_table() -> None:
    result, data = parsed(NIC_RINGS.read_text())
    assert (result.summary["ranks"], result.summary["aggregate_cpu_gbps"]) == (4, 960.62)
    assert len(data.nic_rings) == 32
    cell = next(c for c in data.nic_rings if c.rank == 3 and c.nic_index == 1)
    assert (cell.host, cell.device, cell.nic_name, cell.gbps) == ("cv350-zts-gtu-h32a-08", "GPU 01", "bnxt_re1", 31.34)
    stats = {(s.statistic, s.nic_index): s.gbps for s in data.nic_ring_stats}
    assert (stats[("avg", None)], stats[("max", 1)], stats[("min", 7)]) == (250.60, 31.34, 31.32)
    assert data.env["USE_RDMA_READ"].section == "NIC-Rings Related"


def test_nicrings_without_aggregate_line_is_incomplete() -> None:
    result, _ = parsed(cut_before(NIC_RINGS.read_text(), "Aggregate bandwidth"))
    assert result.ok is False
    assert result.errors == ["incomplete: no 'Aggregate bandwidth (CPU Timed)' line after the NIC rings table"]


def test_hip_error_is_a_readable_failure() -> None:
    result, data = parsed(CONFIG_HIP_ERROR.read_text())
    assert result.errors == ["[ERROR] HIP Error: invalid resource handle", "no results table"]
    assert data.banner == "TransferBench v1.62.00"


def test_mismatch_error_and_warnings_interleaved() -> None:
    text = A2A.read_text().replace(
        "Test 1:\n",
        "[WARN] DMA 0 attempting 7 parallel transfers, however GPU_MAX_HW_QUEUES only set to 4\nTest 1:\n",
    )
    text += "[ERROR] Transfer 0: Unexpected mismatch at index 4096 of destination 0: Expected 1.0 Actual 0.0\n"
    result, _ = parsed(text)
    assert result.ok is False
    assert result.errors == [
        "[ERROR] Transfer 0: Unexpected mismatch at index 4096 of destination 0: Expected 1.0 Actual 0.0"
    ]
    assert result.warnings == ["[WARN] DMA 0 attempting 7 parallel transfers, however GPU_MAX_HW_QUEUES only set to 4"]


def test_a2a_cut_before_summary_is_incomplete_and_falls_back_to_transfers() -> None:
    result, data = parsed(cut_before(A2A.read_text(), "Summary:"))
    assert (result.kind, result.ok) == ("a2a", False)
    assert data.matrix == []
    assert result.errors == ["incomplete: no 'Average bandwidth (GPU Timed)' line after the all-to-all results"]
    assert (result.summary["min_gbps"], result.summary["slowest_pair"]) == (45.095, "GPU7->GPU0")


HEALTHCHECK_FAIL = """\
TransferBench v1.67.00 (HEAD:2bc42cd) (Single-node mode)
Disclaimer:
==================================================================
NOTE: This is an experimental feature and may be subject to change
      Failures do not necessarily indicate hardware issues, as other factors
      such as simultaneous workloads may influence results

Testing HBM performance [READ]             ........PASS
Testing HBM performance [WRITE]            ........PASS
Testing HBM performance [COPY]             ........PASS
Testing HBM performance [ADD]              ........PASS
Testing unidirectional host to device copy ........PASS
Testing unidirectional device to host copy ........PASS
Testing bidirectional host<->device copies ........FAIL (1 test(s))
 GPU 00: Measured:  86.17 GB/s      Criteria:  87.30 GB/s
Testing all-to-all XGMI copies             ........FAIL (2 test(s))
 GPU 00 to GPU 01:  40.30 GB/s      Criteria:  43.65 GB/s
 GPU 03 to GPU 06:  39.02 GB/s      Criteria:  43.65 GB/s
"""


def test_healthcheck_failure() -> None:
    result, data = parsed(HEALTHCHECK_FAIL)
    assert (result.kind, result.ok) == ("healthcheck", False)
    assert result.summary == {
        "min_gbps": 39.02,
        "slowest_pair": "GPU3->GPU6",
        "gpu_count": 8,
        "avg_gbps": None,
        "unsupported": False,
        "tests": 8,
        "tests_failed": 2,
    }
    names = [test.name for test in data.healthcheck]
    assert names[0] == "HBM performance [READ]" and names[-1] == "all-to-all XGMI copies"
    bidir = data.healthcheck[6]
    assert (bidir.passed, bidir.failed_count, bidir.gpus_tested) == (False, 1, 8)
    assert (bidir.items[0].gpu, bidir.items[0].measured_gbps, bidir.items[0].criteria_gbps) == (0, 86.17, 87.3)
    assert result.errors[:2] == [
        "Testing bidirectional host<->device copies: FAIL (1 test(s))",
        "GPU 00: 86.17 GB/s below criteria 87.30 GB/s",
    ]


def test_healthcheck_pass_and_verbose_verdict_on_its_own_line() -> None:
    verbose = (
        HEALTHCHECK_FAIL.split("Testing bidirectional", maxsplit=1)[0]
        + "Testing bidirectional host<->device copies ........PASS\n"
        + "Testing all-to-all XGMI copies             \n"
        + "   GPU 00 to GPU 01: : Measured  44.10 Limit  43.65\n"
        + "   GPU 01 to GPU 00: : Measured  44.60 Limit  43.65\n"
        + "PASS\n"
    )
    result, data = parsed(verbose)
    assert (result.kind, result.ok, result.errors) == ("healthcheck", True, [])
    xgmi = data.healthcheck[-1]
    assert (xgmi.passed, [item.passed for item in xgmi.items]) == (True, [True, True])
    assert (result.summary["min_gbps"], result.summary["slowest_pair"]) == (44.1, "GPU0->GPU1")


def test_healthcheck_cut_before_a_verdict_is_incomplete() -> None:
    cut = (
        HEALTHCHECK_FAIL.split("Testing unidirectional device", maxsplit=1)[0]
        + "Testing unidirectional device to host copy ...."
    )
    result, _ = parsed(cut)
    assert result.ok is False
    assert result.errors == [
        "incomplete: no verdict for 'Testing unidirectional device to host copy'",
        "incomplete: no 'Testing bidirectional host<->device copies' line",
        "incomplete: no 'Testing all-to-all XGMI copies' line",
    ]


def test_healthcheck_without_its_all_to_all_test_is_incomplete() -> None:
    # Whole lines, every verdict PASS, exit 0: only the missing last test says the run ended early.
    healthy = HEALTHCHECK_FAIL.replace("FAIL (1 test(s))", "PASS").replace("FAIL (2 test(s))", "PASS")
    healthy = "\n".join(line for line in healthy.splitlines() if "Measured:" not in line and "Criteria:" not in line)
    assert parsed(healthy + "\n")[0].errors == []
    short = healthy.split("Testing all-to-all", maxsplit=1)[0]
    result, _ = parsed(short)
    assert (result.kind, result.ok) == ("healthcheck", False)
    assert result.errors == ["incomplete: no 'Testing all-to-all XGMI copies' line"]


def test_healthcheck_that_stops_after_its_disclaimer_has_no_results() -> None:
    result, _ = parsed(HEALTHCHECK_FAIL.split("Testing", maxsplit=1)[0])
    assert (result.kind, result.ok, result.errors) == ("healthcheck", False, ["no results table"])


def test_healthcheck_on_unsupported_hardware_is_a_skip() -> None:
    text = HEALTHCHECK_FAIL.split("Testing", maxsplit=1)[0] + (
        "[WARN] healthcheck preset is currently not supported on this hardware\n"
        "       Detected 8 x [gfx950] with [256] subexecutors per GPU\n"
    )
    result, data = parsed(text)
    assert (result.kind, result.ok, result.errors) == ("healthcheck", True, [])
    assert result.summary["unsupported"] is True and data.unsupported is True
    assert result.warnings == [
        "[WARN] healthcheck preset is currently not supported on this hardware",
        "Detected 8 x [gfx950] with [256] subexecutors per GPU",
    ]


def test_parse_says_a_declined_healthcheck_measured_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """It read 'OK', exit 0: as if a node had passed a test it never ran (issue 16)."""
    paste = tmp_path / "healthcheck.txt"
    paste.write_text(
        HEALTHCHECK_FAIL.split("Testing", maxsplit=1)[0]
        + "[WARN] healthcheck preset is currently not supported on this hardware\n"
    )
    assert main(["parse", str(paste)]) == 1
    out = capsys.readouterr().out
    assert "DECLINED: nothing measured" in out and " OK" not in out


BORDERED_MULTI_RANK = """\
TransferBench v1.67.00 (HEAD:2bc42cd) (Multi-node mode)
Test 1:
─────────────────────────┬──────────────┬────────────┬────────────────────┬─────────────────────────────
 Executor: Rank 0 GPU 00 │  45.120 GB/s │   5.949 ms │    268435456 bytes │  45.120 GB/s (sum) [node-a]
─────────────────────────┼──────────────┼────────────┼────────────────────┼─────────────────────────────
 Transfer 0              │  45.120 GB/s │   5.949 ms │    268435456 bytes │  R0G0 -> R0G0:8 -> R1G0
─────────────────────────┼──────────────┼────────────┼────────────────────┼─────────────────────────────
 Executor: Rank 1 NIC 01 │  38.500 GB/s │   6.972 ms │    268435456 bytes │  38.500 GB/s (sum) [node-b]
─────────────────────────┼──────────────┼────────────┼────────────────────┼─────────────────────────────
 Transfer 1              │  38.500 GB/s │   6.972 ms │    268435456 bytes │  R1F1 -> R1I1.1:2 -> R0F1
─────────────────────────┼──────────────┼────────────┼────────────────────┼─────────────────────────────
 Aggregate (CPU)         │  83.000 GB/s │   6.468 ms │    536870912 bytes │  Overhead 0.519 ms
─────────────────────────┴──────────────┴────────────┴────────────────────┴─────────────────────────────
"""


def test_v167_bordered_test_block_with_ranks() -> None:
    result, data = parsed(BORDERED_MULTI_RANK)
    assert (result.kind, result.ok) == ("config", True)
    assert (result.summary["tests"], result.summary["transfers"]) == (1, 2)
    (test,) = data.tests
    nic = test.executors[1]
    assert (nic.device_type, nic.index, nic.rank, nic.host, nic.sum_gbps) == ("NIC", 1, 1, "node-b", 38.5)
    rdma = test.transfers[1]
    assert (rdma.executor, rdma.executor_index, rdma.executor_rank) == ("I", 1, 1)
    assert (rdma.executor_sub_index, rdma.subexecutors) == ("1", 2)
    assert [(m.rank, m.letter, m.index) for m in [*rdma.srcs, *rdma.dsts]] == [(1, "F", 1), (0, "F", 1)]
    assert test.aggregate is not None and test.aggregate.overhead_ms == 0.519
    assert (result.summary["min_gbps"], result.summary["slowest_pair"]) == (38.5, "R1:GPU1->R0:GPU1")


SCALING = """\
GPU-GFX Scaling benchmark:
==========================
- Copying 67108864 bytes from GPU 0 to other devices
- All numbers reported as GB/sec

NumCUs   CPU00       CPU01       GPU00       GPU01       GPU02
   1     10.11       10.02      300.00       12.50       12.40
   2     20.11       20.02      600.00       25.00       24.80
 Best   20.11(  2)  20.02(  2) 600.00(  2)  25.00(  2)  24.80(  2)
"""


def test_scaling_preset() -> None:
    result, data = parsed(SCALING)
    assert (result.kind, result.ok) == ("scaling", True)
    assert len(data.scaling) == 10
    assert (result.summary["min_gbps"], result.summary["slowest_pair"]) == (24.8, "GPU0->GPU2")
    assert result.summary["gpu_count"] == 3


def test_kind_override_and_csv_like_separators() -> None:
    csv_matrix = A2A.read_text().replace("   N/A  ", ",N/A,").replace("GPU 03   ", "GPU 03,")
    result, data = parsed(csv_matrix, kind="a2a")
    assert result.kind == "a2a"
    assert len(data.matrix) == 56


@pytest.mark.parametrize("text", ["", "hello\n", "Testing nothing\n", "\x00\x01"])
def test_unrecognised_input_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError) as info:
        transferbench.parse(text)
    assert "TransferBench" in info.value.reason
    assert transferbench.detect(text) is None


def test_detection() -> None:
    found = transferbench.detect(P2P.read_text())
    assert found is not None and (found.tool, found.kind, found.confidence) == (Tool.TRANSFERBENCH, "p2p", 0.95)
    assert transferbench.detect("[ERROR] something unrelated\n") is None


@pytest.mark.parametrize(
    ("path", "kind"),
    [(A2A, "a2a"), (P2P, "p2p"), (A2A_SWEEP, "a2asweep"), (NIC_RINGS, "nicrings"), (CONFIG_HIP_ERROR, "unknown")],
    ids=lambda value: value.name if isinstance(value, Path) else value,
)
def test_auto_detection_picks_transferbench(path: Path, kind: str) -> None:
    result = parse_output(path.read_bytes())
    assert (result.tool, result.kind) == (Tool.TRANSFERBENCH, kind)


def test_cli_json_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", str(A2A), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert (payload["tool"], payload["kind"], payload["ok"]) == ("transferbench", "a2a", True)
    assert payload["summary"]["avg_gbps"] == 46.552
    assert main(["parse", str(CONFIG_HIP_ERROR), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["errors"][0] == "[ERROR] HIP Error: invalid resource handle"
    assert main(["parse", "--as", "transferbench", str(SAMPLES / "missing.txt"), "--json"]) == 2


@FUZZ_SETTINGS
@given(mangled_outputs(sorted(SAMPLES.iterdir())))
def test_any_input_parses_or_raises_parse_error(data: bytes) -> None:
    text = to_text(data)
    assert_total(transferbench.parse, text)
    transferbench.detect(text)
