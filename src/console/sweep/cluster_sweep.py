"""One sweep with its cluster-level parts: what its checker gathers first (a Slurm job), the multinode phase."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Mapping, Sequence

from console.inventory.model import Node
from console.model.multinode import MultinodeResult
from console.sweep.catalog import ProbeSet
from console.sweep.engine import SweepEngine, SweepResult
from console.sweep.multinode import MultinodeOptions, refreshed, run_multinode
from console.sweep.workloads import run_workloads


async def sweep_cluster(
    engine: SweepEngine,
    nodes: Sequence[Node],
    level: ProbeSet | str,
    deadline_s: float | None = None,
    multinode: MultinodeOptions | None = None,
    *,
    workloads: Sequence[str] | None = None,
    at_once: Mapping[str, int] | None = None,
) -> tuple[SweepResult, MultinodeResult | None]:
    """Sweep ``nodes``; at level ``multinode`` then run the pairs within what is left of ``deadline_s``.

    The engine's checker gathers first (a Slurm job runs, every sweep afresh), and says how the
    multi-node runs are launched (with srun from where that job was submitted). ``at_once``: per pool, how
    many nodes the workload phase may hold at the same time (``console.sweep.workloads``).
    """
    started = time.monotonic()
    try:
        # The gather is part of the sweep: its time (a Slurm job's srun) is in the sweep's duration, and the
        # deadline bounds it too. Past the deadline the job is killed and the sweep below ends at once.
        async with asyncio.timeout(deadline_s):
            await engine.prepare(nodes, level)
    except TimeoutError:
        pass
    left = None if deadline_s is None else max(0.0, deadline_s - (time.monotonic() - started))
    result = await engine.run(nodes, level=level, deadline_s=left, started=started)
    if ProbeSet(level) is ProbeSet.WORKLOAD and result.outcome == "done":
        phase_started = time.monotonic()
        remaining = None if deadline_s is None else max(0.0, deadline_s - (phase_started - started))
        try:
            async with asyncio.timeout(remaining):
                await run_workloads(engine, result, nodes, workloads, at_once=at_once)
        except TimeoutError:  # the transport killed what still ran; the sweep says it ran out of time (exit 4)
            result = dataclasses.replace(result, outcome="deadline")
        return refreshed(engine, result, time.monotonic() - phase_started), None
    if ProbeSet(level) is not ProbeSet.MULTINODE or result.outcome != "done":
        return result, None
    options = engine.checker.multinode_launch(multinode or MultinodeOptions())
    phase_started = time.monotonic()
    remaining = None if deadline_s is None else max(0.0, deadline_s - (phase_started - started))
    pairs = await run_multinode(engine, result, options, deadline_s=remaining)
    return refreshed(engine, result, time.monotonic() - phase_started), pairs
