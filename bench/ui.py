"""Benchmark of the live console at fleet scale, driven headlessly (``App.run_test``).

1,024 simulated nodes stream verdicts into the console: NodeDone events rendered by the simulator and
judged by the real parsers and checks (32 distinct nodes, cloned under new names; every clone's full
findings are in a history database, as the engine would have committed them). Then the operator's keys
are timed from key press to the frame that shows their effect: cursor moves (idle, and while every
node's verdict streams in again, from an engine process and from an engine thread), filter typing and
screen switches. Also: events applied per second, repaints, RSS and the UI thread's CPU. With
``--real-sweep N``, cursor keys are also timed all through a real quick sweep of N simulated nodes.

    .venv/bin/python bench/ui.py [--nodes 1024] [--keys 200] [--live-rate 100] [--real-sweep 1024]

Targets (issue 20): keypress p99 <= 33 ms in every run (the issue asks for three runs at 1,024 nodes),
and RSS <= 300 MB. Each is printed as a ``target: ... -> pass|miss`` line; exit status 1 when one is
missed.
"""

from __future__ import annotations

import argparse
import asyncio
import pickle
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil

# isort: off
# First: the console's package sets Textual's frame rate (TEXTUAL_FPS), which Textual reads when it is
# first imported. Imported after Textual, the benchmark timed a console at 60 frames a second, not 120.
import console.ui  # noqa: F401
from textual import events
from textual.constants import MAX_FPS
from textual.widgets import Input

# isort: on

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.ui.synthetic import renamed, synthetic_fleet

from console.checks import load_packs
from console.inventory import load_inventory
from console.inventory.load import from_mapping
from console.inventory.model import Inventory
from console.model.findings import Status
from console.runtime import tune_gc
from console.service.assembly import EngineSpec
from console.service.client import ProcessBridge
from console.service.commands import StartSweep
from console.sim.launcher import SimCluster, start_sim_cluster
from console.store import Store
from console.sweep.events import Event, NodeDone, SweepDone, SweepStarted
from console.ui.app import ConsoleApp

KEY_P99_TARGET_MS = 33.0  # issue 20: p99 in every one of three runs at 1,024 nodes
RSS_TARGET_MB = 300.0
TEMPLATES = 32
SWEEP_ID = 1


class TimedApp(ConsoleApp):
    """The console, telling the benchmark when a frame reaches the (headless) terminal."""

    painted: asyncio.Event

    def _display(self, screen: Any, renderable: Any) -> None:
        super()._display(screen, renderable)
        if renderable is not None:
            self.painted.set()


class Fleet:
    """``nodes`` names in two pools, each a clone of one of 32 judged simulated nodes."""

    def __init__(self, nodes: int) -> None:
        base = synthetic_fleet(TEMPLATES, "mi300x,mi355x", 2, level="standard", probe_events=False)
        self.templates = base.node_done()
        width = len(str(nodes))
        self.names = [f"gpu{i:0{width}d}" for i in range(1, nodes + 1)]
        half = nodes // 2
        per_pool = TEMPLATES // 2
        self.template_of = {
            name: self.templates[(i % per_pool) + (per_pool if i >= half else 0)] for i, name in enumerate(self.names)
        }
        pools = [
            {
                "name": "mi300x-a",
                "gpu_model": "MI300X",
                "nodes": ",".join(self.names[:half]),
                "labels": {"rack": "r01"},
            },
            {
                "name": "mi355x-a",
                "gpu_model": "MI355X",
                "nodes": ",".join(self.names[half:]),
                "labels": {"rack": "r02"},
            },
        ]
        self.inventory: Inventory = from_mapping({"name": "bench", "pools": pools}, "bench")

    def dump(self, path: Path) -> None:
        """Write what the replaying engine process needs to clone the same fleet."""
        index = {id(t): i for i, t in enumerate(self.templates)}
        template_of = {name: index[id(t)] for name, t in self.template_of.items()}
        path.write_bytes(pickle.dumps({"names": self.names, "templates": self.templates, "template_of": template_of}))

    def clone(self, name: str, *, full: bool = False) -> NodeDone:
        """The NodeDone of node ``name``; ``full`` renames every finding (for the history database)."""
        template = self.template_of[name]
        event = renamed(template, {template.verdict.node: name}, share_passing=not full)
        assert isinstance(event, NodeDone)
        return event

    def record(self, store: Store) -> None:
        """Commit every clone's full verdict, as the engine does before it sends NodeDone."""
        sweep = store.start_sweep("standard", "bench", "", None)
        assert sweep == SWEEP_ID
        for name in self.names:
            event = self.clone(name, full=True)
            store.record_node(SWEEP_ID, event.pool, event.verdict, event.snapshot.stack)

    def sweep(self) -> Iterator[Event]:
        """One sweep's events, made as they are sent (the benchmark keeps none of them)."""
        yield SweepStarted(sweep_id=SWEEP_ID, nodes=self.names, probes=["amdsmi.list"], level="standard")
        counts = dict.fromkeys(Status, 0)
        for name in self.names:
            event = self.clone(name)
            counts[event.verdict.status] += 1
            yield event
        yield SweepDone(sweep_id=SWEEP_ID, outcome="done", counts=counts, duration_s=1.0)


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


class KeyTimer:
    """Times keys: wall time to the next frame, and the UI thread's CPU time spent meanwhile.

    On a machine shared with other work the wall time includes waiting for a core; the CPU time is
    what the console itself spent, which is what a quiet machine would show as latency.
    """

    def __init__(self, app: TimedApp) -> None:
        self.app = app
        self.wall: dict[str, list[float]] = {}
        self.cpu: dict[str, list[float]] = {}

    async def press(self, phase: str, key: str, timeout_s: float = 10.0) -> None:
        """Press ``key`` and record both times under ``phase``."""
        await asyncio.sleep(0.03)  # let a frame in flight land first
        self.app.painted.clear()
        started, cpu = time.perf_counter(), time.thread_time()
        # As a terminal sends it: App.simulate_key gives "space" no character, so an Input would not get
        # the blank, and the backspace meant for it would change nothing and wait for the cursor blink.
        self.app.post_message(events.Key(key, " " if key == "space" else key if len(key) == 1 else None))
        await asyncio.wait_for(self.app.painted.wait(), timeout_s)
        self.wall.setdefault(phase, []).append(time.perf_counter() - started)
        self.cpu.setdefault(phase, []).append(time.thread_time() - cpu)


def thread_cpu(native_id: int) -> float:
    """CPU seconds used so far by one thread of this process."""
    for thread in psutil.Process().threads():
        if thread.id == native_id:
            return float(thread.user_time + thread.system_time)
    return 0.0


async def run(nodes: int, keys: int, store: Store, live_rate: float, scratch: Path) -> dict[str, Any]:
    """Drive the console and collect the figures."""
    fleet = Fleet(nodes)
    fleet.record(store)
    app = TimedApp(
        fleet.inventory, load_packs(), store=store, start_sweep=False, export_dir=Path(tempfile.gettempdir())
    )
    app.painted = asyncio.Event()
    results: dict[str, Any] = {"nodes": nodes, "live_rate": live_rate}
    fleet_file = scratch / "fleet.pickle"
    fleet.dump(fleet_file)
    ui_thread = threading.get_native_id()
    timer = KeyTimer(app)
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        app.main_screen.grid.focus()

        # 1. the sweep streams in from another thread, as the engine's callback delivers it
        repaints_before, cpu_before = app.flush_count, thread_cpu(ui_thread)
        started = time.perf_counter()
        sent = 0

        def feed() -> None:
            nonlocal sent
            for event in fleet.sweep():
                app.ingest(event)
                sent += 1

        feeder = threading.Thread(target=feed)
        feeder.start()
        while feeder.is_alive() or any(r.verdict is None for r in app.state.rows()):
            await asyncio.sleep(0.005)
        await pilot.pause(0.3)
        elapsed = time.perf_counter() - started
        results.update(events=sent, events_per_s=sent / elapsed, repaints=app.flush_count - repaints_before)
        results["stream_ui_cpu_pct"] = 100 * (thread_cpu(ui_thread) - cpu_before) / elapsed

        # 2. cursor moves, idle
        for i in range(keys):
            await timer.press("cursor", "down" if i % 40 < 20 else "up")

        # 3. cursor moves while every node's verdict streams in again (a rerun of the whole fleet), from an
        # engine process as the console script runs it: here one that replays the fleet at ``live_rate``
        # nodes per second, each node with its probe events, through the engine host's batching.
        replay = [sys.executable, str(Path(__file__).with_name("_replay_engine.py")), str(fleet_file), str(live_rate)]
        bridge = ProcessBridge(EngineSpec(fleet.inventory, {}, None), app.ingest, command=replay)
        bridge.start()
        bridge.wait_ready()
        versions = {row.name: row.version for row in app.state.rows()}
        bridge.request(StartSweep("standard"))
        cpu_before, started = thread_cpu(ui_thread), time.perf_counter()
        for i in range(keys):
            await timer.press("cursor_live", "down" if i % 40 < 20 else "up")
        elapsed = time.perf_counter() - started
        results["live_ui_cpu_pct"] = 100 * (thread_cpu(ui_thread) - cpu_before) / elapsed
        # Nodes whose row changed, per second (each node comes round once in the phase at the default rate).
        results["live_nodes_per_s"] = sum(r.version > versions[r.name] for r in app.state.rows()) / elapsed
        await asyncio.to_thread(bridge.stop)
        await pilot.pause(0.3)

        # 3b. the same with the engine on a thread of the console's process (how tests and embedders run
        # it), saturating it as a CPU-bound engine does: every verdict again, as fast as it can be made.
        stop = threading.Event()

        def storm() -> None:
            while not stop.is_set():
                for name in fleet.names:
                    if stop.is_set():
                        return
                    app.ingest(fleet.clone(name))

        storm_thread = threading.Thread(target=storm)
        storm_thread.start()
        cpu_before, started = thread_cpu(ui_thread), time.perf_counter()
        for i in range(keys):
            await timer.press("cursor_live_thread", "down" if i % 40 < 20 else "up")
        elapsed = time.perf_counter() - started
        results["live_thread_ui_cpu_pct"] = 100 * (thread_cpu(ui_thread) - cpu_before) / elapsed
        stop.set()
        storm_thread.join()
        await pilot.pause(0.3)

        # 4. filter typing: every character re-filters all rows
        await pilot.press("slash")
        for text in ("gpu0", "verdict=FAIL", "!verdict=PASS rack=r02", "gpu[0100-0300]"):
            for char in text:
                await timer.press("filter", char if char != " " else "space")
            typed = app.main_screen.query_one("#filter", Input).value
            assert typed == text, f"the filter line holds {typed!r}: a key was lost, its frame timed nothing"
            for _ in text:
                await timer.press("filter", "backspace")
        await pilot.press("enter")

        # 5. screen switches: the detail screen of a failing node and back
        app.main_screen.action_sort("severity")
        await pilot.pause(0.2)
        for _ in range(max(10, keys // 10)):
            await timer.press("screen", "enter")
            await pilot.pause(0.1)
            await timer.press("screen", "escape")
            await pilot.pause(0.1)
        results["lines_rendered"] = app.main_screen.grid.lines_rendered
    for name, values in timer.wall.items():
        results[f"{name}_p50_ms"] = 1000 * statistics.median(values)
        results[f"{name}_p99_ms"] = 1000 * percentile(values, 0.99)
        results[f"{name}_cpu_p50_ms"] = 1000 * statistics.median(timer.cpu[name])
        results[f"{name}_cpu_p99_ms"] = 1000 * percentile(timer.cpu[name], 0.99)
        results[f"{name}_n"] = len(values)
        results[f"{name}_over_target"] = sum(v * 1000 > KEY_P99_TARGET_MS for v in values)
        results[f"{name}_slowest_ms"] = [round(1000 * v) for v in sorted(values)[-3:]]
    results["load_avg"] = psutil.getloadavg()[0]
    results["fps"] = MAX_FPS
    results["rss_mb"] = psutil.Process().memory_info().rss / 2**20
    return results


async def real_sweep(sim: SimCluster, engine: str, store_path: Path) -> dict[str, Any]:
    """Cursor keys pressed all through one real quick sweep of ``sim`` by the console's engine."""
    inventory, packs = load_inventory(sim.inventory_path), load_packs()
    store = Store(store_path)
    spec = EngineSpec(inventory, packs, store.path)
    app = TimedApp(
        inventory,
        packs,
        store=store,
        export_dir=store_path.parent,
        engine_spec=spec,
        engine_in_thread=engine == "thread",
    )
    app.painted = asyncio.Event()
    timer = KeyTimer(app)
    try:
        async with app.run_test(size=(200, 60)) as pilot:
            started = time.perf_counter()
            await pilot.pause(0.5)
            app.main_screen.grid.focus()
            presses = 0
            while not app.state.progress.sweep_id or app.state.progress.running:
                await timer.press("keys", "down" if presses % 40 < 20 else "up")
                presses += 1
            wall = time.perf_counter() - started
    finally:
        store.close()
    keys = timer.wall["keys"]
    return {
        "engine": engine,
        "sweep_s": wall,
        "keys": len(keys),
        "p50_ms": 1000 * statistics.median(keys),
        "p99_ms": 1000 * percentile(keys, 0.99),
        "max_ms": 1000 * max(keys),
        "verdicts": sum(r.verdict is not None for r in app.state.rows()),
    }


def report(results: dict[str, Any], out: Callable[[str], None] = print) -> bool:
    """Print the figures; True when every target is met."""
    cores = psutil.cpu_count()
    out(
        f"console UI benchmark: {results['nodes']} nodes, {results['events']} events "
        f"(load average {results['load_avg']:.1f} on {cores} cores; Textual at {results['fps']} frames a second)"
    )
    stream = f"{results['events_per_s']:8.0f} events/s applied, {results['repaints']} repaints"
    out(f"  stream        {stream}, UI thread {results['stream_ui_cpu_pct']:.0f} % CPU")
    worst = 0.0
    labels = {
        "cursor": "cursor move",
        "cursor_live": "cursor, live",
        "cursor_live_thread": "live, thread",
        "filter": "filter key",
        "screen": "screen switch",
    }
    for name, label in labels.items():
        p50, p99 = results[f"{name}_p50_ms"], results[f"{name}_p99_ms"]
        cpu50, cpu99 = results[f"{name}_cpu_p50_ms"], results[f"{name}_cpu_p99_ms"]
        if name != "cursor_live_thread":  # not the console script's engine: shown for comparison
            worst = max(worst, p99)
        out(
            f"  {label:<13} p50 {p50:6.1f} ms   p99 {p99:6.1f} ms   UI CPU p50 {cpu50:5.1f} ms p99 {cpu99:6.1f} ms"
            f"   (n={results[f'{name}_n']}, {results[f'{name}_over_target']} over {KEY_P99_TARGET_MS:.0f} ms,"
            f" slowest {results[f'{name}_slowest_ms']} ms)"
        )
    out(
        f"  live stream   engine process replaying {results['live_rate']:.0f} nodes/s"
        f" ({results['live_nodes_per_s']:.0f} nodes updated/s): UI thread {results['live_ui_cpu_pct']:.0f} % CPU;"
        f" engine thread saturated: UI thread {results['live_thread_ui_cpu_pct']:.0f} % CPU"
    )
    out(f"  RSS           {results['rss_mb']:.0f} MB")
    for real in results.get("real_sweeps", []):
        line = (
            f"  real sweep    engine {real['engine']:<7}: {real['verdicts']} nodes judged in {real['sweep_s']:.1f} s;"
            f" cursor keys meanwhile p50 {real['p50_ms']:.1f} ms p99 {real['p99_ms']:.1f} ms"
            f" max {real['max_ms']:.0f} ms (n={real['keys']})"
        )
        out(line)
    ok_keys, ok_rss = worst <= KEY_P99_TARGET_MS, results["rss_mb"] <= RSS_TARGET_MB
    out(
        f"target: keypress p99 <= {KEY_P99_TARGET_MS:.0f} ms in every phase of this run (the engine thread's"
        f" not counted): worst {worst:.1f} ms -> {'pass' if ok_keys else 'miss'}"
    )
    out(f"target: RSS <= {RSS_TARGET_MB:.0f} MB: {results['rss_mb']:.0f} MB -> {'pass' if ok_rss else 'miss'}")
    return ok_keys and ok_rss


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--keys", type=int, default=200, help="cursor moves timed per phase")
    parser.add_argument(
        "--live-rate", type=float, default=100.0, help="nodes per second the engine process streams (default 100)"
    )
    parser.add_argument(
        "--real-sweep",
        type=int,
        default=0,
        metavar="N",
        help="also press cursor keys all through a real quick sweep of N simulated nodes, engine in its process"
        " and on a thread (not a target: the simulator shares the two cores)",
    )
    args = parser.parse_args(argv)
    tune_gc()  # as the console script does before it opens the TUI
    with tempfile.TemporaryDirectory(prefix="ic-bench-ui-") as folder:
        store = Store(Path(folder) / "history.sqlite")
        try:
            results = asyncio.run(run(args.nodes, args.keys, store, args.live_rate, Path(folder)))
        finally:
            store.close()
        if args.real_sweep:
            with start_sim_cluster(args.real_sweep, "mi300x", faults="none", timeout_s=120) as sim:
                results["real_sweeps"] = [
                    asyncio.run(real_sweep(sim, engine, Path(folder) / f"real-{engine}.sqlite"))
                    for engine in ("process", "thread")
                ]
    return 0 if report(results) else 1


if __name__ == "__main__":
    sys.exit(main())
