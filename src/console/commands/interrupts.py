"""SIGTERM and SIGHUP handled as Ctrl-C by the headless commands that run for a while (sweep, its --every
mode, drift, watch, revalidate).

systemd, Kubernetes, a Slurm job's time limit and ``timeout(1)`` stop a process with SIGTERM, and a closed
terminal (an SSH session dropped, a tmux session killed) sends SIGHUP; the default of both ends it on the
spot: the sweep's row stayed "running", the probes in flight stayed on the nodes and ``watch`` left its
maintenance reservation behind. ``asyncio.run`` already turns the first Ctrl-C into a cancellation of the
main task (the engine then records the sweep as cancelled and the transport kills what runs on the nodes)
and a second one into ``KeyboardInterrupt``; ``run_interruptible`` gives SIGTERM and SIGHUP the same two
steps. After a SIGHUP that came with the terminal's end, what the command still prints goes to /dev/null
instead of failing on it; its exit code is 129 (``ExitCode.HANGUP``) where an interrupt's is 130.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Coroutine
from dataclasses import dataclass
from types import FrameType
from typing import Any, TypeVar

from console.exitcodes import ExitCode
from console.runtime import leave_dead_terminal

T = TypeVar("T")
STOPPING = (signal.SIGTERM, signal.SIGHUP)


@dataclass
class Interruption:
    """The first signal that stopped a command, if one did (shared with the command, to choose its exit code)."""

    signum: int | None = None

    def exit_code(self, code: int) -> int:
        """``code``, but 129 for an interrupted command when the interruption was a hangup."""
        if code == ExitCode.INTERRUPTED and self.signum == signal.SIGHUP:
            return int(ExitCode.HANGUP)
        return code


def run_interruptible(main: Coroutine[Any, Any, T], interruption: Interruption | None = None) -> T:
    """``asyncio.run(main)`` with SIGTERM and SIGHUP treated as SIGINT (``interruption`` says which came).

    The first signal cancels ``main`` (a command that catches the cancellation, as a sweep does, returns
    its own result); a second one raises ``KeyboardInterrupt``. A cancellation that escapes ``main`` comes
    out as ``KeyboardInterrupt``, as it does for Ctrl-C.
    """
    seen = interruption if interruption is not None else Interruption()
    signals = 0

    async def guarded() -> T:
        nonlocal signals
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()

        def on_signal(signum: int, frame: FrameType | None) -> None:
            nonlocal signals
            signals += 1
            if seen.signum is None:
                seen.signum = signum
            if signum == signal.SIGHUP:
                leave_dead_terminal()
            if signals == 1 and task is not None and not task.done():
                task.cancel()
                loop.call_soon_threadsafe(lambda: None)  # wake a loop asleep in select()
                return
            raise KeyboardInterrupt

        if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
            return await main
        previous = {signum: signal.signal(signum, on_signal) for signum in STOPPING}
        try:
            return await main
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    try:
        return asyncio.run(guarded())
    except asyncio.CancelledError:
        if signals:
            raise KeyboardInterrupt from None
        raise
