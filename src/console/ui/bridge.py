"""The sweep engine in its own thread with its own asyncio loop, and the one door the UI uses to reach it.

asyncssh handshakes are CPU-heavy; on the UI loop they would freeze input. The engine thread owns
the engine, its transport, its own connection to the history database (SQLite connections are
per thread) and the cluster action service. The UI sends it jobs with ``submit`` (thread-safe,
``asyncio.run_coroutine_threadsafe``) and gets events through the subscriber callback, which runs on
the engine thread and must not block.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import importlib
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from console.inventory.model import Inventory
from console.store import Store
from console.sweep.engine import SweepEngine
from console.sweep.events import Event

T = TypeVar("T")
EngineFactory = Callable[[Store | None], SweepEngine]
ACTIONS_MODULE = "console.actions"


@dataclass
class EngineContext:
    """What a job submitted to the engine thread can use."""

    engine: SweepEngine
    store: Store | None
    actions: Any | None
    actions_problem: str | None


def load_action_service(
    inventory: Inventory, engine: SweepEngine, store: Store | None, read_only: bool
) -> tuple[Any | None, str | None]:
    """The cluster action service, or None and why not (it is built separately and may be missing).

    It reads the engine's live facts (the stack a pin is taken from) on this same thread.
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


class EngineBridge:
    """Runs ``engine_factory``'s engine on a private thread and loop until ``stop``."""

    def __init__(
        self,
        inventory: Inventory,
        engine_factory: EngineFactory,
        on_event: Callable[[Event], None],
        store_path: Path | None = None,
        read_only: bool = False,
    ) -> None:
        self.inventory = inventory
        self.read_only = read_only
        self._factory = engine_factory
        self._on_event = on_event
        self._store_path = store_path
        self._loop: asyncio.AbstractEventLoop | None = None
        self._context: EngineContext | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None

    @property
    def running(self) -> bool:
        """True between a successful ``start`` and ``stop``."""
        return self._thread is not None and self._thread.is_alive() and self._context is not None

    def start(self, timeout_s: float = 30.0) -> None:
        """Start the thread and wait until the engine exists (re-raises what its construction raised)."""
        self._thread = threading.Thread(target=self._main, name="console-engine", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout_s):
            raise RuntimeError("the engine thread did not start")
        if self._startup_error is not None:
            raise self._startup_error

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        store: Store | None = None
        try:
            store = Store(self._store_path) if self._store_path is not None else None
            engine = self._factory(store)
            engine.subscribe(self._on_event)
            actions, problem = load_action_service(self.inventory, engine, store, self.read_only)
            self._context = EngineContext(engine, store, actions, problem)
        except BaseException as exc:  # reported to the caller of start()
            self._startup_error = exc
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            with contextlib.suppress(Exception):
                loop.run_until_complete(self._context.engine.close())
            close_actions = getattr(self._context.actions, "close", None)
            if close_actions is not None:
                with contextlib.suppress(Exception):
                    loop.run_until_complete(close_actions())
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            with contextlib.suppress(Exception):
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
            if store is not None:
                store.close()

    def submit(self, job: Callable[[EngineContext], Awaitable[T]]) -> concurrent.futures.Future[T]:
        """Run ``job(context)`` on the engine loop; returns a thread-safe future of its result."""
        if self._loop is None or self._context is None:
            raise RuntimeError("the engine is not running")
        context = self._context

        async def run() -> T:
            return await job(context)

        return asyncio.run_coroutine_threadsafe(run(), self._loop)

    async def call(self, job: Callable[[EngineContext], Awaitable[T]]) -> T:
        """``submit`` for a caller on another asyncio loop (the UI): awaits without blocking that loop."""
        return await asyncio.wrap_future(self.submit(job))

    def stop(self, timeout_s: float = 15.0) -> None:
        """Cancel the sweep, close the transport (killing probes in flight) and end the thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return
        if self._context is not None:
            loop.call_soon_threadsafe(self._context.engine.cancel)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout_s)
