"""The workload phase of a sweep: each workload the cluster file declares, run where it applies, judged.

``sweep --probes workload`` runs the quick probes on every node, then this phase: a one-node workload
runs on each selected node of its pools (one workload at a time per node, the nodes in parallel); an
N-node workload runs once per group of N selected nodes of a pool, through ``srun`` started on the
cluster file's Slurm controller (``[slurm] controller``), else on the group's first node, held to the
group's nodes (``--nodelist``; a run Slurm refuses is UNKNOWN, not run), and its findings go to every
node of the group, saying where srun ran. A node the quick probes could not reach is not given a
workload. ``at_once`` (pool -> nodes) bounds how many nodes of a pool run a workload at the same time:
the caller's blast-radius cap (``console.actions.workload_caps``); the other runs wait for a place, and
a group larger than its pool's allowance is not run (UNKNOWN, saying why). The run's output is kept in
the history like a probe's; its findings join the node's verdict (``SweepEngine.add_findings``), so
reports, JUnit and exit codes carry them.
"""

from __future__ import annotations

import asyncio
import shlex
import time
from collections.abc import Mapping, Sequence

from console.checks.workload import judge_workload
from console.inventory.model import Node
from console.model.family import Family
from console.model.findings import Finding, Status, Subject
from console.model.workload import WorkloadSpec
from console.probes.workload import srun_refusal, workload_argv
from console.sweep.engine import SweepEngine, SweepResult, describe
from console.sweep.workload_runs import RunLedger
from console.transport import ErrorKind, TransportError

SOURCE = Family.WORKLOAD
# Nodes running workloads at once: each occupies its node's GPUs; the console's own share is the SSH channel.
PARALLEL_NODES = 64


def applies(spec: WorkloadSpec, node: Node) -> bool:
    """Whether ``spec`` runs on ``node``'s pool (every pool when it names none)."""
    return not spec.pools or node.pool in spec.pools


def placements(workloads: Sequence[WorkloadSpec], nodes: Sequence[Node]) -> list[tuple[WorkloadSpec, list[Node]]]:
    """Each run to make: a workload and the nodes it runs on (one, or a group of ``spec.nodes`` of one pool).

    Nodes left over in a pool after the last whole group get an UNKNOWN finding instead (``leftovers``).
    """
    runs: list[tuple[WorkloadSpec, list[Node]]] = []
    for spec in workloads:
        by_pool: dict[str, list[Node]] = {}
        for node in nodes:
            if applies(spec, node):
                by_pool.setdefault(node.pool, []).append(node)
        for members in by_pool.values():
            size = spec.nodes
            runs.extend((spec, members[i : i + size]) for i in range(0, len(members) - size + 1, size))
    return runs


def leftovers(workloads: Sequence[WorkloadSpec], nodes: Sequence[Node]) -> dict[str, list[Finding]]:
    """Findings for the nodes an N-node workload could not be placed on (too few left in their pool)."""
    placed = {(spec.name, n.name) for spec, group in placements(workloads, nodes) for n in group}
    out: dict[str, list[Finding]] = {}
    for spec in workloads:
        for node in nodes:
            if applies(spec, node) and (spec.name, node.name) not in placed:
                message = f"{spec.name}: not run: it needs {spec.nodes} nodes of pool {node.pool} and fewer were left"
                out.setdefault(node.name, []).append(_finding(spec, node.name, Status.UNKNOWN, message))
    return out


def run_argv(spec: WorkloadSpec, group: Sequence[Node]) -> tuple[str, ...]:
    """What one run of ``spec`` on ``group`` executes (``launch_site`` says where; srun held to the group)."""
    return workload_argv(spec, [n.name for n in group])


def launch_site(spec: WorkloadSpec, group: Sequence[Node], controller: str) -> tuple[str, str]:
    """Where one run of ``spec`` on ``group`` starts, and how its findings say so.

    One node: on that node. N nodes: srun on the Slurm controller when the cluster file names one (the
    host Slurm's client is sure to be set up on), else on the group's first node, which then needs it.
    """
    if spec.nodes == 1:
        return group[0].name, ""
    if controller:
        return controller, f" [srun on {controller}, the Slurm controller]"
    return group[0].name, f" [srun on {group[0].name}, the group's first node]"


def _finding(spec: WorkloadSpec, node: str, status: Status, message: str) -> Finding:
    return Finding(
        check_id=f"workload.{spec.name}.run", family=SOURCE, status=status, subject=Subject(node=node), message=message
    )


class PoolPlaces:
    """How many nodes of each pool may run a workload at once; a run waits until its whole group fits."""

    def __init__(self, at_once: Mapping[str, int]) -> None:
        self.at_once = dict(at_once)
        self.busy: dict[str, int] = {}
        self.changed = asyncio.Condition()

    def fits_ever(self, group: Sequence[Node]) -> bool:
        """Whether ``group`` can ever run: its size within its pool's allowance (a pool not named: no cap)."""
        pool = group[0].pool
        return pool not in self.at_once or len(group) <= self.at_once[pool]

    async def take(self, group: Sequence[Node]) -> None:
        """Wait until ``group`` fits in its pool's places, then hold them."""
        pool = group[0].pool
        if pool not in self.at_once:
            return
        async with self.changed:
            await self.changed.wait_for(lambda: self.busy.get(pool, 0) + len(group) <= self.at_once[pool])
            self.busy[pool] = self.busy.get(pool, 0) + len(group)

    async def give(self, group: Sequence[Node]) -> None:
        """Free ``group``'s places, and wake the runs waiting for them."""
        pool = group[0].pool
        if pool not in self.at_once:
            return
        async with self.changed:
            self.busy[pool] -= len(group)
            self.changed.notify_all()


def over_cap(spec: WorkloadSpec, group: Sequence[Node], allowed: int) -> Finding:
    """The finding of a group larger than its pool's allowance: not run, and why (never PASS)."""
    message = (
        f"{spec.name}: not run: it needs {len(group)} nodes of pool {group[0].pool} at once and the pool's"
        f" blast-radius cap allows {allowed} now (--force, or override in the console, lifts it)"
    )
    return _finding(spec, group[0].name, Status.UNKNOWN, message)


async def run_workloads(
    engine: SweepEngine,
    sweep: SweepResult,
    nodes: Sequence[Node],
    only: Sequence[str] | None = None,
    *,
    at_once: Mapping[str, int] | None = None,
) -> None:
    """Run every declared workload (those named in ``only``, when given) on the reachable ``nodes`` it
    applies to, no more nodes of a pool at once than ``at_once`` allows, and attach the findings."""
    workloads = [w for w in engine.inventory.workloads.values() if only is None or w.name in only]
    reachable = [n for n in nodes if "reachability" not in sweep.verdicts[n.name].families]
    found: dict[str, list[Finding]] = {name: list(f) for name, f in leftovers(workloads, reachable).items()}
    by_site: dict[str, list[tuple[WorkloadSpec, list[Node]]]] = {}
    places = PoolPlaces(at_once or {})
    placed = []
    for spec, group in placements(workloads, reachable):
        if places.fits_ever(group):
            placed.append((spec, group))
            continue
        refused = over_cap(spec, group, places.at_once[group[0].pool])
        for node in group:
            found.setdefault(node.name, []).append(refused.model_copy(update={"subject": Subject(node=node.name)}))
    for spec, group in placed:
        by_site.setdefault(group[0].name, []).append((spec, group))
    limit = asyncio.Semaphore(PARALLEL_NODES)
    ledger = RunLedger(engine, sweep.sweep_id, [(spec.name, group) for spec, group in placed])

    async def site_runs(runs: list[tuple[WorkloadSpec, list[Node]]]) -> None:
        async with limit:
            for spec, group in runs:  # one at a time: each occupies the node's GPUs
                await places.take(group)
                try:
                    ledger.started(spec.name, group)
                    judged = await _run(engine, sweep.sweep_id, spec, group)
                finally:
                    await places.give(group)
                worst = max((f.status for f in judged[group[0].name]), key=lambda s: s.severity, default=Status.PASS)
                ledger.finished(spec.name, group, worst)
                for node, findings in judged.items():
                    found.setdefault(node, []).extend(findings)

    try:
        await asyncio.gather(*(site_runs(runs) for runs in by_site.values()))
    except BaseException as exc:
        ledger.close(f"the workload phase stopped ({type(exc).__name__})")
        raise
    for node in reachable:
        if node.name in found:
            engine.add_findings(node.name, SOURCE, found[node.name])


async def _run(engine: SweepEngine, sweep_id: int, spec: WorkloadSpec, group: list[Node]) -> dict[str, list[Finding]]:
    """One run of ``spec`` on ``group``: each node of the group gets the run's findings, which say where
    srun ran (``launch_site``); the run's output is kept under the group's first node."""
    site = group[0].name
    launch, said_where = launch_site(spec, group, engine.inventory.slurm.controller)
    override = engine.store.image_override(spec.name, group[0].pool) if engine.store is not None else None
    if override is not None and spec.container is not None:
        # The pool's image was rolled back to the one the workload was accepted in (``rollback``).
        spec = spec.model_copy(update={"container": spec.container.model_copy(update={"image": override})})
    argv = run_argv(spec, group)
    started_at, t0 = time.time(), time.monotonic()
    stdout = stderr = b""
    exit_status: int | None = None
    try:
        result = await engine.transport.run(launch, argv, timeout_s=spec.timeout_s)
    except TransportError as exc:
        said = f"did not finish within {spec.timeout_s:g} s" if exc.kind is ErrorKind.TIMEOUT else describe(exc)
        judged = [_finding(spec, site, Status.UNKNOWN, f"{spec.name}: {said}")]
    else:
        stdout, stderr, exit_status = result.stdout, result.stderr, result.exit_status
        text = (stdout + stderr).decode("utf-8", errors="replace")
        refused = srun_refusal(stderr.decode("utf-8", errors="replace")) if spec.nodes > 1 and exit_status else None
        if result.dropped_bytes:
            judged = [_finding(spec, site, Status.UNKNOWN, f"{spec.name}: output cut: its figures cannot be trusted")]
        elif refused is not None:  # Slurm did not start it: nothing ran, nothing is judged
            judged = [_finding(spec, site, Status.UNKNOWN, f"{spec.name}: not run: Slurm refused it: {refused}")]
        else:
            status = exit_status if exit_status is not None else -1
            judged = judge_workload(spec, Subject(node=site), text, status, [n.name for n in group])
    if said_where:
        judged = [f.model_copy(update={"message": f.message + said_where}) for f in judged]
    if engine.store is not None:
        worst = max((f.status for f in judged), key=lambda s: s.severity, default=Status.PASS)
        engine.store.add_probe_run(
            sweep_id,
            site,
            f"workload.{spec.name}",
            # As the operator would type it, where it ran: the controller's srun is kept with the group.
            command=shlex.join(argv) if launch == site else f"{launch}$ {shlex.join(argv)}",
            exit_status=exit_status,
            started_at=started_at,
            duration_s=time.monotonic() - t0,
            stdout=stdout,
            stderr=stderr,
            problem=None if worst is Status.PASS else next(f.message for f in judged if f.status is worst),
        )
    return {node.name: [f.model_copy(update={"subject": Subject(node=node.name)}) for f in judged] for node in group}
