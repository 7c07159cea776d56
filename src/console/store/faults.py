"""What a history database failure is, and what the sweep writing to it does about it.

A store can fail under a running sweep: locked by another process past the busy wait, the disk full, a
corrupt page, the file deleted or its filesystem made read-only. None of that may cost the sweep its
verdicts or its reports (docs/verdicts.md, "When the history database fails"): ``StoreWrites`` is what
the engine writes through. Its first failure stops every later write (a locked store would otherwise
cost the busy wait once per node) and what was not stored is counted, so the sweep can say it.

A deleted database is the one failure SQLite does not report: an unlinked file stays writable to the
process that has it open, and everything written to it is gone at close. So every write first checks
that the path still names the file that was opened.
"""

from __future__ import annotations

import errno
import os
import shlex
import sqlite3
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from console.model.base import Model

if TYPE_CHECKING:
    from console.store.db import Store

T = TypeVar("T")
FaultKind = Literal["locked", "full", "corrupt", "deleted", "read-only", "failed"]

_MEANING: dict[str, str] = {
    "locked": "locked by another process past the busy wait",
    "full": "the disk is full",
    "corrupt": "the database is corrupt",
    "deleted": "the file was deleted or replaced while open",
    "read-only": "the file or its filesystem is read-only",
    "failed": "a write failed",
}


class StoreFault(Model):
    """Why a history database cannot be written (or read): its kind, its file and SQLite's own words."""

    kind: FaultKind
    path: str
    detail: str

    def describe(self) -> str:
        """One line: the file, what went wrong, the underlying error, and for a corrupt one how to recover it."""
        said = f"history database {self.path}: {_MEANING[self.kind]} ({self.detail})"
        return f"{said}; to recover it: {recovery(Path(self.path))}" if self.kind == "corrupt" else said


def recovery(path: Path) -> str:
    """How to recover a corrupt history database, keeping its audit log (the write-ahead intents).

    ``.dump`` writes every row it can still read and ends in a ROLLBACK when it met a corrupt page: the
    ``sed`` commits what was read instead. Unlike ``.recover`` it works with every build of the sqlite3
    tool (Debian's 3.40 fails ``.recover`` with "SQL logic error").
    """
    db, saved, bad = (shlex.quote(f"{path}{suffix}") for suffix in ("", ".recovered", ".corrupt"))
    return (
        f"stop every console using it, keep the file, and recover what is readable: sqlite3 {db} .dump"
        f" | sed 's/^ROLLBACK; -- due to errors$/COMMIT;/' | sqlite3 {saved} && mv {db} {bad} && mv {saved} {db}"
        " (the audit log's intents are rows like any other and come back; the next start reconciles them with"
        " the scheduler); docs/verdicts.md, 'When the history database fails'"
    )


def fault_of(exc: BaseException, path: Path | str) -> StoreFault:
    """The fault an error from SQLite (or the filesystem under it) means."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    number = exc.errno if isinstance(exc, OSError) else None
    kind: FaultKind = "failed"
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        kind = "locked"
    elif name == "SQLITE_FULL" or number == errno.ENOSPC:
        kind = "full"
    elif name.startswith("SQLITE_CORRUPT") or name == "SQLITE_NOTADB":
        kind = "corrupt"
    elif name == "SQLITE_READONLY_DBMOVED" or number == errno.ENOENT:
        kind = "deleted"
    elif name.startswith("SQLITE_READONLY") or number in (errno.EROFS, errno.EACCES, errno.EPERM):
        kind = "read-only"
    if kind == "failed":  # SQLite's CANTOPEN or IOERR: what the filesystem says now tells them apart
        kind = _as_found(Path(path))
    detail = f"{name}: {exc}" if name else str(exc)
    return StoreFault(kind=kind, path=str(path), detail=detail)


def read_only_filesystem(path: Path) -> bool:
    """True when the filesystem holding ``path`` (or its directory) is mounted read-only."""
    try:
        return bool(os.statvfs(path if path.exists() else path.parent).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _as_found(path: Path) -> FaultKind:
    if not path.exists():
        return "deleted"
    return "read-only" if read_only_filesystem(path) else "failed"


def identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file at ``path``, None when there is none."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


class StoreWrites:
    """The engine's writes to its store: the first failure ends them, and what was lost is counted."""

    def __init__(self, store: Store | None) -> None:
        self.store = store
        self.fault: StoreFault | None = None
        self.unstored: Counter[str] = Counter()  # what was not stored: "node verdict" -> how many
        self._on_fault: list[Callable[[StoreFault], None]] = []
        self._opened = identity(store.path) if store is not None else None

    @property
    def writable(self) -> bool:
        """True while there is a store and it has not failed."""
        return self.store is not None and self.fault is None

    def on_fault(self, callback: Callable[[StoreFault], None]) -> None:
        """Call ``callback`` once, with the first fault."""
        self._on_fault.append(callback)

    def write(self, what: str, call: Callable[[Store], T]) -> T | None:
        """``call(store)``, or None when the store has failed (now, before, or at its opening): ``what`` is
        then counted."""
        if self.store is not None and self.fault is None:
            try:
                if identity(self.store.path) != self._opened:
                    raise FileNotFoundError(errno.ENOENT, "the database file is no longer at its path")
                return call(self.store)
            except (sqlite3.Error, OSError) as exc:
                self.failed(fault_of(exc, self.store.path))
        if self.fault is not None:  # no store at all (none asked for) loses nothing
            self.unstored[what] += 1
        return None

    def read(self, call: Callable[[Store], T], default: T) -> T:
        """``call(store)``; ``default`` when there is no store or it fails (the failure is kept, once)."""
        if self.store is None:
            return default
        try:
            return call(self.store)
        except (sqlite3.Error, OSError) as exc:
            if self.fault is None:
                self.failed(fault_of(exc, self.store.path))
            return default

    def failed(self, fault: StoreFault) -> None:
        """Take ``fault`` as the store's (the first one is kept) and tell the callbacks."""
        if self.fault is not None:
            return
        self.fault = fault
        for callback in self._on_fault:
            callback(fault)

    def lost(self) -> str:
        """What was not stored, in one line ("node verdict: 3, sweep end: 1"); empty when nothing was."""
        return ", ".join(f"{what}: {n}" for what, n in sorted(self.unstored.items()))

    def problem(self) -> str | None:
        """The fault and what it cost, in one line for a summary or a report; None while the store is sound."""
        if self.fault is None:
            return None
        lost = self.lost()
        return f"{self.fault.describe()}; not stored: {lost or 'nothing yet'}"
