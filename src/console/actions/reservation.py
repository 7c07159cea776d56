"""``watch --reservation NAME``: hold the nodes a round sweeps in a Slurm maintenance reservation.

Idle is a moment, not a promise: a job may be scheduled onto a node while its probes run. A site that
wants the sweep undisturbed (and the job kept off a node under test) has ``watch`` create, for each
round, a reservation of exactly the idle nodes it is about to sweep::

    scontrol create reservation ReservationName=NAME StartTime=now Duration=MIN Users=root
        Flags=MAINT,IGNORE_JOBS Nodes=<the nodes>

and delete it as soon as the sweep ends (``scontrol delete ReservationName=NAME``), whether the sweep
finished, failed or was stopped by SIGTERM or Ctrl-C. ``MAINT`` marks the time as maintenance in
Slurm's accounting; ``IGNORE_JOBS`` lets the reservation be made even when a job started on one of the
nodes since the round read their states (scontrol(1), "create reservation"). ``Users=root`` admits
no one else's job. ``Duration`` bounds a reservation the console could not delete (the console killed
with SIGKILL, the controller unreachable at the end): the sum of the level's probe timeouts plus a
margin, after which Slurm ends it by itself.

Both steps go to the audit log (write-ahead, as every action), and both run where the console's Slurm
actions run (``ActionService.slurm_where``). When the reservation cannot be made, the round sweeps
nothing: the site asked for its sweeps to run under one.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

from console.actions.service import ActionService
from console.inventory import fold
from console.sweep.catalog import probes_for

# Added to the level's probe timeouts: connecting, judging and the kill grace of the last probe
# (docs/sources/estimates.md#watch-reservation-length).
MARGIN_S = 300.0


def duration_minutes(level: str) -> int:
    """How long the reservation lasts when nobody deletes it: every probe of ``level`` at its timeout, plus a margin."""
    return math.ceil((sum(p.timeout_s for p in probes_for(level)) + MARGIN_S) / 60)


def create_argv(name: str, nodes: Sequence[str], minutes: int) -> list[str]:
    """The ``scontrol`` line that reserves ``nodes`` for maintenance now."""
    return [
        "scontrol", "create", "reservation", f"ReservationName={name}", "StartTime=now", f"Duration={minutes}",
        "Users=root", "Flags=MAINT,IGNORE_JOBS", f"Nodes={fold(nodes)}",
    ]  # fmt: skip


def delete_argv(name: str) -> list[str]:
    """The ``scontrol`` line that ends the reservation."""
    return ["scontrol", "delete", f"ReservationName={name}"]


@dataclass
class Held:
    """What ``reserved`` made: the reservation's name, or why there is none (``refused``)."""

    name: str
    nodes: tuple[str, ...]
    refused: str = ""
    released: str = ""  # how the release went, once it ran
    # scontrol did not answer (a timeout, a lost connection): the reservation may exist all the same.
    unknown: bool = False


@asynccontextmanager
async def reserved(service: ActionService, name: str, nodes: Sequence[str], level: str) -> AsyncIterator[Held]:
    """Hold ``nodes`` in the maintenance reservation ``name`` for the block; release it however the block ends."""
    held = Held(name, tuple(nodes))
    store, where, minutes = service.store, service.slurm_where, duration_minutes(level)
    create = create_argv(name, nodes, minutes)
    inputs = {"reservation": name, "duration_min": minutes}
    shown = [f"{where}$ {' '.join(create)}"]
    try:
        # A stop while scontrol runs leaves it unknown whether the reservation exists: released below too.
        with store.audited("reserve", nodes, inputs=inputs, commands=shown, user=service.user) as entry:
            out = await service.runner.run(where, create)
            if not out.ok:
                held.refused = f"reservation {name} not created: {out.message()}"
                held.unknown = out.error is not None
            entry.finish(
                held.refused or f"reserved {fold(nodes)} as {name} for at most {minutes} min", out.transcript()
            )
        yield held
    finally:
        # Released when made, and when it is not known whether it was: a reservation left behind keeps
        # the nodes from jobs until its Duration ends; deleting one that does not exist only fails.
        if not held.refused or held.unknown:
            await _release(service, held)


async def _release(service: ActionService, held: Held) -> None:
    """Delete the reservation, audited; ``held.released`` says how it went."""
    delete, where = delete_argv(held.name), service.slurm_where
    commands = [f"{where}$ {' '.join(delete)}"]
    inputs = {"reservation": held.name}
    with service.store.audited("release", held.nodes, inputs=inputs, commands=commands, user=service.user) as entry:
        out = await service.runner.run(where, delete)
        held.released = f"released {held.name}" if out.ok else f"reservation {held.name} not released: {out.message()}"
        entry.finish(held.released, out.transcript())
