"""The acceptance view (W): one row per workload and pool, the selected row's whole story below it.

Rows come from ``console.actions.acceptance`` (what ``acceptance`` prints headless), with the runs this
console's engine reports in progress laid over them as they start and end. Keys act on the selected
row: ``r`` runs the workload on its pool through the engine (asked first, refused in read-only mode
and while a sweep runs, as the multi-node runs are: it takes the pool's GPUs), ``a`` accepts its last
passed run with a reason (audited), ``B`` rolls the pool back. The view reads the history again when a
run ends, so "accepted again" or "regressed" shows as soon as it is recorded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingsMap
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import DataTable, Static
from textual.widgets.data_table import RowKey

from console.actions.acceptance import AcceptanceState, accept_workload, acceptance_states, run_refusal
from console.actions.model import ActionKind
from console.service.run_plan import RunPlan
from console.service.workload_run import PlanWorkloadRun
from console.ui.acceptance import COLUMNS, acceptance_content, row_cells, with_live_runs
from console.ui.registry import BY_ID, DANGEROUS_ACTION_NAMES, bindings
from console.ui.screens.built import wait_built
from console.ui.screens.confirm import ConfirmScreen
from console.ui.text import safe
from console.ui.widgets.key_bar import KeyBar

if TYPE_CHECKING:
    from console.ui.app import ConsoleApp

SCREEN = "acceptance"


def row_key(state: AcceptanceState) -> str:
    """The table's key of a workload x pool (names cannot hold a newline)."""
    return f"{state.workload}\n{state.pool}"


class AcceptanceScreen(Screen[None]):
    """Workloads x pools with their acceptance state, the selected one's records, trend and run."""

    def __init__(self, read_only: bool) -> None:
        super().__init__()
        self.read_only = read_only
        self._bindings = BindingsMap(bindings(read_only, SCREEN))
        self.states: list[AcceptanceState] = []  # as shown: the history's, with the runs in progress
        self._stored: list[AcceptanceState] = []  # as the history says
        self._live_keys: set[tuple[str, str]] = set()
        self.seen_version = -1
        # Set once on_mount found every widget: the app may update the screen as soon as it is pushed.
        self.ready = False

    @property
    def console_app(self) -> ConsoleApp:
        """The app, typed."""
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        """Title, the table, the selected row's details, the keys."""
        with Vertical(id="acceptance-box"):
            yield Static(Content.styled("Workload acceptance per pool", "bold"), id="acceptance-title")
            yield DataTable(id="acceptance-table", cursor_type="row", zebra_stripes=False)
            with VerticalScroll(id="acceptance-scroll"):
                yield Static(id="acceptance-detail")
        yield KeyBar(self.read_only, SCREEN, keymap=self.console_app.keymap)

    async def on_mount(self) -> None:
        """Fill the table and focus it, once the details pane (two containers deep) is mounted too."""
        if not await wait_built(self, "#acceptance-detail"):
            return  # closed while being built: never shown
        table = self.table
        table.add_columns(*COLUMNS)
        self.ready = True
        self.reload()
        table.focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide the dangerous keys in read-only mode."""
        if self.read_only and action in DANGEROUS_ACTION_NAMES:
            return None
        return True

    @property
    def table(self) -> DataTable[Text]:
        """The workloads x pools table."""
        return self.query_one("#acceptance-table", DataTable)

    # reading ------------------------------------------------------------------------------------

    def reload(self) -> None:
        """Read the states from the history again, with this console's runs in progress laid over them."""
        if not self.ready:
            return  # on_mount reads them once the screen is built
        app = self.console_app
        self._stored = acceptance_states(app.store, app.inventory) if app.store is not None else []
        self._paint()

    def follow_runs(self) -> None:
        """Show the runs that started or ended since the last look (called on each repaint of the app).

        Only the overlay moves while runs go on; when every run of a workload on a pool has ended, its
        figures and outcome are in the history, which is read again then (not at every node's event).
        """
        runs = self.console_app.state.workload_runs
        if not self.ready or runs.version == self.seen_version:
            return
        if self._live_keys - set(runs.snapshot()):
            self.reload()
        else:
            self._paint()

    def _paint(self) -> None:
        app = self.console_app
        runs = app.state.workload_runs
        self.seen_version = runs.version
        live = runs.snapshot()
        self._live_keys = set(live)
        self.states = with_live_runs(self._stored, live)
        table = self.table
        selected = self.selected
        table.clear()
        for state in self.states:
            spec = app.inventory.workloads.get(state.workload)
            preferred = [c.figure for c in spec.criteria] if spec is not None else []
            cells = [self._cell(text, style) for text, style in row_cells(state, preferred)]
            table.add_row(*cells, key=row_key(state))
        if selected is not None and row_key(selected) in {row_key(s) for s in self.states}:
            table.move_cursor(row=table.get_row_index(row_key(selected)))
        self._show_detail()

    def _cell(self, text: str, style: str) -> Text:
        rich_style = self.app.stylesheet.parse_style(style).rich_style if style else ""
        return Text(safe(text), style=rich_style, no_wrap=True, end="")

    @property
    def selected(self) -> AcceptanceState | None:
        """The state under the cursor."""
        table = self.table
        if not self.states or table.row_count == 0:
            return None
        key: RowKey = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        return next((s for s in self.states if row_key(s) == key.value), None)

    @on(DataTable.RowHighlighted, "#acceptance-table")
    def _highlighted(self) -> None:
        self._show_detail()

    def _show_detail(self) -> None:
        state = self.selected
        if self.console_app.store is None:
            body = Content.styled("no history database: nothing was accepted", "$muted")
        else:
            body = acceptance_content([state] if state is not None else [])
        self.query_one("#acceptance-detail", Static).update(body)

    # keys ---------------------------------------------------------------------------------------

    def action_close(self) -> None:
        """Back to the node list."""
        self.app.pop_screen()

    def action_read_only_refusal(self, action_id: str) -> None:
        """Say why a dangerous key does nothing in read-only mode."""
        self.notify(f"{BY_ID[action_id].title}: not available in read-only mode (--read-only)", severity="warning")

    def _members(self, pool: str) -> tuple[str, ...]:
        return tuple(n.name for n in self.console_app.inventory.nodes if n.pool == pool)

    def action_run_workload(self) -> None:
        """Ask, then run the selected workload on its pool through the engine."""
        state = self.selected
        if self.read_only or state is None:
            return
        app = self.console_app
        action = BY_ID["acceptance-run"]
        targets = self._members(state.pool)

        async def planner(reason: str, force: bool = False) -> RunPlan:
            if app.bridge is None:
                return RunPlan(action.id, action.title, targets, reason, refused="the engine is not running")
            # force: the operator typed the override word (past the pool's cap: every node at once).
            command = PlanWorkloadRun(state.workload, state.pool, reason, force=force)
            preview: RunPlan = await app.bridge.ask(command)
            return preview

        def done(preview: RunPlan | None) -> None:
            if preview is None:
                self.notify(f"{action.title}: cancelled, nothing was done")
                return
            app.link.run_workload(state.workload, state.pool, preview.reason, force=preview.forced)

        screen = ConfirmScreen(action, targets, planner, count_threshold=app.confirm_threshold)
        self.app.push_screen(screen, done)

    def action_accept_workload(self) -> None:
        """Ask for a reason, then accept the selected workload's last passed run on its pool (audited)."""
        state = self.selected
        app = self.console_app
        if state is None or app.store is None:
            self.notify("no history database: there is no run to accept", severity="warning")
            return
        action = BY_ID["acceptance-accept-run"]
        last = state.trend[-1] if state.trend else None
        refused = None
        if state.running is not None:
            refused = "a run of it is in progress: accept once it has ended"
        elif last is None:
            refused = f"no run of {state.workload} on pool {state.pool} in the history yet (r runs it)"
        else:
            # The same check accept_workload makes, asked before Yes: a run that is not PASS/WARN, or that ran on
            # a node the sweep did not judge healthy, is refused in the plan with why and what to do.
            refused = run_refusal(app.store, app.inventory, state.workload, state.pool, last.sweep_id)

        async def planner(reason: str, force: bool = False) -> RunPlan:
            why = refused or (None if reason else "a reason is required: what this acceptance is for (audited)")
            notes = (
                f"accept the run of sweep #{last.sweep_id} ({last.status.value}): its stack becomes the accepted one"
                if last is not None
                else "",
            )
            title = f"Accept {state.workload} on"
            return RunPlan(action.id, title, (state.pool,), reason, notes=notes, refused=why)

        def done(preview: RunPlan | None) -> None:
            if preview is None or last is None or app.store is None:
                self.notify(f"{action.title}: cancelled, nothing was done")
                return
            result = accept_workload(
                app.store, app.inventory, state.workload, [state.pool], last.sweep_id, reason=preview.reason
            )
            self.notify(
                safe(result.outcome),
                title=action.title,
                severity="information" if result.ok else "error",
                markup=False,
                timeout=10,
            )
            self.reload()

        self.app.push_screen(ConfirmScreen(action, (state.pool,), planner, target_noun="pool"), done)

    def action_rollback_pool(self) -> None:
        """Plan the rollback of the selected row's pool in the confirm dialog, as B on one of its nodes."""
        state = self.selected
        if self.read_only or state is None:
            return
        targets = self._members(state.pool)
        if targets:
            self.console_app.actions.start(BY_ID[ActionKind.ROLLBACK.value], targets, with_sweep=False)
