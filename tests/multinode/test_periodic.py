"""The periodic scheduler: on-time runs, skipped ticks instead of overlap, busy engines, stop and bad input."""

from __future__ import annotations

import asyncio

import pytest

from console.sweep.periodic import Periodic


class Work:
    """A fake sweep that takes ``seconds`` and records when it ran and how many ran at once."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.running = 0
        self.most = 0
        self.starts: list[float] = []

    async def __call__(self) -> int:
        self.running += 1
        self.most = max(self.most, self.running)
        self.starts.append(asyncio.get_running_loop().time())
        try:
            await asyncio.sleep(self.seconds)
        finally:
            self.running -= 1
        return len(self.starts)


def test_runs_on_schedule_count_times() -> None:
    work = Work(0.01)
    periodic = Periodic(work, every_s=0.1, count=3)
    assert asyncio.run(periodic.run()) == [1, 2, 3]
    gaps = [b - a for a, b in zip(work.starts, work.starts[1:], strict=False)]
    assert all(0.08 < gap < 0.3 for gap in gaps), gaps
    assert periodic.skipped == 0


def test_a_slow_run_skips_ticks_and_never_overlaps() -> None:
    work = Work(0.25)
    skips: list[int] = []
    periodic = Periodic(work, every_s=0.1, count=3, on_skip=skips.append)
    asyncio.run(periodic.run())
    assert work.most == 1
    assert periodic.skipped >= 4 and sum(skips) == periodic.skipped
    # each run starts on a tick (a multiple of the interval after the first), not right after the last one
    offsets = [(start - work.starts[0]) / 0.1 for start in work.starts]
    assert all(abs(offset - round(offset)) < 0.5 and round(offset) >= 3 * k for k, offset in enumerate(offsets))


def test_ticks_while_the_engine_is_busy_are_skipped() -> None:
    work = Work(0.0)
    busy = iter([True, True, False, False])
    periodic = Periodic(work, every_s=0.05, count=2, busy=lambda: next(busy))
    assert asyncio.run(periodic.run()) == [1, 2]
    assert periodic.skipped == 2


def test_stop_ends_after_the_current_run() -> None:
    work = Work(0.05)

    async def scenario() -> list[int]:
        periodic: Periodic[int] = Periodic(work, every_s=10)
        task = asyncio.ensure_future(periodic.run())
        await asyncio.sleep(0.01)
        periodic.stop()
        return await asyncio.wait_for(task, 2)

    assert asyncio.run(scenario()) == [1]


@pytest.mark.parametrize(("every", "count"), [(0, None), (-1, 2), (1, 0)])
def test_rejects_a_schedule_that_cannot_run(every: float, count: int | None) -> None:
    with pytest.raises(ValueError, match="must be"):
        Periodic(Work(0), every_s=every, count=count)
