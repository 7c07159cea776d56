"""How the engine's nodes are checked: one ``NodeChecker``, chosen once by the assembly.

Three ways, one protocol: in this process over the engine's transport (``checker_local.LocalChecker``),
in engine worker processes (``checker_workers.WorkerChecker``, ``--workers``), or from what one Slurm
job gathered on the nodes (``checker_slurm.SlurmChecker``, ``--via-slurm``). The engine
(``console.sweep.engine``) keeps the waves, the deadlines, cancel and give-up, the events and the store,
and never asks which checker it has; each checker says in its own words why a node could not be checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from console.inventory.model import Node
from console.sweep.catalog import ProbeSet, ProbeSpec
from console.transport import Transport

if TYPE_CHECKING:
    from console.sweep.engine import SweepEngine
    from console.sweep.multinode import MultinodeOptions


class NodeChecker(Protocol):
    """Checks one node at a time for its engine, which it publishes the node's verdict through."""

    # What the engine's commands that are not one node's probes go through (multi-node runs, workloads):
    # the transport the engine closes.
    transport: Transport

    def attach(self, engine: SweepEngine) -> None:
        """Serve ``engine``: its verdicts, events and store are where each node's check ends."""

    async def gather(self, nodes: Sequence[Node], level: ProbeSet | str) -> None:
        """Before a sweep of ``nodes`` at ``level``: fetch what its nodes' checks will read (a Slurm job)."""

    def first_wave(self, first: list[Node]) -> None:
        """A sweep starts with ``first`` (empty when the sweep is no more than that)."""

    async def check(self, node: Node, probes: list[ProbeSpec], refresh: bool, given: float | None) -> None:
        """Check ``node`` with ``probes`` and publish its verdict, by ``given`` (loop time) when not None,
        else within the engine's budget (``SweepEngine.deadline``). ``refresh``: no stamp-checked reuse."""

    def forget(self, node: str) -> None:
        """``node``'s check ended and was not cut short by its sweep: what was kept of it in flight goes."""

    def lost(self, node: str) -> None:
        """``node`` was found unreachable: what was kept to check it faster goes (a reboot may change it)."""

    def cutting(self, reason: str | None) -> None:
        """From now on the nodes cancelled are cut short by the sweep's ``reason`` (None: plain cancels)."""

    async def judge_cut(self, nodes: list[Node], reason: str) -> None:
        """Judge ``nodes``, cut short by the sweep's ``reason``, on what came back of them; ends the cutting."""

    def cut_short(self, node: Node, reason: str) -> bool:
        """Judge ``node`` now on what came back, its check being stopped by ``reason``; False when it is
        not being checked here."""

    def multinode_launch(self, options: MultinodeOptions) -> MultinodeOptions:
        """How the multi-node runs after a sweep are launched in this mode."""

    async def close(self) -> None:
        """Stop what the checker started (worker processes); the engine closes ``transport``."""


class ServesEngine:
    """The engine a node checker serves, set once by ``attach`` (the engine attaches its checker)."""

    _engine: SweepEngine | None = None

    @property
    def engine(self) -> SweepEngine:
        """The engine this checker serves (``attach``)."""
        assert self._engine is not None, "a node checker serves an engine: attach it first"
        return self._engine

    def attach(self, engine: SweepEngine) -> None:
        """Serve ``engine``."""
        self._engine = engine
