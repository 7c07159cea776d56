"""Which cluster a history database belongs to: one database, one cluster.

Pins, the breaker, cases, proposals, baselines and acceptance records are kept by pool name; two
clusters with a pool of the same name in one database would read each other's (a pin taken in one
making a node of the other WARN). So a database belongs to the cluster that wrote it (``meta.cluster``,
from schema version 9), every command that knows its cluster checks it before reading or writing
anything, and a command pointed at another cluster's database is refused. By default each cluster
has its own database in the XDG state directory (``cluster_store_path``).

A database from before version 9 belongs to no cluster yet: it is given to the cluster whose cluster
file wrote its sweeps (``sweeps.inventory`` keeps the file's path) the first time that cluster opens
it. One with sweeps of a cluster file that names another cluster cannot be given: it is refused, with
the files named, and stays readable by ``history`` with ``--store``. The old shared default database
is taken by a cluster without being asked for (no ``--store``) only when every sweep in it is known to
be that cluster's; a file that is gone or moved cannot be told, and given with ``--store`` the
database goes to the cluster that asks.
"""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path

from console.inventory import Inventory, InventoryError, load_inventory

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class ForeignStoreError(Exception):
    """A history database that is not this cluster's; the message says whose it is and what to do."""


def state_dir() -> Path:
    """``$XDG_STATE_HOME/instinct-console`` (``~/.local/state/instinct-console`` by default)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "instinct-console"


def legacy_store_path() -> Path:
    """The one default database of consoles before version 9, shared by every cluster file."""
    return state_dir() / "history.sqlite"


def cluster_store_path(cluster: str) -> Path:
    """``<state dir>/clusters/<cluster>/history.sqlite``: the default database of one cluster."""
    folder = _UNSAFE.sub("_", cluster).lstrip(".") or "_"
    return state_dir() / "clusters" / folder / "history.sqlite"


def owner(conn: sqlite3.Connection) -> str | None:
    """The cluster the database belongs to; None when none was recorded yet (written before version 9)."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'cluster'").fetchone()
    return str(row[0]) if row else None


def writers(conn: sqlite3.Connection) -> list[str]:
    """The cluster files whose sweeps the database holds, as their sweeps recorded them."""
    rows = conn.execute("SELECT DISTINCT inventory FROM sweeps WHERE inventory != '' ORDER BY inventory")
    return [str(r[0]) for r in rows]


def _written_by(source: str, inventory: Inventory) -> bool | None:
    """Whether the sweeps recorded with cluster file ``source`` were of ``inventory``'s cluster; None when
    that cannot be told (the file is gone or moved, or was no file)."""
    if source == inventory.source or _same_file(source, inventory.source):
        return True
    # A relative path given from another directory (``-i cluster.toml``) names the same file when it ends
    # this cluster file's path.
    recorded, current = Path(source).parts, Path(inventory.source).absolute().parts
    if not Path(source).is_absolute() and current[-len(recorded) :] == recorded:
        return True
    try:
        return load_inventory(source).name == inventory.name
    except InventoryError:
        return None


def _same_file(a: str, b: str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def others(conn: sqlite3.Connection, inventory: Inventory, *, unknown: bool = False) -> list[str]:
    """The cluster files that wrote sweeps of this database and name another cluster than ``inventory``'s
    (and, with ``unknown``, those whose cluster cannot be told)."""
    return [s for s in writers(conn) if (found := _written_by(s, inventory)) is False or (unknown and found is None)]


def claim(conn: sqlite3.Connection, path: Path, inventory: Inventory, *, record: bool = True) -> None:
    """Make sure the database at ``path`` is ``inventory``'s cluster's, recording it when it is nobody's yet.

    ForeignStoreError when it is another cluster's, or holds sweeps of other cluster files. Without
    ``record`` (a database opened read-only) only another cluster's is refused: nothing is written.
    """
    found = owner(conn)
    if found == inventory.name:
        return
    if found is not None:
        raise ForeignStoreError(
            f"{path}: the history database of cluster {found!r}, not of {inventory.name!r} ({inventory.source}):"
            f" each cluster keeps its own; without --store this one's is {cluster_store_path(inventory.name)}"
        )
    if not record:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Checked again inside the lock: another console may have claimed it meanwhile.
        found = owner(conn)
        foreign = others(conn, inventory) if found is None else []
        if found is None and not foreign:
            conn.execute("INSERT INTO meta VALUES ('cluster', ?)", (inventory.name,))
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    if found is not None and found != inventory.name:
        claim(conn, path, inventory)  # raises, naming the cluster that took it first
    if foreign:
        raise ForeignStoreError(
            f"{path}: this history database holds sweeps of other cluster files ({', '.join(foreign)}), so it"
            f" is not {inventory.name!r}'s alone and is not given to it: its pins, cases and baselines would"
            f" apply to the wrong nodes. Use this cluster's own (the default without --store:"
            f" {cluster_store_path(inventory.name)}); `history --store {path}` still reads this one"
        )


def is_legacy_of(path: Path, inventory: Inventory) -> bool:
    """Whether the pre-version-9 shared default database at ``path`` is ``inventory``'s cluster's to keep.

    It is when it names that cluster already, or names none and every sweep in it came from that
    cluster's file. Read without opening it for writing: another cluster's must not be upgraded or claimed.
    """
    if not path.exists():
        return False
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    except sqlite3.Error:
        return False
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not {"meta", "sweeps"} <= tables:
            return False
        found = owner(conn)
        # Taken without being asked for: only when every sweep in it is known to be this cluster's.
        return found == inventory.name if found is not None else not others(conn, inventory, unknown=True)
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def default_path(inventory: Inventory) -> Path:
    """The cluster's database when no ``--store`` is given: its own, or the shared one of an older console
    when that one was all this cluster's (it keeps its history in place)."""
    own = cluster_store_path(inventory.name)
    legacy = legacy_store_path()
    if not own.exists() and is_legacy_of(legacy, inventory):
        return legacy
    return own
