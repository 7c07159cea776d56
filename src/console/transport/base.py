"""The transport contract the sweep engine codes against: run an argv on a node, get bytes back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class CommandResult:
    """What one command did on one node.

    ``exit_status`` is the command's exit code, or minus the signal number that killed it.
    ``command`` is the argv as a shell would show it (``shlex.join``), not the timeout wrapper.
    ``started_at`` is wall-clock (``time.time()``); ``duration_s`` is measured on a monotonic clock.
    """

    node: str
    command: str
    exit_status: int | None
    stdout: bytes
    stderr: bytes
    started_at: float
    duration_s: float

    @property
    def ok(self) -> bool:
        """The command exited with status 0."""
        return self.exit_status == 0


class Transport(Protocol):
    """Runs commands on nodes. Every failure to reach a node or finish a command is a ``TransportError``.

    A command that runs and exits non-zero is not a failure of the transport: it is a result.
    """

    async def run(
        self, node: str, argv: Sequence[str], *, timeout_s: float, stdin: bytes | None = None
    ) -> CommandResult:
        """Run ``argv`` (no shell) on ``node``; kill it and raise ``TIMEOUT`` after ``timeout_s``."""
        ...

    async def run_script(self, node: str, script: str, *, timeout_s: float) -> CommandResult:
        """Run ``script`` with ``sh -c`` on ``node``, with the same timeout and kill rules as ``run``."""
        ...

    async def check_reachable(self, node: str, timeout_s: float = 3.0) -> None:
        """Raise ``UNREACHABLE``/``REFUSED``/``CONNECT_TIMEOUT`` (or why it cannot log in) unless the node
        can be reached: an unreachable node fails within ``timeout_s``."""
        ...

    async def close(self) -> None:
        """Close every connection; the transport is unusable afterwards."""
        ...
