"""How a sweep copes with the tools it finds, over real SSH to the simulator: an amd-smi too old for the
narrow options, and an amd-smi that hangs."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

from console.checks.facts import UNSUPPORTED
from console.model.findings import Status
from console.sim.commands import context_for, run_program
from console.sim.faults import FaultKind
from console.sim.launcher import start_sim_cluster
from console.sim.models import example_cluster
from console.sim.specs import GpuModel
from console.store import Store
from console.sweep.engine import SweepEngine
from console.sweep.events import ProbeStarted
from tests.multinode.simcluster import engine_for, start_cluster


def _runs(store: Path, node: str, sweep: int) -> list[tuple[str, str, int | None, str | None]]:
    with sqlite3.connect(store) as db:
        query = (
            "SELECT probe, command, exit_status, problem FROM probe_runs WHERE node = ? AND sweep_id = ? ORDER BY id"
        )
        return list(db.execute(query, (node, sweep)))


def test_an_older_amd_smi_gets_the_full_metric_form_and_says_it_cannot_see_links(tmp_path: Path) -> None:
    # The simulator's MI250X nodes run ROCm 6.2.2: amd-smi 24.6 knows neither 'metric -v' nor 'xgmi -l'.
    store = tmp_path / "h.db"
    asked: list[tuple[int, str]] = []  # (sweep, node) of every start of the metric probe
    with start_sim_cluster(2, "mi250x", faults="none", time_factor=400) as sim:
        engine: SweepEngine = engine_for(sim, store)
        engine.subscribe(
            lambda e: (
                asked.append((e.sweep_id, e.node))
                if isinstance(e, ProbeStarted) and e.probe == "amdsmi.metric"
                else None
            )
        )

        async def twice() -> list[dict[Status, int]]:
            counts = [(await engine.run()).counts for _ in range(2)]
            await engine.close()
            return counts

        first, second = asyncio.run(twice())
    # A quick sweep cannot tell the links are up on this amd-smi: UNKNOWN, never PASS (issue 16).
    assert first[Status.UNKNOWN] == second[Status.UNKNOWN] == 2
    # Refused in its narrow form, the metric is asked again in full; the next sweep asks in full at once.
    assert sorted(asked) == [(1, "sim001"), (1, "sim001"), (1, "sim002"), (1, "sim002"), (2, "sim001"), (2, "sim002")]
    for sweep in (1, 2):
        metric = [
            (command, status) for probe, command, status, _ in _runs(store, "sim001", sweep) if probe == "amdsmi.metric"
        ]
        assert metric == [("amd-smi metric --json", 0)]
    status = {probe: (code, problem) for probe, _, code, problem in _runs(store, "sim001", 2)}["amdsmi.xgmi_status"]
    assert status[0] == 2 and (status[1] or "").startswith(UNSUPPORTED)
    with sqlite3.connect(store) as db:
        query = "SELECT status, message FROM findings WHERE check_id = 'xgmi.link_up' AND sweep_id = 2"
        link_up = set(db.execute(query))
    # One finding for the node, in amd-smi's own words, with where the links are measured instead.
    [(verdict, message)] = link_up
    assert verdict == "UNKNOWN" and "unrecognized arguments: -l" in message and "tb.a2a" in message


def test_an_older_amd_smi_node_passes_where_transferbench_measures_its_links(tmp_path: Path) -> None:
    with start_sim_cluster(2, "mi250x", faults="none", time_factor=400) as sim:
        engine: SweepEngine = engine_for(sim, tmp_path / "h.db")

        async def standard() -> dict[str, object]:
            result = await engine.run(level="standard")
            await engine.close()
            return dict(result.verdicts)

        verdicts = asyncio.run(standard())
    for verdict in verdicts.values():
        assert verdict.status is Status.PASS, verdict.reason  # type: ignore[attr-defined]
        link_up = [f for f in verdict.findings if f.check_id == "xgmi.link_up"]  # type: ignore[attr-defined]
        assert [f.status for f in link_up] == [Status.SKIP] and "tb.a2a measures this instead" in link_up[0].message


def test_a_hung_amd_smi_keeps_the_host_facts_of_its_bundles(tmp_path: Path) -> None:
    store = tmp_path / "h.db"
    with start_cluster(2, GpuModel.MI300X, FaultKind.COMMAND_HANG) as sim:
        hung = sim.cluster().faults[0].node
        engine = engine_for(sim, store)
        engine.probe_timeout_cap_s = 3

        async def once() -> None:
            await engine.run()
            await engine.close()

        started = time.monotonic()
        asyncio.run(once())
        assert time.monotonic() - started < 15
    runs = {probe: (status, problem) for probe, _, status, problem in _runs(store, hung, 1)}
    host = {probe: value for probe, value in runs.items() if probe.startswith("host.")}
    assert len(host) >= 6 and all(value == (0, None) for value in host.values()), host
    gpu = {probe: value for probe, value in runs.items() if probe.startswith("amdsmi.")}
    assert gpu and all(status is None and "probe timeout" in (problem or "") for status, problem in gpu.values())
    verdict = engine.verdicts[hung]
    assert verdict.status is Status.UNKNOWN and verdict.reason.split(":")[0].strip() in {
        "GPUs enumerated",
        "amd-smi answers",
    }
    assert engine.facts[hung].stack.get("kernel")  # the node's stack is known though its GPU tool hung


def test_a_gpu_gone_since_an_earlier_sweep_is_named_by_slot_and_address(tmp_path: Path) -> None:
    store_path = tmp_path / "h.db"
    with start_cluster(2, GpuModel.MI300X, FaultKind.GPU_MISSING) as sim:
        fault = sim.cluster().faults[0]
        # An earlier sweep saw all eight: the amd-smi list of a healthy MI300X node of the same make.
        healthy = example_cluster(nodes_per_model={GpuModel.MI300X: 1}, with_faults=False)
        listing = run_program(context_for(healthy, healthy.nodes[0].name), ["amd-smi", "list", "--json"]).stdout
        store = Store(store_path)
        earlier = store.start_sweep("quick", "", fault.node)
        run_id = store.add_probe_run(
            earlier, fault.node, "amdsmi.list", command="amd-smi list --json", exit_status=0,
            started_at=0.0, duration_s=0.1, stdout=listing.encode(), stderr=b"", problem=None,
        )  # fmt: skip
        store.close()
        engine = engine_for(sim, store_path)

        async def once() -> None:
            await engine.run()
            await engine.close()

        asyncio.run(once())
    gone = [f for f in engine.verdicts[fault.node].findings if f.check_id == "inventory.gpu_missing"]
    assert len(gone) == 1 and gone[0].status is Status.FAIL
    assert gone[0].subject.gpu == fault.gpu and gone[0].subject.gpu_bdf
    assert (
        gone[0].message == f"GPU {fault.gpu} ({gone[0].subject.gpu_bdf}) was listed in sweep {earlier} and is gone now"
    )
    assert gone[0].evidence.probe_run_id == run_id
    assert not [f for f in engine.verdicts["sim001"].findings if f.check_id == "inventory.gpu_missing"]
