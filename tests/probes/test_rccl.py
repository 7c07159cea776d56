"""rccl-tests parser: real outputs in, typed rows/footer/summary out; mangled logs never crash it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import given

from console.cli import main
from console.model.rccl import RcclResult
from console.probes import ParsedOutput, ParseError, Tool, parse_output, rccl
from console.probes.base import to_text
from tests.probes.fuzz import FUZZ_SETTINGS, assert_total, mangled_outputs

SAMPLES = Path(__file__).parents[1] / "fixtures" / "real" / "rccl-tests"
MI300X_1NODE = SAMPLES / "all_reduce_perf-mi300x-1node-mpi-np8.txt"
RCCL2223 = SAMPLES / "all_reduce_perf-mi300x-mpi-np8-rccl2223-full.txt"
MI250X_SRUN = SAMPLES / "all_gather_perf-mi250x-4node-srun-label-lowperf.txt"
ALLTOALL = SAMPLES / "alltoall_perf-mi355x-4node-pollara-table-tail.txt"


def parsed(text: str | bytes, kind: str | None = None) -> tuple[ParsedOutput, RcclResult]:
    result = parse_output(text, tool=Tool.RCCL_TESTS, kind=kind)
    assert isinstance(result.data, RcclResult)
    return result, result.data


def without_footer(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if "Avg bus bandwidth" not in line)


class RealCase(NamedTuple):
    name: str
    kind: str
    avg_busbw: float
    max_size: int
    inplace_busbw_at_max: float
    outofplace_busbw_at_max: float
    rows: int
    gpus: int | None
    version: str | None


REAL_CASES = [
    RealCase("all_reduce_perf-mi300x-1node-mpi-np8.txt", "all_reduce_perf", 110.464, 8589934592, 315.91, 315.69, 31,
             8, "develop:a7809b3"),
    RealCase("all_reduce_perf-mi300x-mpi-np8-rccl2223-full.txt", "all_reduce_perf", 116.669, 17179869184, 318.73,
             318.98, 32, 8, "develop:448c4c7"),
    RealCase("all_reduce_perf-mi300x-mpi-np8-graph-G1-full.txt", "all_reduce_perf", 120.69, 17179869184, 318.01,
             319.22, 32, 8, "develop:448c4c7"),
    RealCase("all_reduce_perf-mi300x-vf-azure-g8.txt", "all_reduce_perf", 54.8575, 134217728, 289.6, 293.07, 25, 8,
             ":+"),
    RealCase("all_reduce_perf-mi350x-mpi-np8-degraded.txt", "all_reduce_perf", 94.3116, 8589934592, 289.27, 253.32,
             31, 8, None),
    RealCase("all_reduce_perf-mi355x-g8-oci-large-sizes-only.txt", "all_reduce_perf", 273.886, 17179869184, 406.73,
             406.76, 2, 8, "HEAD:e1b8a3a"),
    RealCase("alltoall_perf-mi355x-4node-pollara-table-tail.txt", "alltoall_perf", 20.8042, 17179869184, 50.76,
             50.63, 2, None, None),
    RealCase("all_gather_perf-mi250x-4node-srun-label-lowperf.txt", "all_gather_perf", 37.9868, 4294967296, 92.74,
             92.66, 17, None, None),
]  # fmt: skip


def test_the_small_message_time_is_the_8_byte_rows_in_place_time() -> None:
    result, _ = parsed((SAMPLES / "all_reduce_perf-mi300x-1node-mpi-np8.txt").read_bytes())
    assert (result.summary["min_size_bytes"], result.summary["inplace_time_at_min_size_us"]) == (8, 17.24)


@pytest.mark.parametrize("case", REAL_CASES, ids=[case.name for case in REAL_CASES])
def test_real_outputs(case: RealCase) -> None:
    result, data = parsed((SAMPLES / case.name).read_bytes())
    assert (result.tool, result.kind, result.ok) == (Tool.RCCL_TESTS, case.kind, True)
    assert result.errors == []
    assert result.tool_version == case.version
    summary = dict(result.summary)
    smallest = min(data.rows, key=lambda row: row.size_bytes)
    # The small-message figures: the in-place time of the smallest size the run printed.
    assert summary.pop("min_size_bytes") == smallest.size_bytes
    assert summary.pop("inplace_time_at_min_size_us") == (smallest.in_place.time_us if smallest.in_place else None)
    # What the run asked for (-e): the parameter line's maxBytes, none in a table tail without it.
    assert summary.pop("max_bytes_asked") == (data.header.max_bytes if data.header else None)
    assert summary == {
        "avg_busbw_gbps": case.avg_busbw,
        "wrong_total": 0,
        "gpu_count": case.gpus,
        "max_size_bytes": case.max_size,
        "inplace_busbw_at_max_size_gbps": case.inplace_busbw_at_max,
        "outofplace_busbw_at_max_size_gbps": case.outofplace_busbw_at_max,
        "rows": case.rows,
        "complete": True,
    }
    assert data.footer.out_of_bounds == 0
    assert data.footer.out_of_bounds_failed is False
    json.loads(result.model_dump_json())


def test_mi300x_ranks_header_and_rows() -> None:
    _, data = parsed(MI300X_1NODE.read_text())
    assert data.header is not None
    assert (data.header.n_threads, data.header.n_gpus, data.header.min_bytes, data.header.max_bytes) == (
        1,
        1,
        8,
        8589934592,
    )
    assert (data.header.step, data.header.step_mode, data.header.iters, data.header.graph) == (2, "factor", 20, 0)
    rank5 = data.ranks[5]
    assert (rank5.rank, rank5.group, rank5.pid, rank5.device) == (5, 0, 7090, 5)
    assert (rank5.bus_id, rank5.bdf, rank5.gpu_name) == ("0000:a5:00", "0000:a5:00.0", "AMD Instinct MI300X")
    assert rank5.host == "1942ef50-8240-449e-82ca-4ce7993f70b4-78bfb5d4f4-4z9xh"
    first = data.rows[0]
    assert (first.size_bytes, first.count, first.type, first.redop, first.root) == (8, 2, "float", "sum", -1)
    assert first.out_of_place is not None and first.in_place is not None
    assert (first.out_of_place.time_us, first.out_of_place.wrong) == (19.28, 0)
    assert first.in_place.time_us == 17.24


def test_rccl2223_version_block_dip_and_unindented_16g_row() -> None:
    _, data = parsed(RCCL2223.read_text())
    versions = data.versions
    assert (versions.rccl, versions.hip, versions.rocm, versions.hostname) == (
        "2.22.3-develop:f5b15f2",
        "6.3.42131-fa1d09cbd",
        "6.3.0.0-39-ce2be3b",
        "host",
    )
    assert versions.librccl_path == "/home/User/all2all/doc/rccl/build/release/librccl.so.1"
    rows = {row.size_bytes: row for row in data.rows}
    dip = rows[4194304]  # in-place 129.0 us against 51.72 us out-of-place
    assert dip.in_place is not None and dip.out_of_place is not None
    assert (dip.in_place.time_us, dip.in_place.busbw_gbps, dip.out_of_place.time_us) == (129.0, 56.92, 51.72)
    largest = rows[17179869184]  # printed without its leading space
    assert largest.count == 4294967296
    assert largest.in_place is not None and largest.in_place.busbw_gbps == 318.73
    assert data.ranks[0].group is None
    assert data.ranks[0].bdf == "0000:0c:00.0"


def test_unknown_tests_version_is_none_with_reason() -> None:
    _, data = parsed((SAMPLES / "all_reduce_perf-mi350x-mpi-np8-degraded.txt").read_text())
    assert data.versions.tests is None
    assert data.versions.unavailable == {"tests": "Unknown"}


def test_alltoall_in_place_na_is_none_not_zero() -> None:
    result, data = parsed(ALLTOALL.read_text())
    row = data.rows[-1]
    assert row.in_place is not None and row.out_of_place is not None
    assert row.in_place.wrong is None
    assert row.in_place.unavailable == {"wrong": "N/A"}
    assert row.out_of_place.wrong == 0
    assert result.summary["wrong_total"] == 0
    assert data.header is None and data.ranks == []


def test_srun_label_prefixes_are_stripped_and_collective_inferred() -> None:
    assert MI250X_SRUN.read_text().startswith(" 0: #")
    result, data = parsed(MI250X_SRUN.read_text())
    assert (len(data.rows), data.rows[0].size_bytes, data.rows[0].count) == (17, 65536, 512)
    slow = next(row for row in data.rows if row.size_bytes == 2097152)
    assert slow.out_of_place is not None
    assert (slow.out_of_place.time_us, slow.out_of_place.busbw_gbps) == (70248.0, 0.03)
    assert result.kind == "all_gather_perf"  # from the numbers: count = size/4/32, busbw = algbw*31/32


def test_missing_footer_is_an_incomplete_run() -> None:
    result, data = parsed(without_footer(MI250X_SRUN.read_text()))
    assert result.ok is False
    assert data.footer.complete is False
    assert result.summary["avg_busbw_gbps"] is None
    assert any(error.startswith("incomplete: no footer") for error in result.errors)
    assert result.summary["rows"] == 17


def test_mpi_tag_output_prefixes_give_the_same_result() -> None:
    text = MI300X_1NODE.read_text()
    tagged = "\n".join(f"[1,0]<stdout>:{line}" for line in text.splitlines())
    assert parsed(tagged)[0].summary == parsed(text)[0].summary


def test_per_rank_copies_keep_the_first_rank() -> None:
    text = MI300X_1NODE.read_text()
    other = text.replace("110.464", "99.999").replace("315.91", "111.11")
    mixed = [f"{rank}: {line}" for pair in zip(text.splitlines(), other.splitlines(), strict=True)
             for rank, line in zip((0, 1), pair, strict=True)]  # fmt: skip
    mixed.append("1: node7: Test NCCL failure common.cu:1285 'unhandled cuda error'")
    result, data = parsed("\n".join(mixed))
    assert result.summary["avg_busbw_gbps"] == 110.464
    assert result.summary["inplace_busbw_at_max_size_gbps"] == 315.91
    assert len(data.rows) == 31
    assert result.errors == ["node7: Test NCCL failure common.cu:1285 'unhandled cuda error'"]


def test_wrong_elements_fail_the_run() -> None:
    text = RCCL2223.read_text().replace(
        "  1048576        262144     float     sum      -1    27.42   38.25   66.93      0",
        "  1048576        262144     float     sum      -1    27.42   38.25   66.93     12",
    )
    result, data = parsed(text)
    assert result.ok is False
    assert result.summary["wrong_total"] == 12
    assert result.errors == ["#wrong 12 at 1048576 bytes (out-of-place, float sum)"]
    changed = next(row for row in data.rows if row.size_bytes == 1048576)
    assert changed.out_of_place is not None and changed.out_of_place.wrong == 12


def _wrong_cells_na(text: str, halves: tuple[int, ...]) -> str:
    """The table with the #wrong cell of the given halves (0 out-of-place, 1 in-place) printed N/A."""
    lines = []
    for line in text.splitlines():
        cells = line.split()
        if cells and cells[0].isdigit() and len(cells) == 13:
            for half in halves:
                cells[8 + 4 * half] = "N/A"
        lines.append("  ".join(cells) if cells and cells[0].isdigit() and len(cells) == 13 else line)
    return "\n".join(lines)


@pytest.mark.parametrize("halves", [(0, 1), (1,)])
def test_wrong_printed_na_is_no_count(halves: tuple[int, ...]) -> None:
    # As printed when validation did not run: no cell was compared, so 0 wrong would be a false PASS.
    result, data = parsed(_wrong_cells_na(MI300X_1NODE.read_text(), halves))
    assert len(data.rows) == 31 and all(row.in_place and row.in_place.wrong is None for row in data.rows)
    assert result.summary["wrong_total"] is None
    assert result.summary["wrong_total_unread"].startswith(f"#wrong not read in {31 * len(halves)} result cell(s)")


def test_wrong_printed_in_g_format() -> None:
    text = MI300X_1NODE.read_text().replace("315.91      0", "315.91  1e+06")
    result, _ = parsed(text)
    assert result.summary["wrong_total"] == 1000000


def test_out_of_bounds_and_min_bw_failures() -> None:
    text = (
        RCCL2223.read_text()
        .replace("values : 0 OK", "values : 3 FAILED")
        .replace("bandwidth    : 116.669", "bandwidth    : 116.669 FAILED")
    )
    result, data = parsed(text)
    assert result.ok is False
    assert (data.footer.out_of_bounds, data.footer.out_of_bounds_failed, data.footer.min_bw_check) == (
        3,
        True,
        "FAILED",
    )
    assert "out of bounds values: 3 FAILED" in result.errors
    assert any("NCCL_TESTS_MIN_BW" in error for error in result.errors)


FAILURE_LOG = """\
# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#
rccl-tests: Version develop:448c4c7
# Using devices
#   Rank  0 Pid 2509534 on host device  0 [0000:0c:00.0] AMD Instinct MI300X
host:2509534:2509534 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
host:2509534:2509534 [0] /long/path/enqueue.cc:1290 NCCL WARN Cuda failure 'invalid device function'
host: Test NCCL failure common.cu:1285 'unhandled cuda error (run with NCCL_DEBUG=INFO for details) / '
 .. host pid 2509534: Test failure common.cu:1161
"""


def test_failure_without_table() -> None:
    result, data = parsed(FAILURE_LOG)
    assert (result.ok, result.kind) == (False, "unknown")
    assert result.errors[:2] == [
        "host: Test NCCL failure common.cu:1285 'unhandled cuda error (run with NCCL_DEBUG=INFO for details) / '",
        ".. host pid 2509534: Test failure common.cu:1161",
    ]
    assert "no results table" in result.errors
    assert result.warnings == [
        "host:2509534:2509534 [0] /long/path/enqueue.cc:1290 NCCL WARN Cuda failure 'invalid device function'"
    ]
    assert data.ranks[0].bdf == "0000:0c:00.0"
    assert result.summary["gpu_count"] == 1


def test_nccl_noise_anywhere_does_not_disturb_the_table() -> None:
    lines = RCCL2223.read_text().splitlines()
    noise = "host:2509534:2509600 [3] NCCL INFO Channel 00/0 : 3[5c000] -> 4[9f000] via P2P/IPC"
    noisy = [line for pair in ((line, noise) for line in lines) for line in pair]
    noisy.insert(0, "RCCL version 2.22.3+hip6.3 develop:f5b15f2")
    result, data = parsed("\n".join(noisy))
    assert result.summary == parsed(RCCL2223.read_text())[0].summary
    assert data.versions.rccl == "2.22.3-develop:f5b15f2"


@pytest.mark.parametrize(
    "mangle",
    [
        lambda text: text.replace("\n", "\r\n"),
        lambda text: "\n".join(line.rstrip() for line in text.splitlines()),
        lambda text: "\n".join(f"{line}\t\t\t" for line in text.splitlines()),
        lambda text: "ssh: Warning: Permanently added 'node1' to the list of known hosts.\n" + text + "\nlogout\n",
    ],
    ids=["crlf", "trailing-space-loss", "tab-artefacts", "noise-around"],
)
def test_whitespace_and_wrapping_do_not_change_the_result(mangle: Any) -> None:
    text = RCCL2223.read_text()
    assert parsed(mangle(text))[0].summary == parsed(text)[0].summary


@pytest.mark.parametrize(
    "line",
    [
        "node3:1234:1250 [2] NCCL ERROR ncclSystemError: System call (e.g. socket, malloc) failed",
        "ORTE was unable to reliably start one or more daemons.",
        "Hip error: 'invalid device ordinal'(101) at common.cu:1042",
        "node3: Test CUDA failure common.cu:891 'hipErrorNoBinaryForGpu'",
        "srun: error: node3: task 5: Segmentation fault (core dumped)",
    ],
)
def test_failure_lines_are_errors_verbatim(line: str) -> None:
    text = without_footer(MI300X_1NODE.read_text()) + "\n" + line + "\n"
    result, _ = parsed(text)
    assert result.ok is False
    assert result.errors[0] == line
    assert result.errors[1].startswith("incomplete: no footer")


def test_two_runs_in_one_log_show_the_first_and_judge_both() -> None:
    result, data = parsed(MI300X_1NODE.read_text() + RCCL2223.read_text())
    assert result.summary["avg_busbw_gbps"] == 110.464
    assert len(data.rows) == 31
    assert result.warnings == ["the output holds 2 test runs: figures of the first, every run judged"]
    assert result.ok


def test_a_failure_in_a_later_run_fails_the_log() -> None:
    second = RCCL2223.read_text()
    wrong = _wrong_row(second)
    cut = without_footer(second)
    for later, expected in ((wrong, "#wrong 7 at"), (cut, "incomplete: no footer")):
        result, data = parsed(MI300X_1NODE.read_text() + later)
        assert result.ok is False and len(data.rows) == 31
        assert [e.split(": ", 1)[1][: len(expected)] for e in result.errors] == [expected]
        assert result.errors[0].startswith("run 2 (")


def _wrong_row(text: str) -> str:
    """``text`` with the out-of-place #wrong of its last table row set to 7."""
    lines = text.splitlines(keepends=True)
    last = max(i for i, line in enumerate(lines) if line.split()[:1] and line.split()[0].isdigit())
    cells = lines[last].split()
    cells[8] = "7"  # size count type redop root time algbw busbw #wrong
    lines[last] = "  ".join(cells) + "\n"
    return "".join(lines)


def test_same_rank_from_several_processes_is_flagged() -> None:
    text = FAILURE_LOG.replace(
        "#   Rank  0 Pid 2509534 on host device  0 [0000:0c:00.0] AMD Instinct MI300X",
        "#   Rank  0 Pid 2509534 on host device  0 [0000:0c:00.0] AMD Instinct MI300X\n"
        "#   Rank  0 Pid 2509535 on host device  0 [0000:0c:00.0] AMD Instinct MI300X",
    )
    result, data = parsed(text)
    assert len(data.ranks) == 1
    assert any("ranks [0] listed more than once" in warning for warning in result.warnings)


def test_touching_bandwidth_columns_are_split() -> None:
    # Bandwidths over 1000 GB/s outgrow their "%6.2f" field and touch the next number.
    glued = "8589934592  2147483648  float  sum  -1  4761  1804.011315.69      0    4758  1805.241317.66      0"
    lines = [glued if line.startswith("  8589934592") else line for line in MI300X_1NODE.read_text().splitlines()]
    _, data = parsed("\n".join(lines))
    largest = data.rows[-1]
    assert largest.out_of_place is not None and largest.in_place is not None
    assert (largest.out_of_place.algbw_gbps, largest.out_of_place.busbw_gbps) == (1804.01, 1315.69)
    assert (largest.in_place.busbw_gbps, largest.in_place.wrong) == (1317.66, 0)


def test_unprintable_average_is_none_with_reason() -> None:
    result, data = parsed(MI300X_1NODE.read_text().replace("110.464", "-nan"))
    assert result.summary["avg_busbw_gbps"] is None
    assert data.footer.complete is True
    assert data.footer.unavailable == {"avg_busbw_gbps": "not a number: -nan"}


# Old builds end the parameter line with a space.
OLD_RCCL_217 = (
    "# nThreads: 1 nGpus: 2 nRanks: 1 minBytes: 8 maxBytes: 134217728 step: 2(factor) warmupIters: 5 iters: 20 "
    "validation: 1 \n"
)
OLD_RCCL_217 += """\
#
#                                                     out-of-place                       in-place
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
        4096          1024   float     sum    93.73    0.04    0.09  1e-06    93.15    0.04    0.09  1e-06
        8192          2048   float     sum    96.51    0.08    0.17  2e-01*    95.46    0.09    0.17  0e+00
# Out of bounds values : 1 FAILED
# Avg bus bandwidth    : 0.13
"""


def test_old_header_and_error_column() -> None:
    result, data = parsed(OLD_RCCL_217)
    assert data.header is not None
    assert (data.header.n_threads, data.header.n_gpus, data.header.n_ranks, data.header.warmup_iters) == (1, 2, 1, 5)
    assert data.header.validation == 1
    first, second = data.rows
    assert first.root is None and first.redop == "sum"
    assert first.out_of_place is not None and first.out_of_place.max_error == 1e-06
    assert first.out_of_place.wrong is None
    assert second.out_of_place is not None and second.out_of_place.over_threshold is True
    assert result.summary["gpu_count"] == 2
    assert result.ok is False
    assert "error over threshold at 8192 bytes (out-of-place, float sum)" in result.errors


def test_very_old_table_without_redop_and_root() -> None:
    table = (
        "#       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error\n"
        "     1048576        262144   float    100.0   10.49   18.35  0e+00     99.0   10.59   18.53  0e+00\n"
        "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 18.44\n"
    )
    result, data = parsed(table)
    (row,) = data.rows
    assert (row.type, row.redop, row.root) == ("float", None, None)
    assert row.in_place is not None and (row.in_place.busbw_gbps, row.in_place.max_error) == (18.53, 0.0)
    assert (result.ok, result.kind) == (True, "unknown")


IN_PLACE_ONLY = """\
# Collective test starting: broadcast_perf
#                                                              in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)
    33554432       8388608     float    none       0    180.1  186.31  186.31      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 186.31
"""


def test_in_place_only_table() -> None:
    result, data = parsed(IN_PLACE_ONLY)
    assert (result.kind, result.ok) == ("broadcast_perf", True)
    row = data.rows[0]
    assert row.out_of_place is None
    assert row.in_place is not None and row.in_place.busbw_gbps == 186.31
    assert row.root == 0
    assert result.summary["outofplace_busbw_at_max_size_gbps"] is None


def test_nvidia_style_bus_id_keeps_the_raw_id() -> None:
    text = MI300X_1NODE.read_text().replace("[0000:05:00] AMD Instinct MI300X", "[0x07] NVIDIA A100-SXM4-40GB")
    _, data = parsed(text)
    assert (data.ranks[0].bus_id, data.ranks[0].bdf, data.ranks[0].gpu_name) == ("0x07", None, "NVIDIA A100-SXM4-40GB")


def test_collective_inference_from_columns() -> None:
    reduce_scatter = re.sub(r"float    none", "float     sum", MI250X_SRUN.read_text())
    assert parsed(reduce_scatter)[0].kind == "reduce_scatter_perf"
    # alltoall and alltoallv look alike (in-place unchecked): the name comes from the log or stays unknown.
    tail = "\n".join(line for line in ALLTOALL.read_text().splitlines() if "Collective test" not in line)
    assert parsed(tail)[0].kind == "unknown"
    assert parsed(tail, kind="alltoall_perf")[0].kind == "alltoall_perf"
    # A split buffer (count = size/4/32) whose busbw is not algbw*31/32 matches no collective.
    odd = "4294967296  33554432  float  none  -1  44904  95.65  95.65  0  44867  95.73  95.73  0"
    assert parsed(odd)[0].kind == "unknown"


@pytest.mark.parametrize("text", ["", "hello world\n", "# just a comment\n", "\x00\xff garbage"])
def test_unrecognised_input_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError) as info:
        rccl.parse(text)
    assert "rccl-tests" in info.value.reason
    assert rccl.detect(text) is None


def test_detect_kinds() -> None:
    found = rccl.detect(RCCL2223.read_text())
    assert found is not None and (found.tool, found.kind, found.confidence) == (
        Tool.RCCL_TESTS,
        "all_reduce_perf",
        0.95,
    )
    failure = rccl.detect(FAILURE_LOG)
    assert failure is not None and failure.kind == "unknown" and failure.confidence < 0.95


@pytest.mark.parametrize("name", [case.name for case in REAL_CASES])
def test_auto_detection_picks_rccl(name: str) -> None:
    result = parse_output((SAMPLES / name).read_bytes())
    assert result.tool == Tool.RCCL_TESTS
    assert result.kind == next(case.kind for case in REAL_CASES if case.name == name)


def test_cli_json_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", str(RCCL2223), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert (payload["tool"], payload["kind"], payload["ok"]) == ("rccl-tests", "all_reduce_perf", True)
    assert payload["summary"]["inplace_busbw_at_max_size_gbps"] == 318.73
    assert payload["data"]["rows"][-1]["size_bytes"] == 17179869184

    cut = tmp_path / "cut.txt"
    cut.write_text(without_footer(MI250X_SRUN.read_text()))
    assert main(["parse", str(cut), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["ok"] is False

    junk = tmp_path / "junk.txt"
    junk.write_text("nothing to see\n")
    assert main(["parse", str(junk), "--json"]) == 2
    assert capsys.readouterr().out == ""


@FUZZ_SETTINGS
@given(mangled_outputs(sorted(SAMPLES.iterdir())))
def test_any_input_parses_or_raises_parse_error(data: bytes) -> None:
    text = to_text(data)
    assert_total(rccl.parse, text)
    rccl.detect(text)


def _with_second_row(text: str, size: str, change: Callable[[list[str]], None]) -> str:
    """The table with the ``size`` row printed once more after itself, its cells changed by ``change``."""
    lines = []
    for line in text.splitlines():
        lines.append(line)
        cells = line.split()
        if cells and cells[0] == size:
            change(cells)
            lines.append("  ".join(cells))
    return "\n".join(lines)


def test_a_size_printed_twice_with_other_figures_is_judged_by_the_worse() -> None:
    # Not a per-rank copy (those repeat the figures): the same size measured twice, the second slow.
    def slow(cells: list[str]) -> None:
        cells[10], cells[11] = "6.00", "12.00"

    result, data = parsed(_with_second_row(MI300X_1NODE.read_text(), "8589934592", slow))
    assert len(data.rows) == 31
    assert result.summary["inplace_busbw_at_max_size_gbps"] == 12.0
    assert "8589934592 bytes printed twice with different figures (busbw 315.91 and 12 GB/s)" in result.warnings[-1]


def test_wrong_elements_in_a_repeated_row_are_not_lost() -> None:
    def corrupt(cells: list[str]) -> None:
        cells[8] = "7"

    result, _ = parsed(_with_second_row(MI300X_1NODE.read_text(), "8589934592", corrupt))
    assert result.ok is False
    assert "#wrong 7 at 8589934592 bytes (out-of-place, float sum)" in result.errors


def test_an_identical_repeated_row_is_a_copy() -> None:
    result, data = parsed(_with_second_row(MI300X_1NODE.read_text(), "8589934592", lambda cells: None))
    assert len(data.rows) == 31 and result.ok
    assert result.summary["inplace_busbw_at_max_size_gbps"] == 315.91


@pytest.mark.parametrize(("marker", "name"), [("out-of-place", "placement"), ("redop", "columns"), ("(B)", "units")])
def test_a_full_log_without_a_table_header_line_is_no_verdict(marker: str, name: str) -> None:
    # The tool prints all three before its table: a log from its first line without one was altered.
    text = "\n".join(line for line in MI300X_1NODE.read_text().splitlines() if marker not in line)
    result, data = parsed(text)
    assert len(data.rows) == 31 and result.ok
    assert result.summary["ok_unread"] == f"the table's {name} header line(s) missing: the output was altered"


def test_complete_logs_and_table_tails_are_taken_as_printed() -> None:
    for sample in (MI300X_1NODE, RCCL2223, ALLTOALL, MI250X_SRUN):
        assert "ok_unread" not in parsed(sample.read_text())[0].summary, sample.name
