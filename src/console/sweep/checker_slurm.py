"""Checking nodes from what one Slurm job gathered on them (``sweep --via-slurm``).

Each node ran ``check-local`` as one task of the job (``console.sweep.via_slurm``). A node that sent its
report alone (PASS) has it taken once this console can vouch for it; a node that sent its raw outputs is
judged again here from them, as the in-process checker judges outputs fetched over SSH; a node the job
did not report on is UNKNOWN with the reason. The multi-node runs after the sweep are launched with srun
from where the job was submitted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from console.inventory.model import Node
from console.sweep.catalog import ProbeSet
from console.sweep.checker_local import LocalChecker
from console.sweep.node_report import LocalCheckReport
from console.sweep.via_slurm import SlurmJob

if TYPE_CHECKING:
    from console.sweep.multinode import MultinodeOptions


class SlurmChecker(LocalChecker):
    """The in-process checker over the outputs ``job`` gathered, taking the reports of nodes that judged
    themselves; the engine's other commands run where the job was submitted."""

    whose_report = "its check-local report"

    def __init__(self, job: SlurmJob) -> None:
        super().__init__(job.submit, source=job)
        self.job = job

    async def gather(self, nodes: Sequence[Node], level: ProbeSet | str) -> None:
        """Run the job over ``nodes``: the console's pins and stored images go to the nodes, which read
        the cluster file only."""
        engine = self.engine
        images = engine.store.image_overrides() if engine.store is not None else None
        await self.job.gather(nodes, level, engine.pins, images)

    def judged(self, node: str) -> LocalCheckReport | None:
        """The report ``node`` sent alone (it sent no raw outputs): taken as the node judged it."""
        return self.job.judged(node)

    def multinode_launch(self, options: MultinodeOptions) -> MultinodeOptions:
        """Launched with srun from where the job was submitted (the engine's transport reaches it)."""
        return replace(options, launch=replace(options.launch, launcher="srun"), site=self.job.where)
