"""The sweep engine in a thread of the console's own process, with its own asyncio loop.

The console script runs the engine in a process of its own (``console.service.client``); this thread
bridge (``tui --engine thread``) serves debugging, tests and embedders. Both build the engine from the
same ``EngineSpec``. The engine thread owns
the engine, its transport, its own connection to the history database (SQLite connections are per
thread) and the cluster action service. The UI sends it commands with ``request`` (thread-safe,
``asyncio.run_coroutine_threadsafe``) and gets events through the subscriber callback, which runs on
the engine thread and must not block.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from console.service.assembly import EngineSpec
from console.service.commands import Command, perform
from console.service.context import EngineContext, close_context, open_context
from console.sweep.events import Event

T = TypeVar("T")


class EngineBridge:
    """Runs the engine ``spec`` describes on a private thread and loop until ``stop``."""

    def __init__(self, spec: EngineSpec, on_event: Callable[[Event], None]) -> None:
        self.spec = spec
        self._on_event = on_event
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
        try:
            context = open_context(self.spec, self._on_event)
        except BaseException as exc:  # reported to the caller of start()
            self._startup_error = exc
            self._ready.set()
            loop.close()
            return
        self._context = context
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(close_context(context))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    def submit(self, job: Callable[[EngineContext], Awaitable[T]]) -> concurrent.futures.Future[T]:
        """Run ``job(context)`` on the engine loop; returns a thread-safe future of its result."""
        if self._loop is None or self._context is None:
            raise RuntimeError("the engine is not running")
        context = self._context

        async def run() -> T:
            return await job(context)

        return asyncio.run_coroutine_threadsafe(run(), self._loop)

    def request(self, command: Command) -> concurrent.futures.Future[Any]:
        """Do ``command`` on the engine loop (what the engine process would do with it)."""
        return self.submit(lambda context: perform(context, command))

    async def ask(self, command: Command) -> Any:
        """``request`` for a caller on another asyncio loop (the UI): awaits without blocking that loop."""
        return await asyncio.wrap_future(self.request(command))

    def stop(self, timeout_s: float = 15.0) -> None:
        """Cancel the sweep, close the transport (killing probes in flight) and end the thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return
        if self._context is not None:
            loop.call_soon_threadsafe(self._context.engine.cancel)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout_s)
