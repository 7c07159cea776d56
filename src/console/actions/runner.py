"""Where action commands run: on this host (``local``) or over SSH on a named host, never through a shell.

``CommandRunner`` is the seam tests and the TUI may replace. The default ``TransportRunner`` uses the
console's transports: ``LocalTransport`` for ``local`` (commands inherit this process's environment,
so ``SLURM_CONF`` reaches ``scontrol``) and an SSH transport for anything else, where the argv is
shell-quoted word by word before it reaches the remote shell.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from console.inventory.model import Inventory
from console.transport import LocalTransport, SshSettings, SshTransport, Transport, TransportError
from console.transport.connect import controller_target, ssh_targets

LOCAL = "local"
DEFAULT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class RunOutput:
    """One command's result; ``error`` is set when it could not run at all (unreachable, timeout)."""

    where: str
    argv: tuple[str, ...]
    exit_status: int | None
    stdout: str
    stderr: str
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Ran and exited 0."""
        return self.error is None and self.exit_status == 0

    def message(self) -> str:
        """The first line an operator needs: the transport error, else stderr, else stdout."""
        if self.error:
            return self.error
        for text in (self.stderr, self.stdout):
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            if lines:
                return " / ".join(lines[:3])
        return f"exit status {self.exit_status}"

    def transcript(self) -> str:
        """Everything the command printed, for the audit log."""
        head = f"[{self.where}] exit={self.exit_status if self.error is None else 'not run: ' + self.error}"
        return "\n".join(part for part in (head, self.stdout.rstrip(), self.stderr.rstrip()) if part)


class CommandRunner(Protocol):
    """Runs an argv on ``local`` or on a named host and reports what happened; never raises for failures."""

    async def run(self, where: str, argv: Sequence[str], *, timeout_s: float = DEFAULT_TIMEOUT_S) -> RunOutput:
        """Run ``argv`` (no shell) at ``where``."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


class TransportRunner:
    """``local`` through a ``LocalTransport``; other names through an SSH transport made on first use."""

    def __init__(self, remote: Callable[[], Transport] | None = None) -> None:
        self._local = LocalTransport(LOCAL)
        self._remote_factory = remote
        self._remote: Transport | None = None

    async def run(self, where: str, argv: Sequence[str], *, timeout_s: float = DEFAULT_TIMEOUT_S) -> RunOutput:
        """Run ``argv`` at ``where``; transport failures come back as ``RunOutput.error``."""
        args = tuple(argv)
        if where == LOCAL:
            transport: Transport = self._local
        elif self._remote_factory is None:
            return RunOutput(where, args, None, "", "", f"no SSH settings to reach {where} (no inventory)")
        else:
            if self._remote is None:
                self._remote = self._remote_factory()
            transport = self._remote
        try:
            result = await transport.run(where, args, timeout_s=timeout_s)
        except TransportError as exc:
            return RunOutput(where, args, None, "", "", f"{exc.kind.value}: {exc.detail}")
        return RunOutput(
            where,
            args,
            result.exit_status,
            result.stdout.decode("utf-8", "replace"),
            result.stderr.decode("utf-8", "replace"),
        )

    async def close(self) -> None:
        """Close the SSH transport if one was opened."""
        if self._remote is not None:
            await self._remote.close()
            self._remote = None
        await self._local.close()


def runner_for(inventory: Inventory | None) -> TransportRunner:
    """The runner an inventory implies: SSH to its nodes and its Slurm controller; local only without one."""
    if inventory is None:
        return TransportRunner()
    return TransportRunner(lambda: _ssh_transport(inventory))


def _ssh_transport(inventory: Inventory) -> SshTransport:
    ssh = inventory.ssh
    targets = ssh_targets(inventory)
    if (controller := controller_target(inventory)) is not None:
        # The controller is often a head node outside every pool: reach it with the cluster's SSH defaults.
        targets[controller.name] = controller
    settings = SshSettings(
        known_hosts=os.path.expanduser(ssh.known_hosts) if ssh.known_hosts else None,
        connect_timeout_s=ssh.connect_timeout_s,
        max_handshakes=ssh.max_handshakes,
        max_commands=ssh.max_commands,
        max_channels_per_node=ssh.max_channels_per_node,
    )
    return SshTransport(targets, settings)
