"""Kills that must run to the end even though the command that needed them was cancelled or timed out."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any


class Cleanups:
    """Shielded background work, awaited by its caller or, bounded, by the transport's ``close``.

    A kill waits out a grace period between SIGTERM and SIGKILL; once the transport closes there is
    no time left for grace, so ``drain`` hurries every kill still waiting to its SIGKILL.
    """

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()
        self._hurry = asyncio.Event()

    def start(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run ``work`` in the background; ``drain`` waits for it."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def run(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` to completion; a further cancel of the caller stops the wait, not the work."""
        task = self.start(work)
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)

    @property
    def hurried(self) -> bool:
        """True once ``drain`` asked the work to skip its remaining grace."""
        return self._hurry.is_set()

    async def pause(self, seconds: float) -> None:
        """Sleep ``seconds``, or less when ``drain`` hurries the work."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._hurry.wait(), seconds)

    async def drain(self, timeout_s: float) -> None:
        """Hurry the work still running and wait up to ``timeout_s`` for it."""
        self._hurry.set()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=timeout_s)
