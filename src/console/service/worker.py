"""An engine worker process: ``python -m console.service.worker``, started by a ``WorkerPool``.

It reads an ``EngineSpec`` (``workers=0``, no store) on stdin, builds its engine from it with
``build_engine``, the one assembly, and says ``("ready",)``. For each ``("judge", node, [(probe,
timeout)], refresh, pin, deadline)`` it checks the node with that engine (connect, probes, parse,
judge) by the console's deadline and answers ``("judged", node, WorkerJudged)``, after the node's
probe events ``("event", node, event)``. ``("cancel", node)`` stops a node (its commands are killed
on the node); ``("stop",)`` or the end of stdin cancels every node, waits for the kills and closes
the connections. Frames are those of ``console.service.wire``.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import replace
from typing import Any, BinaryIO

from console.inventory.model import Node, StackPin
from console.service.assembly import EngineSpec, build_engine, build_transport
from console.service.host import open_pipes, read_message, run_served
from console.service.wire import WireError, encode
from console.store import ProbeRunRecord
from console.sweep.bundle import Section
from console.sweep.catalog import PROBES_BY_ID, ProbeSpec
from console.sweep.engine import SweepEngine
from console.sweep.events import Event, ProbeFinished, ProbeStarted
from console.sweep.node_report import WorkerJudged, build_report
from console.sweep.vanished import PROBE as LISTED

# Probe events leave in batches (one pipe write, one wake-up of the console per batch); a node's
# report leaves at once, after them.
EVENT_BATCH_S = 0.01


class NodeJudge:
    """Checks a node with an engine that has no store and makes what a worker answers of it: the compact
    report, what the screens show, the probe runs. A worker process serves its pool with one; the pool
    uses one in the console's own engine process for the first wave while its workers start."""

    def __init__(self, engine: SweepEngine) -> None:
        self.engine = engine
        self.engine.runs_kept = {}
        # node -> probe -> its latest run here: a probe reused while the stack stamp is unchanged is
        # reported with the output it was judged on.
        self._last: dict[str, dict[str, ProbeRunRecord]] = {}

    async def judged(
        self, node: Node, specs: list[ProbeSpec], refresh: bool, pin: StackPin, deadline: float | None
    ) -> WorkerJudged:
        """Check and judge ``node`` by ``deadline`` (``time.monotonic``) against ``pin``."""
        self.engine.pins[node.pool] = pin  # the console's pin now (an operator may have set it since)
        self.engine.runs_kept = self.engine.runs_kept or {}
        self.engine.runs_kept.pop(node.name, None)
        verdict = await self.engine.check(node, specs, refresh, deadline)
        return self._judged(node, verdict)

    def _judged(self, node: Node, verdict: Any) -> WorkerJudged:
        engine = self.engine
        facts = engine.facts.get(node.name)
        if facts is None:  # the engine found it unreachable: its one finding says why
            return WorkerJudged(report=None, unreachable=_reason(verdict.findings[0].message))
        runs = (engine.runs_kept or {}).pop(node.name, [])
        last = self._last.setdefault(node.name, {})
        last.update({run.probe: run for run in runs})
        empty = ProbeRunRecord(
            probe="", command="", exit_status=None, started_at=0.0, duration_s=0.0, stdout=b"", problem=None
        )
        sections = [Section(probe, (run := last.get(probe, empty)).stdout, run.exit_status) for probe in facts.outcomes]
        report = build_report(
            node, "worker", "done", 0.0, verdict, facts, engine.packs.get(node.gpu_model), sections, raw=False
        )
        listed = facts.outcomes.get(LISTED) if len(facts.gpus) < node.gpu_count else None
        # Outputs leave compressed as the store keeps them: ~8x fewer bytes through the pipe, and the
        # compression on this core instead of the console's (0.26 s of its 1.2 s for 256 nodes).
        packed = [run.packed() for run in runs]
        return WorkerJudged(report, None, facts.gpus, facts.xgmi, facts.nics, listed, packed)


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

    def judge(
        self, name: str, probes: list[tuple[str, float]], refresh: bool, pin: StackPin, deadline: float | None
    ) -> None:
        """Start checking ``name`` by ``deadline`` (the console's, ``time.monotonic``); a node still being
        checked is stopped first."""
        self.cancel(name)
        task = asyncio.get_running_loop().create_task(self._judge(name, probes, refresh, pin, deadline))
        self._tasks[name] = task
        task.add_done_callback(lambda t: self._tasks.pop(name, None) if self._tasks.get(name) is t else None)

    def cancel(self, name: str) -> None:
        """Stop checking ``name``: its commands are killed on the node by the engine's transport."""
        task = self._tasks.pop(name, None)
        if task is not None:
            task.cancel()

    async def _judge(
        self, name: str, probes: list[tuple[str, float]], refresh: bool, pin: StackPin, deadline: float | None
    ) -> None:
        try:
            node = self.engine.inventory.node(name)
            specs = [_spec(probe, timeout_s) for probe, timeout_s in probes]
            judged = await self._node_judge.judged(node, specs, refresh, pin, deadline)
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


def _reason(message: str) -> str:
    """The reason in an unreachable node's finding (``could not check: <reason>``)."""
    return message.split(": ", 1)[1] if ": " in message else message


async def serve(commands: BinaryIO, wire: BinaryIO) -> int:
    """Serve one pool on ``commands`` and ``wire`` until it stops or goes away."""
    reader, writer = await open_pipes(commands, wire)
    spec = await read_message(reader)
    if not isinstance(spec, EngineSpec):
        raise WireError(f"expected the engine's spec first, got {type(spec).__name__}")
    server = WorkerServer(build_engine(spec, None, build_transport(spec)), writer)
    writer.write(encode(("ready",)))  # the pool counts a node's budget from here, not from the start-up
    status = 0
    try:
        while (message := await read_message(reader)) is not None and message != ("stop",):
            if message[0] == "judge":
                server.judge(*message[1:])
            elif message[0] == "cancel":
                server.cancel(message[1])
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
