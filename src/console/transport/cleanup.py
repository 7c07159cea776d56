"""Kills that must run to the end even though the command that needed them was cancelled."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any


class Cleanups:
    """Shielded background work, awaited by its caller and, bounded, by the transport's ``close``."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    async def run(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` to completion; a further cancel of the caller stops the wait, not the work."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)

    async def drain(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for work still running."""
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=timeout_s)
