"""LocalTransport: the same API on the node itself (Slurm prolog, HealthCheckProgram), no SSH.

Commands run exactly as on a remote node: under ``timeout -k <grace> <T>`` (so they end even if the
console is killed first), in a session and process group of their own, which the console SIGTERMs
and then SIGKILLs when its own timeout fires or the call is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import signal
import socket
import time
from collections.abc import Sequence
from pathlib import Path

from console.transport.base import CommandResult, Transport
from console.transport.cleanup import Cleanups
from console.transport.errors import ErrorKind, TransportError
from console.transport.wrap import checked_argv, node_timeout_argv

_POLL_S = 0.05
_REAP_WAIT_S = 2.0

log = logging.getLogger(__name__)


class LocalTransport(Transport):
    """Runs commands on this host for the node it is; other node names are a programming error."""

    def __init__(self, node: str | None = None, *, kill_grace_s: float = 5.0) -> None:
        self.node = node or socket.gethostname()
        self._kill_grace_s = kill_grace_s
        self._cleanups = Cleanups()

    async def __aenter__(self) -> LocalTransport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def run(
        self, node: str, argv: Sequence[str], *, timeout_s: float, stdin: bytes | None = None
    ) -> CommandResult:
        """Run ``argv`` here; kill its process group and raise ``TIMEOUT`` after ``timeout_s``."""
        self._check_node(node)
        args = checked_argv(argv)
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        started_at, t0, shown = time.time(), time.monotonic(), shlex.join(args)
        process = await self._spawn(node_timeout_argv(args, timeout_s, self._kill_grace_s), stdin is not None)
        received = bytearray()  # as it arrives: kept when the command times out
        try:
            async with asyncio.timeout(timeout_s):
                stdout, stderr = await _communicate(process, stdin, received)
        except TimeoutError:
            await self._kill(process)
            raise TransportError(
                node,
                ErrorKind.TIMEOUT,
                f"{shown[:80]} did not finish within {timeout_s:g} s and was killed",
                partial_stdout=bytes(received),
            ) from None
        except asyncio.CancelledError:
            await self._cleanups.run(self._kill(process))
            raise
        return CommandResult(node, shown, process.returncode, stdout, stderr, started_at, time.monotonic() - t0)

    async def run_script(self, node: str, script: str, *, timeout_s: float) -> CommandResult:
        """Run ``script`` with ``sh -c`` here, wrapped like ``run``."""
        return await self.run(node, ["sh", "-c", script], timeout_s=timeout_s)

    async def check_reachable(self, node: str, timeout_s: float = 3.0) -> None:
        """This host is always reachable from itself."""
        self._check_node(node)

    async def close(self) -> None:
        """Wait (bounded) for process groups still being killed."""
        await self._cleanups.drain(self._kill_grace_s + _REAP_WAIT_S)

    def _check_node(self, node: str) -> None:
        if node != self.node:
            raise ValueError(f"LocalTransport runs commands on {self.node!r} only, not on {node!r}")

    async def _spawn(self, argv: list[str], with_stdin: bool) -> asyncio.subprocess.Process:
        """Start ``argv`` in a new session. If the caller is cancelled mid-spawn, the child may be
        running already (asyncio itself would SIGKILL only the leader, then wait for pipes its
        children keep open), so the spawn completes in the background and its group is killed."""
        spawn = asyncio.ensure_future(
            asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE if with_stdin else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,  # its own process group (pgid == pid), which we may kill whole
            )
        )
        try:
            return await asyncio.shield(spawn)
        except asyncio.CancelledError:
            await self._cleanups.run(self._kill_once_spawned(spawn))
            raise

    async def _kill_once_spawned(self, spawn: asyncio.Future[asyncio.subprocess.Process]) -> None:
        try:
            process = await spawn
        except OSError:
            return  # nothing started
        await self._kill(process)

    async def _kill(self, process: asyncio.subprocess.Process) -> None:
        """SIGTERM the process group, SIGKILL what is left after the grace, and reap the leader."""
        pgid = process.pid
        _signal_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + self._kill_grace_s
        while _group_alive(pgid) and time.monotonic() < deadline:
            await asyncio.sleep(_POLL_S)
        if _group_alive(pgid):
            _signal_group(pgid, signal.SIGKILL)
        # Python 3.11 returns from wait() only once every pipe is closed; a process that left the
        # group (setsid) may hold them for ever.
        try:
            await asyncio.wait_for(process.wait(), _REAP_WAIT_S)
        except TimeoutError:
            log.warning("process group %d is dead but something outside it still holds its output pipes", pgid)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signum)


def _group_alive(pgid: int) -> bool:
    """Whether any process of the group still runs. Zombies do not count: an orphan's zombie may never
    be reaped where PID 1 does not reap, and it holds no resources anyway."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


async def _communicate(
    process: asyncio.subprocess.Process, stdin: bytes | None, received: bytearray
) -> tuple[bytes, bytes]:
    """``Process.communicate``, with stdout gathered into ``received`` as it arrives."""
    assert process.stdout is not None and process.stderr is not None  # both are pipes (_spawn)

    async def feed() -> None:
        if process.stdin is None:
            return
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            if stdin:
                process.stdin.write(stdin)
                await process.stdin.drain()
            process.stdin.close()

    async def read_stdout() -> bytes:
        assert process.stdout is not None
        while chunk := await process.stdout.read(1 << 16):
            received.extend(chunk)
        return bytes(received)

    _, stdout, stderr = await asyncio.gather(feed(), read_stdout(), process.stderr.read())
    await process.wait()
    return stdout, stderr
