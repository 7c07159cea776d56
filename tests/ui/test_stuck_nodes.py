"""A node stuck on its probes: the countdown in its row and in the sweep header, and the give-up key.

Driven by events and a hand-moved clock (no engine): what LiveState keeps of each ProbeStarted's
timeout, what the grid and the header say, and the key's feedback when it cannot act.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from console.checks import CheckPack
from console.inventory.load import from_mapping
from console.inventory.model import Inventory
from console.model.findings import roll_up
from console.service.commands import GiveUp
from console.sweep.events import Event, NodeDone, NodeSnapshot, ProbeFinished, ProbeStarted, SweepDone, SweepStarted
from console.ui.app import ConsoleApp
from console.ui.registry import BY_ID, visible_actions
from console.ui.rows import waiting_text
from console.ui.state import Holdup, LiveState
from tests.ui.helpers import cell_text, feed, main_screen, wait_until

SIZE = (170, 40)
NODES = ["gpu1", "gpu2", "gpu3"]


def inventory() -> Inventory:
    return from_mapping({"name": "t", "pools": [{"name": "p", "gpu_model": "MI300X", "nodes": "gpu[1-3]"}]})


def started(node: str, probe: str, timeout_s: float | None = 33.0) -> ProbeStarted:
    return ProbeStarted(sweep_id=1, node=node, probe=probe, timeout_s=timeout_s)


def finished(node: str, probe: str) -> ProbeFinished:
    return ProbeFinished(sweep_id=1, node=node, probe=probe, ok=True, duration_s=0.1)


def passed(node: str) -> NodeDone:
    return NodeDone(sweep_id=1, pool="p", verdict=roll_up(node, []), snapshot=NodeSnapshot())


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_node_waits_on_its_probes_in_flight_until_their_latest_deadline() -> None:
    clock = Clock()
    state = LiveState(inventory(), clock)
    state.apply(SweepStarted(sweep_id=1, nodes=NODES, probes=["a", "b", "c"], level="quick"))
    state.apply(started("gpu1", "a", 10.0))
    clock.now += 1
    state.apply(started("gpu1", "b", 33.0))
    state.apply(started("gpu1", "c", None))  # no timeout known: no countdown for it
    state.apply(started("gpu2", "a", 10.0))
    assert state.holdups(clock.now, 5.0) == []  # in flight for a second: not stuck yet
    clock.now += 5
    held = state.holdups(clock.now, 5.0)
    assert held == [Holdup("gpu1", ("a", "b"), 1000.0, 1034.0), Holdup("gpu2", ("a",), 1001.0, 1011.0)]
    assert held[0].left_s(clock.now) == 28.0
    state.apply(finished("gpu1", "a"))
    assert state.row("gpu1").holdup(clock.now, 5.0) == Holdup("gpu1", ("b",), 1001.0, 1034.0)
    state.apply(passed("gpu1"))  # its verdict: nothing more to wait for
    assert not state.row("gpu1").in_flight.waits and [h.node for h in state.holdups(clock.now, 5.0)] == ["gpu2"]
    state.apply(SweepDone(sweep_id=1, outcome="cancelled", counts={}, duration_s=6.0))
    assert state.holdups(clock.now, 0.0) == []


def test_waiting_text_counts_down_then_says_the_probes_are_being_stopped() -> None:
    holdup = Holdup("gpu2", ("amdsmi.list", "amdsmi.bad_pages"), 0.0, 33.0)
    assert waiting_text(holdup, 9.0) == "waiting, 0:24 left: amdsmi.list, amdsmi.bad_pages"
    assert waiting_text(holdup, 36.0) == "timed out 0:03 ago, being stopped: amdsmi.list, amdsmi.bad_pages"


def sweep_of_one_stuck_node() -> list[Event]:
    return [
        SweepStarted(sweep_id=1, nodes=NODES, probes=["amdsmi.list", "amdsmi.bad_pages"], level="quick"),
        *(started(node, "amdsmi.list") for node in NODES),
        *(started(node, "amdsmi.bad_pages") for node in NODES),
        *(finished(node, probe) for node in ("gpu1", "gpu3") for probe in ("amdsmi.list", "amdsmi.bad_pages")),
        passed("gpu1"),
        passed("gpu3"),
    ]


@pytest.fixture
def small_app(packs: dict[str, CheckPack], tmp_path: Path) -> Callable[..., ConsoleApp]:
    """A console over three nodes and no engine, on ``clock``."""

    def build(clock: Callable[[], float] | None = None, **options: Any) -> ConsoleApp:
        return ConsoleApp(
            inventory(), packs, clock=clock or Clock(), export_dir=tmp_path, refresh_interval_s=0.0, **options
        )

    return build


def summary_text(app: ConsoleApp) -> str:
    return str(app.main_screen.query_one("#summary", Static).render())


async def test_the_row_and_the_header_show_the_stuck_node_and_its_countdown(
    small_app: Callable[..., ConsoleApp],
) -> None:
    clock = Clock()
    app = small_app(clock)
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, sweep_of_one_stuck_node())
        assert cell_text(pilot, "gpu2", "reason") == "probing…"  # just sent: nothing to say yet
        assert "ETA" in summary_text(app) and "held by" not in summary_text(app)
        clock.now += 9
        # The clock's tick (once a second) shows it, with no event from the engine.
        await wait_until(pilot, lambda: cell_text(pilot, "gpu2", "reason").startswith("waiting"))
        assert cell_text(pilot, "gpu2", "reason") == "waiting, 0:24 left: amdsmi.list, amdsmi.bad_pages"
        assert "2/3 nodes  held by gpu2: 0:24 left at most (w gives up on a node)" in summary_text(app)
        clock.now += 10
        await wait_until(pilot, lambda: "0:14 left" in cell_text(pilot, "gpu2", "reason"))
        assert "held by gpu2: 0:14 left at most" in summary_text(app)
        await feed(pilot, [passed("gpu2")])
        assert cell_text(pilot, "gpu2", "verdict") != "… run"
        assert not cell_text(pilot, "gpu2", "reason").startswith("waiting")
        assert "held by" not in summary_text(app)


async def test_a_stuck_node_beside_running_ones_keeps_the_eta(small_app: Callable[..., ConsoleApp]) -> None:
    clock = Clock()
    app = small_app(clock, waiting_after_s=2.0)
    async with app.run_test(size=SIZE) as pilot:
        events = sweep_of_one_stuck_node()
        await feed(pilot, events[:-1])  # gpu3's probes are done, not its verdict
        clock.now += 3
        await wait_until(pilot, lambda: "waiting on" in summary_text(app))
        # gpu3 is still running (its probes answered): the ETA stays, gpu2 is named as waited on.
        assert "1/3 nodes  ETA " in summary_text(app)
        assert "waiting on gpu2: 0:30 left at most (w gives up on a node)" in summary_text(app)


async def test_give_up_is_a_sweep_key_kept_in_read_only_mode_and_says_why_it_cannot_act(
    small_app: Callable[..., ConsoleApp],
) -> None:
    action = BY_ID["give-up"]
    assert action.key == "w" and action.group == "sweep" and not action.dangerous and not action.confirm
    assert action in visible_actions(read_only=True)  # it ends only the console's own probes
    app = small_app(read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        assert "give-up" in {b.id for _key, b in main_screen(pilot)._bindings}
        await feed(pilot, sweep_of_one_stuck_node())
        main_screen(pilot).grid.move_cursor_to("gpu2")
        await pilot.press("w")
        assert [n.message for n in app._notifications][-1] == "the sweep engine is not running"


class AnsweringBridge:
    """Stands in for the engine: records what it was asked, gives up on ``running`` nodes only."""

    running = True

    def __init__(self, running: set[str]) -> None:
        self.nodes_running = running
        self.asked: list[GiveUp] = []

    async def ask(self, command: GiveUp) -> tuple[str, ...]:
        self.asked.append(command)
        return tuple(n for n in command.nodes if n in self.nodes_running)

    def stop(self) -> None:
        pass


async def test_give_up_asks_the_engine_for_running_nodes_only_and_says_what_happened(
    small_app: Callable[..., ConsoleApp],
) -> None:
    app = small_app()
    bridge = AnsweringBridge(running=set())
    async with app.run_test(size=SIZE) as pilot:
        app.bridge = bridge
        await feed(pilot, sweep_of_one_stuck_node())
        grid = main_screen(pilot).grid
        grid.move_cursor_to("gpu1")
        await pilot.press("w")
        said = [n.message for n in app._notifications]
        assert said[-1] == "nothing to give up on: gpu1 is not being checked now" and not bridge.asked
        await pilot.press("space", "space")  # marks gpu1 and gpu2
        assert grid.marked == {"gpu1", "gpu2"}
        await pilot.press("w")
        await wait_until(pilot, lambda: len(app._notifications) > len(said))
        # Only the node still being checked is sent; it finished meanwhile (the engine says so).
        assert bridge.asked == [GiveUp(("gpu2",))]
        said = [n.message for n in app._notifications]
        assert said[-1] == "nothing to give up on: gpu[1-2] are not being checked now"
        bridge.nodes_running = {"gpu2"}
        count = len(app._notifications)
        await pilot.press("w")
        await wait_until(pilot, lambda: len(app._notifications) > count)
        said = [n.message for n in app._notifications][count:]
        assert said == [
            "gave up on gpu2: its probes are killed on the node, it will read UNKNOWN",
            "nothing to give up on: gpu1 is not being checked now",
        ]
        app.bridge = None
