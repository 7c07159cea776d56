"""The plan of a run outside the action catalogue that occupies GPUs: the multinode level, a workload run.

Catalogued actions cross the wire as their own ``console.actions.ActionPlan``; these runs have no
``ActionService`` plan, so this is theirs, made on the engine side and shown as it is in the confirm dialog.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class RunPlan:
    """The dry run the confirm dialog shows: exactly what will run, where, on which nodes, or why not."""

    action_id: str
    title: str
    targets: tuple[str, ...]
    reason: str = ""
    commands: tuple[tuple[str, ...], ...] = ()
    where: str = ""
    notes: tuple[str, ...] = ()
    refused: str | None = None
    shown: tuple[str, ...] = ()  # the commands as typed where they run, when they are not run here as is
    capped: tuple[str, ...] = ()  # targets left out by their pool's cap (the rest would run)
    forced: bool = False  # planned with the cap overridden
    # The multinode level: nodes the operator did not select whose GPUs a second pass may take (known-good
    # in their pool's accepted baseline), and whether this plan lets it (the dialog's choice).
    borrowable: tuple[str, ...] = ()
    borrow: bool = True

    @property
    def decisions(self) -> Mapping[str, str]:
        """No per-target decision: a run takes every target it can reach."""
        return {}

    @property
    def held(self) -> tuple[str, ...]:
        """No remediation case holds a run's targets out."""
        return ()

    def command_lines(self) -> list[str]:
        """Each command as the operator would type it, prefixed with where it runs (``ctl01$ mpirun ...``)."""
        return list(self.shown) or [f"$ {shlex.join(argv)}" for argv in self.commands]
