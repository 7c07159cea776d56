"""What the engine keeps per node after two quick sweeps, without engine workers (``--workers 0``).

Starts a simulated fleet (``--faults none``, MI300X), then a child process that builds the engine as the
console does (``build_engine``, with a store), sweeps twice, runs ``gc.collect()`` and prints its RSS and
what holds it: with ``--trace``, tracemalloc's top lines (started after the imports and the packs) and
the deep sizes of what the engine keeps for a sample of nodes (objects reachable from each holder, not
shared with the packs, the inventory or code). tracemalloc slows the sweeps: the RSS figure to quote is
from a run without it.

    nice -n 10 .venv/bin/python bench/memory.py --nodes 256 [--trace]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import gc
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
TARGET_KIB = 100  # issue 20: engine memory per node after two sweeps


def _rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


_SKIPPED = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.CodeType, types.MethodType)


def _reachable(roots: Iterable[object], skip: set[int]) -> dict[int, object]:
    """The objects reachable from ``roots`` by id, not through ``skip`` nor code."""
    seen: dict[int, object] = {}
    stack = list(roots)
    while stack:
        obj = stack.pop()
        if id(obj) in seen or id(obj) in skip or isinstance(obj, _SKIPPED):
            continue
        seen[id(obj)] = obj
        stack.extend(gc.get_referents(obj))
    return seen


def deep_size(roots: Iterable[object], skip: set[int]) -> int:
    """Bytes of the objects reachable from ``roots`` (each once), not through ``skip`` nor code."""
    return sum(sys.getsizeof(obj) for obj in _reachable(roots, skip).values())


def _holders(engine: Any, node: str) -> dict[str, list[object]]:
    """What the engine keeps of ``node``, by holder."""
    facts = engine.facts.get(node)
    transport = engine.transport
    peers = getattr(transport, "_peers", {})
    outcomes = engine.outcomes.get(node, {})
    return {
        "outcomes: parsed outputs (outcomes)": [outcomes],
        "facts.gpus": [facts.__dict__.get("gpus")] if facts else [],
        "facts.xgmi": [facts.__dict__.get("xgmi")] if facts else [],
        "facts.nics + nic_rates": [facts.__dict__.get("nics"), facts.__dict__.get("nic_rates")] if facts else [],
        "facts: the rest (stack, readings, subjects, previous)": [
            facts.stack,
            facts.readings,
            facts._subjects,
            facts.previous,
        ]
        if facts
        else [],
        "verdict": [engine.verdicts.get(node)],
        "steady stamp": [engine.checker.steady._stamps.get(node)],
        "history readings": [engine.judging.history.get(node)],
        "SSH connection (transport)": [peers.get(node)],
    }


def _parse_caches() -> list[object]:
    from console.sweep.catalog import PROBES_BY_ID

    caches: dict[int, object] = {}
    for spec in PROBES_BY_ID.values():
        cells = [cell.cell_contents for cell in getattr(spec.parse, "__closure__", None) or ()]
        for candidate in (spec.parse, *cells):
            if hasattr(candidate, "_results"):
                caches[id(candidate)] = candidate
    return list(caches.values())


def child(inventory_path: str, store_path: str, trace: bool, sample: int) -> None:
    """Sweep twice with one engine, then print what it holds as one JSON line."""
    sys.path.insert(0, str(BENCH))
    from _measure import raise_nofile

    from console.checks import load_packs
    from console.inventory import load_inventory
    from console.runtime import tune_gc
    from console.service.assembly import EngineSpec, build_engine
    from console.store import Store

    raise_nofile()
    tune_gc()
    inventory = load_inventory(inventory_path)
    packs = load_packs()
    gc.collect()
    rss_start = _rss_mib()
    sys._debugmallocstats()  # to stderr, as after the sweeps: pymalloc's arenas at the start
    if trace:
        tracemalloc.start(1)
    store = Store(Path(store_path))
    engine = build_engine(EngineSpec(inventory, packs, Path(store_path), workers=0), store)

    async def sweeps() -> list[dict[str, Any]]:
        runs = []
        for _ in range(2):
            t0, cpu0 = time.monotonic(), time.process_time()
            result = await engine.run()
            counts = {k.value: v for k, v in result.counts.items() if v}
            runs.append({"wall_s": time.monotonic() - t0, "cpu_s": time.process_time() - cpu0, "counts": counts})
        return runs

    loop = asyncio.new_event_loop()
    runs = loop.run_until_complete(sweeps())
    rss_uncollected = _rss_mib()  # as the console holds it: full collections are rare (``tune_gc``)
    unreachable = gc.collect()
    out: dict[str, Any] = {"nodes": len(inventory.nodes), "runs": runs, "rss_start_mib": rss_start}
    out["rss_uncollected_mib"], out["unreachable"] = rss_uncollected, unreachable
    out["rss_after_mib"] = _rss_mib()
    sys._debugmallocstats()  # to stderr: how much of pymalloc's arenas is in use
    with contextlib.suppress(OSError, AttributeError):  # glibc only: what freed memory the allocator keeps
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        out["rss_trimmed_mib"] = _rss_mib()
    if trace:
        snapshot = tracemalloc.take_snapshot()
        traced = tracemalloc.get_traced_memory()[0]
        out["traced_mib"] = traced / 2**20
        out["top"] = [[str(stat.traceback[0]), stat.size / 2**20] for stat in snapshot.statistics("lineno")[:25]]
        tracemalloc.stop()
        shared = set(_reachable([packs, inventory, store], set()))
        names = [n.name for n in inventory.nodes][:: max(1, len(inventory.nodes) // sample)][:sample]
        sizes: dict[str, float] = {}
        union = 0
        for name in names:
            held = _holders(engine, name)
            for what, roots in held.items():
                sizes[what] = sizes.get(what, 0) + deep_size(roots, shared)
            union += deep_size([r for roots in held.values() for r in roots], shared)
        out["per_node_kib"] = {k: v / len(names) / 1024 for k, v in sizes.items()}
        out["per_node_union_kib"] = union / len(names) / 1024
        caches = _parse_caches()
        out["parse_caches"] = {
            "entries": sum(len(c._results) for c in caches),
            "kib_per_node": deep_size(caches, shared) / len(inventory.nodes) / 1024,
        }
        kept = [engine.outcomes, engine.facts, engine.verdicts, caches]
        out["outcomes_facts_verdicts_caches_kib_per_node"] = deep_size(kept, shared) / len(inventory.nodes) / 1024
    loop.run_until_complete(engine.close())
    store.close()
    # What the connections held (asyncssh's objects and OpenSSL's, which tracemalloc does not see).
    engine.transport = engine.checker = None  # type: ignore[assignment]
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        out["rss_closed_trimmed_mib"] = _rss_mib()
    out["max_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def main() -> None:
    """Start the fleet, run the child, print its figures against the target."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=256)
    ap.add_argument("--trace", action="store_true", help="tracemalloc top lines and deep sizes (slower)")
    ap.add_argument("--sample", type=int, default=16, help="nodes whose holders are sized (with --trace)")
    ap.add_argument("--child", nargs=2, metavar=("INVENTORY", "STORE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child, args.trace, args.sample)
        return
    sys.path.insert(0, str(BENCH))
    from sweep import sim_fleet

    from console.sim.launcher import start_sim_cluster

    print(f"load average {os.getloadavg()[0]:.2f}; {args.nodes} sim nodes", flush=True)
    scratch = Path(tempfile.mkdtemp(prefix="ic-mem-"))
    try:
        with start_sim_cluster(args.nodes, "mi300x", faults="none", timeout_s=120) as sim:
            fleet = sim_fleet(sim)
            argv = [sys.executable, __file__, "--child", str(fleet.inventory), str(scratch / "history.db")]
            argv += ["--trace"] * args.trace + ["--sample", str(args.sample)]
            done = subprocess.run(argv, capture_output=True, text=True, check=False)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if done.returncode != 0:
        sys.exit(done.stderr[-4000:])
    result = json.loads(done.stdout.strip().splitlines()[-1])
    # pymalloc's 1 MiB arenas held and the bytes in use in them: at the start, then after the sweeps
    stat = r"^# (?:arenas highwater mark|arenas allocated current|bytes in allocated blocks) += +([\d,]+)"
    arenas = [int(value.replace(",", "")) for value in re.findall(stat, done.stderr, re.M)]
    nodes = result["nodes"]
    grown = result["rss_after_mib"] - result["rss_start_mib"]
    for i, run in enumerate(result["runs"], 1):
        cpu_ms = run["cpu_s"] * 1000 / nodes
        print(f"sweep {i}: {run['wall_s']:.1f} s wall, engine CPU {cpu_ms:.1f} ms per node, {run['counts']}")
    print(
        f"RSS at start {result['rss_start_mib']:.1f} MiB, after two sweeps {result['rss_uncollected_mib']:.1f} MiB, "
        f"after gc.collect() ({result['unreachable']} unreachable objects) {result['rss_after_mib']:.1f} MiB"
    )
    per_node = result["rss_after_mib"] * 1024 / nodes
    print(f"over the start-up: {grown * 1024 / nodes:.0f} KiB per node; in all {per_node:.0f}")
    if len(arenas) == 6:
        _, held0, used0, most, held, used = arenas
        print(
            f"pymalloc arenas (1 MiB each) held / MiB in use in them: at the start {held0} / {used0 / 2**20:.1f}, "
            f"after {held} / {used / 2**20:.1f} (at most {most} held at once)"
        )
    if "rss_trimmed_mib" in result:
        trimmed = result["rss_trimmed_mib"]
        over = (trimmed - result["rss_start_mib"]) * 1024 / nodes
        print(f"after malloc_trim(0): {trimmed:.1f} MiB, {over:.0f} KiB per node over the start-up")
    if "rss_closed_trimmed_mib" in result:
        closed = result["rss_closed_trimmed_mib"]
        print(f"after engine.close(), no transport, malloc_trim(0): {closed:.1f} MiB")
    print(f"target <= {TARGET_KIB} KiB per node after two sweeps: {'pass' if per_node <= TARGET_KIB else 'miss'}")
    if args.trace:
        print(f"traced {result['traced_mib']:.1f} MiB ({result['traced_mib'] * 1024 / nodes:.0f} KiB per node)")
        for where, mib in result["top"]:
            print(f"  {mib * 1024 / nodes:7.1f} KiB/node  {where}")
        print("deep sizes, KiB per node (each holder alone; shared objects counted in each):")
        for what, kib in result["per_node_kib"].items():
            print(f"  {kib:7.1f}  {what}")
        print(f"  {result['per_node_union_kib']:7.1f}  all of them together")
        caches = result["parse_caches"]
        print(f"parse caches: {caches['entries']} entries, {caches['kib_per_node']:.1f} KiB per node alone")
        kept = result["outcomes_facts_verdicts_caches_kib_per_node"]
        print(f"outcomes + facts + verdicts + caches: {kept:.1f} KiB/node")


if __name__ == "__main__":
    main()
