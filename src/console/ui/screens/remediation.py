"""The remediation view (``H``): every node in the loop by stage, the breaker, and the keys that move a case.

Its rows are read from the history database (``console.actions.remediation``) when it opens, after
each action and every second while it is shown: the engine side writes the cases, proposals and
breaker, this screen only reads them. Its keys act on the node under the cursor through the one
action catalogue, with the main screen's confirm dialog: the plan first, read-only refusal, the
audit row written ahead by the action service.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import BindingsMap
from textual.screen import Screen
from textual.widgets import DataTable, Static

from console.actions.remediation import RemediationView, remediation_view
from console.ui.registry import BY_ID, bindings, hidden_when_read_only, visible_actions
from console.ui.remediation import COLUMNS, head_content, proposals_content, row_cells, strikes_content
from console.ui.widgets.key_bar import KeyBar

if TYPE_CHECKING:
    from rich.text import Text

    from console.ui.app import ConsoleApp

SCREEN = "remediation"
RELOAD_S = 1.0


class RemediationScreen(Screen[None]):
    """Nodes per stage with their age, next step, who takes it, action, strikes and last check."""

    def __init__(self, read_only: bool, node: str | None = None) -> None:
        super().__init__()
        self.read_only = read_only
        # The node the view opens on (the node list's cursor node): its keys act on the node the operator
        # came from, not on whichever row happens to be first or at the same height as last time.
        self._opened_on = node
        self._bindings = BindingsMap(bindings(read_only, SCREEN))
        self.view: RemediationView | None = None

    @property
    def console_app(self) -> ConsoleApp:
        """The app, typed."""
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        """Head (breaker, counts, policy), the node table, the open proposals, the key bar."""
        yield Static(id="rem-head")
        table: DataTable[Text] = DataTable(id="rem-table", cursor_type="row", zebra_stripes=True)
        table.add_columns(*COLUMNS)
        yield table
        yield Static(id="rem-strikes")
        yield Static(id="rem-proposals")
        yield KeyBar(self.read_only, SCREEN, keymap=self.console_app.keymap)

    def on_mount(self) -> None:
        """Fill from the store, then keep it current."""
        self.reload()
        self.query_one("#rem-table", DataTable).focus()
        self.set_interval(RELOAD_S, self.reload)

    def on_screen_resume(self) -> None:
        """Back from a confirm dialog: show what the action changed."""
        self.reload()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide dangerous actions in read-only mode."""
        if self.read_only and hidden_when_read_only(action, parameters):
            return None
        return True

    def _keys(self) -> str:
        used = [a for a in visible_actions(self.read_only, SCREEN) if a.dangerous]
        if not used:
            return "read-only: the keys that move a case are off (--read-only)"
        keys = [f"{a.key_shown(self.console_app.keymap)} {a.title.lower()}" for a in used]
        return "on the node under the cursor: " + ", ".join(keys)

    def reload(self) -> None:
        """Read the loop again; the cursor stays on its node."""
        app = self.console_app
        if app.store is None:
            return
        now = app.clock()
        view = remediation_view(app.store, app.inventory, now)
        self.view = view
        self.query_one("#rem-head", Static).update(head_content(view, now, self._keys()))
        self.query_one("#rem-strikes", Static).update(strikes_content(view, now))
        self.query_one("#rem-proposals", Static).update(proposals_content(view, now))
        table: DataTable[Text] = self.query_one("#rem-table", DataTable)
        cursor, self._opened_on = self._opened_on or self.cursor_node, None
        table.clear()
        for row in view.rows:
            table.add_row(*row_cells(row, view, now), key=row.node)
        if cursor is not None and cursor in {r.node for r in view.rows}:
            table.move_cursor(row=table.get_row_index(cursor))

    @property
    def cursor_node(self) -> str | None:
        """The node under the cursor (None on an empty table)."""
        table: DataTable[Text] = self.query_one("#rem-table", DataTable)
        if table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        return str(key.value) if key.value is not None else None

    # actions -------------------------------------------------------------------------------------

    def action_act(self, action_id: str) -> None:
        """The catalogued action ``action_id`` (repaired, revalidate, approve, escalate) on the cursor node."""
        if self.read_only:
            return
        node = self.cursor_node
        if node is None:
            self.notify("no node in the remediation loop")
            return
        self.console_app.actions.start(BY_ID[action_id], (node,))

    def action_read_only_refusal(self, action_id: str) -> None:
        """Say why a dangerous key does nothing in read-only mode."""
        self.notify(f"{BY_ID[action_id].title}: not available in read-only mode (--read-only)", severity="warning")

    def action_back(self) -> None:
        """Back to the node list."""
        self.app.pop_screen()
