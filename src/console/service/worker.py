"""An engine worker process: ``python -m console.service.worker``, started by a ``WorkerPool``.

It reads an ``EngineSpec`` (``workers=0``, no store) on stdin, builds its engine from it with
``build_engine``, the one assembly, and says ``("ready",)``. For each ``("judge", node, [(probe,
timeout)], refresh, pin, deadline, pool)`` (the console's pin and pool now) it checks the node with
that engine (connect, probes, parse, judge) by the console's deadline and answers ``("judged", node,
WorkerJudged)``, after the node's probe events ``("event", node, event)``. ``("cancel", node)`` stops
a node (its commands are killed on the node); ``("cut", node, reason)`` stops it the same way after
judging it on what came back (its sweep's deadline or cancel) and answering that; ``("stop",)`` or
the end of stdin cancels every node, waits for the kills and closes the connections. Frames are
those of ``console.service.wire``.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import replace
from typing import Any, BinaryIO

from console.inventory.model import Pool, StackPin
from console.service.assembly import EngineSpec, build_engine
from console.service.host import open_pipes, read_message, run_served
from console.service.node_judge import NodeJudge
from console.service.wire import WireError, encode
from console.sweep.catalog import PROBES_BY_ID, ProbeSpec
from console.sweep.engine import SweepEngine
from console.sweep.events import Event, ProbeFinished, ProbeStarted

# Probe events leave in batches (one pipe write, one wake-up of the console per batch); a node's
# report leaves at once, after them.
EVENT_BATCH_S = 0.01


class WorkerServer:
    """Checks the nodes its pool sends, one task each, and answers on ``writer``."""

    def __init__(self, engine: SweepEngine, writer: asyncio.StreamWriter) -> None:
        self.engine = engine
        self._node_judge = NodeJudge(engine)
        self._writer = writer
        self._out: list[Any] = []
        self._flush: asyncio.TimerHandle | None = None
        self._tasks: dict[str, asyncio.Task[None]] = {}
        engine.subscribe(self._on_event)

    def _on_event(self, event: Event) -> None:
        if isinstance(event, ProbeStarted | ProbeFinished) and event.node in self._tasks:
            self._queue(("event", event.node, event))

    def _queue(self, message: Any, *, now: bool = False) -> None:
        self._out.append(message)
        if now:
            self.flush()
        elif self._flush is None:
            self._flush = asyncio.get_running_loop().call_later(EVENT_BATCH_S, self.flush)

    def flush(self) -> None:
        """Send what is queued, in order, as one write."""
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        if self._out:
            batch, self._out = self._out, []
            self._writer.write(b"".join(encode(m) for m in batch))

    def judge(  # noqa: PLR0917
        self,
        name: str,
        probes: list[tuple[str, float]],
        refresh: bool,
        pin: StackPin,
        deadline: float | None,
        pool: Pool | None = None,
    ) -> None:
        """Start checking ``name`` by ``deadline`` (the console's, ``time.monotonic``); a node still being
        checked is stopped first."""
        self.cancel(name)
        task = asyncio.get_running_loop().create_task(self._judge(name, probes, refresh, pin, deadline, pool))
        self._tasks[name] = task
        task.add_done_callback(lambda t: self._tasks.pop(name, None) if self._tasks.get(name) is t else None)

    def cut(self, name: str, reason: str) -> None:
        """Stop checking ``name`` as its sweep's ``reason`` does (deadline, cancel): judged on what came back,
        answered, then cancelled as ``cancel`` does."""
        judged = self._node_judge.cut(self.engine.inventory.node(name), reason) if name in self._tasks else None
        self.cancel(name)
        if judged is not None:
            self._queue(("judged", name, judged), now=True)
        else:  # nothing in flight here: the console does not wait for it
            self._queue(("failed", name, f"not being checked: {reason}"), now=True)

    def cancel(self, name: str) -> None:
        """Stop checking ``name``: its commands are killed on the node by the engine's transport."""
        task = self._tasks.pop(name, None)
        if task is not None:
            task.cancel()

    async def _judge(  # noqa: PLR0917
        self,
        name: str,
        probes: list[tuple[str, float]],
        refresh: bool,
        pin: StackPin,
        deadline: float | None,
        pool: Pool | None,
    ) -> None:
        try:
            node = self.engine.inventory.node(name)
            specs = [_spec(probe, timeout_s) for probe, timeout_s in probes]
            judged = await self._node_judge.judged(node, specs, refresh, pin, deadline, pool)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # said to the console, which makes the node UNKNOWN with it
            self._queue(("failed", name, f"{type(exc).__name__}: {exc}"), now=True)
            return
        self._queue(("judged", name, judged), now=True)

    async def stop(self) -> None:
        """Cancel every node and close the engine (waiting for its kills on the nodes)."""
        for name in list(self._tasks):
            self.cancel(name)
        await self.engine.close()
        self.flush()


def _spec(probe: str, timeout_s: float) -> ProbeSpec:
    spec = PROBES_BY_ID.get(probe)
    if spec is None:
        raise ValueError(f"probe {probe!r} is not in this worker's catalogue")
    return replace(spec, timeout_s=timeout_s) if spec.timeout_s != timeout_s else spec


async def serve(commands: BinaryIO, wire: BinaryIO) -> int:
    """Serve one pool on ``commands`` and ``wire`` until it stops or goes away."""
    reader, writer = await open_pipes(commands, wire)
    spec = await read_message(reader)
    if not isinstance(spec, EngineSpec):
        raise WireError(f"expected the engine's spec first, got {type(spec).__name__}")
    server = WorkerServer(build_engine(spec, None), writer)
    writer.write(encode(("ready",)))  # the pool counts a node's budget from here, not from the start-up
    status = 0
    try:
        while (message := await read_message(reader)) is not None and message != ("stop",):
            if message[0] == "judge":
                server.judge(*message[1:])
            elif message[0] == "cancel":
                server.cancel(message[1])
            elif message[0] == "cut":
                server.cut(message[1], message[2])
            else:
                raise WireError(f"not a request: {message!r:.80}")
    except WireError as exc:
        print(f"instinct-console engine worker: {exc}", file=sys.stderr)
        status = 1
    finally:
        await server.stop()
        try:
            await writer.drain()
            writer.close()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the pool is gone
    return status


def main() -> int:
    """Entry point of a worker process."""
    return run_served(serve)


if __name__ == "__main__":
    sys.exit(main())
