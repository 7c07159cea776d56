"""``sweep --via-slurm``: every node runs its own probes as one task of ONE Slurm job.

The console submits ``srun -N <n> -w <nodes> --ntasks-per-node=1 --label ... instinct-console
check-local -i <inventory> --probes <level> --json -`` where Slurm commands run (this host, or the
inventory's Slurm controller over SSH). Each task judges its node and prints one JSON line, its
compact report (``console.sweep.node_report``). A ``SlurmJob`` keeps what the job gathered, and the
engine's node checker (``console.sweep.checker_slurm``) takes the reports of the nodes that sent no raw
outputs (PASS nodes) as they are once it can vouch for them; the nodes that did send them (not PASS, or
``--raw``) it judges again from those outputs, as if it had fetched them over SSH, and stores them. Either way the
verdicts, fleet checks, store records and reports are those of an SSH sweep. Nodes Slurm would not
run the job on (drained, down, busy) are not submitted: they come back as not checked, with their
Slurm state as the reason.

The inventory file must be readable at the same path on the nodes (a shared filesystem), and
``instinct-console`` must be on their PATH (or give the command that runs it).
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from console.inventory.hostlist import fold
from console.inventory.model import Inventory, Node, StackPin
from console.sweep.bundle import KILL_GRACE_S
from console.sweep.catalog import ProbeSet, probes_for
from console.sweep.local_check import level_for_node
from console.sweep.node_report import LocalCheckReport, read_report
from console.sweep.probe_runs import describe
from console.transport import (
    CappedOutput,
    CommandResult,
    ErrorKind,
    LocalTransport,
    OutputSink,
    Transport,
    TransportError,
)
from console.transport.connect import transport_for

LOCAL = "local"
# Python start-up, check loading and the JSON on top of the slowest probe of the level.
NODE_OVERHEAD_S = 60.0
_LABEL = re.compile(r"^\s*(\d+): ?(.*)$")
_TASK_OF_NODE = re.compile(r"(\S+): task (\d+)")
_RUNNABLE_STATES = {"idle", "mixed"}


@dataclass(frozen=True)
class SlurmJobSettings:
    """How the job is submitted."""

    command: tuple[str, ...] = ("instinct-console",)
    partition: str | None = None
    immediate_s: int = 60  # srun gives up when the nodes are not free this soon, instead of queueing
    checks: tuple[str, ...] = ()  # --checks DIRs, at the same paths on the nodes: they judge with them
    raw: bool = False  # every node sends its raw outputs, and the console judges them all again


def node_limit_s(level: ProbeSet | str) -> float:
    """How long one node's check-local may take at ``level`` (its bundles run side by side)."""
    probes = probes_for(level_for_node(level))
    return max((p.timeout_s for p in probes), default=0.0) + KILL_GRACE_S + NODE_OVERHEAD_S


def srun_argv(
    nodes: Sequence[Node],
    inventory_path: str,
    level: ProbeSet | str,
    settings: SlurmJobSettings,
    pins: dict[str, dict[str, str]] | None = None,
    *,
    images: dict[str, dict[str, str]] | None = None,
) -> list[str]:
    """The one ``srun`` that checks every node in ``nodes`` (``pins``: pools whose pin differs from the
    inventory's, in ``pinned_fields`` form, for the nodes to judge against; ``images``: {pool: {workload:
    image}}, the images ``rollback`` set back, for the nodes to run in)."""
    minutes = math.ceil(node_limit_s(level) / 60) + 1
    argv = [
        "srun", "-N", str(len(nodes)), "-w", fold(n.name for n in nodes), "--ntasks-per-node=1", "--label",
        "--kill-on-bad-exit=0", f"--immediate={settings.immediate_s}", f"--time={minutes}",
        "--job-name=instinct-console-sweep",
    ]  # fmt: skip
    if settings.partition:
        argv.append(f"--partition={settings.partition}")
    check = ["check-local", "-i", inventory_path, "--probes", level_for_node(level).value]
    for directory in settings.checks:
        check += ["--checks", directory]
    if pins:
        check += ["--pins", json.dumps(pins, separators=(",", ":"), sort_keys=True)]
    if images:
        check += ["--images", json.dumps(images, separators=(",", ":"), sort_keys=True)]
    if settings.raw:
        check.append("--raw")
    return [*argv, *settings.command, *check, "--json", "-"]


def _labelled(text: str) -> list[tuple[int, str]]:
    """(task, payload) of every ``srun --label`` line."""
    return [(int(m.group(1)), m.group(2)) for m in map(_LABEL.match, text.splitlines()) if m]


def task_outputs(stdout: str) -> dict[int, str]:
    """Each task's stdout from ``srun --label`` output, lines joined back (srun cuts long lines in chunks)."""
    tasks: dict[int, list[str]] = {}
    for task, payload in _labelled(stdout):
        tasks.setdefault(task, []).append(payload)
    return {task: "".join(parts) for task, parts in tasks.items()}


def reports_from(stdout: str) -> tuple[dict[str, LocalCheckReport], dict[str, str]]:
    """The check-local reports in an srun output by node, and why the reports of some nodes cannot be
    used (cut, garbled, another format); a task printing something that names no node is left out (its
    node then has no report, with srun's word about it)."""
    reports: dict[str, LocalCheckReport] = {}
    unusable: dict[str, str] = {}
    for text in task_outputs(stdout).values():
        found = read_report(text)
        if isinstance(found, LocalCheckReport):
            reports[found.node] = found
        elif found[0] is not None:
            unusable[found[0]] = found[1]
    return reports, unusable


def runnable_nodes(sinfo_stdout: str, names: Sequence[str]) -> dict[str, str]:
    """Node -> why Slurm would not run a job there (drained, down, busy, unknown to Slurm)."""
    states: dict[str, str] = {}
    for line in sinfo_stdout.splitlines():
        fields = line.split()
        if len(fields) == 2:
            states.setdefault(fields[0], fields[1])
    refused: dict[str, str] = {}
    for name in names:
        state = states.get(name)
        if state is None:
            refused[name] = "not listed by sinfo: not a Slurm node"
        elif state not in _RUNNABLE_STATES:
            refused[name] = f"Slurm state {state}: no job can run there now"
    return refused


def bundle_text(report: LocalCheckReport) -> bytes:
    """The report's raw outputs in the bundle format the engine splits (``console.sweep.bundle``)."""
    parts = []
    for run in report.raw or []:
        end = f"@@ic-end {run.probe} rc={run.exit_status}\n" if run.exit_status is not None else ""
        parts.append(f"@@ic-begin {run.probe}\n{run.output}\n{end}")
    return "".join(parts).encode()


class SlurmJob:
    """What one Slurm job gathered: the reports of nodes judged on the node (``judged``), the raw outputs
    of the others (``run_script``, a bundle source); ``gather`` runs that job (again for every sweep).
    ``submit`` runs the job's commands (srun, sinfo) at ``where``: this host or the Slurm controller."""

    def __init__(self, inventory: Inventory, submit: Transport, where: str, settings: SlurmJobSettings) -> None:
        self.inventory = inventory
        self.submit = submit
        self.where = where
        self.settings = settings
        self._outputs: dict[str, tuple[bytes, float]] = {}
        self._reports: dict[str, LocalCheckReport] = {}
        self._missing: dict[str, str] = {}

    async def gather(
        self,
        nodes: Sequence[Node],
        level: ProbeSet | str,
        pins: dict[str, StackPin] | None = None,
        images: Mapping[tuple[str, str], str] | None = None,
    ) -> None:
        """Run the job over ``nodes`` and keep what each node reported; ``pins`` are the console's (the
        nodes judge against them where they differ from the inventory's), ``images`` its stored image
        overrides, (workload, pool) -> image (the nodes read the cluster file, which ``rollback`` leaves as
        it is: they run the framework probe in the image it set back only when told)."""
        self._outputs, self._reports, self._missing = {}, {}, {}
        names = [n.name for n in nodes]
        refused = await self._refused(names)
        self._missing.update(refused)
        runnable = [n for n in nodes if n.name not in refused]
        if not runnable:
            return
        path = str(Path(self.inventory.source).resolve())
        given = _pins_given(self.inventory, pins or {})
        told = _images_given(self.inventory, images or {})
        argv = srun_argv(runnable, path, level, self.settings, given, images=told)
        timeout = node_limit_s(level) + self.settings.immediate_s + NODE_OVERHEAD_S
        try:
            result = await self.submit.run(self.where, argv, timeout_s=timeout)
        except TransportError as exc:
            self._missing.update({n.name: f"the Slurm job failed: {describe(exc)}" for n in runnable})
            return
        self.collect(result.stdout.decode("utf-8", "replace"), result.stderr.decode("utf-8", "replace"), runnable)

    def collect(self, stdout: str, stderr: str, nodes: Sequence[Node]) -> None:
        """Keep what the job's tasks printed for ``nodes``: a report to take, raw outputs to judge, or why
        there is neither (no report, or one that cannot be used)."""
        reports, unusable = reports_from(stdout)
        for node in nodes:
            report = reports.get(node.name)
            if report is None:
                why = unusable.get(node.name) or f"no report from the Slurm job: {_job_error(stderr, node.name)}"
                self._missing[node.name] = why
            elif report.raw is None:
                self._reports[node.name] = report
            else:
                self._outputs[node.name] = (bundle_text(report), report.duration_s)

    def judged(self, node: str) -> LocalCheckReport | None:
        """The report of ``node`` when it sent no raw outputs: its verdict is taken as the node judged it."""
        return self._reports.get(node)

    async def _refused(self, names: list[str]) -> dict[str, str]:
        argv = ["sinfo", "-h", "-N", "-n", ",".join(names), "-o", "%N %T"]
        try:
            result = await self.submit.run(self.where, argv, timeout_s=30)
        except TransportError as exc:
            return {name: f"sinfo failed: {describe(exc)}" for name in names}
        if result.exit_status != 0:
            detail = result.stderr.decode("utf-8", "replace").strip() or f"exit status {result.exit_status}"
            return {name: f"sinfo failed: {detail}" for name in names}
        return runnable_nodes(result.stdout.decode("utf-8", "replace"), names)

    async def run_script(
        self, node: str, script: str, *, timeout_s: float, sink: OutputSink | None = None
    ) -> CommandResult:
        """Every probe output the node reported, through ``sink`` like a live command's (the engine keeps
        the sections of the bundle it asked for)."""
        await self.check_reachable(node)
        output, duration = self._outputs[node]
        kept = sink if sink is not None else CappedOutput(len(output))
        kept.feed(output)
        return CommandResult(
            node, "check-local (Slurm job)", 0, kept.value(), b"", time.time(), duration, kept.dropped_bytes
        )

    async def check_reachable(self, node: str, timeout_s: float = 3.0) -> None:
        """UNREACHABLE, with the reason, for a node the job did not report on (or not usably)."""
        if node not in self._outputs and node not in self._reports:
            raise TransportError(node, ErrorKind.UNREACHABLE, self._missing.get(node, "not in the Slurm job"))


def _pins_given(inventory: Inventory, pins: dict[str, StackPin]) -> dict[str, dict[str, str]]:
    """The pools whose pin here differs from the inventory's, as the nodes are told them (``--pins``)."""
    return {
        pool: pin.pinned_fields()
        for pool, pin in sorted(pins.items())
        if pool in inventory.pools and pin.pinned_fields() != inventory.pools[pool].pin.pinned_fields()
    }


def _images_given(inventory: Inventory, images: Mapping[tuple[str, str], str]) -> dict[str, dict[str, str]]:
    """The image overrides of the inventory's pools, as the nodes are told them (``--images``): {pool:
    {workload: image}}, the form of ``--pins``."""
    given: dict[str, dict[str, str]] = {}
    for (workload, pool), image in sorted(images.items()):
        if pool in inventory.pools:
            given.setdefault(pool, {})[workload] = image
    return given


def _job_error(stderr: str, node: str) -> str:
    """The last thing the node's task said on stderr, else srun's word about it, else its last line."""
    task = next((m.group(2) for m in _TASK_OF_NODE.finditer(stderr) if m.group(1) == node), None)
    said = [payload.strip() for t, payload in _labelled(stderr) if str(t) == task and payload.strip()]
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    about = [line for line in lines if node in line]
    return (said or about or lines or ["the task printed no report"])[-1]


def slurm_job(inventory: Inventory, settings: SlurmJobSettings, *, accept_new: bool = False) -> SlurmJob:
    """Submit on this host, or over SSH on the inventory's Slurm controller when it is one of its nodes."""
    controller = inventory.slurm.controller
    if not controller:
        return SlurmJob(inventory, LocalTransport(LOCAL), LOCAL, settings)
    if controller not in {n.name for n in inventory.nodes}:
        raise ValueError(f"Slurm controller {controller!r} is not a node of the inventory; run the console there")
    return SlurmJob(inventory, transport_for(inventory, accept_new=accept_new), controller, settings)
