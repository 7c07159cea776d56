"""SIGTERM handled as Ctrl-C by the headless commands that run for a while (sweep, its --every mode, drift).

systemd, Kubernetes, a Slurm job's time limit and ``timeout(1)`` stop a process with SIGTERM, whose
default ends it on the spot: the sweep's row stayed "running" and the probes in flight stayed on the
nodes. ``asyncio.run`` already turns the first Ctrl-C into a cancellation of the main task (the engine
then records the sweep as cancelled and the transport kills what runs on the nodes) and a second one
into ``KeyboardInterrupt``; ``run_interruptible`` gives SIGTERM the same two steps.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Coroutine
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")


def run_interruptible(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` with SIGTERM treated as SIGINT.

    The first SIGTERM cancels ``main`` (a command that catches the cancellation, as a sweep does,
    returns its own result); a second one raises ``KeyboardInterrupt``. A cancellation that escapes
    ``main`` comes out as ``KeyboardInterrupt``, as it does for Ctrl-C.
    """
    signals = 0

    async def guarded() -> T:
        nonlocal signals
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()

        def on_sigterm(signum: int, frame: FrameType | None) -> None:
            nonlocal signals
            signals += 1
            if signals == 1 and task is not None and not task.done():
                task.cancel()
                loop.call_soon_threadsafe(lambda: None)  # wake a loop asleep in select()
                return
            raise KeyboardInterrupt

        if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
            return await main
        previous = signal.signal(signal.SIGTERM, on_sigterm)
        try:
            return await main
        finally:
            signal.signal(signal.SIGTERM, previous)

    try:
        return asyncio.run(guarded())
    except asyncio.CancelledError:
        if signals:
            raise KeyboardInterrupt from None
        raise
