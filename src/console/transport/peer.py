"""One SSH server's connection: opened lazily, shared by every command, reopened with backoff.

Callers that arrive while a connect is in flight wait for that same attempt, so a frozen node costs
one connect timeout, not one per queued probe. After a failed attempt, calls within the backoff
window fail at once with the same error instead of hammering a node that is down.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Awaitable, Callable

import asyncssh

from console.transport.errors import TransportError

BACKOFF_FIRST_S = 0.5
BACKOFF_MAX_S = 5.0
CLOSE_WAIT_S = 2.0

Opener = Callable[[], Awaitable[asyncssh.SSHClientConnection]]


class Peer:
    """The live connection to one node or jump host, plus its per-connection channel limit."""

    def __init__(self, channels: int) -> None:
        self.channels = asyncio.Semaphore(channels)
        self._conn: asyncssh.SSHClientConnection | None = None
        self._attempt: asyncio.Task[asyncssh.SSHClientConnection] | None = None
        self._failures = 0
        self._last_error: TransportError | None = None
        self._retry_at = 0.0

    @property
    def connected(self) -> bool:
        """A connection is open (and not known to be dead)."""
        return self._conn is not None and not self._conn.is_closed()

    async def connection(self, opener: Opener, *, fresh: bool = False) -> asyncssh.SSHClientConnection:
        """The open connection, opening one with ``opener`` if there is none.

        ``fresh`` tries again even inside the backoff window (a new sweep of the node, not one more of
        its queued commands); an attempt already in flight is still shared.
        """
        if self._conn is not None and self.connected:
            return self._conn
        if self._attempt is None:
            if not fresh and self._last_error is not None and time.monotonic() < self._retry_at:
                failed = self._last_error
                raise TransportError(failed.node, failed.kind, failed.detail)
            self._attempt = asyncio.ensure_future(self._open(opener))
            # Every waiter may be cancelled; the outcome must still count as retrieved.
            self._attempt.add_done_callback(lambda task: task.cancelled() or task.exception())
        return await asyncio.shield(self._attempt)

    async def _open(self, opener: Opener) -> asyncssh.SSHClientConnection:
        try:
            conn = await opener()
        except TransportError as exc:
            self._failures += 1
            delay = min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (self._failures - 1))
            self._retry_at = time.monotonic() + delay * random.uniform(0.8, 1.2)  # jitter: no lockstep retries
            self._last_error = exc
            raise
        finally:
            self._attempt = None
        self._failures = 0
        self._last_error = None
        self._conn = conn
        return conn

    def forget(self, conn: asyncssh.SSHClientConnection) -> None:
        """``conn`` is known dead: the next command reconnects at once."""
        if self._conn is conn:
            self._conn = None
            conn.abort()

    async def close(self) -> None:
        """Abandon a connect in flight and close the connection."""
        if self._attempt is not None:
            self._attempt.cancel()
            await asyncio.wait([self._attempt])  # its outcome no longer matters to anyone
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(conn.wait_closed(), CLOSE_WAIT_S)
