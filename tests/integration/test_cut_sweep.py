"""A sweep cut short by its deadline or a cancel judges each node on the probes that finished.

A FAIL already found stays a FAIL (it was thrown away: ``--exclude-out`` kept a node with uncorrectable
ECC in service), every check whose probe did not finish is UNKNOWN with what cut it, and a node is at
best UNKNOWN, never PASS. The cut check is stored as cut, so it is never the node's last active check:
``watch`` sweeps the node again, and a gate still reads its UNKNOWN or FAIL. Over real SSH against the
simulator, with the real store.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from console.checks import load_packs
from console.inventory import load_inventory
from console.model.findings import NodeVerdict, Status
from console.service.assembly import EngineSpec, build_engine
from console.sim.launcher import start_sim_cluster
from console.store import Store
from console.sweep.bundle import group_probes
from console.sweep.catalog import ProbeSet, probes_for
from console.sweep.checker_workers import WorkerChecker
from console.sweep.engine import FIRST_WAVE
from console.sweep.events import Event, NodeDone, ProbeFinished
from console.sweep.freshness import judged_from_history, last_active_check

# sim001 has uncorrectable ECC (read by amdsmi.metric) and a bad-pages probe that never ends; sim002 is
# healthy with the same hung probe; sim003 is healthy.
SCENARIO = """time_factor = 400

[[nodes]]
names = "sim[001-{last:03d}]"

[[faults]]
nodes = "sim001"
kind = "ecc_uncorrectable"
gpu = 3

[[faults]]
nodes = "sim[001-002]"
kind = "command_hang"
args = "bad-pages"
"""
HUNG = "amdsmi.bad_pages"


def _sweep(
    tmp_path: Path, *, deadline_s: float | None, cancel: bool, workers: int, nodes: int
) -> tuple[str, dict[str, NodeVerdict], Path]:
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO.format(last=nodes))
    db = tmp_path / "history.db"
    quick = probes_for(ProbeSet.QUICK)
    with start_sim_cluster(scenario=scenario) as sim:
        inventory = load_inventory(sim.inventory_path)

        async def sweep() -> tuple[str, dict[str, NodeVerdict]]:
            store = Store(db)
            # As every entry point builds it: with ``workers``, the nodes are checked in engine worker processes.
            engine = build_engine(EngineSpec(inventory, load_packs(), db, workers=workers), store)
            assert isinstance(engine.checker, WorkerChecker) == (workers > 0)
            finished: dict[str, set[str]] = {}
            judged: set[str] = set()
            all_but_hung = asyncio.Event()
            # A bundle's probes are announced when it ends: the hung probe's bundle never does.
            held = next(g for g in group_probes(quick, engine.bundles_per_node) if HUNG in {p.id for p in g})
            rest = {p.id for p in quick} - {p.id for p in held}

            def watch(event: Event) -> None:
                if isinstance(event, ProbeFinished):
                    finished.setdefault(event.node, set()).add(event.probe)
                elif isinstance(event, NodeDone):
                    judged.add(event.verdict.node)
                # The state a cancel is tested in: every bundle but the hung one answered on both nodes,
                # and the healthy node judged (one still in its check when cancelled is not PASS).
                if "sim003" in judged and all(finished.get(n, set()) >= rest for n in ("sim001", "sim002")):
                    all_but_hung.set()

            engine.subscribe(watch)
            run = asyncio.ensure_future(engine.run(level=ProbeSet.QUICK, deadline_s=deadline_s))
            if cancel:
                await all_but_hung.wait()
                engine.cancel()
            result = await run
            await engine.close()
            store.close()
            return result.outcome, result.verdicts

        outcome, verdicts = asyncio.run(sweep())
    return outcome, verdicts, db


def _assert_judged_on_what_finished(verdicts: dict[str, NodeVerdict], reason: str, *, exact: bool) -> None:
    ecc, healthy, whole = verdicts["sim001"], verdicts["sim002"], verdicts["sim003"]
    assert ecc.status is Status.FAIL, ecc.reason
    assert any(f.check_id == "ecc.uncorrectable" and f.status is Status.FAIL for f in ecc.findings)
    for verdict in (ecc, healthy):
        hung = [f for f in verdict.findings if f.check_id == f"probe.{HUNG}"]
        assert [f.status for f in hung] == [Status.UNKNOWN] and reason in hung[0].message, hung
        assert not any(f.evidence.probe == HUNG and f.status is Status.PASS for f in verdict.findings)
    assert healthy.status is Status.UNKNOWN
    # The probes ahead of the hung one in its bundle printed their answers in time for a 4 s deadline;
    # a cancel may come before they have.
    cut = f"check cut short: {reason}: {'1 of ' if exact else ''}"
    assert healthy.reason.startswith(cut) and HUNG in healthy.reason, healthy.reason
    assert healthy.passed, "the probes that finished are judged: their PASS findings are kept"
    assert whole.status is Status.PASS, whole.reason


# (workers, nodes): a sweep of more nodes than the first wave (8) checks that wave in the engine's own
# process while its workers start, judged as a worker judges; sim001-003 are in it.
MODES = pytest.mark.parametrize(
    ("workers", "nodes"), [(0, 3), (1, 3), (1, FIRST_WAVE + 1)], ids=["in-process", "one-worker", "first-wave-here"]
)


@MODES
def test_a_deadline_keeps_the_fail_found_and_leaves_the_hung_probes_checks_unknown(
    tmp_path: Path, workers: int, nodes: int
) -> None:
    """`sweep --deadline 3` said UNKNOWN "deadline exceeded" for a node whose quick probes had found a FAIL."""
    # A worker takes a second or two of CPU to start on a busy machine before its nodes' probes begin.
    outcome, verdicts, db = _sweep(tmp_path, deadline_s=4.0 + 4.0 * workers, cancel=False, workers=workers, nodes=nodes)
    assert outcome == "deadline"
    _assert_judged_on_what_finished(verdicts, "deadline exceeded", exact=True)
    _assert_cut_check_is_not_fresh(db, "deadline exceeded")


@MODES
def test_a_cancel_keeps_the_fail_found_and_leaves_the_hung_probes_checks_unknown(
    tmp_path: Path, workers: int, nodes: int
) -> None:
    """`K` in the console blanked every node to UNKNOWN "sweep cancelled" with 21 of 23 probes done."""
    outcome, verdicts, db = _sweep(tmp_path, deadline_s=None, cancel=True, workers=workers, nodes=nodes)
    assert outcome == "cancelled"
    _assert_judged_on_what_finished(verdicts, "sweep cancelled", exact=False)
    _assert_cut_check_is_not_fresh(db, "sweep cancelled")


def _assert_cut_check_is_not_fresh(db: Path, reason: str) -> None:
    """A cut check is no active check (``watch`` sweeps the node again), but a gate still reads it."""
    store = Store(db)
    now = store.node_history("sim003", limit=1)[0]["started_at"] + 1.0
    assert last_active_check(store, "sim003", "quick") is not None, "a node checked to its end is checked"
    for node in ("sim001", "sim002"):
        assert last_active_check(store, node, "quick") is None, node
        assert last_active_check(store, node) is None, node
    gated = {n: judged_from_history(store, n, "quick", 3600.0, now) for n in ("sim001", "sim002", "sim003")}
    # No active check at all is UNKNOWN to a gate, as before: never PASS.
    assert gated["sim001"].status is Status.UNKNOWN and gated["sim002"].status is Status.UNKNOWN
    assert gated["sim003"].status is Status.PASS
    rows = {n: store.node_history(n, limit=1)[0] for n in ("sim001", "sim002", "sim003")}
    assert rows["sim001"]["cut"].startswith(reason) and rows["sim002"]["cut"].startswith(reason)
    assert rows["sim003"]["cut"] == ""
    store.close()
