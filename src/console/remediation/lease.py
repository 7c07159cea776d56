"""One actor at a time on a history database: a lease (holder, pid, host, expiry) renewed while held.

``watch``, ``revalidate``, ``resume``, ``drain`` and the console's actions take the lease before they
act. A second would-be holder waits up to its ``wait_s`` or gets ``LeaseHeld`` naming the holder (the
CLI exits 2 with it). A lease whose process is gone (SIGKILL, a crash: ``ProcessOwner.alive`` is
False) or whose expiry passed (its holder hung, or runs on another host and stopped renewing) is taken
over, audited as ``lease-takeover`` with the previous holder. The process that holds the lease may take
it again (``watch`` acting through the action service): only the outermost taking releases it.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from console.store import Store
from console.store.owner import ProcessOwner
from console.store.transaction import immediate

NAME = "act"  # one lease per history database: acting on its nodes
DEFAULT_TTL_S = 60.0


@dataclass(frozen=True)
class Lease:
    """Who holds the lease, and until when (renewed every third of its time to live)."""

    holder: str  # the command: watch, resume, console...
    user: str
    owner: ProcessOwner
    taken_at: float
    expires_at: float

    def describe(self, now: float | None = None) -> str:
        """``watch by ops (pid 4242 on head1), expires in 40 s``."""
        left = self.expires_at - (time.time() if now is None else now)
        when = f"expires in {left:.0f} s" if left >= 0 else f"expired {-left:.0f} s ago"
        return f"{self.holder} by {self.user} (pid {self.owner.pid} on {self.owner.host}), {when}"


class LeaseHeld(Exception):
    """Another live actor holds the lease; the message names it."""

    def __init__(self, lease: Lease) -> None:
        super().__init__(
            f"another actor holds this history database's lease: {lease.describe()}; one actor at a time"
            " (wait for it, or stop it)"
        )
        self.lease = lease


def lease_holder(store: Store) -> Lease | None:
    """The lease as stored (held, expired or of a dead process alike), or None."""
    row = store.conn.execute("SELECT * FROM leases WHERE name = ?", (NAME,)).fetchone()
    if row is None:
        return None
    owner = ProcessOwner.from_text(row["owner"])
    if owner is None:
        return None
    return Lease(row["holder"], row["user"], owner, row["taken_at"], row["expires_at"])


def _stale(lease: Lease, now: float) -> str:
    """Why ``lease`` may be taken over ("" while its holder is alive and renews it)."""
    alive = lease.owner.alive()
    if alive is False:
        return "its process is gone"
    if lease.expires_at < now:
        return "it expired (its holder stopped renewing it)"
    return ""


def try_take(store: Store, holder: str, user: str, ttl_s: float) -> tuple[bool, Lease | None]:
    """Take (or renew, when this process holds it) the lease: (taken fresh, None) or (False, the holder's)."""
    me = ProcessOwner.current()
    now = time.time()
    with immediate(store.conn):
        current = lease_holder(store)
        if current is not None and current.owner == me:
            store.conn.execute("UPDATE leases SET expires_at = ? WHERE name = ?", (now + ttl_s, NAME))
            return False, None
        if current is not None:
            why = _stale(current, now)
            if not why:
                return False, current
            inputs = {"previous": current.describe(now), "why": why, "taker": holder}
            said = f"took over the lease of {current.describe(now)}: {why}"
            store.audit("lease-takeover", [], inputs=inputs, commands=[], output="", outcome=said, user=user)
        store.conn.execute(
            "INSERT OR REPLACE INTO leases (name, holder, user, owner, taken_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
            (NAME, holder, user, me.to_text(), now, now + ttl_s),
        )
    return True, None


def release(store: Store) -> None:
    """Give the lease back, if this process holds it."""
    with immediate(store.conn):
        store.conn.execute("DELETE FROM leases WHERE name = ? AND owner = ?", (NAME, ProcessOwner.current().to_text()))


async def take(store: Store, holder: str, user: str, *, ttl_s: float = DEFAULT_TTL_S, wait_s: float = 0.0) -> bool:
    """Take the lease, waiting up to ``wait_s`` for its holder; whether this call took it fresh.

    Raises ``LeaseHeld`` when the holder keeps it past ``wait_s``.
    """
    deadline = time.monotonic() + wait_s
    while True:
        fresh, other = try_take(store, holder, user, ttl_s)
        if other is None:
            return fresh
        if time.monotonic() >= deadline:
            raise LeaseHeld(other)
        await asyncio.sleep(min(1.0, max(0.05, deadline - time.monotonic())))


@contextlib.asynccontextmanager
async def taken_lease(
    store: Store, holder: str, user: str, *, ttl_s: float = DEFAULT_TTL_S, wait_s: float = 0.0
) -> AsyncIterator[None]:
    """Hold the lease for the block, renewed every third of ``ttl_s``; released after (when taken here)."""
    fresh = await take(store, holder, user, ttl_s=ttl_s, wait_s=wait_s)

    async def renew() -> None:
        while True:
            await asyncio.sleep(ttl_s / 3)
            # A store that fails now (locked, full, gone) cannot renew it: the lease then lapses at its
            # expiry, and the holder acts no more anyway (no action without its audit row).
            with contextlib.suppress(sqlite3.Error):
                try_take(store, holder, user, ttl_s)

    renewing = asyncio.create_task(renew()) if fresh else None
    try:
        yield
    finally:
        if renewing is not None:
            renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewing
            with contextlib.suppress(sqlite3.Error):
                release(store)  # a failed store keeps it until its expiry, a minute at most
