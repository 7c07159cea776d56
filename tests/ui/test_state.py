"""LiveState: events folded into compact rows, dirty tracking and the one-notification-per-repaint rule."""

from __future__ import annotations

from console.inventory.load import from_mapping
from console.inventory.model import Inventory
from console.model.findings import Evidence, Finding, NodeVerdict, Scope, Status, Subject, roll_up
from console.model.gpu import GpuIdentity, GpuMetrics, GpuRecord, LinkStatus, PcieLink, XgmiLink
from console.sweep.events import NodeDone, NodeSnapshot, ProbeFinished, ProbeStarted, SweepDone, SweepStarted
from console.ui.state import LiveState, NodeRow, view_of


def inventory() -> Inventory:
    return from_mapping({"name": "t", "pools": [{"name": "p", "gpu_model": "MI300X", "nodes": "gpu[1-3]"}]})


def finding(node: str, status: Status, family: str = "ecc", gpu: int | None = 0) -> Finding:
    subject = Subject(node=node, scope=Scope.GPU if gpu is not None else Scope.NODE, gpu=gpu)
    return Finding(
        check_id=f"{family}.x",
        family=family,
        status=status,
        subject=subject,
        message=f"{family} {status}",
        evidence=Evidence(observed=1, expected="> 0"),
    )


def snapshot() -> NodeSnapshot:
    gpu = GpuRecord(
        identity=GpuIdentity(index=0, bdf="0000:05:00.0"),
        metrics=GpuMetrics(hotspot_temp_c=61.0, power_w=140.0, pcie=PcieLink(speed_gts=32.0, width=8)),
    )
    links = [XgmiLink(src_index=0, dst_index=1, status=LinkStatus.DOWN)]
    return NodeSnapshot(gpus=[gpu], xgmi=links, stack={"rocm": "6.4.1"}, pair_gbps={"0-1": 12.5}, probe_runs={"a": 7})


def done(node: str, findings: list[Finding], sweep_id: int = 1) -> NodeDone:
    return NodeDone(sweep_id=sweep_id, pool="p", verdict=roll_up(node, findings), snapshot=snapshot())


def test_first_change_notifies_then_waits_for_the_repaint() -> None:
    state = LiveState(inventory(), clock=lambda: 100.0)
    assert state.apply(SweepStarted(sweep_id=1, nodes=["gpu1", "gpu2"], probes=["a", "b", "c"], level="quick"))
    assert not state.apply(ProbeStarted(sweep_id=1, node="gpu1", probe="a"))
    assert not state.apply(ProbeFinished(sweep_id=1, node="gpu1", probe="a", ok=True, duration_s=0.1))
    dirty, summary = state.take_dirty()
    assert dirty == {"gpu1", "gpu2"} and summary
    assert state.apply(ProbeFinished(sweep_id=1, node="gpu2", probe="a", ok=True, duration_s=0.1))
    assert state.take_dirty() == ({"gpu2"}, False)
    assert state.take_dirty() == (set(), False)
    assert not state.apply(ProbeStarted(sweep_id=1, node="elsewhere", probe="a"))  # not in the inventory


def test_probe_progress_and_sweep_progress() -> None:
    clock = iter([10.0, 20.0, 30.0, 40.0])
    state = LiveState(inventory(), clock=lambda: next(clock))
    state.apply(SweepStarted(sweep_id=4, nodes=["gpu1", "gpu2"], probes=["a", "b"], level="standard"))
    state.apply(ProbeFinished(sweep_id=4, node="gpu1", probe="a", ok=True, duration_s=0.1))
    row = state.row("gpu1")
    assert (row.running, row.probes_done, row.probes_expected) == (True, 1, 2)
    state.apply(done("gpu1", [finding("gpu1", Status.PASS)], sweep_id=4))  # at t=20
    progress = state.progress
    assert progress.running and progress.done == {"gpu1"} and progress.level == "standard"
    assert progress.eta_s(30.0) == 20.0  # one node took 20 s since the start at t=10, one left
    state.apply(SweepDone(sweep_id=4, outcome="done", counts={}, duration_s=1.0))  # at t=30
    assert not state.progress.running and state.progress.outcome == "done"
    assert state.progress.last_full_sweep_id == 4
    assert state.progress.eta_s(40.0) is None


def test_a_rerun_joining_a_sweep_counts_its_probes_as_they_start() -> None:
    state = LiveState(inventory())
    state.apply(ProbeStarted(sweep_id=1, node="gpu3", probe="a"))
    state.apply(ProbeStarted(sweep_id=1, node="gpu3", probe="b"))
    state.apply(ProbeFinished(sweep_id=1, node="gpu3", probe="a", ok=True, duration_s=0.1))
    row = state.row("gpu3")
    assert (row.running, row.probes_done, row.probes_expected) == (True, 1, 2)


def test_rows_keep_problems_and_a_compact_view() -> None:
    state = LiveState(inventory(), clock=lambda: 5.0)
    findings = [
        finding("gpu1", Status.PASS),
        finding("gpu1", Status.FAIL, gpu=3),
        finding("gpu1", Status.WARN, "stack", None),
        finding("gpu1", Status.PASS, "pcie"),
    ]
    state.apply(done("gpu1", findings, sweep_id=9))
    row = state.row("gpu1")
    assert row.status is Status.FAIL and row.findings_total == 4 and row.sweep_id == 9
    assert [f.status for f in row.verdict.findings] == [Status.FAIL, Status.WARN]  # type: ignore[union-attr]
    assert row.verdict.families == {"ecc": Status.FAIL, "stack": Status.WARN, "pcie": Status.PASS}  # type: ignore[union-attr]
    assert row.drift and row.problem and row.updated_at == 5.0
    view = row.view
    assert view is not None and view.gpu_count == 2
    assert view.links == {(0, 1): LinkStatus.DOWN} and view.pair_gbps == {"0-1": 12.5}
    gpu = view.gpus[0]
    assert (gpu.index, gpu.bdf, gpu.hotspot_temp_c, gpu.power_w) == (0, "0000:05:00.0", 61.0, 140.0)
    assert gpu.pcie is not None and (gpu.pcie.speed_gts, gpu.pcie.width) == (32.0, 8)
    assert gpu.ecc_uncorrectable is None  # not reported: None, never 0
    assert state.history("gpu1")[0].gpus[0].hotspot_temp_c == 61.0


def test_history_grows_one_sample_per_verdict() -> None:
    state = LiveState(inventory())
    for _ in range(3):
        state.apply(done("gpu2", [finding("gpu2", Status.PASS)]))
    assert len(state.history("gpu2")) == 3
    assert state.history("gpu1") == []


def test_scheduler_states_are_one_lower_case_word() -> None:
    state = LiveState(inventory())
    assert state.set_scheduler_states({"gpu1": "DRAINED by root: ops: bad hbm", "gpu2": "IDLE", "gpu3": "DOWN*"})
    assert not state.set_scheduler_states({"gpu1": "DRAINED by root: ops: bad hbm"})  # unchanged: no news
    assert state.row("gpu1").scheduler_word == "drained" and state.row("gpu1").out_of_service
    assert state.row("gpu2").scheduler_word == "idle" and not state.row("gpu2").out_of_service
    assert state.row("gpu3").scheduler_word == "down" and state.row("gpu3").out_of_service
    row = NodeRow(node=inventory().nodes[0], scheduler="not a Slurm node")
    assert row.scheduler_word == ""


def test_view_of_an_empty_snapshot() -> None:
    view = view_of(NodeSnapshot())
    assert view.gpu_count == 0 and view.gpus == () and view.links == {}


def test_unreachable_node_verdict() -> None:
    state = LiveState(inventory())
    verdict = NodeVerdict(node="gpu3", status=Status.UNKNOWN, reason="could not check: refused")
    state.apply(NodeDone(sweep_id=1, pool="p", verdict=verdict, snapshot=NodeSnapshot()))
    row = state.row("gpu3")
    assert row.status is Status.UNKNOWN and row.problem and not row.drift and row.family("ecc") is None


def test_a_rerun_counts_and_dates_only_the_nodes_it_probed() -> None:
    """A one-node rerun read '7/1 nodes' and moved UPDATED on pool peers its fleet pass only re-judged."""
    clock = [100.0]
    state = LiveState(inventory(), clock=lambda: clock[0])
    names = state.names()
    state.apply(SweepStarted(sweep_id=1, nodes=list(names), probes=["p"], level="quick"))
    for name in names:
        state.apply(done(name, [finding(name, Status.PASS)]))
    clock[0] = 200.0
    state.apply(SweepStarted(sweep_id=2, nodes=[names[0]], probes=["p"], level="quick", rerun=True))
    for name in names:  # the rerun's node, then its pool peers re-judged by the fleet pass
        state.apply(done(name, [finding(name, Status.PASS)], sweep_id=2))
    assert state.progress.done == {names[0]} and len(state.progress.nodes) == 1
    assert state.row(names[0]).updated_at == 200.0
    assert all(state.row(name).updated_at == 100.0 for name in names[1:])
