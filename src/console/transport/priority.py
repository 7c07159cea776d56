"""Probes at the lowest CPU and I/O priority on the node, so a job that lands there comes first.

``watch`` sweeps idle nodes, and a job may start on one while its probes run. Under
``nice -n 19 ionice -c 3`` the probes' processes get CPU time only when nothing else wants it and
disk time only when the disk is idle (``ionice(1)``: class 3, "idle"; ``nice(1)``: 19 is the least
favourable). It does not lower the probes' share of a GPU: a GPU test that a job's kernels must wait
for is kept off such nodes by Slurm (the node is idle when the sweep starts, or held by a maintenance
reservation), not by this.

Both programs exec the command they are given, so the process the console's wrapper starts is still
the session leader it kills on a timeout (``console.transport.wrap``).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from console.transport.base import CommandResult, OutputSink, WrappedTransport, shown_command

LOW_PRIORITY_PREFIX = ("nice", "-n", "19", "ionice", "-c", "3")


def low_priority_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` run at the lowest CPU (nice 19) and I/O (idle class) priority."""
    return [*LOW_PRIORITY_PREFIX, *argv]


class LowPriorityTransport(WrappedTransport):
    """Every command and script of ``inner``, at the lowest CPU and I/O priority on the node."""

    def shown_command(self, command: str) -> str:
        """``command`` as it ran: under nice and ionice (the stored evidence says so)."""
        return f"{shlex.join(LOW_PRIORITY_PREFIX)} {shown_command(self.inner, command)}"

    async def run(
        self,
        node: str,
        argv: Sequence[str],
        *,
        timeout_s: float,
        stdin: bytes | None = None,
        sink: OutputSink | None = None,
    ) -> CommandResult:
        """``argv`` under nice and ionice."""
        return await self.inner.run(node, low_priority_argv(argv), timeout_s=timeout_s, stdin=stdin, sink=sink)

    async def run_script(
        self, node: str, script: str, *, timeout_s: float, sink: OutputSink | None = None
    ) -> CommandResult:
        """``sh -c script`` under nice and ionice: every program of the script inherits both."""
        return await self.run(node, ["sh", "-c", script], timeout_s=timeout_s, sink=sink)

    @property
    def accepted_host_keys(self) -> object:
        """The inner transport's accepted host keys (the engine's host-key audit reads them)."""
        return getattr(self.inner, "accepted_host_keys", ())
