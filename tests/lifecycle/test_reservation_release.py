"""``watch --reservation``: a create that scontrol never answered may have made the reservation, so it is
released too (a reservation left behind keeps the nodes from jobs until its Duration ends).

The runner here stands in for the controller at the command level (``CommandRunner``, above SSH): the
case is a create that times out, which the simulator's scontrol cannot be made to do in a test's time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

import pytest

from console.actions.reservation import reserved
from console.actions.runner import DEFAULT_TIMEOUT_S, RunOutput
from console.store import Store


class _Controller:
    """A controller whose ``create`` ends as the first answer says; every command is kept."""

    def __init__(self, create: RunOutput) -> None:
        self.create = create
        self.ran: list[tuple[str, ...]] = []

    async def run(self, where: str, argv: Sequence[str], *, timeout_s: float = DEFAULT_TIMEOUT_S) -> RunOutput:
        self.ran.append(tuple(argv))
        if "create" in argv:
            return self.create
        return RunOutput(where, tuple(argv), 0, "", "")


@pytest.mark.parametrize(
    ("create", "released"),
    [
        (RunOutput("ctl", (), None, "", "", error="timed out after 60 s"), True),  # may exist: released
        (RunOutput("ctl", (), 1, "", "Reservation request denied\n"), False),  # refused: nothing to release
        (RunOutput("ctl", (), 0, "Reservation ic-watch created\n", ""), True),
    ],
    ids=["timed-out", "refused", "made"],
)
def test_a_reservation_is_released_when_made_or_when_it_may_have_been(
    tmp_path: Path, create: RunOutput, released: bool
) -> None:
    store = Store(tmp_path / "h.sqlite")
    controller = _Controller(create)
    service = SimpleNamespace(store=store, slurm_where="ctl", runner=controller, user="ops")

    async def round_() -> None:
        async with reserved(service, "ic-watch", ["gpu001"], "quick"):  # type: ignore[arg-type]
            pass

    try:
        asyncio.run(round_())
        deleted = [argv for argv in controller.ran if "delete" in argv]
        assert bool(deleted) is released, controller.ran
        actions = [row["action"] for row in store.audit_log(10)][::-1]
        assert actions == (["reserve", "release"] if released else ["reserve"])
    finally:
        store.close()
