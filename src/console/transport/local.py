"""LocalTransport: the same API on the node itself (Slurm prolog, HealthCheckProgram), no SSH.

Commands run exactly as on a remote node: under ``timeout -k <grace> <T>`` (so they end even if the
console is killed first), in a session of their own, every process of which the console SIGTERMs and
then SIGKILLs when its own timeout fires or the call is cancelled (a command's own process groups,
such as the one GNU ``timeout`` makes for each probe of a bundle, stay in that session).
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

from console.transport.base import MAX_STDERR_BYTES, CappedOutput, CommandResult, OutputSink, Transport
from console.transport.cleanup import Cleanups
from console.transport.errors import ErrorKind, TransportError
from console.transport.wrap import checked_argv, node_timeout_argv

_POLL_S = 0.05
_REAP_WAIT_S = 2.0

log = logging.getLogger(__name__)


class LocalTransport(Transport):
    """Runs commands on this host for the node it is; other node names are a programming error."""

    def __init__(self, node: str | None = None, *, kill_grace_s: float = 5.0, max_output_bytes: int = 16 << 20) -> None:
        self.node = node or socket.gethostname()
        self._kill_grace_s = kill_grace_s
        self._max_output_bytes = max_output_bytes
        self._cleanups = Cleanups()

    async def __aenter__(self) -> LocalTransport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def run(
        self,
        node: str,
        argv: Sequence[str],
        *,
        timeout_s: float,
        stdin: bytes | None = None,
        sink: OutputSink | None = None,
    ) -> CommandResult:
        """Run ``argv`` here; kill its session and raise ``TIMEOUT`` after ``timeout_s``.

        The kill of a timed-out command goes on in the background (``close`` finishes it): the caller
        has its answer at the timeout, not a grace period later.
        """
        self._check_node(node)
        args = checked_argv(argv)
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        started_at, t0, shown = time.time(), time.monotonic(), shlex.join(args)
        process = await self._spawn(node_timeout_argv(args, timeout_s, self._kill_grace_s), stdin is not None)
        received = sink if sink is not None else CappedOutput(self._max_output_bytes)
        try:
            async with asyncio.timeout(timeout_s):
                stdout, stderr = await _communicate(process, stdin, received)
        except TimeoutError:
            self._cleanups.start(self._kill(process))
            raise TransportError(
                node,
                ErrorKind.TIMEOUT,
                f"{shown[:80]} did not finish within {timeout_s:g} s and was killed",
                partial_stdout=received.value(),
            ) from None
        except asyncio.CancelledError:
            await self._cleanups.run(self._kill(process))
            raise
        return CommandResult(
            node, shown, process.returncode, stdout, stderr, started_at, time.monotonic() - t0, received.dropped_bytes
        )

    async def run_script(
        self, node: str, script: str, *, timeout_s: float, sink: OutputSink | None = None
    ) -> CommandResult:
        """Run ``script`` with ``sh -c`` here, wrapped like ``run``."""
        return await self.run(node, ["sh", "-c", script], timeout_s=timeout_s, sink=sink)

    async def check_reachable(self, node: str, timeout_s: float = 3.0) -> None:
        """This host is always reachable from itself."""
        self._check_node(node)

    async def close(self) -> None:
        """Finish the kills still under way at once (SIGKILL, no more grace), bounded."""
        await self._cleanups.drain(_REAP_WAIT_S * 2)

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
                start_new_session=True,  # its own session (sid == pgid == pid), which we may kill whole
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
        """SIGTERM every process of the session, SIGKILL what is left after the grace, reap the leader."""
        sid = process.pid
        _signal_session(sid, signal.SIGTERM)
        deadline = time.monotonic() + self._kill_grace_s
        while session_members(sid) and time.monotonic() < deadline and not self._cleanups.hurried:
            await self._cleanups.pause(_POLL_S)
        _signal_session(sid, signal.SIGKILL)
        # Python 3.11 returns from wait() only once every pipe is closed; a process that left the
        # session (setsid) may hold them for ever.
        try:
            await asyncio.wait_for(process.wait(), _REAP_WAIT_S)
        except TimeoutError:
            log.warning("session %d is dead but something outside it still holds its output pipes", sid)


def _signal_session(sid: int, signum: int) -> None:
    for pid in session_members(sid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def session_members(sid: int) -> list[int]:
    """Live processes of session ``sid``. Zombies do not count: an orphan's zombie may never be reaped
    where PID 1 does not reap, and it holds no resources anyway."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if int(fields[3]) == sid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


async def _communicate(
    process: asyncio.subprocess.Process, stdin: bytes | None, received: OutputSink
) -> tuple[bytes, bytes]:
    """``Process.communicate``, with stdout fed to ``received`` as it arrives and stderr capped."""
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
            received.feed(chunk)
        return received.value()

    async def read_stderr() -> bytes:
        assert process.stderr is not None
        kept = CappedOutput(MAX_STDERR_BYTES)
        while chunk := await process.stderr.read(1 << 16):
            kept.feed(chunk)
        return kept.value()

    _, stdout, stderr = await asyncio.gather(feed(), read_stdout(), read_stderr())
    await process.wait()
    return stdout, stderr
