"""Warm reruns over real sshd nodes: slow-changing probes are reused while the stack stamp holds, and run
again on the node whose stack changed (a ROCm upgrade between two passes is judged on fresh output).

The nodes' execution logs say what really ran on each node.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from console.checks import load_packs
from console.inventory import load_inventory
from console.model.findings import Status
from console.sim.commands import context_for, run_program
from console.sim.faults import Fault, FaultKind
from console.store import Store
from console.sweep import SweepEngine
from console.sweep.catalog import STACK_STAMP, STAMP_PROBES, ProbeSet, probes_for
from console.sweep.events import Event, ProbeFinished
from console.transport.connect import transport_for
from tests.reliability.simfleet import SimOnSshd, install_node_tools

SLOW = [p for p in probes_for(ProbeSet.QUICK) if p.slow_changing]
STAMPS = [p.argv for p in probes_for(ProbeSet.QUICK) if p.id in STAMP_PROBES]


def _ran(sim: SimOnSshd, node: str, argv: tuple[str, ...]) -> bool:
    return " ".join(argv) in sim.exec_log(node)


def _slow_ran(sim: SimOnSshd, node: str) -> list[str]:
    return [p.id for p in SLOW if _ran(sim, node, p.argv)]


@contextlib.asynccontextmanager
async def _engine(sim: SimOnSshd, store: Store | None = None, **options: float) -> AsyncIterator[SweepEngine]:
    inventory = load_inventory(sim.inventory_path)
    engine = SweepEngine(inventory, transport_for(inventory), load_packs(), store, **options)
    try:
        yield engine
    finally:
        await engine.close()


async def _two_passes(sim: SimOnSshd, db: Path, between: object = None) -> tuple[list[Event], dict[str, Status]]:
    """A quick sweep, ``between()`` (if given), then the same sweep again on the same engine."""
    store = Store(db)
    events: list[Event] = []
    try:
        async with _engine(sim, store) as engine:
            first = await engine.run(level="quick")
            assert all(v.status is Status.PASS for v in first.verdicts.values()), first.verdicts
            sim.clear_exec_logs()
            if callable(between):
                between()
            engine.subscribe(events.append)
            second = await engine.run(level="quick")
    finally:
        store.close()
    return events, {name: v.status for name, v in second.verdicts.items()}


def test_unchanged_nodes_answer_the_stamp_instead_of_the_slow_probes(recorded: SimOnSshd, tmp_path: Path) -> None:
    events, statuses = asyncio.run(_two_passes(recorded, tmp_path / "h.db"))
    assert set(statuses.values()) == {Status.PASS}
    for node in recorded.fleet.nodes:
        assert all(_ran(recorded, node.name, argv) for argv in STAMPS), recorded.exec_log(node.name)
        assert _slow_ran(recorded, node.name) == []
        assert _ran(recorded, node.name, ("amd-smi", "list", "--json"))  # fast-changing: always asked
        reused = {e.probe for e in events if isinstance(e, ProbeFinished) and e.node == node.name and e.reused}
        assert reused == {p.id for p in SLOW}
    # The reused outcomes still point at the raw output they came from.
    assert all(e.run_id is not None for e in events if isinstance(e, ProbeFinished) and e.reused)


def test_a_stack_changed_between_passes_is_probed_again_and_judged(recorded: SimOnSshd, tmp_path: Path) -> None:
    upgraded = recorded.fleet.nodes[1].name
    changed = recorded.cluster.model_copy(deep=True)
    changed.faults = [Fault(kind=FaultKind.ROCM_DRIFT, node=upgraded)]

    def upgrade() -> None:
        install_node_tools(recorded.fleet, changed)
        recorded.clear_exec_logs()

    _, statuses = asyncio.run(_two_passes(recorded, tmp_path / "h.db", upgrade))
    assert sorted(_slow_ran(recorded, upgraded)) == sorted(p.id for p in SLOW)
    assert statuses[upgraded] is Status.WARN  # ROCm no longer matches the pool's pin
    store = Store(tmp_path / "h.db")
    try:
        sweep_id = store.latest_sweep_id()
        assert sweep_id is not None
        drift = [f for f in store.findings(sweep_id, upgraded) if f.status is Status.WARN]
        assert drift and {f.family for f in drift} == {"stack"}
    finally:
        store.close()
    for node in recorded.fleet.nodes:
        if node.name != upgraded:
            assert _slow_ran(recorded, node.name) == [], node.name
            assert statuses[node.name] is Status.PASS


def test_a_driver_reloaded_in_place_with_new_firmware_is_probed_again(recorded: SimOnSshd, tmp_path: Path) -> None:
    """Same boot, same driver version, new firmware loaded: only the module's sysfs inode tells."""
    reloaded = recorded.fleet.nodes[2].name
    changed = recorded.cluster.model_copy(deep=True)
    changed.faults = [Fault(kind=FaultKind.FIRMWARE_DRIFT, node=reloaded, gpu=3)]
    boot_line = next(p.argv for p in probes_for(ProbeSet.QUICK) if p.id == STACK_STAMP)
    same_boot = run_program(context_for(recorded.cluster, reloaded), list(boot_line))

    def reload_driver() -> None:
        install_node_tools(recorded.fleet, changed, overrides={reloaded: {boot_line: same_boot}})
        recorded.clear_exec_logs()

    _, statuses = asyncio.run(_two_passes(recorded, tmp_path / "h.db", reload_driver))
    assert "amdsmi.firmware" in _slow_ran(recorded, reloaded)
    assert statuses[reloaded] is Status.FAIL  # GPU 3's firmware no longer matches the pool's
    assert all(_slow_ran(recorded, n.name) == [] for n in recorded.fleet.nodes if n.name != reloaded)


def test_a_rerun_of_named_families_runs_them_whatever_the_stamp(recorded: SimOnSshd, tmp_path: Path) -> None:
    node = recorded.fleet.nodes[0].name

    async def scenario() -> None:
        async with _engine(recorded) as engine:
            await engine.run(level="quick")
            recorded.clear_exec_logs()
            await engine.rerun([node], families={"firmware"})

    asyncio.run(scenario())
    assert _ran(recorded, node, ("amd-smi", "firmware", "--json"))


def test_outcomes_past_their_age_are_not_reused(recorded: SimOnSshd, tmp_path: Path) -> None:
    async def scenario() -> None:
        async with _engine(recorded, steady_max_age_s=0) as engine:
            await engine.run(level="quick")
            recorded.clear_exec_logs()
            await engine.run(level="quick")

    asyncio.run(scenario())
    for node in recorded.fleet.nodes:
        assert sorted(_slow_ran(recorded, node.name)) == sorted(p.id for p in SLOW)


def test_a_node_that_went_away_loses_its_kept_outcomes(recorded: SimOnSshd, tmp_path: Path) -> None:
    gone = recorded.fleet.nodes[3].name

    async def scenario() -> Status:
        async with _engine(recorded) as engine:
            await engine.run(level="quick")
            recorded.fleet.stop_node(gone)
            while_gone = (await engine.run(level="quick")).verdicts[gone].status
            recorded.fleet.start_node(gone)
            recorded.clear_exec_logs()
            await engine.run(level="quick")
            return while_gone

    assert asyncio.run(scenario()) is Status.UNKNOWN
    # Back again, it is probed in full: nothing from before it went away is taken on trust.
    assert sorted(_slow_ran(recorded, gone)) == sorted(p.id for p in SLOW)
    assert all(_slow_ran(recorded, n.name) == [] for n in recorded.fleet.nodes if n.name != gone)
