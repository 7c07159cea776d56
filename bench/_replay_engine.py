"""A stand-in engine process for bench/ui.py: speaks the engine's wire, replays a fleet's verdicts.

``python bench/_replay_engine.py FLEET.pickle RATE``. It answers every command at once, except
``StartSweep``, which it answers by streaming, at RATE nodes per second until the console stops it,
each node's 16 ProbeStarted and ProbeFinished events and its NodeDone (a clone of one of the
fleet's judged templates), through the real engine host's batching and compaction.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.ui.synthetic import renamed

from console.service import host as engine_host
from console.service.assembly import EngineSpec
from console.service.commands import StartSweep
from console.sweep.events import NodeDone, ProbeFinished, ProbeStarted

PROBES = 16


class Replay:
    """Streams clones of ``templates`` under ``names`` at ``rate`` nodes per second."""

    def __init__(self, host: engine_host.EngineHost, fleet: dict[str, Any], rate: float) -> None:
        self.host, self.rate = host, rate
        self.names: list[str] = fleet["names"]
        self.templates: list[NodeDone] = fleet["templates"]
        self.template_of: dict[str, int] = fleet["template_of"]

    async def stream(self) -> None:
        started, sent = time.monotonic(), 0
        while True:
            for name in self.names:
                template = self.templates[self.template_of[name]]
                for i in range(PROBES):
                    self.host.on_event(ProbeStarted(sweep_id=1, node=name, probe=f"p{i}"))
                for i in range(PROBES):
                    self.host.on_event(ProbeFinished(sweep_id=1, node=name, probe=f"p{i}", ok=True, duration_s=0.1))
                event = renamed(template, {template.verdict.node: name}, share_passing=True)
                self.host.on_event(event)
                sent += 1
                ahead = started + sent / self.rate - time.monotonic()
                if ahead > 0:
                    await asyncio.sleep(ahead)


async def serve(fleet: dict[str, Any], rate: float, commands: Any, wire: Any) -> None:
    reader, writer = await engine_host.open_pipes(commands, wire)
    host = engine_host.EngineHost(writer)
    replay = Replay(host, fleet, rate)
    assert isinstance(await engine_host.read_message(reader), EngineSpec)
    host.send(("ready",))
    streams: list[asyncio.Task[None]] = []
    while (message := await engine_host.read_message(reader)) not in (None, ("stop",)):
        _, call_id, command = message
        if isinstance(command, StartSweep):
            streams.append(asyncio.create_task(replay.stream()))
        else:
            host.send(("reply", call_id, True, None))
    for task in streams:
        task.cancel()
    host.flush()
    await writer.drain()


def main() -> None:
    fleet = pickle.loads(Path(sys.argv[1]).read_bytes())
    rate = float(sys.argv[2])
    wire = engine_host.claim_stdout()
    asyncio.run(serve(fleet, rate, os.fdopen(0, "rb", buffering=0), wire))


if __name__ == "__main__":
    main()
