"""Fake processes of one simulated node: pids, process groups, sessions and ``kill``.

Every running simulated program is an asyncio task tied to a ``SimProcess`` with a pid that looks
real, so the console's ``echo "@@ic-pgid $$"``, ``kill -TERM -- -<pgid>`` and ``pkill -s <sid>`` work
like on a Linux node. Killing a process cancels its task; the process then counts as ended by that
signal. As on Linux, a process may ignore a signal (a tool that traps SIGTERM) or catch it (GNU
``timeout`` passes it on to its command); nothing but SIGKILL ends those.
"""

from __future__ import annotations

import asyncio
import random
import signal
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from signal import Signals
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
    ignores: set[Signals] = field(default_factory=set)  # SIG_IGN: delivered, changes nothing
    catch: Callable[[Signals], None] | None = field(default=None, repr=False)  # a handler of its own

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
        self.deliver(victims, sig)
        return bool(victims)

    def kill_session(self, sid: int, sig: signal.Signals) -> bool:
        """``pkill -SIG -s sid``: every process of the session; False if none was there."""
        victims = self.session_members(sid)
        self.deliver(victims, sig)
        return bool(victims)

    def session_members(self, sid: int) -> list[SimProcess]:
        """Live processes of session ``sid`` (``pgrep -s``)."""
        return [proc for proc in self._live.values() if proc.sid == sid and proc.signal is None]

    @staticmethod
    def deliver(victims: list[SimProcess], sig: signal.Signals) -> None:
        """What each process does with ``sig``: nothing, its own handler, or it ends."""
        for proc in victims:
            if sig in HARMLESS_SIGNALS or proc.signal is not None:
                continue
            if sig is not signal.SIGKILL and sig in proc.ignores:
                continue
            if sig is not signal.SIGKILL and proc.catch is not None:
                proc.catch(sig)
                continue
            proc.signal = sig
            if proc.task is not None:
                proc.task.cancel()

    def end_all(self) -> None:
        """The node powers off: every process ends (the simulator stops)."""
        self.deliver(list(self._live.values()), signal.SIGKILL)

    def __iter__(self) -> Iterator[SimProcess]:
        return iter(list(self._live.values()))

    def __len__(self) -> int:
        return len(self._live)
