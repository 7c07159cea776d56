"""The audit log, written ahead: an action's intent before it runs, its outcome on the same row after.

Every audited action (drain, resume, cordon, pin, enforce, accept, unpin, a host key accepted...)
goes through ``audited``: the row with who, what, the targets, the inputs and the exact commands is
committed first, with no outcome (``finished_at`` NULL); the outcome and the commands' output update
that row when the action is over. A console killed in between leaves the intent, which the log then
shows as "outcome unknown" (or "in progress" while its process still runs). ``audit`` is the same
path for what is recorded at once (a refusal: nothing ran).
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from console.store.owner import ProcessOwner
from console.store.transaction import immediate


def current_user() -> str:
    """Who is acting, for the audit log: the login name (the sudoer's under sudo), else the uid."""
    for var in ("SUDO_USER", "USER", "LOGNAME"):
        if os.environ.get(var):
            return os.environ[var]
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:  # a uid without a passwd entry (containers)
        return str(os.getuid())


class AuditEntry:
    """An action whose intent is in the log; ``finish`` sets the outcome written when it is over."""

    def __init__(self, audit_id: int) -> None:
        self.id = audit_id
        self.outcome: str | None = None
        self.output = ""

    def finish(self, outcome: str, output: str = "") -> None:
        """The one-line outcome and everything the commands printed."""
        self.outcome, self.output = outcome, output


class AuditLog:
    """The audit part of ``Store`` (it needs only the connection)."""

    conn: sqlite3.Connection

    def audit_intent(
        self, action: str, targets: Sequence[str], *, inputs: dict[str, Any], commands: Sequence[str], user: str | None
    ) -> int:
        """Commit the intent of an action about to run; its id, for ``audit_result``."""
        cur = self.conn.execute(
            "INSERT INTO audit (at, user, action, targets, inputs, commands, output, outcome, owner)"
            " VALUES (?, ?, ?, ?, ?, ?, '', '', ?)",
            (
                time.time(),
                user or current_user(),
                action,
                json.dumps(list(targets)),
                json.dumps(inputs),
                json.dumps(list(commands)),
                ProcessOwner.current().to_text(),
            ),
        )
        return int(cur.lastrowid or 0)

    def audit_result(self, audit_id: int, outcome: str, output: str = "") -> None:
        """Write the outcome of the action whose intent is ``audit_id``."""
        self.conn.execute(
            "UPDATE audit SET outcome = ?, output = ?, finished_at = ? WHERE id = ?",
            (outcome, output, time.time(), audit_id),
        )

    @contextmanager
    def audited(
        self,
        action: str,
        targets: Sequence[str],
        *,
        inputs: dict[str, Any],
        commands: Sequence[str] = (),
        user: str | None = None,
        with_intent: Callable[[int], None] | None = None,
    ) -> Iterator[AuditEntry]:
        """Write the intent, run the block, then write the outcome it gave ``finish``.

        ``with_intent`` (given the new row's id) writes what belongs to the intent (the drain records
        and cases of a drain about to run) in the same transaction: a console killed at any point has
        written both or neither. A block that raises (Ctrl-C, SIGTERM, a bug) before finishing records
        "outcome unknown" with the exception's name, and the exception goes on.
        """
        with immediate(self.conn):
            entry = AuditEntry(self.audit_intent(action, targets, inputs=inputs, commands=commands, user=user))
            if with_intent is not None:
                with_intent(entry.id)
        try:
            yield entry
        except BaseException as exc:
            if entry.outcome is None:
                detail = f": {exc}" if str(exc) else ""
                entry.finish(f"outcome unknown: stopped by {type(exc).__name__}{detail} while it ran", entry.output)
            with contextlib.suppress(sqlite3.Error):  # the original failure matters more than this write
                self.audit_result(entry.id, entry.outcome or "", entry.output)
            raise
        self.audit_result(entry.id, entry.outcome or "outcome unknown: the action recorded none", entry.output)

    def audit(
        self,
        action: str,
        targets: list[str],
        *,
        inputs: dict[str, Any],
        commands: list[str],
        output: str,
        outcome: str,
        user: str | None = None,
    ) -> int:
        """Record an action whose outcome is known at once (refused, or done outside the console's hands)."""
        with self.audited(action, targets, inputs=inputs, commands=commands, user=user) as entry:
            entry.finish(outcome, output)
        return entry.id

    def audit_log(self, limit: int = 50) -> list[sqlite3.Row]:
        """Newest audit entries first (``finished_at`` NULL: only the intent was written)."""
        return list(self.conn.execute("SELECT * FROM audit ORDER BY id DESC LIMIT ?", (limit,)))

    @staticmethod
    def shown_outcome(row: sqlite3.Row) -> str:
        """The entry's outcome as known now: the recorded one, else in progress or unknown."""
        if row["finished_at"] is not None:
            return str(row["outcome"])
        owner = ProcessOwner.from_text(row["owner"])
        if owner is None:
            return "outcome unknown: no outcome was recorded"
        alive = owner.alive()
        if alive:
            return f"in progress ({owner.describe()})"
        if alive is None:
            return f"outcome unknown: no outcome recorded yet, and {owner.describe()} cannot be checked from here"
        return f"outcome unknown: the console ({owner.describe()}) stopped before it recorded what happened"
