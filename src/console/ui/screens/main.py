"""The main screen: summary, node grid, link panel of the cursor node, filter line and footer.

Key bindings come from the action registry; each registry handler is an ``action_*`` method here.
Targets of an action are resolved by node name when its key is pressed and passed on frozen.
"""

from __future__ import annotations

from functools import cached_property, partial
from typing import TYPE_CHECKING

from textual import on
from textual.app import ComposeResult
from textual.binding import BindingsMap
from textual.content import Content
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Input, Static

from console.actions.baseline import PoolDiff
from console.files import OutputRefused
from console.model.findings import Status
from console.store.faults import StoreFault
from console.ui.acting import scope_targets
from console.ui.operations import export_report, hostlist
from console.ui.registry import BY_ID, Scope, bindings, hidden_when_read_only, pair_keys_hint
from console.ui.rows import COLUMNS, row_cells
from console.ui.screens.acceptance import AcceptanceScreen
from console.ui.screens.dialogs import ALL_FAMILIES, FamilyPicker, TextScreen
from console.ui.screens.help import HelpScreen
from console.ui.state import FAMILIES
from console.ui.text import safe
from console.ui.view import Arranger, SortKey, ViewSpec, filter_hint
from console.ui.widgets.filter_line import FilterLine
from console.ui.widgets.key_bar import KeyBar, key_bar_content
from console.ui.widgets.link_panel import LinkPanel
from console.ui.widgets.row_grid import Cell, RowGrid
from console.ui.widgets.summary import SummaryBar, SummaryFacts

if TYPE_CHECKING:
    from console.ui.app import ConsoleApp
    from console.ui.screens.detail import DetailScreen

FAILED = (Status.FAIL, Status.UNKNOWN)
LINKS_DELAY_S = 0.08
DETAIL_SCREEN = "detail"
STORE_FAILED = (
    "Sweeps go on and show here; actions are off (none runs without its audit row) until the console is"
    " restarted on a sound history database."
)


class MainScreen(Screen[None]):
    """Every node at a glance; the starting point of every action."""

    def __init__(self, read_only: bool) -> None:
        super().__init__()
        self.read_only = read_only
        # Dangerous actions are not bound at all in read-only mode (check_action hides them too).
        self._bindings = BindingsMap(bindings(read_only, "main"))
        self.spec = ViewSpec()
        self.arranger = Arranger()
        self.links_visible = True
        self._links_timer: Timer | None = None
        # Kept rather than queried: rows ask for it each time one is drawn.
        self._grid = RowGrid(COLUMNS, id="grid")

    @property
    def console_app(self) -> ConsoleApp:
        """The app, typed."""
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        """Store banner (shown once the history database failed), summary, grid, links, filter, footer."""
        yield Static("", id="store-banner", markup=False)
        yield SummaryBar(id="summary")
        yield self._grid
        yield LinkPanel(self.console_app.packs, id="links")
        yield FilterLine(
            placeholder="filter: text, gpu[01-08], pool=…, verdict=FAIL, !term   (enter: keep, esc: clear)", id="filter"
        )
        yield KeyBar(self.read_only, "main", keymap=self.console_app.keymap)

    @property
    def grid(self) -> RowGrid:
        """The node grid."""
        return self._grid

    def on_mount(self) -> None:
        """Fill the grid from the current state and focus it."""
        self.query_one("#filter", Input).display = False
        self.query_one("#store-banner", Static).display = False
        grid = self.grid
        for row in self.console_app.state.rows():
            grid.set_row(row.name, row_cells(row, marked=False))
        self.rearrange()
        grid.focus()
        self.refresh_links()
        self.refresh_pairs()
        self.refresh_summary()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide dangerous actions in read-only mode."""
        return None if self.read_only and hidden_when_read_only(action, parameters) else True

    # live updates -------------------------------------------------------------------------------

    def apply(self, dirty: set[str], summary: bool) -> None:
        """Repaint the rows in ``dirty`` (only cells that changed), re-arrange if their order can change."""
        grid = self.grid
        for name in dirty:
            # Rows off screen are made when next drawn: a flush costs what is visible, not what changed.
            grid.set_row_source(name, partial(self._cells_of, name))
        if dirty and self.spec.depends_on_verdicts:
            self.rearrange()
        cursor = grid.cursor_key
        if cursor is not None and cursor in dirty:
            self.refresh_links()
        if dirty or summary:
            self.refresh_summary()
        if summary:
            self.refresh_pairs()

    def _cells_of(self, name: str) -> list[Cell]:
        app = self.console_app
        return row_cells(app.state.row(name), self._grid.is_marked(name), app.clock(), app.waiting_after_s)

    def refresh_waiting(self) -> None:
        """Move the countdowns of the nodes stuck on their probes (and show the ones that just became so)."""
        app = self.console_app
        for holdup in app.state.holdups(app.clock(), app.waiting_after_s):
            self.grid.set_row_source(holdup.node, partial(self._cells_of, holdup.node))

    def rearrange(self) -> None:
        """Apply the filter and sort; the cursor stays on its node."""
        self.grid.set_order(self.arranger.arrange(self.console_app.state.rows(), self.spec))

    def refresh_links(self) -> None:
        """Show the cursor node in the link panel."""
        if not self.links_visible:
            return
        key = self.grid.cursor_key
        self.query_one(LinkPanel).show(self.console_app.state.row(key) if key is not None else None)

    def refresh_pairs(self) -> None:
        """Repaint the multi-node line (and the node-pair view when shown) if a run came in."""
        if self.links_visible:
            self.query_one(LinkPanel).show_pairs(self.console_app.state.pairs, self._pair_keys)

    @cached_property
    def _pair_keys(self) -> str:
        return pair_keys_hint(self.read_only, self.console_app.keymap)

    @cached_property
    def _label_keys(self) -> frozenset[str]:
        """Every label key of the inventory's nodes (the filter's ``key=value`` terms)."""
        return frozenset(k for node in self.console_app.inventory.nodes for k in node.labels)

    def refresh_summary(self) -> None:
        """Repaint the summary lines."""
        app = self.console_app
        now = app.clock()
        facts = SummaryFacts(
            cluster=app.inventory.name,
            progress=app.state.progress,
            counts=app.state.counts(),
            nodes=len(app.state.names()),
            shown=self.grid.row_count,
            marked=len(self.grid.marked),
            spec=self.spec,
            paused=app.paused,
            read_only=self.read_only,
            now=now,
            holdups=tuple(app.state.holdups(now, app.waiting_after_s)) if app.state.progress.running else (),
            give_up_key=BY_ID["give-up"].key_shown(app.keymap),
            filter_hint=filter_hint(self.spec.text, self._label_keys) if self.spec.text else "",
        )
        self.query_one(SummaryBar).show(facts)
        if app.state.store_fault is not None:
            self.show_store_failed(app.state.store_fault)

    def show_store_failed(self, fault: StoreFault) -> None:
        """The history database failed: say so until the console quits, and go on read-only.

        Sweeps still run and show here, without being stored; the actions that change the cluster are
        hidden and refused, as in read-only mode, since none may run without its audit row.
        """
        banner = self.query_one("#store-banner", Static)
        if banner.display:
            return
        banner.update(f"HISTORY NOT STORED: {safe(fault.describe())}. {STORE_FAILED}")
        banner.display = True
        self.console_app.read_only = True
        if not self.read_only:
            self.read_only = True
            self._bindings = BindingsMap(bindings(True, "main"))
            self.query_one(KeyBar).update(key_bar_content(True, "main", self.console_app.keymap))
            self.refresh_bindings()

    @on(RowGrid.CursorMoved)
    def _cursor_moved(self) -> None:
        # Follow the cursor once it rests: holding an arrow key repaints two grid lines per step,
        # not the whole link panel.
        if self._links_timer is not None:
            self._links_timer.stop()
        self._links_timer = self.set_timer(LINKS_DELAY_S, self.refresh_links)

    @on(RowGrid.RowActivated)
    def _row_activated(self) -> None:
        self.action_open_detail()

    # targets ------------------------------------------------------------------------------------

    def targets(self, scope: Scope) -> tuple[str, ...]:
        """Node names an action of ``scope`` acts on, right now (callers keep the tuple: it is frozen)."""
        grid, app = self.grid, self.console_app
        rows, marked, inv = app.state.rows(), grid.marked, app.inventory
        return scope_targets(scope, cursor=grid.cursor_key, marked=marked, shown=grid.order, rows=rows, inv=inv)

    # view actions -------------------------------------------------------------------------------

    def action_read_only_refusal(self, action_id: str) -> None:
        """Say why a dangerous key does nothing in read-only mode."""
        title = BY_ID[action_id].title
        self.notify(f"{title}: not available in read-only mode (--read-only)", severity="warning")

    def action_help(self) -> None:
        """Keys, colours and the filter grammar."""
        self.app.push_screen(HelpScreen(self.read_only, self.console_app.keymap))

    def action_filter(self) -> None:
        """Open the filter line."""
        field = self.query_one("#filter", Input)
        field.display = True
        # Focus now, not on the next loop turn: keys typed right after "/" (or pasted) belong to the filter.
        self.set_focus(field)

    @on(Input.Changed, "#filter")
    def _filter_typed(self, event: Input.Changed) -> None:
        self.spec = ViewSpec(event.value, self.spec.sort, self.spec.problems_first)
        self.rearrange()
        self.refresh_summary()

    @on(Input.Submitted, "#filter")
    def _filter_kept(self) -> None:
        self.query_one("#filter", Input).display = False
        self.set_focus(self.grid)

    def action_clear_filter(self) -> None:
        """Show every node again (escape also closes the filter line)."""
        field = self.query_one("#filter", Input)
        field.display = False
        if field.value:
            field.value = ""  # Input.Changed re-arranges
        self.grid.focus()

    def action_open_detail(self) -> None:
        """Open the detail screen of the cursor node."""
        key = self.grid.cursor_key
        if key is None:
            return
        self.detail_screen(key)
        self.app.push_screen(DETAIL_SCREEN)

    def detail_screen(self, node: str) -> DetailScreen:
        """The detail screen (one, kept installed: it is costly to build), set to show ``node``."""
        from console.ui.screens.detail import DetailScreen

        if not self.app.is_screen_installed(DETAIL_SCREEN):
            screen = DetailScreen(node, self.read_only)
            self.app.install_screen(screen, DETAIL_SCREEN)
            return screen
        installed = self.app.get_screen(DETAIL_SCREEN)
        assert isinstance(installed, DetailScreen)
        if installed.is_mounted:
            installed.show_node(node)
        else:  # still being built: it shows its node when mounted
            installed.node_name = node
        return installed

    def action_mark(self) -> None:
        """Mark or unmark the cursor node, then step down."""
        grid = self.grid
        key = grid.cursor_key
        if key is None:
            return
        marked = grid.toggle_mark(key)
        grid.update_cell(key, "mark", ("◆", "bold $marked") if marked else (" ", ""))
        grid.action_cursor(1)
        self.refresh_summary()

    def action_clear_marks(self) -> None:
        """Unmark every node."""
        grid = self.grid
        for key in grid.marked:
            grid.update_cell(key, "mark", (" ", ""))
        grid.clear_marks()
        self.refresh_summary()

    def action_sort(self, key: str) -> None:
        """Sort by name, severity or pool."""
        self.spec = ViewSpec(self.spec.text, SortKey(key), self.spec.problems_first)
        self.rearrange()
        self.refresh_summary()

    def action_toggle_problems_first(self) -> None:
        """Keep problem nodes on top, or not."""
        self.spec = ViewSpec(self.spec.text, self.spec.sort, not self.spec.problems_first)
        self.rearrange()
        self.refresh_summary()

    def action_toggle_links(self) -> None:
        """Show or hide the link panel."""
        self.links_visible = not self.links_visible
        self.query_one(LinkPanel).display = self.links_visible
        self.refresh_links()
        self.refresh_pairs()

    def action_toggle_pair_view(self, on: bool | None = None) -> None:
        """Switch the link panel between the cursor node's links and the fleet's node-pair view."""
        panel = self.query_one(LinkPanel)
        if not self.links_visible:
            self.action_toggle_links()
        panel.set_pair_view(not panel.pair_view if on is None else on, self.console_app.state.pairs, self._pair_keys)

    def action_toggle_pause(self) -> None:
        """Freeze or resume live updates."""
        self.console_app.toggle_pause()
        self.refresh_summary()

    def action_cycle_theme(self) -> None:
        """Next console theme."""
        self.console_app.cycle_theme()

    # sweep actions ------------------------------------------------------------------------------

    def action_rerun(self) -> None:
        """Rerun every probe of the level on the marked (or cursor) nodes."""
        self.console_app.link.rerun(self.targets(Scope.MARKED), None)

    def action_rerun_family(self) -> None:
        """Pick a family, then rerun it on the marked (or cursor) nodes."""
        targets = self.targets(Scope.MARKED)
        if not targets:
            return

        def chosen(family: str | None) -> None:
            if family is not None:
                self.console_app.link.rerun(targets, None if family == ALL_FAMILIES else {family})

        self.app.push_screen(FamilyPicker(targets, self.console_app.link.families_off_level(FAMILIES)), chosen)

    def action_rerun_failed(self) -> None:
        """Rerun every FAIL and UNKNOWN node."""
        targets = self.targets(Scope.ALL_FAILED)
        if not targets:
            self.notify("no FAIL or UNKNOWN node to rerun")
            return
        self.console_app.link.rerun(targets, None)

    def action_new_sweep(self) -> None:
        """Sweep every node again."""
        self.console_app.link.start_sweep()

    def action_restart_engine(self) -> None:
        """Start the engine again after it died."""
        self.console_app.link.restart()

    def action_cancel_sweep(self) -> None:
        """Stop the running sweep."""
        self.console_app.link.cancel_sweep()

    def action_give_up(self) -> None:
        """Stop waiting for the marked (or cursor) nodes of the running sweep."""
        self.console_app.link.give_up(self.targets(Scope.MARKED))

    def action_multinode(self, scope: str) -> None:
        """Ask, then run the multinode level on the marked nodes (else the cursor's pool) or every node."""
        action = BY_ID["multinode" if scope == "pool" else "multinode-fleet"]
        if self.read_only:
            return
        # m takes the marked nodes when there are any (its docstring and the operator guide say so); the
        # pool's scope alone ignored them, so a subset of a pool could not be chosen.
        marked = scope == "pool" and bool(self.grid.marked)
        self.console_app.actions.start_multinode(action, self.targets(Scope.MARKED if marked else action.scope))

    # catalogued actions -------------------------------------------------------------------------

    def action_act(self, action_id: str) -> None:
        """Plan, confirm and carry out the catalogued action ``action_id`` on its scope's nodes."""
        action = BY_ID[action_id]
        if self.read_only and action.dangerous:
            return
        self.console_app.actions.start(action, self.targets(action.scope))

    def action_remediation_view(self) -> None:
        """Show the remediation loop: nodes per stage, the breaker, proposals (docs/operator-guide.md)."""
        from console.ui.screens.remediation import RemediationScreen

        if self.console_app.store is None:
            self.notify("no history database: the remediation cases live there", severity="warning")
            return
        self.app.push_screen(RemediationScreen(self.read_only, self.grid.cursor_key))

    # history actions ----------------------------------------------------------------------------

    def action_acceptance_view(self) -> None:
        """Show each workload's acceptance state on each pool (docs/workloads.md, "Acceptance")."""
        app = self.console_app
        if app.store is None:
            self.notify("no history database: nothing was accepted", severity="warning")
            return
        app.push_screen(AcceptanceScreen(self.read_only))

    def action_diff_baseline(self) -> None:
        """Show what changed since each pool's accepted baseline."""
        app = self.console_app
        current = app.state.progress.last_full_sweep_id
        pools = {n.pool for n in app.inventory.nodes}
        diffs = app.queries.baseline_diffs(pools, current) if current is not None else None
        if diffs is None or current is None:
            self.notify("no sweep in the history database to compare yet", severity="warning")
            return
        app.push_screen(TextScreen(f"Changes of sweep #{current} against each pool's baseline", diff_content(diffs)))

    def action_copy_hostlist(self) -> None:
        """Fold the marked (else shown) nodes into a hostlist; show it and copy it."""
        names = self.targets(Scope.VISIBLE)
        if not names:
            self.notify("no node to copy")
            return
        folded = hostlist(names)
        self.app.copy_to_clipboard(folded)
        self.notify(safe(folded), title=f"copied hostlist of {len(names)} node(s)", markup=False)

    def action_export_report(self) -> None:
        """Write the JSON report of what is on screen."""
        app = self.console_app
        try:
            path = export_report(
                app.inventory, app.state.rows(), app.state.progress, app.export_dir, app.state.pairs.result
            )
        except OutputRefused as exc:  # a link planted at the name, another's file, a full disk
            self.notify(safe(str(exc)), title="report not written", severity="error", markup=False)
            return
        # The whole path: a relative one (the current directory, by default) left the operator guessing.
        self.notify(safe(str(path.resolve())), title="report written", markup=False)

    async def action_quit(self) -> None:
        """Stop the engine and leave."""
        await self.console_app.shutdown()


def diff_content(pools: list[PoolDiff]) -> Content:
    """Baseline diffs as text: per pool, per node, verdict, stack, findings and figures that moved."""
    parts: list[str | tuple[str, str]] = []
    for pool in pools:
        parts += [(f"pool {safe(pool.pool)}", "bold $accent")]
        if pool.baseline is None:
            parts += [("  no accepted baseline yet (A accepts the current sweep)", "$muted"), "\n\n"]
            continue
        parts += [(f"  baseline #{pool.baseline} -> #{pool.current}", "$muted"), "\n"]
        if not pool.nodes:
            parts += [("  nothing changed", "$health-ok"), "\n\n"]
            continue
        for node in sorted(pool.nodes, key=lambda n: (not n.regressed, not n.verdict_changed, n.node)):
            before, after = node.verdict
            parts += [(f"  {safe(node.node)}", "bold")]
            if node.regressed:
                parts += [("  regressed", "bold $health-crit")]
            verdict = f"{before or '-'} -> {after or '-'}" if node.verdict_changed else f"{after} (unchanged)"
            parts += [f"  verdict {verdict}\n"]
            for key, (old, new) in node.stack.items():
                parts += [("    stack ", "$drift"), f"{safe(key)}: {safe(old or '-')} -> {safe(new or '-')}\n"]
            for key, old_status, new_status, message in node.findings:
                change = f"{key}: {old_status or '-'} -> {new_status}: {message}"
                parts += [("    finding ", "$health-warn"), safe(change), "\n"]
            for key, old_value, new_value in node.figures:
                parts += [("    figure ", "$muted"), safe(f"{key}: {old_value:g} -> {new_value:g}"), "\n"]
            for key, status, message in node.uncompared:
                parts += [("    not in the baseline's checks ", "$muted"), safe(f"{key}: {status}: {message}"), "\n"]
        parts.append("\n")
    return Content.assemble(*parts)
