"""The TUI's rerun path, measured: one SweepEngine, ``run`` twice in one process on the same connections.

Run as a child of bench/sweep.py (``python bench/_engine_run.py INVENTORY STORE``); prints one JSON line
with, per run, the wall time, this process's CPU, the time to the first verdict and the verdict counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import sys
import time
from pathlib import Path

from _measure import raise_nofile

from console.checks import load_packs
from console.inventory import load_inventory
from console.runtime import tune_gc
from console.service.assembly import EngineSpec, build_engine
from console.store import Store
from console.sweep import NodeDone, SweepEngine
from console.sweep.events import Event


def _cpu() -> float:
    """CPU of this process and of its engine workers (children that are still running are counted too)."""
    own = time.process_time()
    try:
        import psutil

        children = psutil.Process().children(recursive=True)
        return own + sum(sum(c.cpu_times()[:2]) for c in children if c.is_running())
    except Exception:  # psutil missing or a child gone between the listing and the reading
        return own


def _rss_mib() -> tuple[float, float]:
    """Resident memory now of this process (the engine) and of its engine workers, MiB."""
    import psutil

    own = psutil.Process()
    workers = 0
    for child in own.children(recursive=True):
        with contextlib.suppress(psutil.Error):  # a child gone between the listing and the reading
            workers += child.memory_info().rss
    return own.memory_info().rss / 2**20, workers / 2**20


async def _runs(engine: SweepEngine, count: int) -> list[dict[str, object]]:
    results: list[dict[str, object]] = []
    first: list[float] = []

    def on_event(event: Event) -> None:
        if isinstance(event, NodeDone) and not first:
            first.append(time.monotonic())

    engine.subscribe(on_event)
    try:
        for _ in range(count):
            first.clear()
            cpu0, own0, t0 = _cpu(), time.process_time(), time.monotonic()
            result = await engine.run()
            wall, cpu, own = time.monotonic() - t0, _cpu() - cpu0, time.process_time() - own0
            rss, workers_rss = _rss_mib()
            results.append(
                {
                    "wall_s": wall,
                    "cpu_s": cpu,
                    "engine_cpu_s": own,  # the engine's own process: with workers, what does not spread
                    "first_verdict_s": (first[0] - t0) if first else None,
                    "counts": {k.value: v for k, v in result.counts.items() if v},
                    # after this run, before the engine closes: what it holds for the next sweep
                    "rss_mib": rss,
                    "workers_rss_mib": workers_rss,
                }
            )
    finally:
        await engine.close()
    return results


def main() -> None:
    """Sweep the inventory twice with one engine and print the measurements as JSON."""
    inventory_path, store_path = sys.argv[1], Path(sys.argv[2])
    workers = int(sys.argv[3]) if len(sys.argv) > 3 else 0  # engine worker processes (0: none)
    raise_nofile()
    tune_gc()  # as the console script does for the TUI
    inventory = load_inventory(inventory_path)
    store = Store(store_path)
    engine = build_engine(EngineSpec(inventory, load_packs(), store_path, workers=workers), store)
    try:
        runs = asyncio.run(_runs(engine, 2))
    finally:
        store.close()
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"runs": runs, "max_rss_mib": rss_mib}))


if __name__ == "__main__":
    main()
