"""The main screen driven with Pilot: rows, navigation, filter grammar, marks, sorting, live batching."""

from __future__ import annotations

import threading
from collections.abc import Callable

from textual import events

from console.inventory.hostlist import fold
from console.model.findings import Status
from console.sim.faults import FaultKind
from console.sweep.catalog import ProbeSet, probes_for
from console.ui.app import ConsoleApp
from console.ui.messages import FleetChanged
from console.ui.screens.help import HelpScreen
from console.ui.widgets.filter_line import FilterLine
from console.ui.widgets.link_panel import LinkPanel
from tests.ui.helpers import cell_text, feed, main_screen, type_text
from tests.ui.synthetic import SyntheticFleet

SIZE = (170, 50)


def fault_node(fleet: SyntheticFleet, kind: FaultKind) -> str:
    """The node the demo fault set gave ``kind``."""
    return next(f.node for f in fleet.cluster.faults if f.kind is kind)


def statuses(fleet: SyntheticFleet, *wanted: Status) -> list[str]:
    """Names of nodes whose verdict is one of ``wanted``, in inventory order."""
    return [n.name for n in fleet.inventory.nodes if fleet.verdicts[n.name].status in wanted]


async def test_rows_show_each_nodes_verdict_families_and_reason(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        grid = main_screen(pilot).grid
        assert grid.order == [n.name for n in fleet.inventory.nodes]
        xgmi = fault_node(fleet, FaultKind.XGMI_LINK_DOWN)
        assert cell_text(pilot, xgmi, "verdict") == "✗ FAIL"
        assert cell_text(pilot, xgmi, "xgmi") == "✗"
        assert cell_text(pilot, xgmi, "pcie") == "✓"
        assert "XGMI link: down" in cell_text(pilot, xgmi, "reason")
        refused = fault_node(fleet, FaultKind.SSH_REFUSED)
        assert cell_text(pilot, refused, "verdict") == "? UNKNOWN"
        assert "refused" in cell_text(pilot, refused, "reason")
        drift = fault_node(fleet, FaultKind.ROCM_DRIFT)
        assert cell_text(pilot, drift, "drift") == "Δ"
        assert cell_text(pilot, drift, "verdict") == "! WARN"
        healthy = statuses(fleet, Status.PASS)[0]
        assert cell_text(pilot, healthy, "verdict") == "✓ PASS"
        every = len(probes_for(ProbeSet.STANDARD))  # the synthetic sweep's level
        assert cell_text(pilot, healthy, "probes") == f"{every}/{every}"
        assert cell_text(pilot, healthy, "updated") != ""


async def test_cursor_moves_and_link_panel_follows(make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        grid = main_screen(pilot).grid
        names = [n.name for n in fleet.inventory.nodes]
        assert grid.cursor_key == names[0]
        await pilot.press("down", "down", "j")
        assert grid.cursor_key == names[3]
        await pilot.press("up")
        assert grid.cursor_key == names[2]
        await pilot.press("end")
        assert grid.cursor_key == names[-1]
        await pilot.press("home")
        assert grid.cursor_key == names[0]
        await pilot.press("pagedown")
        assert grid.cursor_index > 3
        await pilot.pause(0.2)  # the panel follows once the cursor rests
        assert app.query_one(LinkPanel).current == grid.cursor_key


async def test_link_boxes_keep_their_largest_size_and_repaint_in_place(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet
) -> None:
    # Moving over nodes of other sizes must not re-lay out the screen (a whole-screen pass at 1,024 rows).
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        panel = app.query_one(LinkPanel)
        panel.show(app.state.row(fleet.inventory.nodes[0].name))
        await pilot.pause()
        boxes = [app.query_one(f"#{box}") for box in ("link-matrix", "link-pcie", "link-nics")]
        full = [box.size for box in boxes]
        assert all(size.width > 0 and size.height > 1 for size in full[:2])
        panel.show(None)
        await pilot.pause()
        assert [box.size for box in boxes] == full
        assert "no node selected" in str(boxes[0].render())
        panel.show(app.state.row(fleet.inventory.nodes[0].name))
        await pilot.pause()
        assert [box.size for box in boxes] == full


async def test_filter_text_hostlist_labels_and_inversion(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        screen = main_screen(pilot)
        grid = screen.grid
        pool_b = sorted(fleet.inventory.pools)[1]
        members_b = [n.name for n in fleet.inventory.nodes if n.pool == pool_b]

        await pilot.press("slash")
        await type_text(pilot, "sim01")
        assert grid.order == [n.name for n in fleet.inventory.nodes if "sim01" in n.name]

        screen.query_one("#filter").value = f"pool={pool_b}"  # type: ignore[attr-defined]
        await pilot.pause()
        assert grid.order == members_b

        screen.query_one("#filter").value = f"!pool={pool_b}"  # type: ignore[attr-defined]
        await pilot.pause()
        assert set(grid.order) == {n.name for n in fleet.inventory.nodes} - set(members_b)

        screen.query_one("#filter").value = "verdict=FAIL"  # type: ignore[attr-defined]
        await pilot.pause()
        assert grid.order == statuses(fleet, Status.FAIL)

        screen.query_one("#filter").value = "!verdict=PASS rack=r01"  # type: ignore[attr-defined]
        await pilot.pause()
        pool_a_members = [n.name for n in fleet.inventory.nodes if n.labels.get("rack") == "r01"]
        assert grid.order == [n for n in pool_a_members if fleet.verdicts[n].status is not Status.PASS]

        screen.query_one("#filter").value = "sim[002-004]"  # type: ignore[attr-defined]
        await pilot.pause()
        assert grid.order == ["sim002", "sim003", "sim004"]

        await pilot.press("enter")  # keeps the filter, back to the grid
        assert grid.has_focus and grid.order == ["sim002", "sim003", "sim004"]
        await pilot.press("escape")  # clears it
        assert len(grid.order) == len(fleet.inventory.nodes)


async def test_marks_toggle_step_down_and_clear(make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        grid = main_screen(pilot).grid
        names = [n.name for n in fleet.inventory.nodes]
        await pilot.press("space", "space", "down", "space")
        assert grid.marked == {names[0], names[1], names[3]}
        assert cell_text(pilot, names[0], "mark") == "◆"
        assert cell_text(pilot, names[2], "mark") == " "
        await pilot.press("up", "up", "up", "space")  # the cursor stepped to names[4]; back to names[1]
        assert grid.marked == {names[0], names[3]}
        await pilot.press("C")
        assert grid.marked == frozenset()
        assert cell_text(pilot, names[0], "mark") == " "


async def test_sorts_keep_the_cursor_on_its_node(make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        grid = main_screen(pilot).grid
        healthy = statuses(fleet, Status.PASS)[-1]
        grid.move_cursor_to(healthy)
        await pilot.press("V")
        order = grid.order
        failing = statuses(fleet, Status.FAIL)
        unknown = statuses(fleet, Status.UNKNOWN)
        warn = statuses(fleet, Status.WARN)
        assert order[: len(failing)] == failing
        assert order[len(failing) : len(failing) + len(unknown)] == unknown
        assert order[len(failing) + len(unknown) : len(failing) + len(unknown) + len(warn)] == warn
        assert grid.cursor_key == healthy  # re-seated by key, not left at the old index
        await pilot.press("O")
        pools = [fleet.inventory.node(n).pool for n in grid.order]
        assert pools == sorted(pools)
        assert grid.cursor_key == healthy
        await pilot.press("N")
        assert grid.order == [n.name for n in fleet.inventory.nodes]


async def test_problems_first_puts_fail_unknown_warn_on_top(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        grid = main_screen(pilot).grid
        await pilot.press("z")
        problems = statuses(fleet, Status.FAIL, Status.UNKNOWN, Status.WARN)
        assert grid.order[: len(problems)] == problems  # name order kept inside the group
        assert grid.order[len(problems) :] == statuses(fleet, Status.PASS)
        await pilot.press("z")
        assert grid.order == [n.name for n in fleet.inventory.nodes]


async def test_burst_of_1000_node_done_events_is_a_few_repaints(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet
) -> None:
    app = make_app(refresh_interval_s=0.15)
    done = fleet.node_done()
    messages: list[object] = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await pilot.pause()
        before = app.flush_count
        burst = [done[i % len(done)] for i in range(1000)]
        # The engine calls ingest on its own thread, once per event.
        thread = threading.Thread(target=lambda: [app.ingest(event) for event in burst])
        thread.start()
        thread.join()
        await pilot.pause(0.5)
        repaints = app.flush_count - before
        posted = sum(1 for m in messages if isinstance(m, FleetChanged))
        assert 1 <= repaints <= 3, repaints
        assert posted <= repaints  # at most one message per repaint, not one per event
        for event in done:
            row = app.state.row(event.verdict.node)
            assert row.status is event.verdict.status and row.findings_total == len(event.verdict.findings)
        assert (
            cell_text(pilot, done[-1].verdict.node, "verdict")
            == f"{'✓✗!?'['PFWU'.index(done[-1].verdict.status.value[0])]} {done[-1].verdict.status.value}"
        )


async def test_updates_wait_while_a_modal_is_open_then_catch_up(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet
) -> None:
    app = make_app()
    done = fleet.node_done()
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events[:1])  # SweepStarted only: nothing judged yet
        first = done[0].verdict.node
        assert cell_text(pilot, first, "verdict") == "… run"
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await feed(pilot, [done[0]])
        assert cell_text(pilot, first, "verdict") == "… run"  # held while the dialog is open
        await pilot.press("escape")
        await pilot.pause(0.4)
        assert cell_text(pilot, first, "verdict") == f"✓ {done[0].verdict.status.value}"


async def test_pause_holds_repaints_until_resumed(make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet) -> None:
    app = make_app()
    done = fleet.node_done()
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events[:1])
        await pilot.press("p")
        await feed(pilot, done[:3])
        assert cell_text(pilot, done[0].verdict.node, "verdict") == "… run"
        await pilot.press("p")
        await pilot.pause()
        assert cell_text(pilot, done[0].verdict.node, "verdict") != "… run"


async def test_untrusted_text_is_shown_literally(make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet) -> None:
    app = make_app()
    event = fleet.node_done()[0]
    hostile = "[bold red]pwned[/] \x1b]52;c;ZXZpbA==\x07 \x1b[31mred\u202e"
    verdict = event.verdict.model_copy(update={"reason": hostile, "status": Status.FAIL})
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, [event.model_copy(update={"verdict": verdict})])
        reason = cell_text(pilot, event.verdict.node, "reason")
        assert reason.startswith("[bold red]pwned[/]")
        assert "\x1b" not in reason and "\x07" not in reason and "\u202e" not in reason
        screen_text = app.export_screenshot()
        assert "[bold red]pwned[/]" in screen_text.replace("&#160;", " ")


async def test_copy_hostlist_of_the_shown_nodes(make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        main_screen(pilot).query_one("#filter").value = "verdict=FAIL"  # type: ignore[attr-defined]
        await pilot.pause()
        await pilot.press("y")
        assert app.clipboard == fold(statuses(fleet, Status.FAIL))
        await pilot.press("escape")  # every node again; the cursor stays on the first failing node
        names = [n.name for n in fleet.inventory.nodes]
        first_failing = statuses(fleet, Status.FAIL)[0]
        assert main_screen(pilot).grid.cursor_key == first_failing
        await pilot.press("space", "space", "y")  # marks win over what is shown
        at = names.index(first_failing)
        assert app.clipboard == fold(names[at : at + 2])


async def test_keys_typed_right_after_slash_reach_the_filter(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        # All at once, as a fast typist or a paste delivers them: none may land on the grid.
        for key, char in [("slash", "/"), *((c, c) for c in "sim003"), ("enter", "\r")]:
            app._driver.send_message(events.Key(key, char))  # type: ignore[union-attr]
        await pilot.pause(0.3)
        screen = main_screen(pilot)
        assert screen.spec.text == "sim003" and screen.grid.order == ["sim003"]
        assert screen.grid.has_focus


async def test_a_filter_longer_than_its_line_scrolls_to_the_cursor(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet
) -> None:
    """The filter line repaints without a screen layout as it is typed (``FilterLine``): its text still
    scrolls so the end being typed stays in view, and the rows follow each key."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await feed(pilot, fleet.events)
        screen = main_screen(pilot)
        field = screen.query_one("#filter", FilterLine)
        text = "!rack=r09 " * 9 + "sim00"
        await pilot.press("slash")
        await type_text(pilot, text)
        await pilot.pause()
        assert field.value == text and len(text) > field.content_size.width
        assert field.scroll_x > 0
        shown = field.render_line(0).text  # its content line
        assert shown.rstrip().endswith("sim00") and not shown.startswith("!rack")
        assert screen.grid.order == [n.name for n in fleet.inventory.nodes if "sim00" in n.name]


async def test_at_80_columns_the_reason_stays_on_screen(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet
) -> None:
    """At 80 columns the REASON column was off-screen behind the fourteen per-family columns."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await feed(pilot, fleet.events)
        grid = main_screen(pilot).grid
        shown = grid.shown_columns
        assert "reason" in shown and "verdict" in shown and "node" in shown
        assert "ecc" not in shown and "model" not in shown
        header = grid.render_line(0).text
        assert "REASON" in header and len(header.rstrip()) <= 80
        failing = next(r for r in app.state.rows() if r.status is Status.FAIL)
        assert grid.move_cursor_to(failing.name)
        await pilot.pause()
        line = grid.render_line(1 + grid.cursor_index - int(grid.scroll_y)).text
        assert failing.verdict is not None and failing.verdict.reason[:20] in line
    app = make_app()
    async with app.run_test(size=(170, 50)) as pilot:
        await feed(pilot, fleet.events)
        assert "ecc" in main_screen(pilot).grid.shown_columns  # wide enough: every column
