"""SVG snapshots of the main screen, the link panel and the detail screen in every console theme.

Deterministic: the synthetic fleet (simulator renderers judged by the real checks), a fixed clock
and UTC. Regenerate with ``pytest tests/ui/test_snapshots.py --snapshot-update`` and review the SVGs.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.pilot import Pilot

from console.model.findings import Status
from console.model.multinode import CollectiveRun, Culprit, MultinodeResult, NodeStanding, RackCulprit
from console.sim.faults import FaultKind
from console.sweep.events import Event, MultinodeDone, MultinodeRunDone, MultinodeStarted
from console.ui.app import ConsoleApp
from tests.ui.helpers import feed, main_screen
from tests.ui.synthetic import SyntheticFleet

SIZE = (170, 50)
THEMES = ("dark", "light", "high-contrast")


def node_with(fleet: SyntheticFleet, kind: FaultKind) -> str:
    return next(f.node for f in fleet.cluster.faults if f.kind is kind)


@pytest.mark.usefixtures("utc")
@pytest.mark.parametrize("theme", THEMES)
def test_main_screen(
    snap_compare: Callable[..., bool], make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, theme: str
) -> None:
    async def run_before(pilot: Pilot[int]) -> None:
        await feed(pilot, fleet.events)
        await pilot.press("z")  # problems first

    assert snap_compare(make_app(theme=theme), terminal_size=SIZE, run_before=run_before)


@pytest.mark.usefixtures("utc")
@pytest.mark.parametrize("theme", THEMES)
def test_link_panel_of_a_node_with_a_down_xgmi_link(
    snap_compare: Callable[..., bool], make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, theme: str
) -> None:
    async def run_before(pilot: Pilot[int]) -> None:
        await feed(pilot, fleet.events)
        main_screen(pilot).grid.move_cursor_to(node_with(fleet, FaultKind.XGMI_LINK_DOWN))
        await pilot.pause()

    assert snap_compare(make_app(theme=theme), terminal_size=SIZE, run_before=run_before)


@pytest.mark.usefixtures("utc")
@pytest.mark.parametrize("theme", THEMES)
def test_detail_screen_of_a_failing_gpu(
    snap_compare: Callable[..., bool], make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, theme: str
) -> None:
    async def run_before(pilot: Pilot[int]) -> None:
        await feed(pilot, fleet.events)
        main_screen(pilot).grid.move_cursor_to(node_with(fleet, FaultKind.ECC_UNCORRECTABLE))
        await pilot.press("enter")
        await pilot.pause(0.3)

    assert snap_compare(make_app(theme=theme), terminal_size=SIZE, run_before=run_before)


def multinode_events(fleet: SyntheticFleet) -> list[Event]:
    """A finished multi-node phase on the first pool's six nodes: one slow node, and two nodes behind a
    slow rack uplink that pass with each other, each named with the runs that convicted it, the mode and
    each convicting run's partner with where it came from; cleared nodes with the runs that cleared them."""
    first_pool = fleet.inventory.nodes[0].pool
    ref, a, slow, b, c, d = [n.name for n in fleet.inventory.nodes if n.pool == first_pool][:6]
    figures = [
        ([ref, a], "group", 342.1),
        ([ref, slow], "group", 188.7),
        ([ref, b], "group", 339.6),
        ([ref, c], "group", 168.3),
        ([ref, d], "group", 171.0),
        ([a, slow], "confirm", 190.2),
        ([a, c], "confirm", 169.9),
        ([a, d], "confirm", 170.4),
        ([c, d], "rack", 341.7),
    ]
    runs = [
        CollectiveRun(
            seq=i + 1,  # runs are numbered from 1
            pool=first_pool,
            nodes=nodes,
            purpose=purpose,
            floor_gbps=304.0,
            busbw_gbps=gbps,
            status=Status.PASS if gbps >= 304 else Status.FAIL,
            partner_from="this sweep" if purpose != "rack" else "",
        )
        for i, (nodes, purpose, gbps) in enumerate(figures)
    ]
    culprit = Culprit(
        pool=first_pool,
        node=slow,
        reason=f"failed with {ref} and with {a}: busbw 190.2 GB/s < 304 GB/s",
        runs=[2, 6],
        layer="inter-node",
        layer_evidence="its own single-node all_reduce_perf passes",
        found_by=f"reference pairing (each node with a known-good node of the pool): #2 group with {ref} (known-good "
        f"from this sweep): FAIL; #6 confirm with {a} (known-good from this sweep): FAIL",
    )
    rack = RackCulprit(
        pool=first_pool,
        rack="r02",
        nodes=[c, d],
        runs=[4, 5, 7, 8, 9],
        reason=f"{c}, {d} fail with nodes of rack r01 and pass with each other: the uplink of rack r02 (or the "
        "way to rack r01) is slow",
        found_by="reference pairing (each node with a known-good node of the pool), then the rack pass (two named "
        "nodes of the rack, with each other)",
    )
    standings = [
        NodeStanding(pool=first_pool, node=c, status=Status.WARN, worst_ratio=0.5536, worst_with=[ref], runs=[4, 7, 9]),
        NodeStanding(
            pool=first_pool,
            node=ref,
            status=Status.PASS,
            worst_ratio=0.5536,
            worst_with=[c],
            runs=[1, 2, 3, 4, 5],
            decided_by=[1, 3],
        ),
        NodeStanding(
            pool=first_pool,
            node=a,
            status=Status.PASS,
            worst_ratio=0.5589,
            worst_with=[c],
            runs=[1, 6, 7, 8],
            decided_by=[1],
        ),
        NodeStanding(pool=first_pool, node=d, status=Status.WARN, worst_ratio=0.5605, worst_with=[a], runs=[5, 8, 9]),
        NodeStanding(
            pool=first_pool,
            node=slow,
            status=Status.FAIL,
            worst_ratio=0.6207,
            worst_with=[ref],
            runs=[2, 6],
            decided_by=[2, 6],
        ),
        NodeStanding(
            pool=first_pool, node=b, status=Status.PASS, worst_ratio=1.1171, worst_with=[ref], runs=[3], decided_by=[3]
        ),
    ]
    result = MultinodeResult(launcher="mpirun", runs=runs, culprits=[culprit], racks=[rack], stragglers=standings)
    events: list[Event] = [MultinodeStarted(sweep_id=1, nodes=[ref, a, slow, b, c, d])]
    events += [MultinodeRunDone(sweep_id=1, run=run) for run in runs]
    return [*events, MultinodeDone(sweep_id=1, result=result)]


@pytest.mark.usefixtures("utc")
@pytest.mark.parametrize("theme", THEMES)
def test_node_pair_heatmap_and_stragglers(
    snap_compare: Callable[..., bool], make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, theme: str
) -> None:
    async def run_before(pilot: Pilot[int]) -> None:
        await feed(pilot, fleet.events)
        await feed(pilot, multinode_events(fleet))
        await pilot.press("L")  # the link panel's node-pair view
        await pilot.pause()

    assert snap_compare(make_app(theme=theme), terminal_size=SIZE, run_before=run_before)
