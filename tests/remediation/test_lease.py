"""One actor at a time: the history database's lease (``console.remediation.lease``).

The other holder is a real process: this test's parent (alive) or a child that has exited (dead), each
told apart by ``ProcessOwner`` as the console does for any process.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from console.remediation.lease import LeaseHeld, lease_holder, release, take, taken_lease, try_take
from console.store import Store
from console.store.owner import ProcessOwner, _start_ticks
from console.store.upgrade import SCHEMA_VERSION


def _owner_of(pid: int) -> ProcessOwner:
    me = ProcessOwner.current()
    return ProcessOwner(host=me.host, boot=me.boot, pidns=me.pidns, pid=pid, start=_start_ticks(pid))


def _hold_as(store: Store, owner: ProcessOwner, *, expires_in: float, holder: str = "watch") -> None:
    now = time.time()
    store.conn.execute(
        "INSERT OR REPLACE INTO leases (name, holder, user, owner, taken_at, expires_at) VALUES ('act', ?, ?, ?, ?, ?)",
        (holder, "ops", owner.to_text(), now, now + expires_in),
    )


@pytest.fixture
def store(tmp_path: Path):  # type: ignore[no-untyped-def]
    opened = Store(tmp_path / "h.sqlite")
    yield opened
    opened.close()


async def test_a_live_holder_keeps_the_lease_and_the_refusal_names_it(store: Store) -> None:
    _hold_as(store, _owner_of(os.getppid()), expires_in=60)
    with pytest.raises(LeaseHeld) as held:
        await take(store, "resume", "alice")
    assert f"watch by ops (pid {os.getppid()} on " in str(held.value), held.value
    start = time.monotonic()
    with pytest.raises(LeaseHeld):
        await take(store, "resume", "alice", wait_s=0.3)  # waits, then gives up naming the holder
    assert time.monotonic() - start >= 0.3
    assert store.audit_log(5) == []  # nothing was taken over


async def test_a_dead_or_expired_holder_is_taken_over_and_audited(store: Store) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    dead = _owner_of(child.pid)
    child.kill()
    child.wait()
    _hold_as(store, dead, expires_in=60)
    assert await take(store, "resume", "alice") is True
    mine = lease_holder(store)
    assert mine is not None and mine.owner == ProcessOwner.current() and mine.holder == "resume"
    (row,) = store.audit_log(1)
    assert row["action"] == "lease-takeover" and f"(pid {child.pid} on " in row["outcome"]
    assert json.loads(row["inputs"])["why"] == "its process is gone"

    # A live holder that stopped renewing (hung, or on another host) loses it once it expired.
    _hold_as(store, _owner_of(os.getppid()), expires_in=-1)
    fresh, other = try_take(store, "drain", "bob", 60)
    assert (fresh, other) == (True, None)
    (row,) = store.audit_log(1)
    assert json.loads(row["inputs"])["why"] == "it expired (its holder stopped renewing it)"


async def test_the_holder_takes_it_again_and_only_the_outermost_releases_it(store: Store) -> None:
    async with taken_lease(store, "watch", "ops", ttl_s=0.3):
        first = lease_holder(store)
        assert first is not None
        async with taken_lease(store, "drain", "ops"):  # watch acting through the action service
            assert lease_holder(store) is not None
        held = lease_holder(store)
        assert held is not None and held.holder == "watch"  # the inner taking did not release it
        await asyncio.sleep(0.35)  # renewed every third of its time to live
        renewed = lease_holder(store)
        assert renewed is not None and renewed.expires_at > first.expires_at
    assert lease_holder(store) is None
    release(store)  # releasing what one does not hold changes nothing


def test_a_version_7_database_is_upgraded_with_the_lease_table(tmp_path: Path) -> None:
    db = tmp_path / "h.sqlite"
    Store(db).close()
    # What version 7 (main before issue 33) wrote: no leases table.
    import sqlite3

    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE leases")
    conn.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    store = Store(db)
    try:
        version = store.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        assert version == str(SCHEMA_VERSION) and SCHEMA_VERSION >= 8  # 8 brought the leases
        assert lease_holder(store) is None
        assert try_take(store, "watch", "ops", 60) == (True, None)
    finally:
        store.close()
