"""The console follows the history database: verdicts other processes store move its rows.

Operators keep the console open while ``watch`` runs rounds and colleagues ``revalidate`` or ``sweep``
from a shell; those write node verdicts into the same database. Without following them the console
showed a healed node FAIL from its old sweep (and could show a node that failed since as PASS).

Why polling the store, and how cheaply: SQLite has no change notification across processes, and the
verdicts are already committed there before anyone could tell the console. Each poll reads only the
verdicts stored since the previous one (``console.store.follow``: a rowid seek, one B-tree descent
when nothing changed), so polling every ``FOLLOW_INTERVAL_S`` costs nothing measurable; only a node
whose newest stored verdict is newer than its row's is read back (its findings that are not PASS, as
the opening sweep reads them), at most ``FOLLOW_BATCH`` nodes per poll so a 1,000-node ``watch`` round
never stalls a keystroke. This reads the store from the UI process as the detail screen and the
remediation view already do; it never touches a node.

A node this console is sweeping is left to its sweep (``LiveState.follow`` refuses it); a newer verdict
read meanwhile is kept and shown once that sweep has given the node its own, if it is still newer.
No Textual here.
"""

from __future__ import annotations

from console.store import Store
from console.store.follow import StoredVerdict, newest_verdicts, node_totals, stored_row, verdicts_since, watermark
from console.ui.queries import stored_node_done
from console.ui.state import LiveState, shows_older

# Seconds between two looks at the history database: well under how often another process stores a
# verdict worth seeing (a watch round, a revalidation), and cheap enough to not matter (see above).
FOLLOW_INTERVAL_S = 2.0
# Nodes read back per poll at most; the rest follow at the next poll.
FOLLOW_BATCH = 64


class StoreFollower:
    """Keeps each node's newest stored verdict known and moves rows that show an older one."""

    def __init__(self, store: Store, state: LiveState, *, from_history: bool, batch: int = FOLLOW_BATCH) -> None:
        """With ``from_history`` the first poll moves every row to its node's newest stored verdict (the
        console opened on the stored sweep: ``tui --no-sweep``); without, only verdicts stored from then
        on are followed (a console that starts its own sweep shows nothing older meanwhile)."""
        self.store = store
        self.state = state
        self.batch = batch
        self.from_history = from_history
        self._mark: int | None = None  # None: not looked yet
        self._newest: dict[str, StoredVerdict] = {}
        self._names = set(state.names())

    def poll(self) -> bool:
        """Read what was stored since the last poll and fold newer verdicts in; True when a row moved
        (the UI is told through ``LiveState``'s usual notification)."""
        if self._mark is None:
            # The watermark first: a verdict stored between the two reads is read again next time.
            self._mark = watermark(self.store)
            if self.from_history:
                self._newest = newest_verdicts(self.store, sorted(self._names))
        else:
            for stored in verdicts_since(self.store, self._mark):
                self._mark = max(self._mark, stored.rowid)
                if stored.node in self._names and stored.newer_than(self._newest.get(stored.node)):
                    self._newest[stored.node] = stored
        return self._move_rows()

    def _move_rows(self) -> bool:
        behind = [stored for stored in self._newest.values() if self._behind(stored)]
        behind.sort(key=lambda s: s.rowid)
        notify = False
        for stored in behind[: self.batch]:
            row = stored_row(self.store, stored)
            if row is None:
                continue
            problems = self.store.findings(stored.sweep_id, stored.node, problems_only=True)
            total, runs = node_totals(self.store, stored.sweep_id, stored.node)
            event = stored_node_done(row, problems, total, runs)
            notify = self.state.follow(event, stored) or notify
        return notify

    def _behind(self, stored: StoredVerdict) -> bool:
        row = self.state.row(stored.node)
        return not row.running and shows_older(row, stored)
