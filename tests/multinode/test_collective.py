"""Multi-node launch lines and the verdict on their output: simulated runs of the exact argv, and real samples."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.inventory.model import Node
from console.model.findings import SourceKind, Status
from console.sim.commands import Delivery, SimContext, SimReply, run_program
from console.sim.faults import Fault, FaultKind
from console.sim.models import ClusterSpec, NodeSpec, build_node
from console.sim.specs import DEFAULT_STACK, GpuModel, stack_preset
from console.sweep.collective import Floor, Judgement, Launcher, LaunchSettings, judge, launch_argv

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "rccl-tests"
FLOOR = Floor(304.0, "docs/network/validation.md", SourceKind.VENDOR_SPEC)


def inventory_nodes(count: int, model: str = "MI300X") -> list[Node]:
    return [
        Node(name=f"g{i:02d}", pool="p", gpu_model=model, gpu_count=8, address="127.0.0.1") for i in range(1, count + 1)
    ]


def simulate(argv: list[str], faults: list[Fault] | None = None, model: GpuModel = GpuModel.MI300X) -> SimReply:
    stack = stack_preset(DEFAULT_STACK[model])
    specs = [NodeSpec(name=f"g{i:02d}", gpu_model=model, stack=stack) for i in range(1, 4)]
    cluster = ClusterSpec(name="t", seed=3, nodes=specs, faults=faults or [])
    return run_program(SimContext(node=build_node(cluster, "g01"), cluster=cluster, invocation=1), argv)


def verdict(reply: SimReply, nodes: int = 2, floor: Floor | None = FLOOR) -> Judgement:
    return judge(reply.stdout, reply.stderr, reply.exit_status, nodes=nodes, ranks=8 * nodes, floor=floor)


def test_mpirun_line_follows_the_documented_pattern() -> None:
    argv = launch_argv(inventory_nodes(2), LaunchSettings(test_timeout_s=600, env=(("NCCL_IB_HCA", "mlx5_0"),)))
    assert argv == [
        "mpirun", "-np", "16", "-N", "8", "-H", "g01:8,g02:8", "--bind-to", "numa", "-x", "NCCL_IB_HCA=mlx5_0",
        "all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "1", "-c", "1", "-T", "600",
    ]  # fmt: skip


def test_srun_line_bounds_the_step_with_a_time_limit() -> None:
    argv = launch_argv(inventory_nodes(3), LaunchSettings(launcher="srun", test_timeout_s=600, kill_grace_s=60))
    assert argv[:8] == ["srun", "-N", "3", "-w", "g01,g02,g03", "--ntasks-per-node=8", "--mpi=pmix", "--time=12"]
    assert argv[8] == "--export=ALL,NCCL_DEBUG=VERSION,HSA_NO_SCRATCH_RECLAIM=1"
    assert argv[9:11] == ["all_reduce_perf", "-b"]


@pytest.mark.parametrize("launcher", ["mpirun", "srun"])
def test_healthy_pair_passes_the_two_node_floor(launcher: Launcher) -> None:
    reply = simulate(launch_argv(inventory_nodes(2), LaunchSettings(launcher=launcher)))
    judged = verdict(reply)
    assert judged.status is Status.PASS, judged.reason
    assert judged.busbw_gbps is not None and 340 < judged.busbw_gbps < 400
    assert judged.wrong == 0 and judged.reason.startswith(f"busbw {judged.busbw_gbps:.1f} GB/s >= 304")


@pytest.mark.parametrize(
    ("fault", "words"),
    [
        (FaultKind.RCCL_LOW_BUSBW, "< 304 GB/s"),
        (FaultKind.RCCL_WRONG, "wrong"),
        (FaultKind.DRIVER_NOT_LOADED, "HIP failure"),
    ],
)
def test_a_fault_on_the_partner_fails_the_run(fault: FaultKind, words: str) -> None:
    reply = simulate(launch_argv(inventory_nodes(2), LaunchSettings()), [Fault(kind=fault, node="g02")])
    judged = verdict(reply)
    assert judged.status is Status.FAIL
    assert words.lower() in judged.reason.lower()


def test_degraded_xgmi_link_slows_the_pair_below_the_floor() -> None:
    fault = Fault(kind=FaultKind.XGMI_LINK_DEGRADED, node="g02", gpu=1, peer=5)
    judged = verdict(simulate(launch_argv(inventory_nodes(2), LaunchSettings()), [fault]))
    assert judged.status is Status.FAIL and judged.busbw_gbps is not None and judged.busbw_gbps < 304


def test_a_cut_off_run_fails_as_incomplete() -> None:
    reply = simulate(launch_argv(inventory_nodes(2), LaunchSettings()), [Fault(kind=FaultKind.RCCL_HANG, node="g02")])
    assert reply.delivery is Delivery.HANG
    judged = judge(reply.stdout, "", None, nodes=2, ranks=16, floor=FLOOR)
    assert judged.status is Status.FAIL and "bus bandwidth" in judged.reason.lower()


def test_mpi_launch_failure_fails_with_the_launcher_message() -> None:
    # thresholds.md A.5 (CVS rccl_lib): "ORTE was unable to reliably start" is a FAIL of the run.
    nodes = inventory_nodes(2)
    nodes[1] = nodes[1].model_copy(update={"name": "nowhere"})
    judged = verdict(simulate(launch_argv(nodes, LaunchSettings())))
    assert judged.status is Status.FAIL
    assert judged.reason.startswith("ORTE was unable to reliably start one or more daemons.")


def test_single_node_output_does_not_pass_as_a_pair() -> None:
    text = (REAL / "all_reduce_perf-mi300x-mpi-np8-rccl2223-full.txt").read_text()
    judged = judge(text, "", 0, nodes=2, ranks=16, floor=FLOOR)
    assert judged.status is Status.UNKNOWN and "did not span" in judged.reason
    assert judged.busbw_gbps is not None


@pytest.mark.parametrize(
    ("sample", "status", "busbw"),
    [
        ("all_reduce_perf-mi350x-mpi-np8-degraded.txt", Status.FAIL, 289.27),
        ("all_reduce_perf-mi300x-1node-mpi-np8.txt", Status.PASS, 315.91),
    ],
)
def test_real_samples_are_judged_on_in_place_busbw_at_the_largest_size(
    sample: str, status: Status, busbw: float
) -> None:
    text = (REAL / sample).read_text()
    judged = judge(text, "", 0, nodes=1, ranks=8, floor=FLOOR)
    assert (judged.status, judged.busbw_gbps, judged.wrong) == (status, busbw, 0)


def test_no_floor_judges_only_correctness() -> None:
    judged = verdict(simulate(launch_argv(inventory_nodes(2, "MI250X"), LaunchSettings()), model=GpuModel.MI250X))
    judged_none = verdict(
        simulate(launch_argv(inventory_nodes(2, "MI250X"), LaunchSettings()), model=GpuModel.MI250X), floor=None
    )
    assert judged.status is Status.FAIL  # MI250X pairs are far below an MI300X floor
    assert judged_none.status is Status.PASS and "no multi-node floor" in judged_none.reason


def test_missing_launcher_is_unknown() -> None:
    judged = judge("", "sh: 1: mpirun: not found\n", 127, nodes=2, ranks=16, floor=FLOOR)
    assert judged.status is Status.UNKNOWN and "mpirun: not found" in judged.reason


def test_garbage_is_unknown_not_a_pass() -> None:
    judged = judge("hello\n", "", 0, nodes=2, ranks=16, floor=FLOOR)
    assert judged.status is Status.UNKNOWN and judged.reason.startswith("no rccl-tests output")
