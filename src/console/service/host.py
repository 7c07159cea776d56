"""The engine process: ``python -m console.service.host``, started by the console with two pipes.

It reads an ``EngineSpec`` and then commands from stdin, and writes events and replies to what was
stdout (the real stdout is pointed at stderr first, so a stray print cannot break a frame). It ends
at ``("stop",)`` or when stdin closes, which is also what happens when the console dies: no sweep
keeps running without a console to show it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any, BinaryIO

from console.inert import log_to_stderr
from console.runtime import tune_gc
from console.service.assembly import EngineSpec
from console.service.commands import Command, perform, without_passing
from console.service.context import EngineContext, close_context, open_context
from console.service.wire import HEADER, WireError, body_length, decode, encode
from console.sweep.events import Event, NodeDone, SweepDone, SweepStarted

# Events go out in batches: one frame and one wake-up of the console per batch, not per probe.
log = logging.getLogger("console.service.host")  # by name: run as __main__ in the engine process
EVENT_BATCH_S = 0.02


class EngineHost:
    """Serves one console: runs its commands, forwards the engine's events."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._events: list[Event] = []
        self._flush_handle: asyncio.TimerHandle | None = None
        self._calls: set[asyncio.Task[None]] = set()
        self.context: EngineContext | None = None

    def send(self, message: Any) -> None:
        """Write one frame (buffered by the pipe transport; never blocks the loop)."""
        self._writer.write(encode(message))

    def on_event(self, event: Event) -> None:
        """Queue an engine event; the batch leaves within ``EVENT_BATCH_S``."""
        if isinstance(event, NodeDone):
            # The console keeps the findings that are not PASS (the rest are in the store): send only those.
            event = event.model_copy(
                update={"verdict": without_passing(event.verdict), "findings_total": event.verdict.total}
            )
        if isinstance(event, SweepStarted | SweepDone):
            log.info("%s", _said(event))
        elif isinstance(event, NodeDone):
            log.info("node %s: %s", event.verdict.node, event.verdict.status.value)
        self._events.append(event)
        if self._flush_handle is None:
            self._flush_handle = asyncio.get_running_loop().call_later(EVENT_BATCH_S, self.flush)

    def flush(self) -> None:
        """Send the queued events now."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        if self._events:
            batch, self._events = self._events, []
            self.send(("events", batch))

    def call(self, call_id: int, command: Command) -> None:
        """Run ``command``; its reply follows every event sent before it ended."""
        log.info("command %d: %s", call_id, type(command).__name__)
        task = asyncio.get_running_loop().create_task(self._answer(call_id, command))
        self._calls.add(task)
        task.add_done_callback(self._calls.discard)

    async def _answer(self, call_id: int, command: Command) -> None:
        assert self.context is not None
        try:
            value = await perform(self.context, command)
            reply: tuple[Any, ...] = ("reply", call_id, True, value)
        except asyncio.CancelledError:
            reply = ("reply", call_id, False, "CancelledError: the engine is stopping")
        except Exception as exc:  # the console reports it; the engine goes on
            log.warning("command %d failed: %s: %s", call_id, type(exc).__name__, exc)
            reply = ("reply", call_id, False, f"{type(exc).__name__}: {exc}")
        self.flush()
        self.send(reply)


async def read_message(reader: asyncio.StreamReader) -> Any | None:
    """The next message from the console, or None when its stream ended between frames."""
    try:
        header = await reader.readexactly(HEADER.size)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise WireError("the console's stream ended inside a frame header") from None
        return None
    try:
        body = await reader.readexactly(body_length(header))
    except asyncio.IncompleteReadError:
        raise WireError("the console's stream ended inside a frame") from None
    return decode(body)


async def open_pipes(commands: BinaryIO, wire: BinaryIO) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Streams over the console's two pipes on the running loop (writes are buffered, never blocking)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), commands)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, wire)
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


async def serve(commands: BinaryIO, wire: BinaryIO) -> int:
    """Serve the console on ``commands`` (its requests) and ``wire`` (events and replies)."""
    reader, writer = await open_pipes(commands, wire)
    host = EngineHost(writer)
    try:
        spec = await read_message(reader)
        if not isinstance(spec, EngineSpec):
            raise WireError(f"expected the engine's spec first, got {type(spec).__name__}")
        host.context = open_context(spec, host.on_event)
        log.info("engine %d serving %s (%d nodes)", os.getpid(), spec.inventory.name, len(spec.inventory.nodes))
    except Exception as exc:
        log.warning("engine %d could not start: %s: %s", os.getpid(), type(exc).__name__, exc)
        host.send(("failed", f"{type(exc).__name__}: {exc}"))
        await writer.drain()
        writer.close()
        return 1
    host.send(("ready",))
    status = 0
    try:
        while True:
            message = await read_message(reader)
            if message is None or message == ("stop",):
                break
            if isinstance(message, tuple) and len(message) == 3 and message[0] == "call":
                host.call(message[1], message[2])
            else:
                raise WireError(f"not a request: {message!r:.80}")
    except WireError as exc:
        print(f"instinct-console engine: {exc}", file=sys.stderr)
        status = 1
    finally:
        await close_context(host.context)
        host.flush()
        try:
            await writer.drain()
            writer.close()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the console is gone: nobody left to tell
    return status


def _said(event: SweepStarted | SweepDone) -> str:
    if isinstance(event, SweepStarted):
        return f"sweep {event.sweep_id} started at {event.level} on {len(event.nodes)} nodes"
    return f"sweep {event.sweep_id} {event.outcome} in {event.duration_s:.1f} s"


def claim_stdout() -> BinaryIO:
    """The wire to the console, on what was stdout; stdout itself now goes to stderr."""
    wire = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    return wire


def run_served(serve_on: Callable[[BinaryIO, BinaryIO], Coroutine[Any, Any, int]]) -> int:
    """A child process of the console (the engine, an engine worker): requests on stdin, the wire on what
    was stdout, ``serve_on`` until it ends; its exit status."""
    # The terminal's ctrl+c belongs to the console (the child runs in its own session anyway).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    wire = claim_stdout()
    tune_gc()
    return asyncio.run(serve_on(os.fdopen(0, "rb", buffering=0), wire))


def main() -> int:
    """Entry point of the engine process."""
    # stderr is the console's engine.log: one flushed line per record, inert, so a kill -9 loses none.
    # (Not in run_served: an engine worker's stderr may be a sweep's terminal.)
    log_to_stderr(logging.INFO, timestamps=True)
    return run_served(serve)


if __name__ == "__main__":
    sys.exit(main())
