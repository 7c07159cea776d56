"""The floors under the console's sweep, each run as a child of bench/floor.py so its CPU is measured alone.

``python bench/_floor_run.py transport INVENTORY PORT USER KEY KNOWN_HOSTS [PROFILE]``: asyncssh alone. One
connection per node (at most ``max_handshakes`` handshakes at a time, as the console), then the very
commands the engine sends for the quick set (its bundles, wrapped by the transport's ``remote_command``)
on parallel channels, every byte of stdout and stderr read and dropped: no parsing, no checks, no store,
no events. Then the same commands again on the same connections (the warm rerun's transport).

``python bench/_floor_run.py judge INVENTORY``: the engine without a store (``build_engine`` with none),
so transport plus the bundle splitting, the parsers and the checks; its events go to no subscriber.
Twice with one engine, like ``_engine_run.py``.

Each prints one JSON line: per pass the wall, this process's CPU, and what came back.
"""

from __future__ import annotations

import asyncio
import cProfile
import io
import json
import pstats
import sys
import time
from pathlib import Path

import asyncssh
from _measure import raise_nofile

from console.checks import load_packs
from console.inventory import load_inventory
from console.inventory.model import Inventory, Node
from console.runtime import tune_gc
from console.service.assembly import EngineSpec, build_engine
from console.sweep import SweepEngine
from console.sweep.bundle import bundle_script, bundle_timeout, group_probes
from console.sweep.catalog import ProbeSet, probes_for
from console.sweep.checker_local import LocalChecker
from console.transport.connect import transport_for
from console.transport.ssh import _CIPHERS
from console.transport.wrap import remote_command


def node_commands(engine: SweepEngine, checker: LocalChecker, inventory: Inventory, node: Node) -> list[str]:
    """What the engine sends ``node`` for a cold quick sweep: its probes in their node's form and timeout,
    grouped into bundles the engine's way, each wrapped as the SSH transport wraps ``sh -c SCRIPT``.

    The checker's own steps are called rather than copied, so this stays the console's argv.
    """
    specs = [checker.timed_for(node, checker.form_for(node, spec)) for spec in probes_for(ProbeSet.QUICK)]
    grace = inventory.ssh.kill_grace_s
    groups = group_probes(specs, engine.bundles_per_node)
    return [remote_command(["sh", "-c", bundle_script(g)], bundle_timeout(g), grace) for g in groups]


async def _run_command(conn: asyncssh.SSHClientConnection, command: str) -> tuple[int, int]:
    """Run ``command``, read stdout and stderr to their end; (bytes received, probe sections that ended).

    Sections are counted, not the bundle's exit status: a bundle ends with its last probe's cleanup,
    whose status the console does not read either.
    """
    process = await conn.create_process(command, encoding=None)
    process.stdin.write_eof()
    out, err = await asyncio.gather(process.stdout.read(), process.stderr.read())
    await process.wait_closed()
    return len(out) + len(err), out.count(b"\n@@ic-end ")


async def _transport_passes(inventory: Inventory, port: int, user: str, key: Path, known_hosts: Path) -> list[dict]:
    checker = LocalChecker(transport_for(inventory))
    engine = SweepEngine(inventory, checker.transport, load_packs(), checker=checker)  # asked for argv only, never run
    commands = {node.name: node_commands(engine, checker, inventory, node) for node in inventory.nodes}
    options = asyncssh.SSHClientConnectionOptions(
        config=None,
        username=user,
        port=port,
        # Read once, as the console's ``KnownHosts`` does: a path here makes asyncssh read and parse the
        # whole file again at every connect (a third of this client's CPU at 256 nodes, profiled).
        known_hosts=asyncssh.read_known_hosts(str(known_hosts)),
        client_keys=[asyncssh.read_private_key(key)],
        agent_path=None,
        password_auth=False,
        kbdint_auth=False,
        encryption_algs=_CIPHERS,
    )
    handshakes = asyncio.Semaphore(inventory.ssh.max_handshakes)
    conns: dict[str, asyncssh.SSHClientConnection] = {}

    async def one_node(node: Node) -> list[tuple[int, int]]:
        if node.name not in conns:
            async with handshakes:
                conns[node.name] = await asyncssh.connect(node.address, options=options)
        conn = conns[node.name]
        return await asyncio.gather(*(_run_command(conn, c) for c in commands[node.name]))

    passes = []
    try:
        for _ in range(2):
            cpu0, t0 = time.process_time(), time.monotonic()
            done = await asyncio.gather(*(one_node(n) for n in inventory.nodes))
            runs = [r for node in done for r in node]
            passes.append(
                {
                    "wall_s": time.monotonic() - t0,
                    "cpu_s": time.process_time() - cpu0,
                    "bundles": len(runs),
                    # one per quick probe and node when every probe answered
                    "sections": sum(ended for _, ended in runs),
                    "bytes": sum(size for size, _ in runs),
                }
            )
    finally:
        for conn in conns.values():
            conn.close()
        await asyncio.gather(*(c.wait_closed() for c in conns.values()))
    return passes


async def _judge_passes(inventory: Inventory) -> list[dict]:
    engine = build_engine(EngineSpec(inventory, load_packs(), None), None)
    passes = []
    try:
        for _ in range(2):
            cpu0, t0 = time.process_time(), time.monotonic()
            result = await engine.run(level=ProbeSet.QUICK)
            passes.append(
                {
                    "wall_s": time.monotonic() - t0,
                    "cpu_s": time.process_time() - cpu0,
                    "counts": {k.value: v for k, v in result.counts.items() if v},
                }
            )
    finally:
        await engine.close()
    return passes


def main() -> None:
    """Run the floor named by the first argument and print its passes as JSON."""
    mode, inventory_path = sys.argv[1], sys.argv[2]
    raise_nofile()
    tune_gc()  # as the console script does
    inventory = load_inventory(inventory_path)
    start_cpu = time.process_time()  # interpreter, imports and inventory: the cold run pays it once
    if mode == "judge":
        passes = asyncio.run(_judge_passes(inventory))
        print(json.dumps({"startup_cpu_s": start_cpu, "passes": passes}))
        return
    port, user, key, known_hosts = int(sys.argv[3]), sys.argv[4], Path(sys.argv[5]), Path(sys.argv[6])
    profile_path = Path(sys.argv[7]) if len(sys.argv) > 7 else None
    # CPU time, not wall: a wall-clock profile puts the loop's idle epoll wait on top.
    profiler = cProfile.Profile(time.process_time) if profile_path else None
    if profiler:
        profiler.enable()
    passes = asyncio.run(_transport_passes(inventory, port, user, key, known_hosts))
    if profiler and profile_path:
        profiler.disable()
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(15)
        profile_path.write_text(text.getvalue())
    print(json.dumps({"startup_cpu_s": start_cpu, "passes": passes}))


if __name__ == "__main__":
    main()
