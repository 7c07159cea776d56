"""The engine side's belongings: the engine, its history database connection and the action service.

Made and closed on the thread that runs the engine's loop (SQLite connections belong to one thread):
the console's engine thread, or the engine process.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from console.actions import ActionService
from console.inventory.model import Inventory
from console.service.assembly import EngineSpec, build_engine
from console.store import Store
from console.store.db import open_for_sweeping
from console.sweep.engine import SweepEngine
from console.sweep.events import Event


@dataclass
class EngineContext:
    """What a command can use on the engine side."""

    engine: SweepEngine
    store: Store | None
    actions: ActionService | None
    actions_problem: str | None
    read_only: bool = False  # the spec's: heavy tests that occupy GPUs are refused as actions are
    multinode: asyncio.Task[object] | None = None  # the multi-node phase in progress, for CancelSweep


def load_action_service(
    inventory: Inventory, engine: SweepEngine, store: Store | None, read_only: bool
) -> tuple[ActionService | None, str | None]:
    """The cluster action service, or None and why not.

    It reads the engine's live facts (the stack a pin is taken from) on the engine's own loop.
    """
    if store is None:
        return None, "cluster actions need the history database (their audit log lives there)"
    try:
        # The engine too: a revalidation the operator asks for sweeps its nodes with it.
        service = ActionService(
            inventory, store, facts=engine.facts, packs=engine.packs, read_only=read_only, engine=engine
        )
    except Exception as exc:  # the service is someone else's code: never let it take the console down
        return None, f"cluster actions are not available: {type(exc).__name__}: {exc}"
    return service, None


def open_context(spec: EngineSpec, on_event: Callable[[Event], None]) -> EngineContext:
    """Open the store, build the engine (events go to ``on_event``) and the action service.

    Host keys the engine's transport accepts on first contact (``--accept-new``) go to the audit log as
    the sweep goes, as for the headless sweep; before the event reaches the console, so what it shows is
    already recorded (``build_engine`` subscribes that audit first).
    """
    store, fault = open_for_sweeping(spec.store_path) if spec.store_path is not None else (None, None)
    try:
        engine = build_engine(spec, store)
        engine.subscribe(on_event)
        if fault is not None:  # the console says so (a banner) and goes on read-only
            engine.writes.failed(fault)
        actions, problem = load_action_service(spec.inventory, engine, store, spec.read_only)
    except BaseException:
        if store is not None:
            store.close()
        raise
    return EngineContext(engine, store, actions, problem, read_only=spec.read_only)


async def close_context(context: EngineContext) -> None:
    """Close the engine (its connections, killing probes in flight) and the action service, end every
    other task of the loop, then close the store (no task is left to write to it)."""
    with contextlib.suppress(Exception):
        await context.engine.close()
    if context.actions is not None:
        with contextlib.suppress(Exception):
            await context.actions.close()
    pending = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    if context.store is not None:
        context.store.close()
