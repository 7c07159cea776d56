"""Periodic re-sweeps: run a sweep on a fixed schedule, never two at once.

Ticks fall at ``start + k * every_s``. A tick that comes while a run is still going, or while the
engine is busy with a sweep someone else started (the TUI's manual sweep), is skipped rather than
queued, so a slow sweep never makes the next ones pile up. Each run is an ordinary sweep, so the
engine records it in the store like any other.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Iterable
from typing import Generic, TypeVar

from console.inventory.model import Node
from console.sweep.catalog import ProbeSet
from console.sweep.engine import SweepEngine, SweepResult

T = TypeVar("T")


class Periodic(Generic[T]):
    """Calls ``once`` every ``every_s`` seconds until ``count`` runs are done or ``stop`` is called."""

    def __init__(
        self,
        once: Callable[[], Awaitable[T]],
        every_s: float,
        count: int | None = None,
        *,
        busy: Callable[[], bool] = lambda: False,
        on_skip: Callable[[int], None] = lambda skipped: None,
    ) -> None:
        if every_s <= 0:
            raise ValueError(f"the interval must be positive, got {every_s}")
        if count is not None and count < 1:
            raise ValueError(f"the count must be at least 1, got {count}")
        self.once = once
        self.every_s = every_s
        self.count = count
        self.busy = busy
        self.on_skip = on_skip
        self.results: list[T] = []
        self.skipped = 0
        self._stop = asyncio.Event()

    def stop(self) -> None:
        """End after the run in progress (cancel the ``run`` task to abort that run too)."""
        self._stop.set()

    async def run(self) -> list[T]:
        """Run on schedule; returns every run's result, oldest first."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        tick = 0
        while not self._stop.is_set() and (self.count is None or len(self.results) < self.count):
            if self.busy():
                self._skip(1)
            else:
                self.results.append(await self.once())
                if self.count is not None and len(self.results) >= self.count:
                    break
            # The next tick not yet passed; the ones that passed during the run are skipped.
            due = math.floor((loop.time() - start) / self.every_s) + 1
            self._skip(due - tick - 1)
            tick = due
            try:
                await asyncio.wait_for(self._stop.wait(), timeout=max(0.0, start + tick * self.every_s - loop.time()))
            except TimeoutError:
                continue
        return self.results

    def _skip(self, ticks: int) -> None:
        if ticks > 0:
            self.skipped += ticks
            self.on_skip(ticks)


def periodic_sweeps(
    engine: SweepEngine,
    every_s: float,
    count: int | None = None,
    nodes: Iterable[Node] | None = None,
    level: ProbeSet | str = ProbeSet.QUICK,
) -> Periodic[SweepResult]:
    """Re-sweep ``nodes`` at ``level`` on ``engine`` every ``every_s`` seconds (for the TUI's auto-refresh)."""
    targets = list(nodes) if nodes is not None else None

    async def once() -> SweepResult:
        return await engine.run(targets, level=level)

    return Periodic(once, every_s, count, busy=lambda: engine.running)
