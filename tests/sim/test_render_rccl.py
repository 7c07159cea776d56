"""Simulated rccl-tests: layouts against the real samples, launchers, the busbw model and each fault's evidence."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.probes import parse_output
from console.probes.workload import srun_refusal
from console.sim.commands import Delivery, SimContext, SimReply, run_program
from console.sim.faults import Fault, FaultKind
from console.sim.models import ClusterSpec, NodeSpec, build_node
from console.sim.render.rccl import parse_size
from console.sim.specs import DEFAULT_STACK, GpuModel, stack_preset
from tests.sim.simcore_helpers import NODE, cluster, fault, run

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "rccl-tests"
ROW = re.compile(r"^\s*\d+\s+\d+\s+\w+\s+\w+\s+-?\d+(\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+(\d+|N/A)){2}$")


def _parse(text: str):  # type: ignore[no-untyped-def]
    return parse_output(text)


def _rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if ROW.match(line)]


def _many(model: GpuModel, count: int, faults: list[Fault] | None = None, rocm: str | None = None) -> ClusterSpec:
    stack = stack_preset(rocm or DEFAULT_STACK[model])
    nodes = [NodeSpec(name=f"g{n:02d}", gpu_model=model, stack=stack) for n in range(1, count + 1)]
    return ClusterSpec(name="multi", seed=5, nodes=nodes, faults=faults or [])


def _run_on(spec: ClusterSpec, node: str, *argv: str, state_dir: Path | None = None) -> SimReply:
    ctx = SimContext(node=build_node(spec, node), cluster=spec, state_dir=state_dir, invocation=3)
    return run_program(ctx, list(argv))


@pytest.mark.parametrize(
    ("text", "size"),
    [("8", 8), ("512k", 512 * 1024), ("128M", 128 * 1024**2), ("8G", 8 * 1024**3), ("8g", 8 * 1024**3), ("x", None)],
)
def test_sizes_use_binary_suffixes(text: str, size: int | None) -> None:
    assert parse_size(text) == size


def test_classic_layout_matches_the_rccl_2_22_sample() -> None:
    sample = (REAL / "all_reduce_perf-mi300x-mpi-np8-rccl2223-full.txt").read_text()
    args = ("mpirun", "-np", "8", "--bind-to", "numa", "-x", "NCCL_DEBUG=VERSION", "all_reduce_perf")
    reply = run(cluster(GpuModel.MI300X, rocm="6.4.1"), *args, "-b", "8", "-e", "16G", "-f", "2", "-g", "1")
    ours, theirs = reply.stdout.splitlines(), sample.splitlines()
    assert ours[0] == theirs[0]  # same header for the same flags
    assert ours[1:4] == ["#", "rccl-tests: Version develop:448c4c7", "# Using devices"]
    rank = re.compile(
        r"^#   Rank [ \d]\d Pid +\d+ on \S+ device [ \d]\d \[0000:[0-9a-f]{2}:00\.0\] AMD Instinct MI300X$"
    )
    assert all(rank.match(line) for line in theirs[4:12]) and all(rank.match(line) for line in ours[4:12])
    assert [line.split(":")[0] for line in ours[12:17]] == [line.split(":")[0] for line in theirs[12:17]]
    assert ours[17:21] == theirs[17:21]  # '#' and the three table header lines
    # Same sizes, counts, type, op and root on every row: the columns are computed as rccl-tests does.
    assert [row[:5] for row in _rows(reply.stdout)] == [row[:5] for row in _rows(sample)]
    assert ours[-3:-1] == theirs[-3:-1]
    assert re.match(r"^# Avg bus bandwidth    : [\d.]+$", ours[-1])


def test_new_framing_matches_the_mi355x_rocm7_sample() -> None:
    sample = (REAL / "all_reduce_perf-mi355x-g8-oci-large-sizes-only.txt").read_text().splitlines()
    reply = run(
        cluster(GpuModel.MI355X, rocm="7.0.2"), "all_reduce_perf", "-b", "512k", "-e", "16G", "-f", "2", "-g", "8"
    )
    ours = reply.stdout.splitlines()
    assert ours[:4] == sample[:4]
    rank = re.compile(r"^#  Rank [ \d]\d Group  0 Pid +\d+ on [ \S]{10,} device [ \d]\d \[0000:[0-9a-f]{2}:00\] ")
    assert all(rank.match(line) for line in sample[5:13]) and all(rank.match(line) for line in ours[5:13])
    assert ours[13:16] == sample[13:16]  # no '#' between rank list and table in this build
    assert ours[-5:-3] == sample[-5:-3]
    assert re.match(r"^# Avg bus bandwidth    : [\d.]+ $", ours[-3])
    assert ours[-2:] == sample[-2:]
    big = {row[0]: row for row in _rows(reply.stdout)}
    for theirs in _rows("\n".join(sample)):
        assert big[theirs[0]][:5] == theirs[:5]
        assert float(big[theirs[0]][11]) == pytest.approx(float(theirs[11]), rel=0.05)  # ~407 GB/s in place


@pytest.mark.parametrize(
    ("model", "floor"),
    [(GpuModel.MI300X, 304.0), (GpuModel.MI325X, 304.0), (GpuModel.MI350X, 350.0), (GpuModel.MI355X, 350.0)],
)
def test_healthy_node_passes_the_acceptance_busbw_at_8g(model: GpuModel, floor: float) -> None:
    parsed = _parse(run(cluster(model), "all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "8").stdout)
    assert parsed.ok
    assert parsed.summary["inplace_busbw_at_max_size_gbps"] > floor
    assert parsed.summary["wrong_total"] == 0


def test_busbw_curve_rises_with_size() -> None:
    rows = _rows(run(cluster(), "all_reduce_perf", "-b", "1K", "-e", "8G", "-g", "8").stdout)
    busbw = [float(row[7]) for row in rows]
    assert busbw[0] < 1.0 < busbw[len(busbw) // 2] < busbw[-1]


def test_multi_node_alltoall_matches_the_4node_sample_columns() -> None:
    sample = (REAL / "alltoall_perf-mi355x-4node-pollara-table-tail.txt").read_text()
    spec = _many(GpuModel.MI355X, 4, rocm="7.0.2")
    hosts = ",".join(f"g{n:02d}:8" for n in range(1, 5))
    reply = _run_on(spec, "g01", "mpirun", "-np", "32", "-H", hosts, "alltoall_perf", "-b", "8G", "-e", "16G")
    ours = _rows(reply.stdout)
    theirs = _rows(sample)
    assert [row[:5] for row in ours] == [row[:5] for row in theirs]
    assert all(row[-1] == "N/A" for row in ours)  # in-place alltoall is not checked
    assert float(ours[0][7]) == pytest.approx(float(theirs[0][7]), rel=0.15)
    assert reply.stdout.count("AMD Instinct MI355X") == 32


def test_srun_label_prefix_like_the_mi250x_sample() -> None:
    sample = (REAL / "all_gather_perf-mi250x-4node-srun-label-lowperf.txt").read_text().splitlines()
    spec = _many(GpuModel.MI250X, 4)
    args = ("srun", "--nodes=4", "--ntasks-per-node=8", "--label", "--", "all_gather_perf")
    reply = _run_on(spec, "g01", *args, "-b", "64K", "-e", "4G", "-f", "2", "-g", "1")
    assert reply.exit_status == 0, reply.stderr
    lines = reply.stdout.splitlines()
    assert all(line.startswith(" 0: ") for line in lines)
    assert sample[0] in lines
    ours = _rows("\n".join(line[4:] for line in lines))
    theirs = _rows("\n".join(line[4:] for line in sample))
    assert [row[:5] for row in ours] == [row[:5] for row in theirs]


def test_tag_output_prefix_of_open_mpi() -> None:
    reply = run(cluster(), "mpirun", "-np", "8", "--tag-output", "all_reduce_perf", "-b", "1M", "-e", "1M")
    assert all(line.startswith("[1,0]<stdout>:") for line in reply.stdout.splitlines())


@pytest.mark.parametrize(
    ("name", "redop", "root"),
    [("broadcast_perf", "none", "0"), ("reduce_scatter_perf", "sum", "-1"), ("sendrecv_perf", "none", "-1")],
)
def test_collectives_print_their_op_and_root(name: str, redop: str, root: str) -> None:
    rows = _rows(run(cluster(), name, "-b", "1M", "-e", "4M", "-g", "8").stdout)
    assert rows and all(row[3] == redop and row[4] == root for row in rows)


def test_options_change_type_op_and_validation_columns() -> None:
    rows = _rows(
        run(
            cluster(), "all_reduce_perf", "-b", "1M", "-e", "1M", "-g", "8", "-d", "double", "-o", "max", "-c", "0"
        ).stdout
    )
    assert rows == [rows[0]] and rows[0][1:4] == [str(1024 * 1024 // 8), "double", "max"]
    assert rows[0][8] == rows[0][12] == "N/A"


def test_rccl_wrong_puts_wrong_counts_and_fails() -> None:
    reply = run(cluster(faults=[fault(FaultKind.RCCL_WRONG)]), "all_reduce_perf", "-b", "8", "-e", "8G", "-g", "8")
    assert reply.exit_status == 1
    assert re.search(r"# Out of bounds values : [1-9]\d* FAILED", reply.stdout)
    parsed = _parse(reply.stdout)
    assert not parsed.ok and parsed.summary["wrong_total"] > 0


def test_rccl_low_busbw_drops_below_the_acceptance_line() -> None:
    reply = run(cluster(faults=[fault(FaultKind.RCCL_LOW_BUSBW)]), "all_reduce_perf", "-b", "8G", "-e", "8G", "-g", "8")
    assert float(_rows(reply.stdout)[-1][11]) < 304


def test_xgmi_link_degraded_lowers_busbw() -> None:
    spec = cluster(faults=[fault(FaultKind.XGMI_LINK_DEGRADED, gpu=2, peer=6)])
    busbw = float(_rows(run(spec, "all_reduce_perf", "-b", "8G", "-e", "8G", "-g", "8").stdout)[-1][11])
    assert busbw < 0.9 * 316


def test_rccl_hang_stops_before_the_footer_and_never_ends() -> None:
    reply = run(cluster(faults=[fault(FaultKind.RCCL_HANG)]), "all_reduce_perf", "-b", "8", "-e", "8G", "-g", "8")
    assert reply.delivery is Delivery.HANG
    assert "# Avg bus bandwidth" not in reply.stdout and _rows(reply.stdout)
    assert _parse(reply.stdout).summary["complete"] is False


def test_gpu_missing_is_a_hip_failure() -> None:
    reply = run(
        cluster(faults=[fault(FaultKind.GPU_MISSING, gpu=3)]), "mpirun", "-np", "8", "all_reduce_perf", "-g", "1"
    )
    assert reply.exit_status == 1
    assert "Test HIP failure" in reply.stderr and "invalid device ordinal" in reply.stderr


def test_driver_not_loaded_is_a_hip_failure() -> None:
    reply = run(cluster(faults=[fault(FaultKind.DRIVER_NOT_LOADED)]), "all_reduce_perf", "-g", "8")
    assert reply.exit_status == 1 and "no ROCm-capable device is detected" in reply.stderr


def test_a_fault_on_another_node_of_a_multi_node_run_shows() -> None:
    spec = _many(GpuModel.MI300X, 2, faults=[Fault(kind=FaultKind.RCCL_WRONG, node="g02")])
    reply = _run_on(spec, "g01", "mpirun", "-np", "16", "-H", "g01:8,g02:8", "all_reduce_perf", "-b", "1M", "-e", "1G")
    assert "FAILED" in reply.stdout and reply.exit_status == 1


def _pair_busbw(spec: ClusterSpec, a: str, b: str, state_dir: Path | None = None) -> SimReply:
    return _run_on(spec, a, "mpirun", "-np", "16", "-H", f"{a}:8,{b}:8", "all_reduce_perf", "-b", "8G", "-e", "8G",
                   state_dir=state_dir)  # fmt: skip


def _avg(reply: SimReply) -> float:
    found = re.search(r"# Avg bus bandwidth\s*:\s*([\d.]+)", reply.stdout)
    assert found is not None, reply.stdout[-300:]
    return float(found.group(1))


def test_one_slow_nic_gates_every_rail_of_a_multi_node_run() -> None:
    healthy = _avg(_pair_busbw(_many(GpuModel.MI300X, 2), "g01", "g02"))
    slow = _many(GpuModel.MI300X, 2, [Fault(kind=FaultKind.NIC_SLOW, node="g02", params={"nic": 1})])
    gated = _avg(_pair_busbw(slow, "g01", "g02"))
    assert healthy >= 304 > gated  # AMD's two-node floor for MI300X: one half-rate port breaks it
    assert gated == pytest.approx(healthy / 2, rel=0.03)
    alone = run_program(
        SimContext(node=build_node(slow, "g02"), cluster=slow, invocation=3),
        ["all_reduce_perf", "-b", "8G", "-e", "8G", "-g", "8"],
    )
    assert _avg(alone) >= 304  # inside the node no NIC is used


def test_a_slow_uplink_slows_only_runs_that_cross_it() -> None:
    behind = [Fault(kind=FaultKind.UPLINK_SLOW, node=n, params={"uplink": "r02"}) for n in ("g03", "g04")]
    spec = _many(GpuModel.MI300X, 4, behind)
    inside_r01, inside_r02 = _avg(_pair_busbw(spec, "g01", "g02")), _avg(_pair_busbw(spec, "g03", "g04"))
    across = _avg(_pair_busbw(spec, "g01", "g03"))
    assert inside_r01 >= 304 and inside_r02 >= 304
    assert across < 304 and across == pytest.approx(inside_r01 * 0.55, rel=0.03)


def _network_only(spec: ClusterSpec, a: str, b: str) -> SimReply:
    env = ["-x", "NCCL_P2P_DISABLE=1", "-x", "NCCL_SHM_DISABLE=1"]
    return _run_on(spec, a, "mpirun", "-np", "16", "-H", f"{a}:8,{b}:8", *env, "all_reduce_perf", "-b", "8G", "-e",
                   "8G")  # fmt: skip


def test_a_network_only_run_skips_xgmi_but_not_the_nics() -> None:
    healthy = _many(GpuModel.MI300X, 2)
    baseline = _avg(_network_only(healthy, "g01", "g02"))
    assert baseline == pytest.approx(_avg(_pair_busbw(healthy, "g01", "g02")) / 2, rel=0.03)
    xgmi = _many(GpuModel.MI300X, 2, [Fault(kind=FaultKind.XGMI_LINK_DEGRADED, node="g02", gpu=1, peer=4)])
    assert _avg(_pair_busbw(xgmi, "g01", "g02")) < 304  # the normal run is slow
    assert _avg(_network_only(xgmi, "g01", "g02")) == pytest.approx(baseline, rel=0.03)  # not without XGMI
    nic = _many(GpuModel.MI300X, 2, [Fault(kind=FaultKind.NIC_SLOW, node="g02", params={"nic": 1})])
    assert _avg(_network_only(nic, "g01", "g02")) == pytest.approx(baseline / 2, rel=0.03)


def test_a_flaky_link_breaks_every_third_multi_node_run_of_its_node(tmp_path: Path) -> None:
    spec = _many(GpuModel.MI300X, 3, [Fault(kind=FaultKind.RCCL_FLAKY, node="g02")])
    replies = [_pair_busbw(spec, "g01", peer, tmp_path) for peer in ("g02", "g03", "g02", "g02", "g02", "g02", "g02")]
    failed = [reply.exit_status != 0 for reply in replies]
    # g02's runs are the 1st, 3rd, 4th, 5th and 6th: its third and sixth break; the run without it never.
    assert failed == [False, False, False, True, False, False, True]
    broken = replies[3]
    assert "NET/IB : Got completion from peer" in broken.stderr and "# Avg bus bandwidth" not in broken.stdout
    parsed = parse_output(broken.stdout + broken.stderr)
    assert not parsed.ok and any("Test NCCL failure" in e for e in parsed.errors)


def test_srun_waits_on_a_drained_node(tmp_path: Path) -> None:
    spec = _many(GpuModel.MI300X, 2)
    drain = _run_on(spec, "g01", "scontrol", "update", "NodeName=g02", "State=DRAIN", "Reason=ecc", state_dir=tmp_path)
    assert drain.exit_status == 0
    reply = _run_on(spec, "g01", "srun", "-N", "2", "-w", "g[01-02]", "all_reduce_perf", state_dir=tmp_path)
    assert reply.delivery is Delivery.HANG
    assert reply.stderr.startswith("srun: Required node not available (down, drained or reserved)")
    # With --immediate it gives up after the wait, as Slurm does (a workload's srun: not run, UNKNOWN).
    argv = ("srun", "--nodes=2", "--nodelist=g01,g02", "--immediate=30", "hostname")
    refused = _run_on(spec, "g01", *argv, state_dir=tmp_path)
    assert refused.exit_status == 1 and refused.delivery is not Delivery.HANG
    assert refused.stderr.endswith("srun: error: Unable to allocate resources: Requested nodes are busy\n")
    assert srun_refusal(refused.stderr) == "srun: Required node not available (down, drained or reserved)"


def test_srun_runs_other_programs_on_each_host() -> None:
    spec = _many(GpuModel.MI300X, 3)
    assert _run_on(spec, "g02", "srun", "-N", "2", "-l", "hostname").stdout == "0: g02\n1: g03\n"


def test_srun_waits_for_every_task_as_slurm_does() -> None:
    def srun_with(kind: FaultKind, **params: object) -> SimReply:
        spec = _many(GpuModel.MI300X, 2, [Fault(kind=kind, node="g02", params={"program": "hostname", **params})])
        return _run_on(spec, "g01", "srun", "--nodes=2", "--nodelist=g01,g02", "-l", "hostname")

    hung = srun_with(FaultKind.IGNORES_SIGTERM)
    assert hung.delivery is Delivery.HANG and hung.ignores_term, "a task that hangs holds srun"
    killed = srun_with(FaultKind.COMMAND_KILLED)
    assert killed.exit_status == 139 and killed.delivery is Delivery.NORMAL, "srun outlives the task and says so"
    assert "srun: error: g02: task 1: Segmentation fault\n" in killed.stderr
    assert srun_with(FaultKind.HUGE_OUTPUT, mb=1).filler_bytes == 2**20, "a task's output goes through srun"


def test_rank_lines_name_the_node_bdfs() -> None:
    spec = cluster()
    out = run(spec, "all_reduce_perf", "-b", "1M", "-e", "1M", "-g", "8").stdout
    for gpu in build_node(spec, NODE).gpus:
        assert f"device {gpu.index:2d} [{gpu.bdf}]" in out


_WORDS = st.sampled_from(["-b", "-e", "-f", "-g", "-c", "-n", "-w", "-d", "-o", "8", "8G", "512k", "double", "max"])


@settings(max_examples=150, deadline=None)
@given(st.lists(_WORDS | st.text(max_size=8), max_size=6))
def test_any_command_line_gives_a_reply(args: list[str]) -> None:
    reply = run(cluster(), "all_gather_perf", *args)
    assert isinstance(reply.stdout, str) and reply.exit_status in (0, 1)


def test_rccl_unvalidated_prints_validation_0_and_every_wrong_na() -> None:
    argv = ("all_reduce_perf", "-b", "8", "-e", "8G", "-g", "8", "-c", "1")
    reply = run(cluster(faults=[fault(FaultKind.RCCL_UNVALIDATED)]), *argv)
    assert "validation: 0" in reply.stdout and reply.exit_status == 0
    parsed = _parse(reply.stdout)
    assert parsed.ok and parsed.summary["wrong_total"] is None and parsed.summary["rows"] == 31


def test_rccl_fewer_ranks_runs_on_half_the_node_and_says_so() -> None:
    reply = run(
        cluster(faults=[fault(FaultKind.RCCL_FEWER_RANKS)]), "all_reduce_perf", "-b", "8", "-e", "8G", "-g", "8"
    )
    assert "nGpus 4" in reply.stdout and reply.exit_status == 0
    parsed = _parse(reply.stdout)
    assert parsed.ok and parsed.summary["gpu_count"] == 4


def test_rccl_row_repeated_prints_the_largest_size_again_slower() -> None:
    spec = cluster(faults=[fault(FaultKind.RCCL_ROW_REPEATED)])
    reply = run(spec, "all_reduce_perf", "-b", "8", "-e", "8G", "-g", "8")
    rows = [line.split() for line in reply.stdout.splitlines() if line.strip().startswith("8589934592 ")]
    assert len(rows) == 2 and float(rows[1][11]) < float(rows[0][11]) / 10
    parsed = _parse(reply.stdout)
    assert parsed.summary["inplace_busbw_at_max_size_gbps"] == float(rows[1][11])


@pytest.mark.parametrize(("line", "lost"), [(1, "out-of-place"), (2, "redop"), (3, "(elements)")])
def test_rccl_header_line_lost_drops_that_line_of_the_table_header(line: int, lost: str) -> None:
    spec = cluster(faults=[fault(FaultKind.RCCL_HEADER_LINE_LOST, line=line)])
    reply = run(spec, "all_reduce_perf", "-b", "8", "-e", "8G", "-g", "8")
    healthy = run(cluster(), "all_reduce_perf", "-b", "8", "-e", "8G", "-g", "8")
    assert lost in healthy.stdout and lost not in reply.stdout
    assert "header line(s) missing" in _parse(reply.stdout).summary["ok_unread"]
    assert "ok_unread" not in _parse(healthy.stdout).summary
