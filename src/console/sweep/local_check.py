"""The sweep of one node run on the node itself (Slurm prolog, HealthCheckProgram, ``sweep --via-slurm``).

The probes run through ``LocalTransport`` exactly as an SSH sweep runs them (same bundles, timeouts
and kills), the node is judged here with the same check packs, and the report is the compact one of
``console.sweep.node_report``: a console gathering many takes their verdicts as they are and keeps
the raw outputs (and judges again) only of the nodes that are not PASS (``console.sweep.via_slurm``).
"""

from __future__ import annotations

import re
import time

from console.checks import NodeFacts
from console.inventory.model import StackPin
from console.sweep.bundle import split_bundle
from console.sweep.catalog import PROBES_BY_ID, ProbeSet
from console.sweep.engine import SweepEngine, SweepResult
from console.sweep.library_collect import COMMAND, collecting_transport
from console.sweep.node_report import LocalCheckReport, build_report
from console.transport import (
    CommandResult,
    ErrorKind,
    LocalTransport,
    OutputSink,
    Transport,
    TransportError,
    WrappedTransport,
)

# The begin marker each probe of a bundle script echoes (console.sweep.bundle).
_SCRIPT_PROBE = re.compile(r'echo "@@ic-begin ([A-Za-z0-9_.-]+)"')


class RecordingTransport(WrappedTransport):
    """The node's own transport, keeping every bundle's output (``check-local`` reports it raw).

    A bundle given up on leaves its probes marked as timed out.
    """

    def __init__(self, inner: Transport, collector: str = COMMAND) -> None:
        super().__init__(inner)
        self.stdout: list[bytes] = []
        self.collector = collector  # which path collects the amd-smi facts, said in the report

    async def run_script(
        self, node: str, script: str, *, timeout_s: float, sink: OutputSink | None = None
    ) -> CommandResult:
        """Run the bundle and keep its output (or timeout markers for its probes)."""
        try:
            result = await self.inner.run_script(node, script, timeout_s=timeout_s, sink=sink)
        except TransportError as exc:
            status = "124" if exc.kind is ErrorKind.TIMEOUT else ""
            ends = "".join(
                f"@@ic-begin {probe}\n" + (f"@@ic-end {probe} rc={status}\n" if status else "")
                for probe in _SCRIPT_PROBE.findall(script)
            )
            self.stdout.append(ends.encode())
            raise
        self.stdout.append(result.stdout)
        return result


def level_for_node(level: ProbeSet | str) -> ProbeSet:
    """The per-node part of a probe set (multinode runs the standard probes on each node, workload the quick)."""
    level = ProbeSet(level)
    return {ProbeSet.MULTINODE: ProbeSet.STANDARD, ProbeSet.WORKLOAD: ProbeSet.QUICK}.get(level, level)


def recording_transport(node_name: str, *, use_library: bool = True) -> RecordingTransport:
    """What ``check_local``'s engine must run its probes through: this host, recorded, with the amdsmi
    library answering the probes it can when it imports and initialises here (``use_library``)."""
    inner, collector = collecting_transport(LocalTransport(node_name), use_library=use_library)
    return RecordingTransport(inner, collector)


async def check_local(
    engine: SweepEngine,
    node_name: str,
    level: ProbeSet | str = ProbeSet.QUICK,
    deadline_s: float | None = None,
    *,
    raw: bool = False,
) -> tuple[LocalCheckReport, SweepResult]:
    """Sweep ``node_name`` (this host) at ``level``, judge it, and report it compactly (every raw output
    too with ``raw``, or when it is not PASS).

    ``engine`` runs its probes through a ``recording_transport`` (``console.service.assembly`` builds it).
    """
    recorder = engine.transport
    if not isinstance(recorder, RecordingTransport):
        raise TypeError("check_local needs an engine on a recording_transport: the report digests the raw outputs")
    node = engine.inventory.node(node_name)
    started = time.monotonic()
    try:
        result = await engine.run([node], level=level_for_node(level), deadline_s=deadline_s)
    finally:
        await engine.close()
    sections = split_bundle(b"\n".join(recorder.stdout), list(PROBES_BY_ID.values()))
    report = build_report(
        node,
        level_for_node(level).value,
        result.outcome,
        round(time.monotonic() - started, 3),
        result.verdicts[node.name],
        engine.facts.get(node.name) or NodeFacts(node=node, pin=engine.pins.get(node.pool) or StackPin()),
        engine.packs.get(node.gpu_model),
        sections.values(),
        raw=raw,
    )
    report.collector = recorder.collector
    return report, result
