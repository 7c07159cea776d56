"""The multinode phase against the simulated cluster over real SSH: pairs, bisection, hangs, the deadline."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest

from console.checks import load_packs
from console.inventory import load_inventory
from console.model.findings import Finding, Status
from console.model.multinode import MultinodeResult
from console.service.assembly import EngineSpec
from console.service.client import EngineError, ProcessBridge
from console.service.commands import CancelSweep, StartMultinode, StartSweep
from console.sim.faults import FaultKind
from console.sim.launcher import SimCluster, start_sim_cluster
from console.sim.shims import install_shims
from console.sim.specs import GpuModel
from console.store import Store
from console.sweep import SweepEngine, SweepResult
from console.sweep.collective import LaunchSettings
from console.sweep.events import Event, MultinodeDone, MultinodeRunDone, MultinodeStarted, NodeDone
from console.sweep.multinode import CHECK_ID, PROBE_ID, MultinodeOptions, refreshed, run_multinode
from console.transport import LocalTransport
from tests.multinode.simcluster import engine_for, start_cluster


def faulty_node(sim: SimCluster) -> str:
    (fault,) = sim.cluster().faults
    return fault.node


def multinode_findings(engine: SweepEngine, node: str) -> list[Finding]:
    return [f for f in engine.verdicts[node].findings if f.check_id == CHECK_ID]


async def sweep_then_multinode(
    sim: SimCluster, store: Path, options: MultinodeOptions, deadline_s: float | None = None
) -> tuple[SweepEngine, SweepResult, MultinodeResult]:
    engine = engine_for(sim, store)
    try:
        sweep = await engine.run(level="quick")
        result = await run_multinode(engine, sweep, options, deadline_s=deadline_s)
        return engine, refreshed(engine, sweep), result
    finally:
        await engine.close()


def test_healthy_mi355x_pool_passes_the_350_floor(tmp_path: Path) -> None:
    with start_cluster(4, GpuModel.MI355X) as sim:
        engine, sweep, result = asyncio.run(sweep_then_multinode(sim, tmp_path / "h.db", MultinodeOptions()))
    assert result.culprits == []
    assert [(r.nodes, r.status) for r in result.runs] == [(["sim001", f"sim00{i}"], Status.PASS) for i in (2, 3, 4)]
    assert all(r.floor_gbps == 350 and r.busbw_gbps is not None and r.busbw_gbps >= 350 for r in result.runs)
    assert result.pools[0].reference == "sim001" and result.pools[0].cleared == ["sim002", "sim003", "sim004"]
    for node in ("sim001", "sim002", "sim003", "sim004"):
        assert sweep.verdicts[node].status is Status.PASS
        (finding,) = multinode_findings(engine, node)
        assert finding.status is Status.PASS and finding.evidence.source_kind == "vendor-spec"
    stored = engine.store.probe_output(result.runs[0].run_id or 0) if engine.store else None
    assert stored is not None and b"# Avg bus bandwidth" in stored[0]
    assert engine.store is not None and engine.store.latest_probe_run("sim001", PROBE_ID) is not None


def test_low_busbw_node_is_named_from_its_pair_and_confirmed(tmp_path: Path) -> None:
    with start_cluster(5, GpuModel.MI300X, FaultKind.RCCL_LOW_BUSBW) as sim:
        bad = faulty_node(sim)
        engine, sweep, result = asyncio.run(sweep_then_multinode(sim, tmp_path / "h.db", MultinodeOptions()))
    assert [c.node for c in result.culprits] == [bad]
    # Confirmed with the next healthy node after the reference (which node is faulty follows the seed).
    partner = next(n for n in ("sim002", "sim003") if n != bad)
    assert result.culprits[0].reason.startswith(f"failed with sim001 and with {partner}: busbw ")
    (finding,) = multinode_findings(engine, bad)
    assert finding.status is Status.FAIL and finding.family == "rccl"
    assert isinstance(finding.evidence.observed, float) and finding.evidence.observed < 304
    assert finding.evidence.expected == f">= 304 GB/s with {partner}, {bad}"
    assert "network/validation.md" in (finding.evidence.source or "")
    assert finding.evidence.probe == PROBE_ID and finding.evidence.probe_run_id is not None
    assert sweep.verdicts[bad].status is Status.FAIL
    assert sweep.counts[Status.FAIL] == 1 and sweep.counts[Status.PASS] == 4
    assert engine.store is not None
    stored = engine.store.sweep(sweep.sweep_id)
    assert stored is not None and json.loads(stored["summary"])["counts"]["FAIL"] == 1  # re-judged after the pairs
    others = [n for n in sweep.verdicts if n != bad]
    assert all(f.status is Status.PASS for n in others for f in multinode_findings(engine, n))
    assert sorted(result.pools[0].cleared) == sorted(set(others) - {"sim001"})


def test_each_run_is_an_event_as_it_finishes_and_the_culprit_cites_its_convicting_runs(tmp_path: Path) -> None:
    with start_cluster(4, GpuModel.MI300X, FaultKind.RCCL_LOW_BUSBW) as sim:
        bad = faulty_node(sim)
        engine = engine_for(sim, tmp_path / "h.db")
        events: list[Event] = []

        async def scenario() -> MultinodeResult:
            try:
                sweep = await engine.run(level="quick")
                engine.subscribe(events.append)
                return await run_multinode(engine, sweep, MultinodeOptions())
            finally:
                await engine.close()

        result = asyncio.run(scenario())
    multinode = [e for e in events if isinstance(e, MultinodeStarted | MultinodeRunDone | MultinodeDone)]
    assert isinstance(multinode[0], MultinodeStarted) and sorted(multinode[0].nodes) == sorted(engine.verdicts)
    assert isinstance(multinode[-1], MultinodeDone) and multinode[-1].result == result and not multinode[-1].stopped
    streamed = [e.run for e in multinode if isinstance(e, MultinodeRunDone)]
    assert streamed == result.runs and [r.seq for r in streamed] == list(range(1, len(streamed) + 1))
    # The bad node's verdict is re-judged (NodeDone) after the run that convicted it was announced.
    last_run = max(i for i, e in enumerate(events) if isinstance(e, MultinodeRunDone) and bad in e.run.nodes)
    rejudged = [i for i, e in enumerate(events) if isinstance(e, NodeDone) and e.verdict.node == bad]
    assert rejudged and rejudged[-1] > last_run
    (culprit,) = result.culprits
    # No single-node run at the quick level, but the network-only run tells: rccl_low_busbw is GPU-side.
    assert culprit.layer == "intra-node" and "its network is fine" in culprit.layer_evidence
    convicting = [result.runs[seq - 1] for seq in culprit.runs]
    assert [(r.purpose, r.status) for r in convicting] == [("group", Status.FAIL), ("confirm", Status.FAIL)]
    assert all(bad in r.nodes for r in convicting) and convicting[0].nodes[0] != convicting[1].nodes[0]
    # The straggler ranking: the named node first, at its worst ratio; the cleared ones PASS.
    first, *rest = result.stragglers
    assert first.node == bad and first.status is Status.FAIL and set(culprit.runs) < set(first.runs)
    assert first.worst_ratio is not None and first.worst_ratio < 1.0
    assert first.worst_with and first.worst_with[0] in {convicting[0].nodes[0], convicting[1].nodes[0]}
    # Its partners in the failed runs share those runs (a worst pair is the pair's), but rank after it.
    assert [s.status for s in rest] == [Status.PASS] * 3
    assert all(s.worst_ratio is not None and s.worst_ratio >= first.worst_ratio for s in rest)
    assert [s.worst_ratio for s in rest] == sorted(s.worst_ratio or 0 for s in rest)
    untouched = [s for s in rest if not set(s.runs) & set(culprit.runs)]
    assert untouched and all((s.worst_ratio or 0) >= 1.0 for s in untouched)


def _two_rack_scenario(tmp_path: Path, faults: str) -> Path:
    scenario = tmp_path / "racks.toml"
    groups = "".join(
        f'[[nodes]]\nnames = "{names}"\nmodel = "MI300X"\npool = "mi300x"\nlabels = {{ rack = "{rack}" }}\n\n'
        for names, rack in (("sim[001-003]", "r01"), ("sim[004-006]", "r02"))
    )
    scenario.write_text(f'name = "racks"\nseed = 2\ntime_factor = 400\n\n{groups}{faults}', encoding="utf-8")
    return scenario


@pytest.mark.parametrize(
    ("faults", "rack_named"),
    [
        ('[[faults]]\nnodes = "sim[004-006]"\nkind = "uplink_slow"\nuplink = "r02"\n', True),
        # Two slow NICs in one rack also fail only across racks, but fail with each other: no rack is named.
        ('[[faults]]\nnodes = "sim[004-005]"\nkind = "nic_slow"\n', False),
    ],
)
def test_a_rack_is_named_only_when_its_named_nodes_pass_with_each_other(
    tmp_path: Path, faults: str, rack_named: bool
) -> None:
    with start_sim_cluster(scenario=_two_rack_scenario(tmp_path, faults), time_factor=400) as sim:
        engine, _, result = asyncio.run(sweep_then_multinode(sim, tmp_path / "h.db", MultinodeOptions()))
    inside = [r for r in result.runs if r.purpose == "rack"]
    if rack_named:
        (rack,) = result.racks
        assert (rack.rack, rack.nodes) == ("r02", ["sim004", "sim005", "sim006"]) and result.culprits == []
        # Two racks cannot tell which end of the link between them is slow; the reason says both.
        assert "fail with nodes of rack r01" in rack.reason and "the uplink of rack r02 (or the way to" in rack.reason
        assert [r.status for r in inside] == [Status.PASS, Status.PASS] and set(rack.runs) >= {r.seq for r in inside}
        for node in rack.nodes:
            (finding,) = multinode_findings(engine, node)
            assert finding.status is Status.WARN and "uplink of rack r02" in finding.message
    else:
        assert result.racks == [] and [c.node for c in result.culprits] == ["sim004", "sim005"]
        assert [(r.nodes, r.status) for r in inside] == [(["sim004", "sim005"], Status.FAIL)]


@pytest.mark.parametrize(
    ("kind", "layer"), [(FaultKind.NIC_SLOW, "inter-node"), (FaultKind.XGMI_LINK_DEGRADED, "intra-node")]
)
def test_a_network_only_run_says_which_layer_a_named_node_s_fault_is_in(
    tmp_path: Path, kind: FaultKind, layer: str
) -> None:
    with start_cluster(4, GpuModel.MI300X, kind) as sim:
        bad = faulty_node(sim)
        _, _, result = asyncio.run(sweep_then_multinode(sim, tmp_path / "h.db", MultinodeOptions()))
    (culprit,) = result.culprits
    assert culprit.node == bad and culprit.layer == layer
    isolation = [r for r in result.runs if r.purpose == "isolation"]
    # Two good nodes' network-only run first (the baseline), then the named node's with a good node.
    assert [bad in r.nodes for r in isolation] == [False, True]
    assert all("NCCL_P2P_DISABLE=1" in r.command and "NCCL_SHM_DISABLE=1" in r.command for r in isolation)
    assert f"network-only run #{isolation[1].seq}" in culprit.layer_evidence
    # Network-only runs are no pair verdicts: not among the convicting runs, not the evidence of a PASS.
    assert not set(culprit.runs) & {r.seq for r in isolation}
    assert all(s.worst_ratio is None or s.worst_ratio > 0.3 for s in result.stragglers)


def test_bisection_names_a_degraded_xgmi_node_inside_a_failing_group(tmp_path: Path) -> None:
    options = MultinodeOptions(group_size=4)
    with start_cluster(5, GpuModel.MI355X, FaultKind.XGMI_LINK_DEGRADED) as sim:
        bad = faulty_node(sim)
        _, sweep, result = asyncio.run(sweep_then_multinode(sim, tmp_path / "h.db", options))
    assert [c.node for c in result.culprits] == [bad]
    purposes = [(r.purpose, len(r.nodes), r.status) for r in result.runs if r.purpose != "isolation"]
    # one 5-node group fails; halves of 2, then the half holding the bad node split to pairs; one confirmation
    assert purposes[0] == ("group", 5, Status.FAIL)
    assert len(purposes) == 6 and purposes[-1] == ("confirm", 2, Status.FAIL)
    assert result.runs[0].floor_gbps == 350  # the two-node floor, reused as an estimate for five nodes
    assert sweep.verdicts[bad].status is Status.FAIL
    assert sum(1 for n in sweep.verdicts if sweep.verdicts[n].status is Status.PASS) == 4


HANG_SECONDS = "987"  # a duration nothing else on the machine sleeps for


def _hanging_sleeps() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes() == f"sleep\0{HANG_SECONDS}\0".encode():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def hanging_mpirun(tmp_path: Path, sim: SimCluster, bad: str) -> Path:
    """An mpirun that hangs for real (a sleeping process) when ``bad`` is in its host list, else the sim's.

    The sim's own hang cannot be used here: run as ``python -m console.sim.commands`` its Delivery enum
    is a second copy, so a shim never hangs (reported to the sim's owner).
    """
    install_shims(tmp_path / "shims", sim.cluster_path, "sim001", tmp_path / "state", programs=["mpirun"])
    wrapper = tmp_path / "bin" / "mpirun"
    wrapper.parent.mkdir()
    wrapper.write_text(
        "#!/bin/sh\n"
        f'case " $* " in *" {bad}:"*|*",{bad}:"*) exec sleep {HANG_SECONDS} ;; esac\n'
        f'exec {tmp_path / "shims" / "mpirun"} "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper.parent


def test_hung_pair_is_killed_and_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs launched on this host are real processes: the hung ones must be gone when the phase ends."""
    settings = LaunchSettings(test_timeout_s=1, kill_grace_s=2)
    options = MultinodeOptions(launch=settings, site="local")
    with start_cluster(3, GpuModel.MI300X, FaultKind.RCCL_HANG) as sim:
        bad = faulty_node(sim)
        monkeypatch.setenv("PATH", f"{hanging_mpirun(tmp_path, sim, bad)}:{os.environ['PATH']}")
        engine = engine_for(sim, tmp_path / "h.db")

        async def scenario() -> MultinodeResult:
            try:
                sweep = await engine.run(level="quick")
                return await run_multinode(engine, sweep, options, transport=LocalTransport("local"))
            finally:
                await engine.close()

        started = time.monotonic()
        result = asyncio.run(scenario())
        elapsed = time.monotonic() - started
    assert _hanging_sleeps() == []
    judged = [r for r in result.runs if r.purpose != "isolation"]
    hung = [r for r in judged if bad in r.nodes]
    assert [r.status for r in hung] == [Status.FAIL, Status.FAIL]  # the pair, then the confirmation
    assert all(r.reason == "no result within 3 s: the collective hung and was killed" for r in hung)
    assert all(2.5 < r.duration_s < 8 for r in hung)
    assert [c.node for c in result.culprits] == [bad]
    assert [r.status for r in judged if bad not in r.nodes] == [Status.PASS]
    # Its network-only run hangs too: the fault is on its way out.
    assert result.culprits[0].layer == "inter-node" and "failed too" in result.culprits[0].layer_evidence
    assert elapsed < 40


def test_deadline_stops_runs_and_leaves_nodes_unknown(tmp_path: Path) -> None:
    options = MultinodeOptions(launch=LaunchSettings(test_timeout_s=60, kill_grace_s=5))
    with start_cluster(3, GpuModel.MI300X, FaultKind.RCCL_HANG) as sim:
        bad = faulty_node(sim)
        engine, _, result = asyncio.run(sweep_then_multinode(sim, tmp_path / "h.db", options, deadline_s=3.0))
    assert "stopped at the deadline" in result.pools[0].note
    (finding,) = multinode_findings(engine, bad)
    assert finding.status is Status.UNKNOWN and "deadline" in finding.message
    assert all(r.duration_s < 10 for r in result.runs)


def test_cancel_stops_the_console_s_multinode_level_and_keeps_what_finished(tmp_path: Path) -> None:
    """The console's K during the pairs: the hung run is killed, the phase concludes, the command ends."""
    with start_cluster(3, GpuModel.MI300X, FaultKind.RCCL_HANG) as sim:
        bad = faulty_node(sim)
        inventory = load_inventory(str(sim.inventory_path))
        events: list[Event] = []
        # The cap cuts the hung node's own single-node run; the pairs' timeout (-T 900) is not capped.
        spec = EngineSpec(inventory, load_packs(), tmp_path / "h.db", probe_timeout_cap_s=10)
        bridge = ProcessBridge(spec, events.append)
        bridge.start()
        try:
            phase = bridge.request(StartMultinode(tuple(n.name for n in inventory.nodes)))
            deadline = time.monotonic() + 120
            # Wait for the state: the pairs have begun (and the hung one never ends by itself).
            while not any(isinstance(e, MultinodeStarted) for e in events):
                assert time.monotonic() < deadline and not phase.done(), "the pairs did not start"
                time.sleep(0.05)
            # Nothing else may probe the nodes whose GPUs the pairs hold.
            with pytest.raises(EngineError, match="multi-node phase is running"):
                bridge.request(StartSweep("quick")).result(30)
            cancelled_at = time.monotonic()
            bridge.request(CancelSweep()).result(30)
            assert phase.result(60) is None
            assert time.monotonic() - cancelled_at < 30
        finally:
            bridge.stop()
    store = Store(tmp_path / "h.db")
    try:
        (entry,) = [row for row in store.audit_log() if row["action"] == "multinode"]
        assert entry["outcome"] == "cancelled by the operator"
    finally:
        store.close()
    done = [e for e in events if isinstance(e, MultinodeDone)]
    assert len(done) == 1 and done[0].stopped
    streamed = [e.run for e in events if isinstance(e, MultinodeRunDone)]
    assert done[0].result.runs == streamed and all(bad not in r.nodes for r in streamed)  # what finished is kept
    assert "cancelled; not judged" in done[0].result.pools[0].note
    verdict = [e.verdict for e in events if isinstance(e, NodeDone) and e.verdict.node == bad][-1]
    assert any(
        f.check_id == CHECK_ID and f.status is Status.UNKNOWN and "was cancelled" in f.message for f in verdict.findings
    )


@pytest.mark.parametrize("launcher", ["srun"])
def test_srun_launcher_names_the_culprit_too(tmp_path: Path, launcher: str) -> None:
    options = MultinodeOptions(launch=LaunchSettings(launcher="srun"))
    with start_cluster(3, GpuModel.MI300X, FaultKind.RCCL_LOW_BUSBW) as sim:
        bad = faulty_node(sim)
        _, _, result = asyncio.run(sweep_then_multinode(sim, tmp_path / "h.db", options))
    assert [c.node for c in result.culprits] == [bad]
    assert all(r.command.startswith("srun -N 2 -w sim001,") for r in result.runs if r.purpose == "group")
