"""Which process owns a sweep or an audited action, and whether that process still runs.

A pid alone is not enough: pids are reused, and after a reboot (power loss) a new process may carry
the old number. The owner is recorded as host, boot id, PID namespace, pid and the process's start
time (clock ticks since boot, ``/proc/<pid>/stat`` field 22); it is alive only if all of them match a
running process now. A process of another host or PID namespace (a store on shared storage, a
container) cannot be checked from here: ``alive`` then says so with None, and nothing is concluded.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import asdict, dataclass
from pathlib import Path


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def _start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot; None when it is gone, a zombie, or unreadable."""
    stat = _read(f"/proc/{pid}/stat")
    if not stat:
        return None
    fields = stat.rsplit(")", 1)[-1].split()  # the command name, in parentheses, may hold spaces
    if len(fields) < 20 or fields[0] in ("Z", "X"):  # fields[0] is field 3 (state); field 22 is fields[19]
        return None
    return int(fields[19])


@dataclass(frozen=True)
class ProcessOwner:
    """One process, told apart from any other that had or will have its pid."""

    host: str
    boot: str
    pidns: str
    pid: int
    start: int | None

    @classmethod
    def current(cls) -> ProcessOwner:
        """This process (read once per pid: a forked child is another process)."""
        pid = os.getpid()
        if pid not in _CURRENT:
            _CURRENT[pid] = cls(
                host=socket.gethostname(),
                boot=_read("/proc/sys/kernel/random/boot_id"),
                pidns=_pid_namespace(),
                pid=pid,
                start=_start_ticks(pid),
            )
        return _CURRENT[pid]

    def to_text(self) -> str:
        """The form kept in the store's ``owner`` columns (JSON)."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_text(cls, text: str | None) -> ProcessOwner | None:
        """The owner a store column holds; None for rows written before owners were recorded."""
        if not text:
            return None
        try:
            data = json.loads(text)
            return cls(
                host=str(data["host"]),
                boot=str(data["boot"]),
                pidns=str(data["pidns"]),
                pid=int(data["pid"]),
                start=None if data["start"] is None else int(data["start"]),
            )
        except (ValueError, KeyError, TypeError):
            return None

    def alive(self) -> bool | None:
        """True: still running; False: gone (ended, killed, or the machine rebooted); None: cannot tell here."""
        here = ProcessOwner.current()
        if self.host != here.host or self.pidns != here.pidns:
            return None
        if self.boot != here.boot:
            return False
        if self.start is None:  # no /proc: the pid alone has to do
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return False
            except PermissionError:
                return True
            return True
        return _start_ticks(self.pid) == self.start

    def describe(self) -> str:
        """``pid 4711 on head01``."""
        return f"pid {self.pid} on {self.host}"


_CURRENT: dict[int, ProcessOwner] = {}
