"""The transport contract the sweep engine codes against: run an argv on a node, get bytes back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

# What one command may print into the console's memory by default, whatever the node sends: a probe's
# largest real output (amd-smi metric of 8 GPUs, an RVS log) is a few MiB.
DEFAULT_MAX_OUTPUT_BYTES = 16 << 20
# stderr carries the wrapper's announcement and error lines, never data.
MAX_STDERR_BYTES = 1 << 20


class OutputSink(Protocol):
    """Where a command's stdout goes as it arrives; it decides what to keep, so memory stays bounded."""

    def feed(self, chunk: bytes) -> None:
        """Take the next piece of output."""
        ...

    def value(self) -> bytes:
        """Everything kept so far."""
        ...

    @property
    def dropped_bytes(self) -> int:
        """How many bytes arrived and were not kept."""
        ...


class CappedOutput:
    """Keeps the first ``limit`` bytes of a stream and counts the rest."""

    def __init__(self, limit: int = DEFAULT_MAX_OUTPUT_BYTES) -> None:
        if limit < 0:
            raise ValueError(f"an output limit must not be negative, got {limit}")
        self.limit = limit
        self._kept = bytearray()
        self._dropped = 0

    def feed(self, chunk: bytes) -> None:
        """Keep what fits under the limit, count the rest."""
        room = self.limit - len(self._kept)
        if room > 0:
            self._kept += chunk[:room]
        self._dropped += max(0, len(chunk) - max(room, 0))

    def value(self) -> bytes:
        """The kept bytes."""
        return bytes(self._kept)

    @property
    def dropped_bytes(self) -> int:
        """Bytes past the limit."""
        return self._dropped


@dataclass(frozen=True)
class CommandResult:
    """What one command did on one node.

    ``exit_status`` is the command's exit code, or minus the signal number that killed it.
    ``command`` is the argv as a shell would show it (``shlex.join``), not the timeout wrapper.
    ``started_at`` is wall-clock (``time.time()``); ``duration_s`` is measured on a monotonic clock.
    ``dropped_bytes`` counts stdout the output sink did not keep (past its limit): such an output is
    cut and must never be read as complete.
    """

    node: str
    command: str
    exit_status: int | None
    stdout: bytes
    stderr: bytes
    started_at: float
    duration_s: float
    dropped_bytes: int = 0

    @property
    def ok(self) -> bool:
        """The command exited with status 0."""
        return self.exit_status == 0


class Transport(Protocol):
    """Runs commands on nodes. Every failure to reach a node or finish a command is a ``TransportError``.

    A command that runs and exits non-zero is not a failure of the transport: it is a result.
    """

    async def run(
        self,
        node: str,
        argv: Sequence[str],
        *,
        timeout_s: float,
        stdin: bytes | None = None,
        sink: OutputSink | None = None,
    ) -> CommandResult:
        """Run ``argv`` (no shell) on ``node``; kill it and raise ``TIMEOUT`` after ``timeout_s``.

        stdout goes through ``sink`` (by default the first ``DEFAULT_MAX_OUTPUT_BYTES``); the result's
        stdout, and a TIMEOUT's ``partial_stdout``, are what the sink kept. A timed-out or cancelled
        command's whole session is killed on the node: SIGTERM, then SIGKILL after the grace.
        """
        ...

    async def run_script(
        self, node: str, script: str, *, timeout_s: float, sink: OutputSink | None = None
    ) -> CommandResult:
        """Run ``script`` with ``sh -c`` on ``node``, with the same timeout, output and kill rules as ``run``."""
        ...

    async def check_reachable(self, node: str, timeout_s: float = 3.0) -> None:
        """Raise ``UNREACHABLE``/``REFUSED``/``CONNECT_TIMEOUT`` (or why it cannot log in) unless the node
        can be reached: an unreachable node fails within ``timeout_s``."""
        ...

    async def close(self) -> None:
        """Close every connection; the transport is unusable afterwards."""
        ...


def shown_command(transport: object, command: str) -> str:
    """``command`` as the node runs it through ``transport``: what the evidence must say ran.

    A transport that changes the command (``LowPriorityTransport`` puts it under nice and ionice) says
    so with its own ``shown_command``; the others run it as given.
    """
    show = getattr(transport, "shown_command", None)
    return show(command) if callable(show) else command


class WrappedTransport:
    """A transport that hands every call to ``inner``: a wrapper overrides only what it changes."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner

    def shown_command(self, command: str) -> str:
        """The inner transport's form of ``command``."""
        return shown_command(self.inner, command)

    async def run(
        self,
        node: str,
        argv: Sequence[str],
        *,
        timeout_s: float,
        stdin: bytes | None = None,
        sink: OutputSink | None = None,
    ) -> CommandResult:
        """Pass through."""
        return await self.inner.run(node, argv, timeout_s=timeout_s, stdin=stdin, sink=sink)

    async def run_script(
        self, node: str, script: str, *, timeout_s: float, sink: OutputSink | None = None
    ) -> CommandResult:
        """Pass through."""
        return await self.inner.run_script(node, script, timeout_s=timeout_s, sink=sink)

    async def check_reachable(self, node: str, timeout_s: float = 3.0) -> None:
        """Pass through."""
        await self.inner.check_reachable(node, timeout_s)

    async def close(self) -> None:
        """Pass through."""
        await self.inner.close()
