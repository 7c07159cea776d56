"""The detail screen: worst finding preselected, evidence, raw output in two keys, GPUs, stack, history."""

from __future__ import annotations

from collections.abc import Callable

from textual.widgets import DataTable, Static, TextArea

from console.model.findings import Status
from console.sim.faults import FaultKind
from console.store import Store
from console.ui.app import ConsoleApp
from console.ui.screens.detail import DetailScreen
from console.ui.screens.dialogs import RawOutputScreen
from console.ui.screens.main import MainScreen
from console.ui.widgets.row_grid import RowGrid
from tests.ui.helpers import feed, main_screen
from tests.ui.synthetic import SyntheticFleet

SIZE = (170, 50)


def fault_of(fleet: SyntheticFleet, kind: FaultKind) -> tuple[str, int | None]:
    fault = next(f for f in fleet.cluster.faults if f.kind is kind)
    return fault.node, fault.gpu


async def test_raw_evidence_of_a_failing_gpu_is_two_keys_away(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, store: Store
) -> None:
    node, gpu = fault_of(fleet, FaultKind.ECC_UNCORRECTABLE)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        main_screen(pilot).grid.move_cursor_to(node)
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, DetailScreen) and screen.node_name == node
        finding = screen.selected_finding()
        assert finding is not None and finding.status is Status.FAIL
        assert finding.family == "ecc" and finding.subject.gpu == gpu
        evidence = str(screen.query_one("#evidence", Static).render())
        assert "observed" in evidence and str(finding.evidence.observed) in evidence
        assert finding.evidence.expected is not None and finding.evidence.expected in evidence
        await pilot.press("r")
        raw = app.screen
        assert isinstance(raw, RawOutputScreen)
        run_id = finding.evidence.probe_run_id
        assert run_id is not None
        stored = store.probe_output(run_id)
        assert stored is not None
        text = raw.query_one(TextArea).text
        assert text == stored[0].decode()
        assert "ecc" in text.lower()
        await pilot.press("escape", "escape")
        assert isinstance(app.screen, MainScreen)


async def test_findings_are_worst_first_and_cursor_follows_on_refresh(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet
) -> None:
    node, _ = fault_of(fleet, FaultKind.XGMI_LINK_DOWN)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        main_screen(pilot).grid.move_cursor_to(node)
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, DetailScreen)
        grid = screen.query_one("#findings-table", RowGrid)
        glyphs = [grid.cell(key, "status")[0] for key in grid.order]
        assert glyphs[0] == "✗" and glyphs == sorted(glyphs, key="✗?!✓–".index)
        findings = fleet.verdicts[node].findings
        problems = [f for f in findings if f.status not in (Status.PASS, Status.SKIP)]
        grouped_checks = {(f.status, f.check_id) for f in findings if f.status in (Status.PASS, Status.SKIP)}
        assert grid.row_count == len(problems) + len(grouped_checks)  # passing checks: one line each
        passing_checks = sorted(check for status, check in grouped_checks if status is Status.PASS)
        grouped = screen._findings[f"PASS|{passing_checks[0]}"]
        assert len(grouped.findings) == sum(
            1 for f in findings if f.check_id == grouped.lead.check_id and f.status is Status.PASS
        )
        await pilot.press("down", "down")
        chosen = screen.selected_finding()
        done = next(e for e in fleet.node_done() if e.verdict.node == node)
        await feed(pilot, [done])  # the same verdict again: the cursor stays on its finding
        assert screen.selected_finding() == chosen


async def test_tab_line_shows_the_keys_and_a_click_switches_tabs(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, DetailScreen) and screen.active_tab == "findings"
        line = str(screen.query_one("#detail-tabbar", Static).render()).split("\n")[0]
        assert line.split() == ["1", "Findings", "2", "GPUs", "3", "Stack", "4", "History", "5", "Probes"]
        await pilot.click("#detail-tabbar", offset=(line.index("Stack") + 1, 0))
        assert screen.active_tab == "stack" and screen.query_one("#stack-table", DataTable).row_count > 0
        await pilot.click("#detail-tabbar", offset=(line.index("Findings") + 1, 0))
        assert screen.active_tab == "findings"


async def test_gpu_stack_history_and_probe_tabs(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, store: Store
) -> None:
    node, _ = fault_of(fleet, FaultKind.ROCM_DRIFT)
    done = next(e for e in fleet.node_done() if e.verdict.node == node)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, [*fleet.events, done])  # two samples: the sparklines have a trend
        main_screen(pilot).grid.move_cursor_to(node)
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, DetailScreen)

        await pilot.press("2")
        assert screen.active_tab == "gpus"
        gpus = screen.query_one("#gpus-table", DataTable)
        assert gpus.row_count == len(done.snapshot.gpus) == 8
        first = done.snapshot.gpus[0]
        assert first.metrics is not None and first.metrics.hotspot_temp_c is not None
        row = [str(c) for c in gpus.get_row_at(0)]
        assert row[1] == first.identity.bdf
        assert row[3] == f"{first.metrics.hotspot_temp_c:.0f}"
        assert len(row[12]) == 2  # one sparkline character per sample

        await pilot.press("3")
        stack = screen.query_one("#stack-table", DataTable)
        rocm = [str(c) for c in stack.get_row("rocm")]
        assert rocm[1] == done.snapshot.stack["rocm"]
        assert rocm[2] == fleet.inventory.pools[fleet.inventory.node(node).pool].pin.rocm
        assert rocm[3] == "Δ differs"

        await pilot.press("4")
        history = screen.query_one("#history-table", DataTable)
        assert history.row_count == len(store.node_history(node))
        assert history.row_count >= 1

        await pilot.press("5")
        probes = screen.query_one("#probes-table", DataTable)
        assert probes.row_count == len(done.snapshot.probe_runs)
        probes.move_cursor(row=[str(probes.get_row_at(i)[0]) for i in range(probes.row_count)].index("host.rocm"))
        await pilot.press("r")
        raw = app.screen
        assert isinstance(raw, RawOutputScreen)
        assert (
            raw.query_one(TextArea).text.strip()
            == store.probe_output(done.snapshot.probe_runs["host.rocm"])[0].decode().strip()
        )  # type: ignore[index]


async def test_detail_screen_is_built_unseen_after_start_and_shows_the_node_asked_for(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet
) -> None:
    node, _gpu = fault_of(fleet, FaultKind.XGMI_LINK_DOWN)
    app = make_app()
    frames: list[str] = []
    # Every frame sent is recorded (inside a batch update none is): the build must not show the detail
    # screen, even for one frame.
    original = app._display

    def display(screen: object, renderable: object) -> None:
        if renderable is not None and not app._batch_count:
            frames.append(type(screen).__name__)
        original(screen, renderable)  # type: ignore[arg-type]

    app._display = display  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        await pilot.pause(0.8)
        assert app.is_screen_installed("detail")
        assert app.screen_stack == [app.main_screen]
        assert set(frames) <= {"MainScreen"}, frames
        main_screen(pilot).grid.move_cursor_to(node)
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, DetailScreen) and screen.node_name == node
        assert str(screen.query_one("#detail-head", Static).render()).startswith(node)


async def test_the_head_takes_the_height_of_what_it_says_for_each_node_shown(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet
) -> None:
    """The head is laid out again only when its height changes (``update_auto_height``): going from a
    node with a reason to one without and back must still resize it, and the tab line follows it."""
    failing, _gpu = fault_of(fleet, FaultKind.XGMI_LINK_DOWN)
    healthy = next(n.name for n in fleet.inventory.nodes if fleet.verdicts[n.name].status is Status.PASS)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        heights = []
        for node in (healthy, failing, healthy, failing):
            main_screen(pilot).grid.move_cursor_to(node)
            await pilot.press("enter")
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, DetailScreen) and screen.node_name == node
            head, tabbar = screen.query_one("#detail-head", Static), screen.query_one("#detail-tabbar", Static)
            said = str(head.render()).rstrip("\n").count("\n") + 1
            assert head.size.height == said, (node, said, head.size)
            assert tabbar.region.y == head.region.bottom
            heights.append(head.size.height)
            await pilot.press("escape")
        assert heights[0] == heights[2] < heights[1] == heights[3]
