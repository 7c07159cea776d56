"""The floors under issue 20's missed targets: what asyncssh alone costs, what judging adds, what the store adds.

On one simulated fleet (``--faults none``, MI300X) per size, each a child process measured with wait4:

- a. transport: asyncssh alone sends every node the engine's quick bundles and reads all output
  (``bench/_floor_run.py transport``), then again on the same connections (the warm transport);
- b. judge: the engine without a store, so a plus splitting, parsing and checks (``_floor_run.py judge``);
- c. the console cold (``sweep --probes quick --workers 0``) and warm, as bench/sweep.py runs them;
- d. pdsh, as bench/sweep.py runs it.

Prints CPU ms per node and wall for each, the ratios to pdsh's cold CPU and wall, and the split of the
console's CPU per node into transport (a), judging (b - a) and store and events (c - b).

    .venv/bin/python bench/floor.py --nodes 256,1024 [--profile 256] [--json floor.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import psutil

from console.sim.launcher import start_sim_cluster

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import Fleet, Measured, raise_nofile, run_measured
from sweep import BENCH, Row, run_console_cold, run_console_warm, run_pdsh, sim_fleet, with_server_cpu


def run_floor(row: Row, fleet: Fleet, mode: str, profile: Path | None = None) -> None:
    """``_floor_run.py MODE`` as a child: its cold figure is the child's whole CPU (start-up and first pass,
    wait4) less its second pass; the warm figure is the second pass alone (in-process CPU)."""
    argv = [sys.executable, str(BENCH / "_floor_run.py"), mode, str(fleet.inventory)]
    if mode == "transport":
        argv += [str(fleet.port), fleet.user, str(fleet.key), str(fleet.known_hosts)]
        argv += [str(profile)] if profile else []
    run = run_measured(argv)
    lines = run.stdout.decode(errors="replace").strip().splitlines()
    try:
        report = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        print(f"  {mode} failed (rc={run.returncode}): {run.stdout[-2000:]!r}", flush=True)
        return
    first, second = report["passes"]
    name = "a transport" if mode == "transport" else "b judge"
    what = {k: v for k, v in first.items() if k not in ("wall_s", "cpu_s")}
    cold = Measured(first["wall_s"], run.cpu_s - second["cpu_s"], run.max_rss_mib, run.returncode, b"")
    row.add(f"{name} cold", cold, startup_cpu_s=report["startup_cpu_s"], **_flat(what))
    warm = Measured(second["wall_s"], second["cpu_s"], run.max_rss_mib, run.returncode, b"")
    row.add(f"{name} warm", warm, **_flat({k: v for k, v in second.items() if k not in ("wall_s", "cpu_s")}))


def _flat(what: dict[str, object]) -> dict[str, float | int | None]:
    """Pass details as numbers for ``Row.add``: verdict counts become ``PASS=...`` fields."""
    out: dict[str, float | int | None] = {}
    for key, value in what.items():
        if isinstance(value, dict):
            out.update({str(k): int(v) for k, v in value.items()})
        elif isinstance(value, int | float):
            out[key] = value
    return out


def bench_floor(nodes: int, fanout: int, profile: Path | None) -> Row:
    """a, b, c and d against one simulated fleet of ``nodes``."""
    load = os.getloadavg()
    print(f"sim fleet of {nodes} nodes; load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
    row = Row("sim (asyncssh)", nodes, fanout)
    row.results["load average"] = {"1m": load[0], "5m": load[1], "15m": load[2]}
    scratch = Path(tempfile.mkdtemp(prefix="ic-floor-"))
    try:
        with start_sim_cluster(nodes, "mi300x", faults="none", timeout_s=120) as sim:
            fleet = sim_fleet(sim)
            server = psutil.Process(sim.proc.pid)
            contenders = (
                lambda r, f, s: run_floor(r, f, "transport"),
                lambda r, f, s: run_floor(r, f, "judge"),
                run_console_cold,
                run_console_warm,
                run_pdsh,
            )
            for contender in contenders:
                with_server_cpu(row, server, contender, fleet, scratch)
            if profile is not None:  # apart from the measured run: the profiler slows what it watches
                run_floor(Row("profiled", nodes, fanout), fleet, "transport", profile)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return row


def per_node_ms(row: Row, name: str) -> float | None:
    """Client CPU per node of ``name`` in ``row``, ms."""
    result = row.results.get(name)
    return float(result["cpu_s"] or 0) * 1000 / row.nodes if result else None


def print_floor(row: Row) -> None:
    """CPU per node and wall per contender, the ratios to pdsh's cold, and the console's CPU split."""
    pdsh_ms, pdsh = per_node_ms(row, "pdsh"), row.results.get("pdsh")
    pdsh_wall = float(pdsh["wall_s"] or 0) if pdsh else None
    print(f"\n{row.nodes} nodes        cpu ms/node  x pdsh cpu   wall s  pdsh wall/this  sim cpu s  start-up ms/node")
    names = ["a transport", "b judge", "console"]
    for name in [f"{n} {how}" for n in names for how in ("cold", "warm")] + ["pdsh"]:
        result, ms = row.results.get(name), per_node_ms(row, name)
        if not result or ms is None:
            continue
        wall = float(result["wall_s"] or 0)
        cpu_ratio = f"{ms / pdsh_ms:.2f}x" if pdsh_ms else "-"
        wall_ratio = f"{pdsh_wall / wall:.2f}x" if pdsh_wall and wall else "-"
        server = result.get("server_cpu_s")
        startup = result.get("startup_cpu_s")
        start_ms = f"{float(startup) * 1000 / row.nodes:.1f}" if isinstance(startup, float | int) else "-"
        print(
            f"  {name:<16}{ms:>9.1f}{cpu_ratio:>11}{wall:>9.1f}{wall_ratio:>16}"
            f"{server if server else '-':>11}{start_ms:>18}"
        )
    for how in ("cold", "warm"):
        a, b, c = (per_node_ms(row, f"{n} {how}") for n in names)
        if a is not None and b is not None and c is not None:
            print(
                f"  console {how} {c:.1f} ms/node = transport {a:.1f} + judging {b - a:.1f}"
                f" + store and events {c - b:.1f} (a / b - a / c - b)"
            )


def main() -> None:
    """Measure the floors at every size asked for."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", default="256,1024", help="comma list of fleet sizes (default 256,1024)")
    ap.add_argument("--fanout", type=int, default=64, help="pdsh's fan-out; the console's max_handshakes is 64")
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="also cProfile a (top 15 by tottime) at N")
    ap.add_argument("--json", type=Path, help="also write the measurements to this file")
    args = ap.parse_args()
    raise_nofile()
    rows = []
    for nodes in (int(n) for n in args.nodes.split(",") if n):
        profile = Path(tempfile.gettempdir()) / f"ic-floor-profile-{nodes}.txt" if nodes == args.profile else None
        row = bench_floor(nodes, args.fanout, profile)
        print_floor(row)
        if profile is not None and profile.exists():
            print(f"\ncProfile of a at {nodes} nodes (both passes), top 15 by tottime:\n{profile.read_text()}")
            profile.unlink()
        rows.append(row)
    if args.json:
        args.json.write_text(json.dumps([{"nodes": r.nodes, "results": r.results} for r in rows], indent=1))


if __name__ == "__main__":
    main()
