"""The multinode level from the console's keys, against the simulator over real SSH, in both engine modes.

A two-rack MI300X pool: one node with a slow NIC port in the reference's rack, and the other rack
behind a slow switch uplink. The operator presses ``m`` on the pool and confirms; the node-pair view
fills as the runs finish, the second pass runs each failed node with another known-good node, the
nodes named behind the uplink run with each other, and the slow node and the rack are named, each
with the runs that convicted them.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import jsonschema
import pytest
from textual.pilot import Pilot
from textual.widgets import Button, Static

from console.checks import CheckPack
from console.inventory import load_inventory
from console.model.findings import Status
from console.model.multinode import MultinodeResult
from console.service.assembly import EngineSpec
from console.sim.launcher import SimCluster, start_sim_cluster
from console.store import Store
from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.detail import DetailScreen
from console.ui.widgets.link_panel import LinkPanel
from console.ui.widgets.row_grid import RowGrid
from tests.ui.helpers import main_screen, wait_until

SIZE = (170, 50)
ROOT = Path(__file__).resolve().parents[2]
SLOW_NIC = "sim002"
BEHIND_UPLINK = ("sim004", "sim005", "sim006")
# Slow enough that runs finish one by one where the test can see them (a pair takes ~0.1-0.3 s).
SCENARIO = """
name = "multinode-console"
seed = 4
time_factor = 40

[[nodes]]
names = "sim[001-003]"
model = "MI300X"
pool = "mi300x"
labels = { rack = "r01" }

[[nodes]]
names = "sim[004-006]"
model = "MI300X"
pool = "mi300x"
labels = { rack = "r02" }

[[faults]]
nodes = "sim002"
kind = "nic_slow"
nic = 1

[[faults]]
nodes = "sim[004-006]"
kind = "uplink_slow"
uplink = "r02"
"""


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimCluster]:
    scenario = tmp_path_factory.mktemp("scenario") / "multinode.toml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    with start_sim_cluster(scenario=scenario, time_factor=40) as cluster:
        yield cluster


@pytest.fixture
def console(sim: SimCluster, packs: dict[str, CheckPack], tmp_path: Path) -> Iterator[Callable[..., ConsoleApp]]:
    stores: list[Store] = []

    def build(engine: str, read_only: bool = False, **options: object) -> ConsoleApp:
        inventory = load_inventory(sim.inventory_path)
        store = Store(tmp_path / "history.sqlite")
        stores.append(store)
        return ConsoleApp(
            inventory,
            packs,
            store=store,
            engine_spec=EngineSpec(inventory, packs, store.path, read_only=read_only),
            engine_in_thread=engine == "thread",
            start_sweep=False,
            read_only=read_only,
            export_dir=tmp_path,
            refresh_interval_s=0.0,
            confirm_threshold=10,
            **options,  # type: ignore[arg-type]
        )

    yield build
    for store in stores:
        store.close()


def shown(app: ConsoleApp, box: str) -> str:
    return str(app.main_screen.query_one(LinkPanel).query_one(f"#{box}", Static).render())


@pytest.mark.parametrize("engine", ["process", "thread"])
async def test_m_runs_the_pairs_live_and_names_the_slow_node_with_its_runs(
    console: Callable[..., ConsoleApp], engine: str, tmp_path: Path
) -> None:
    app = console(engine)
    export_dir = tmp_path
    async with app.run_test(size=SIZE) as pilot:
        assert "none run yet" in shown(app, "link-rccl")
        main_screen(pilot).grid.move_cursor_to("sim001")
        await pilot.press("m")
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen)
        assert dialog.targets == tuple(f"sim00{i}" for i in range(1, 7))  # no marks: the cursor's pool
        await pilot.press(*"job 4411 slow")  # the reason field has the focus
        yes = dialog.query_one("#confirm-yes", Button)
        await wait_until(pilot, lambda: not yes.disabled)
        plan = str(dialog.query_one("#confirm-plan", Static).render())
        assert "mpirun -np 16 -N 8 -H sim001:8,sim002:8" in plan and "second known-good node" in plan
        started = time.monotonic()
        await pilot.click("#confirm-yes")
        board = lambda: app.state.pairs  # noqa: E731 - the state replaces its board on each event

        # Live: a pair's cell is drawn while later runs are still to come.
        await wait_until(pilot, lambda: board().running and len(board().runs) >= 2, timeout_s=120)
        await pilot.pause()
        heatmap = shown(app, "pair-heatmap")
        assert "running:" in heatmap and any(f"{r.ratio:.2f}" in heatmap for r in board().runs if r.ratio)
        await wait_until(pilot, lambda: board().result is not None, timeout_s=120)
        await pilot.pause()
        result = board().result
        assert result is not None and time.monotonic() - started < 120

        culprits = {c.node: c for c in result.culprits}
        assert set(culprits) == {SLOW_NIC}  # partners cleared by the second pass; the rack explains the rest
        (rack,) = result.racks
        assert (rack.rack, tuple(rack.nodes)) == ("r02", BEHIND_UPLINK)
        rack_runs = [result.runs[seq - 1] for seq in rack.runs]
        # Convicted by runs leaving the rack that failed, and cleared inside it by runs that passed.
        assert {r.purpose for r in rack_runs if r.status is Status.FAIL} == {"group", "confirm"}
        assert [r.purpose for r in rack_runs if r.status is Status.PASS] == ["rack", "rack"]
        for node in BEHIND_UPLINK:
            row = app.state.row(node).verdict
            assert row is not None and row.status is Status.WARN, row
        slow = culprits[SLOW_NIC]
        # Its network-only run is slow too, and its own single-node all_reduce_perf passed: its network.
        assert slow.layer == "inter-node" and "its network is slow" in slow.layer_evidence
        assert "single-node all_reduce_perf passes" in slow.layer_evidence
        convicting = [result.runs[seq - 1] for seq in slow.runs]
        assert [(r.purpose, r.status) for r in convicting] == [("group", Status.FAIL), ("confirm", Status.FAIL)]
        assert convicting[1].nodes[0] != convicting[0].nodes[0]  # the second pass used another good node
        # Every pair drawn: the heatmap has a cell per run (ratio against the 304 GB/s floor).
        heatmap = shown(app, "pair-heatmap")
        for run in result.runs:
            if run.purpose != "isolation":  # network-only runs have no floor and no cell
                assert run.ratio is not None and f"{run.ratio:.2f}" in heatmap
        stragglers = shown(app, "pair-stragglers")
        runs_text = " ".join(f"#{seq}" for seq in slow.runs)
        assert f"named by runs {runs_text}" in stragglers and "layer: inter-node" in stragglers
        assert "r02 uplink" in stragglers and "named by runs " + " ".join(f"#{q}" for q in rack.runs) in stragglers
        assert stragglers.index(SLOW_NIC) < stragglers.index("sim003")  # ranked by the worst pair
        assert result.stragglers[0].status is Status.FAIL
        # The verdicts joined the grid: the slow node's row carries the multi-node finding.
        verdict = app.state.row(SLOW_NIC).verdict
        assert verdict is not None and any(f.check_id == "rccl.multinode" for f in verdict.findings)
        assert f"named {SLOW_NIC}, rack r02 uplink" in shown(app, "link-rccl")
        # The audit log kept who took the nodes' GPUs and why, and what came of it.
        assert app.store is not None
        await wait_until(pilot, lambda: app.store.audit_log()[0]["finished_at"] is not None)  # type: ignore[union-attr]
        (entry,) = [row for row in app.store.audit_log() if row["action"] == "multinode"]
        assert json.loads(entry["inputs"])["reason"] == "job 4411 slow"
        assert json.loads(entry["targets"]) == [f"sim00{i}" for i in range(1, 7)]
        assert entry["outcome"] == f"{len(result.runs)} runs; named: {SLOW_NIC}, rack r02 uplink"
        # x exports the report with the pairs, the passes and the verdict per node, in the published schema.
        await pilot.press("x")
        report_path = export_dir / f"instinct-console-sweep{app.state.progress.sweep_id}.json"
        await wait_until(pilot, report_path.exists)
        report = json.loads(report_path.read_text())
        jsonschema.validate(report, json.loads((ROOT / "schemas" / "sweep-report.schema.json").read_text()))
        exported = MultinodeResult.model_validate(report["multinode"])
        assert exported == result
        assert {s.node: s.status for s in exported.stragglers}[SLOW_NIC] is Status.FAIL


async def test_read_only_refuses_the_multinode_level(console: Callable[..., ConsoleApp]) -> None:
    app = console("thread", read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("m")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
        assert app.state.pairs.started is False
        assert "read-only" in shown(app, "link-rccl")
        await pilot.press("L")  # the view still opens: reading what ran is not running anything
        await pilot.pause()
        assert app.main_screen.query_one(LinkPanel).pair_view


async def test_tui_pairing_rack_pairs_nodes_within_their_racks_first(console: Callable[..., ConsoleApp]) -> None:
    app = console("thread", pairing="rack", pairing_seed=3)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("M")  # every node
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen) and len(dialog.targets) == 6
        yes = dialog.query_one("#confirm-yes", Button)
        await wait_until(pilot, lambda: not yes.disabled)
        plan = " ".join(str(dialog.query_one("#confirm-plan", Static).render()).split())
        assert "the nodes in rack pairs (seed 3)" in plan
        # The plan says what runs first in this mode (issue 21): a rack pair, launched on its first node, not
        # reference pairing's "each pool's reference node" and its first two targets.
        assert "reference node" not in plan and "first node of each pool's first rack pair" in plan
        shown = re.search(r"mi300x: (sim\d+) with (sim\d+)", plan)
        assert shown is not None
        opening = [shown[1], shown[2]]
        assert f"{opening[0]}$ mpirun -np 16 -N 8 -H {opening[0]}:8,{opening[1]}:8" in plan
        await pilot.click("#confirm-yes")
        await wait_until(pilot, lambda: app.state.pairs.result is not None, timeout_s=120)
        result = app.state.pairs.result
        assert result is not None and (result.pairing, result.seed) == ("rack", 3)
        racks = {f"sim00{i}": "r01" if i <= 3 else "r02" for i in range(1, 7)}
        first = [r.nodes for r in result.runs if r.purpose == "pair"]
        assert opening in first  # the pair the dialog showed ran, launched where it said
        # Three nodes a rack: one pair inside each, the two odd ones out across.
        assert sorted(racks[a] == racks[b] for a, b in first) == [False, True, True]
        assert SLOW_NIC in {c.node for c in result.culprits}


async def multinode_evidence(pilot: Pilot[None], app: ConsoleApp) -> str:
    """The detail screen's evidence panel with the cursor on the multi-node finding, unwrapped."""
    screen = app.screen
    assert isinstance(screen, DetailScreen)
    (key,) = [key for key, line in screen._findings.items() if line.lead.check_id == "rccl.multinode"]
    screen.query_one("#findings-table", RowGrid).move_cursor_to(key)
    panel = screen.query_one("#evidence", Static)
    await wait_until(pilot, lambda: "multinode.all_reduce" in str(panel.render()))  # the panel followed the cursor
    return " ".join(str(panel.render()).split())


async def test_the_console_shows_who_convicted_or_cleared_each_node(console: Callable[..., ConsoleApp]) -> None:
    app = console("thread")
    async with app.run_test(size=SIZE) as pilot:
        main_screen(pilot).grid.move_cursor_to("sim001")
        await pilot.press("m")
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen)
        yes = dialog.query_one("#confirm-yes", Button)
        await wait_until(pilot, lambda: not yes.disabled)
        await pilot.click("#confirm-yes")
        await wait_until(pilot, lambda: app.state.pairs.result is not None, timeout_s=120)
        await pilot.pause()
        result = app.state.pairs.result
        assert result is not None
        slow = next(c for c in result.culprits if c.node == SLOW_NIC)
        (rack,) = result.racks
        standing = {s.node: s for s in result.stragglers}
        # The straggler view: the slow node with the mode and each convicting run's partner and its source.
        await wait_until(pilot, lambda: "reference pairing" in shown(app, "pair-stragglers"))
        stragglers = " ".join(shown(app, "pair-stragglers").split())  # unwrapped
        first, second = (result.runs[seq - 1] for seq in slow.runs)
        for run in (first, second):
            partner = run.nodes[0]
            assert f"#{run.seq} {run.purpose} with {partner} (known-good from this sweep; rack r01): FAIL" in stragglers
        assert "RACK r02 uplink" in stragglers and "then the rack pass" in stragglers
        # A cleared node says which runs cleared it.
        cleared = next(s for s in result.stragglers if s.status is Status.PASS and s.decided_by)
        assert "cleared by " + " ".join(f"#{q}" for q in cleared.decided_by) in stragglers
        assert "runs (reference pairing)" in stragglers

        # The node detail says it whole: mode, verdict with the runs and partners, what found it, each run.
        main_screen(pilot).grid.move_cursor_to(SLOW_NIC)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, DetailScreen) and bool(app.screen._findings))
        text = await multinode_evidence(pilot, app)
        assert "multi-node runs" in text and "pairing reference (each node with a known-good node of the pool)" in text
        assert f"FAIL {standing[SLOW_NIC].how}" in text and standing[SLOW_NIC].how.startswith("convicted by #")
        assert f"found by {slow.found_by}" in text and "layer inter-node" in text
        assert all(f"run #{seq} " in text for seq in standing[SLOW_NIC].runs)
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, DetailScreen))

        # A node behind the slow uplink: not convicted; the detail names the uplink and what found it.
        behind = rack.nodes[0]
        main_screen(pilot).grid.move_cursor_to(behind)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, DetailScreen) and bool(app.screen._findings))
        text = await multinode_evidence(pilot, app)
        assert f"WARN {standing[behind].how}" in text and "behind the slow uplink of rack r02" in text
        assert f"rack uplink r02: {rack.reason}" in text and f"found by {rack.found_by}" in text
