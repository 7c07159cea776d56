"""The engine side's belongings: the engine, its history database connection and the action service.

Made and closed on the thread that runs the engine's loop (SQLite connections belong to one thread):
the console's engine thread, or the engine process.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from console.checks import CheckPack
from console.inventory.model import Inventory
from console.store import Store
from console.sweep.engine import SweepEngine
from console.sweep.events import Event
from console.sweep.hostkey_audit import HostKeyAudit
from console.transport import Transport

ACTIONS_MODULE = "console.actions"
EngineFactory = Callable[[Store | None], SweepEngine]


def engine_factory_for(
    inventory: Inventory, packs: dict[str, CheckPack], transport: Transport, probe_timeout_cap_s: float | None = None
) -> EngineFactory:
    """The console's engine on a thread of its own (``--engine thread``), with that thread's connection to
    the history database; the engine process builds its own the same way (``console.service.host``)."""

    def build(store: Store | None) -> SweepEngine:
        return SweepEngine(inventory, transport, packs, store, probe_timeout_cap_s=probe_timeout_cap_s)

    return build


@dataclass
class EngineContext:
    """What a command can use on the engine side."""

    engine: SweepEngine
    store: Store | None
    actions: Any | None
    actions_problem: str | None


def load_action_service(
    inventory: Inventory, engine: SweepEngine, store: Store | None, read_only: bool
) -> tuple[Any | None, str | None]:
    """The cluster action service, or None and why not (it is built separately and may be missing).

    It reads the engine's live facts (the stack a pin is taken from) on the engine's own loop.
    """
    if store is None:
        return None, "cluster actions need the history database (their audit log lives there)"
    try:
        module = importlib.import_module(ACTIONS_MODULE)
        service = module.ActionService(inventory, store, facts=engine.facts, packs=engine.packs, read_only=read_only)
    except ImportError:
        return None, "cluster actions are not available: console.actions is not installed"
    except Exception as exc:  # the service is someone else's code: never let it take the console down
        return None, f"cluster actions are not available: {type(exc).__name__}: {exc}"
    return service, None


def open_context(
    inventory: Inventory,
    factory: EngineFactory,
    on_event: Callable[[Event], None],
    store_path: Path | None,
    read_only: bool,
) -> EngineContext:
    """Open the store, build the engine (events go to ``on_event``) and the action service.

    Host keys the engine's transport accepts on first contact (``--accept-new``) go to the audit log as
    the sweep goes, as for the headless sweep; before the event reaches the console, so what it shows is
    already recorded.
    """
    store = Store(store_path) if store_path is not None else None
    try:
        engine = factory(store)
        if store is not None:
            engine.subscribe(HostKeyAudit(store, engine.transport))
        engine.subscribe(on_event)
        actions, problem = load_action_service(inventory, engine, store, read_only)
    except BaseException:
        if store is not None:
            store.close()
        raise
    return EngineContext(engine, store, actions, problem)


async def close_context(context: EngineContext) -> None:
    """Close the engine (its connections, killing probes in flight) and the action service, end every
    other task of the loop, then close the store (no task is left to write to it)."""
    with contextlib.suppress(Exception):
        await context.engine.close()
    close_actions = getattr(context.actions, "close", None)
    if close_actions is not None:
        with contextlib.suppress(Exception):
            await close_actions()
    pending = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    if context.store is not None:
        context.store.close()
