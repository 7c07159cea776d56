"""Fake processes of one simulated node: pids, process groups, sessions and ``kill``.

Every running simulated program is an asyncio task tied to a ``SimProcess`` with a pid that looks
real, so the console's ``echo "@@ic-pgid $$"`` and ``kill -TERM -- -<pgid>`` work like on a Linux
node. Killing a process cancels its task; the process then counts as ended by that signal.
"""

from __future__ import annotations

import asyncio
import random
import signal
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any

# Signals whose default action does not end a process (or that the simulator does not model:
# stopping and continuing); sending them succeeds and changes nothing.
HARMLESS_SIGNALS = frozenset(
    {
        signal.SIGCHLD,
        signal.SIGCONT,
        signal.SIGWINCH,
        signal.SIGURG,
        signal.SIGSTOP,
        signal.SIGTSTP,
        signal.SIGTTIN,
        signal.SIGTTOU,
    }
)
_FIRST_PID = 2000
_PID_MAX = 4_194_304


@dataclass(eq=False)
class SimProcess:
    """One simulated process; ``signal`` is set once something killed it."""

    pid: int
    pgid: int
    sid: int
    argv: list[str]
    task: asyncio.Task[int] | None = field(default=None, repr=False)
    signal: signal.Signals | None = None

    @property
    def is_session_leader(self) -> bool:
        """A session leader cannot move to another process group (``setpgid`` fails with EPERM)."""
        return self.pid == self.sid


class ProcessTable:
    """The live simulated processes of one node, shared by all its SSH sessions."""

    def __init__(self, seed: str) -> None:
        # Pids start at a node-specific value and grow by small steps, as on a busy host.
        self._rng = random.Random(f"pids:{seed}")
        self._next_pid = _FIRST_PID + self._rng.randrange(0, 30000)
        self._live: dict[int, SimProcess] = {}

    def _new_pid(self) -> int:
        self._next_pid += self._rng.randrange(1, 8)
        if self._next_pid >= _PID_MAX:
            self._next_pid = _FIRST_PID
        while self._next_pid in self._live:
            self._next_pid += 1
        return self._next_pid

    def spawn(self, argv: list[str], parent: SimProcess | None) -> SimProcess:
        """A new process: child of ``parent`` (same group and session), or a new session leader."""
        pid = self._new_pid()
        if parent is None:
            proc = SimProcess(pid=pid, pgid=pid, sid=pid, argv=list(argv))
        else:
            proc = SimProcess(pid=pid, pgid=parent.pgid, sid=parent.sid, argv=list(argv))
        self._live[pid] = proc
        return proc

    def start(self, proc: SimProcess, body: Coroutine[Any, Any, int]) -> asyncio.Task[int]:
        """Run ``body`` as the life of ``proc``; the process leaves the table when it ends."""
        task = asyncio.create_task(body, name=f"sim-pid-{proc.pid}")
        proc.task = task
        task.add_done_callback(lambda _t: self._live.pop(proc.pid, None))
        return task

    def new_group(self, proc: SimProcess) -> None:
        """``setpgid(0, 0)``: ``proc`` leads a new process group (ignored for a session leader)."""
        if not proc.is_session_leader:
            proc.pgid = proc.pid

    def kill(self, target: int, sig: signal.Signals) -> bool:
        """``kill(2)``: a pid when positive, a process group when negative; False if nothing matched."""
        victims = [self._live[target]] if target in self._live else []
        if target < 0:
            victims = [proc for proc in self._live.values() if proc.pgid == -target]
        for proc in victims:
            if sig in HARMLESS_SIGNALS or proc.signal is not None:
                continue
            proc.signal = sig
            if proc.task is not None:
                proc.task.cancel()
        return bool(victims)

    def __iter__(self) -> Iterator[SimProcess]:
        return iter(list(self._live.values()))

    def __len__(self) -> int:
        return len(self._live)
