"""Quick sweeps side by side: the console (cold and warm) against pdsh, clush and parallel-ssh on one fleet.

For each size a simulated cluster (``instinct-console sim serve``, its own process) is started, then:

- console cold: ``instinct-console sweep --probes quick`` as a child process (new connections);
- console warm: one SweepEngine running the quick set twice in one process (the TUI's rerun path);
  the second run is reported, and the first verdict time of both runs;
- pdsh, clush and parallel-ssh: the same quick probe commands joined into one remote command per
  node, the same fan-out, the same keys and known_hosts (pdsh and clush through an ssh_config).

Wall time, CPU of each contender's process tree, and peak RSS of the console are printed as a table
with ratios (peer time / console time), then one ``target: ... -> pass|miss`` line per target of issue 20
(client CPU and wall against pdsh, engine memory after two sweeps, first verdict), for each way the
console ran. ``--sshd N`` adds one console-vs-pdsh row against N real
OpenSSH sshd nodes answering the simulator's outputs, rendered once up front (``bench/_sshd.py``).
``--slurm N`` adds ``sweep --via-slurm`` (nodes judged on the node) and ``--via-slurm --slurm-raw``
(judged here) on an N-node Slurm lab of this host (``bench/_slurm.py``).

    .venv/bin/python bench/sweep.py --nodes 64,256,1024 [--sshd 256] [--slurm 8] [--json results.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shlex
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Callable
from contextlib import closing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from console.sim.launcher import SimCluster, start_sim_cluster
from console.sweep.catalog import ProbeSet, probes_for

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import Fleet, Measured, raise_nofile, run_measured

if TYPE_CHECKING:
    from _sshd import SshdBench

BENCH = Path(__file__).resolve().parent
VENV_BIN = Path(sys.executable).parent
CONSOLE = str(VENV_BIN / "instinct-console")


@dataclass
class Row:
    """Every contender's measurement for one fleet."""

    fleet: str
    nodes: int
    fanout: int
    results: dict[str, dict[str, float | int | None]] = field(default_factory=dict)

    def add(self, name: str, run: Measured, **extra: float | int | None) -> None:
        self.results[name] = {"wall_s": round(run.wall_s, 2), "cpu_s": round(run.cpu_s, 2), "rc": run.returncode}
        self.results[name].update({k: (round(v, 3) if isinstance(v, float) else v) for k, v in extra.items()})
        print(f"  {name:<14} {run.wall_s:7.2f} s wall {run.cpu_s:7.2f} s cpu  rc={run.returncode} {extra}", flush=True)


def quick_command() -> str:
    """The quick probe set as one remote command: each probe's argv, shell-quoted, joined with ``;``."""
    return "; ".join(shlex.join(p.argv) for p in probes_for(ProbeSet.QUICK))


def write_ssh_config(fleet: Fleet, path: Path, kex: str | None = None) -> Path:
    """An OpenSSH client config giving pdsh's and clush's ssh the fleet's port, user, key and known_hosts.

    ``kex`` pins the key exchange (the simulator's asyncssh server picks curve25519-sha256 by itself).
    """
    path.write_text(
        "Host *\n"
        f"  Port {fleet.port}\n  User {fleet.user}\n  IdentityFile {fleet.key}\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {fleet.known_hosts}\n  StrictHostKeyChecking yes\n  BatchMode yes\n"
        "  ConnectTimeout 20\n  LogLevel ERROR\n" + (f"  KexAlgorithms {kex}\n" if kex else "")
    )
    return path


def run_console(row: Row, fleet: Fleet, scratch: Path) -> None:
    """Cold CLI sweep, then the warm in-process rerun."""
    run_console_cold(row, fleet, scratch)
    run_console_warm(row, fleet, scratch)


def run_console_cold(row: Row, fleet: Fleet, scratch: Path, workers: int = 0) -> None:
    """``instinct-console sweep --probes quick`` as a child process: new connections; ``workers`` engine
    worker processes (0: the engine checks every node itself, the row of earlier runs)."""
    db = scratch / ("cold.db" if not workers else f"cold-w{workers}.db")
    argv = [CONSOLE, "sweep", "-i", str(fleet.inventory), "--probes", "quick", "--store", str(db)]
    cold = run_measured([*argv, "--workers", str(workers)])
    row.add("console cold" + _suffix(workers), cold, max_rss_mib=cold.max_rss_mib)


def _suffix(workers: int) -> str:
    return f" w{workers}" if workers else ""


def run_console_warm(row: Row, fleet: Fleet, scratch: Path, workers: int = 0) -> None:
    """One engine sweeping twice in one process; the second run is the warm one."""
    db = scratch / ("w.db" if not workers else f"w-w{workers}.db")
    engine = run_measured([sys.executable, str(BENCH / "_engine_run.py"), str(fleet.inventory), str(db), str(workers)])
    lines = engine.stdout.decode(errors="replace").strip().splitlines()
    try:
        report = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        print(f"  engine run failed: {engine.stdout[-2000:]!r}")
        return
    first, second = report["runs"]
    in_process = Measured(first["wall_s"], first["cpu_s"], report["max_rss_mib"], engine.returncode, b"")
    row.add(
        "engine 1st" + _suffix(workers),
        in_process,
        first_verdict_s=first["first_verdict_s"],
        engine_cpu_s=first.get("engine_cpu_s"),
    )
    rerun = Measured(second["wall_s"], second["cpu_s"], report["max_rss_mib"], engine.returncode, b"")
    name = "console warm" + _suffix(workers)
    row.add(
        name,
        rerun,
        first_verdict_s=second["first_verdict_s"],
        max_rss_mib=report["max_rss_mib"],
        engine_cpu_s=second.get("engine_cpu_s"),
        rss_mib=second.get("rss_mib"),
        workers_rss_mib=second.get("workers_rss_mib"),
    )
    row.results[name]["counts"] = second["counts"]


def with_workers(workers: int) -> list[Contender]:
    """The console's cold and warm contenders with ``workers`` engine worker processes."""

    def cold(row: Row, fleet: Fleet, scratch: Path) -> None:
        run_console_cold(row, fleet, scratch, workers)

    def warm(row: Row, fleet: Fleet, scratch: Path) -> None:
        run_console_warm(row, fleet, scratch, workers)

    return [cold, warm]


def run_pdsh(row: Row, fleet: Fleet, scratch: Path) -> None:
    """pdsh with its ssh rcmd; PDSH_SSH_ARGS points ssh at the fleet's config."""
    pdsh_measured(row, fleet, scratch)


def pdsh_measured(row: Row, fleet: Fleet, scratch: Path, name: str = "pdsh", kex: str | None = None) -> Measured:
    """``run_pdsh`` recorded as ``name``, its ssh pinned to the key exchange ``kex``; returns the run (output too)."""
    config = write_ssh_config(fleet, scratch / "ssh_config", kex)
    env = dict(os.environ, PDSH_RCMD_TYPE="ssh", PDSH_SSH_ARGS=f"-F {config} -2 -a -x -l%u %h")
    hosts = ",".join(fleet.addresses)
    argv = ["pdsh", "-R", "ssh", "-f", str(row.fanout), "-l", fleet.user, "-w", hosts, quick_command()]
    run = run_measured(argv, env=env)
    row.add(name, run, out_mib=round(len(run.stdout) / 2**20, 1))
    return run


def run_clush(row: Row, fleet: Fleet, scratch: Path) -> None:
    """ClusterShell's clush, its ssh given the same config."""
    config = write_ssh_config(fleet, scratch / "ssh_config")
    hosts = scratch / "hosts"
    hosts.write_text("\n".join(fleet.addresses) + "\n")
    argv = ["clush", "-f", str(row.fanout), "--hostfile", str(hosts), "-l", fleet.user, "-o", f"-F {config}"]
    run = run_measured([*argv, quick_command()])
    row.add("clush", run, out_mib=round(len(run.stdout) / 2**20, 1))


def run_pssh(row: Row, fleet: Fleet, scratch: Path) -> None:
    """parallel-ssh's native client (libssh2), in a child process of its own."""
    hosts = scratch / "hosts"
    hosts.write_text("\n".join(fleet.addresses) + "\n")
    argv = [sys.executable, str(BENCH / "_pssh_run.py"), str(hosts), str(fleet.port), fleet.user, str(fleet.key)]
    run = run_measured([*argv, str(row.fanout), quick_command()])
    ok, _, received = run.stdout.decode(errors="replace").strip().rpartition("\n")[-1].partition(" ")
    mib = round(int(received) / 2**20, 1) if received.isdigit() else None
    row.add("parallel-ssh", run, hosts_ok=int(ok) if ok.isdigit() else None, out_mib=mib)


Contender = Callable[[Row, Fleet, Path], None]
PEERS: dict[str, Contender] = {"pdsh": run_pdsh, "clush": run_clush, "parallel-ssh": run_pssh}


def sim_fleet(sim: SimCluster) -> Fleet:
    """The peers' view of a running simulator."""
    cluster = sim.cluster()
    addresses = [node.address or "" for node in cluster.nodes]
    port = cluster.nodes[0].port
    return Fleet(addresses, port, "node", sim.client_key_path, sim.known_hosts_path, sim.inventory_path)


def bench_sim(nodes: int, fanout: int, peers: list[str], workers: list[int] | None = None) -> Row:
    """Every contender against one simulated fleet of ``nodes`` (the console also with each of ``workers``)."""
    row = Row("sim (asyncssh)", nodes, fanout)
    print(f"sim fleet of {nodes} nodes", flush=True)
    scratch = Path(tempfile.mkdtemp(prefix="ic-bench-"))
    try:
        with start_sim_cluster(nodes, "mi300x", faults="none", timeout_s=120) as sim:
            fleet = sim_fleet(sim)
            server = psutil.Process(sim.proc.pid)
            extra = [c for n in workers or [] for c in with_workers(n)]
            for contender in (run_console_cold, run_console_warm, *extra, *(PEERS[name] for name in peers)):
                with_server_cpu(row, server, contender, fleet, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return row


def with_server_cpu(row: Row, server: psutil.Process, contender: Contender, fleet: Fleet, scratch: Path) -> None:
    """Run ``contender`` and note the simulator's CPU during it: the server work each client causes.

    Both share the machine's two cores, so a client that costs the server less also runs faster.
    """
    before, known = sum(server.cpu_times()[:2]), set(row.results)
    contender(row, fleet, scratch)
    spent = round(sum(server.cpu_times()[:2]) - before, 2)
    added = [name for name in row.results if name not in known]
    for name in added:
        # The warm contender is two runs in one process: its figure covers both.
        row.results[name]["server_cpu_s"] = spent if len(added) == 1 else None
    if len(added) > 1:
        row.results[added[-1]]["server_cpu_both_runs_s"] = spent


# What the console's asyncssh and OpenSSH 9.2 agree on (asyncssh has no sntrup761), and what pdsh's ssh
# gets from the simulator's asyncssh server: the sshd row's pdsh uses it too, so both clients do the same
# handshake. OpenSSH's own default, sntrup761x25519-sha512, costs its client ~0.13 s CPU more per
# connection on this VM; the row measures pdsh with it as well ("pdsh sntrup761").
SSHD_ROW_KEX = "curve25519-sha256"


def bench_sshd(nodes: int, fanout: int) -> Row:
    """The console and pdsh against real OpenSSH sshd nodes answering the simulator's pre-rendered outputs."""
    from _sshd import sshd_sim_fleet  # needs root and openssh-server; imported only when asked for

    row = Row("real sshd", nodes, fanout)
    print(f"real sshd fleet of {nodes} nodes", flush=True)
    scratch = Path(tempfile.mkdtemp(prefix="ic-bench-"))
    outputs: dict[str, bytes] = {}

    def pdsh(name: str, kex: str | None) -> Contender:
        def run(row: Row, fleet: Fleet, scratch: Path) -> None:
            outputs[name] = pdsh_measured(row, fleet, scratch, name, kex).stdout

        return run

    try:
        with sshd_sim_fleet(nodes, scratch) as bench:
            contenders = (run_console_cold, run_console_warm, pdsh("pdsh", SSHD_ROW_KEX), pdsh("pdsh sntrup761", None))
            for contender in contenders:
                with_node_cpu(row, bench, contender, scratch)
            check_sshd_row(row, bench, scratch, outputs)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return row


def with_node_cpu(row: Row, bench: SshdBench, contender: Contender, scratch: Path) -> None:
    """Run ``contender`` and note the CPU the sshd nodes spent meanwhile (sshd, sessions, shells, shims)."""
    before, known = bench.node_cpu_s(), set(row.results)
    contender(row, bench.fleet, scratch)
    spent = round(bench.node_cpu_s() - before, 2)
    added = [name for name in row.results if name not in known]
    for name in added:
        row.results[name]["server_cpu_s"] = spent if len(added) == 1 else None
    if len(added) > 1:
        row.results[added[-1]]["server_cpu_both_runs_s"] = spent


def store_summary(db: Path, nodes: int) -> dict[str, object]:
    """What the console's last sweep in ``db`` recorded, and whether all ``nodes`` were judged without a problem.

    A transport error, a timeout or a failed command shows as a probe run with a problem or a non-zero
    exit status, and leaves its node UNKNOWN.
    """
    with closing(sqlite3.connect(db)) as conn:
        (sweep,) = conn.execute("SELECT max(id) FROM sweeps").fetchone()
        verdicts: dict[str, int] = dict(
            conn.execute("SELECT status, count(*) FROM node_verdicts WHERE sweep_id=? GROUP BY 1", (sweep,))
        )
        runs, nodes_run, problems, failed = conn.execute(
            "SELECT count(*), count(DISTINCT node), count(problem), sum(exit_status != 0) FROM probe_runs"
            " WHERE sweep_id=?",
            (sweep,),
        ).fetchone()
    complete = nodes_run == nodes and not problems and not failed and sum(verdicts.values()) == nodes
    return {
        "verdicts": verdicts,
        "probe_runs": runs,
        "nodes_run": nodes_run,
        "problems": problems,
        "failed": failed,
        "complete": complete and "UNKNOWN" not in verdicts,
    }


def pdsh_lines(output: bytes) -> dict[str, int]:
    """Lines pdsh printed per host (``host: line``)."""
    counts: dict[str, int] = {}
    for line in output.decode(errors="replace").splitlines():
        host, sep, _ = line.partition(": ")
        if sep:
            counts[host] = counts.get(host, 0) + 1
    return counts


def check_sshd_row(row: Row, bench: SshdBench, scratch: Path, pdsh_outputs: dict[str, bytes]) -> None:
    """Record, and print, whether every contender really got every node: verdicts for all, full outputs."""
    for name, db in (("console cold", scratch / "cold.db"), ("console warm", scratch / "w.db")):
        if name not in row.results or not db.exists():
            continue
        summary = store_summary(db, row.nodes)
        row.results[name]["check"] = summary  # type: ignore[assignment]
        print(f"  {name} store: {summary}", flush=True)
    for name, output in pdsh_outputs.items():
        got = pdsh_lines(output)
        short = sorted(host for host, want in bench.expected_lines.items() if got.get(host, 0) != want)
        check = {"hosts_complete": row.nodes - len(short), "incomplete": short[:10], "complete": not short}
        row.results[name]["check"] = check  # type: ignore[assignment]
        print(f"  {name} outputs: {check}", flush=True)


def ratio(row: Row, peer: str, ours: str) -> str:
    """``peer time / our time`` as text, or a dash when either is missing."""
    theirs, mine = row.results.get(peer), row.results.get(ours)
    if not theirs or not mine or not mine["wall_s"]:
        return "-"
    return f"{float(theirs['wall_s'] or 0) / float(mine['wall_s']):.1f}x"


def print_table(rows: list[Row]) -> None:
    """Wall (cpu) per contender, then the ratios the targets are stated in."""
    slurm = [row for row in rows if "via-slurm" in row.results]
    rows = [row for row in rows if row not in slurm]
    for row in slurm:
        judged, raw = row.results["via-slurm"], row.results.get("via-slurm raw", {})
        print(
            f"\nslurm lab of {row.nodes}: console CPU {judged['cpu_s']} s = {judged['cpu_ms_per_node']} ms/node"
            f" with node-judged reports, {raw.get('cpu_s')} s = {raw.get('cpu_ms_per_node')} ms/node judging the"
            f" raw outputs here (--slurm-raw); wall {judged['wall_s']} / {raw.get('wall_s')} s (the nodes are"
            " this host, their tools the simulator's shims)"
        )
    if not rows:
        return
    names = ["console cold", "console warm", "pdsh", "clush", "parallel-ssh"]
    print("\n" + f"{'fleet':<16}{'nodes':>6}" + "".join(f"{n:>18}" for n in names))
    for row in rows:
        cells = []
        for name in names:
            r = row.results.get(name)
            cells.append(f"{r['wall_s']:>8.1f}s ({r['cpu_s']:>5.1f})" if r else f"{'-':>18}")
        print(f"{row.fleet:<16}{row.nodes:>6}" + "".join(f"{c:>18}" for c in cells))
    print("\nserver CPU s caused: the simulator's, or every sshd node's (warm: both runs of the engine process)")
    for row in rows:
        cells = []
        for name in names:
            r = row.results.get(name) or {}
            spent = r.get("server_cpu_s") or r.get("server_cpu_both_runs_s")
            cells.append(f"{spent:>8.1f}" if isinstance(spent, float | int) else f"{'-':>8}")
        print(f"{row.fleet:<16}{row.nodes:>6}" + "".join(f"{c:>18}" for c in cells))
    print_workers(rows)
    print("\nratios (peer wall / console wall); first verdict; console peak RSS")
    for row in rows:
        warm, cold = row.results.get("console warm", {}), row.results.get("console cold", {})
        # Only the sshd row has it: pdsh with OpenSSH's default key exchange.
        sntrup = (
            f", pdsh sntrup761 {ratio(row, 'pdsh sntrup761', 'console cold')}"
            if "pdsh sntrup761" in row.results
            else ""
        )
        print(
            f"{row.fleet:<16}{row.nodes:>6}  cold: pdsh {ratio(row, 'pdsh', 'console cold')}, "
            f"clush {ratio(row, 'clush', 'console cold')}, parallel-ssh {ratio(row, 'parallel-ssh', 'console cold')}"
            f"{sntrup} | warm: pdsh {ratio(row, 'pdsh', 'console warm')}"
            f" | first verdict cold {row.results.get('engine 1st', {}).get('first_verdict_s')} s,"
            f" warm {warm.get('first_verdict_s')} s | RSS cold {cold.get('max_rss_mib')} MiB,"
            f" warm {warm.get('max_rss_mib')} MiB"
        )
    print_targets(rows)


# Issue 20's targets, as ratios within one run on one fleet (its nodes, this box).
CPU_COLD_TARGET = 0.5  # console's client CPU per node cold <= this x pdsh's (pdsh and its ssh children)
CPU_WARM_TARGET = 0.2  # ... and warm <= this x pdsh's
WALL_COLD_TARGET = 1.5  # pdsh's wall / the console's cold wall >= this
WALL_WARM_TARGET = 2.5  # ... and warm
MEMORY_TARGET_KIB = 100.0  # the engine process's memory per node after two sweeps
FIRST_VERDICT_TARGET_S = 0.3


def target_lines(row: Row) -> list[str]:
    """One ``target: ... -> pass|miss`` line per target of issue 20, for each way the console ran on
    ``row`` (the engine alone and with each worker count). A figure that was not measured is a miss."""
    counts = sorted({int(n.rsplit(" w", 1)[1]) for n in row.results if n.startswith("console cold w")})
    pdsh = row.results.get("pdsh")
    lines = []
    for workers in [0, *counts]:
        cold = row.results.get("console cold" + _suffix(workers))
        warm = row.results.get("console warm" + _suffix(workers))
        first = row.results.get("engine 1st" + _suffix(workers), {})
        if not cold and not warm:
            continue
        how = f"{row.fleet} {row.nodes} nodes, workers {workers}:"
        for label, ours, most in (("cold", cold, CPU_COLD_TARGET), ("warm", warm, CPU_WARM_TARGET)):
            cpu = _per_node_ms(ours, row.nodes)
            theirs = _per_node_ms(pdsh, row.nodes)
            got = cpu / theirs if cpu is not None and theirs else None
            lines.append(
                _target(
                    f"{how} client CPU per node {label} <= {most:g}x pdsh's cold",
                    f"{_num(cpu)} / {_num(theirs)} ms = {_num(got, 2)}x",
                    got is not None and got <= most,
                )
            )
        for label, ours, least in (("cold", cold, WALL_COLD_TARGET), ("warm", warm, WALL_WARM_TARGET)):
            mine = float(ours["wall_s"] or 0) if ours else None
            theirs_s = float(pdsh["wall_s"] or 0) if pdsh else None
            got = theirs_s / mine if theirs_s is not None and mine else None
            lines.append(
                _target(
                    f"{how} wall {label} >= {least:g}x faster than pdsh",
                    f"pdsh {_num(theirs_s)} s / console {_num(mine)} s = {_num(got, 2)}x",
                    got is not None and got >= least,
                )
            )
        rss = warm.get("rss_mib") if warm else None
        kib = float(rss) * 1024 / row.nodes if isinstance(rss, float | int) else None
        held = warm.get("workers_rss_mib") if warm else None
        beside = f"; its workers hold {float(held) * 1024 / row.nodes:.0f} KiB/node more" if workers and held else ""
        lines.append(
            _target(
                f"{how} engine memory after two sweeps <= {MEMORY_TARGET_KIB:g} KiB per node",
                f"{_num(rss)} MiB = {_num(kib, 0)} KiB/node{beside}",
                kib is not None and kib <= MEMORY_TARGET_KIB,
            )
        )
        for label, seconds in (("cold", first.get("first_verdict_s")), ("warm", (warm or {}).get("first_verdict_s"))):
            got = float(seconds) if isinstance(seconds, float | int) else None
            lines.append(
                _target(
                    f"{how} first verdict {label} <= {FIRST_VERDICT_TARGET_S:g} s",
                    f"{_num(got, 2)} s",
                    got is not None and got <= FIRST_VERDICT_TARGET_S,
                )
            )
    return lines


def _per_node_ms(result: dict[str, float | int | None] | None, nodes: int) -> float | None:
    return float(result["cpu_s"] or 0) * 1000 / nodes if result and nodes else None


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _target(what: str, measured: str, met: bool) -> str:
    return f"target: {what}: {measured} -> {'pass' if met else 'miss'}"


def print_targets(rows: list[Row]) -> None:
    """Issue 20's targets against this run, then the engine's memory per node between two sizes: the
    figure per node above includes the process's fixed start-up (interpreter, packs, ~100 MiB)."""
    print()
    for row in rows:
        for line in target_lines(row):
            print(line)
    sims = sorted((r for r in rows if r.fleet.startswith("sim")), key=lambda r: r.nodes)
    for small, large in itertools.pairwise(sims):
        for name in (n for n in large.results if n.startswith("console warm")):
            low, high = small.results.get(name, {}).get("rss_mib"), large.results[name].get("rss_mib")
            if isinstance(low, float | int) and isinstance(high, float | int) and large.nodes > small.nodes:
                slope = (float(high) - float(low)) * 1024 / (large.nodes - small.nodes)
                sizes = f"{small.nodes} to {large.nodes} nodes"
                print(f"  {name}: engine memory from {sizes}: {slope:.0f} KiB per node more")


def print_workers(rows: list[Row]) -> None:
    """The console with engine worker processes: wall, client CPU per node (its whole process tree) and
    first verdict, beside the same without workers. CPU per node must not grow with the workers."""
    for row in rows:
        counts = sorted({int(n.rsplit(" w", 1)[1]) for n in row.results if n.startswith("console cold w")})
        if not counts:
            continue
        print(
            f"\n{row.fleet} {row.nodes}: workers   cold wall  cpu ms/node   warm wall  cpu ms/node"
            "  of it engine ms/node (1st, warm)  1st verdict"
        )
        for workers in [0, *counts]:
            cold = row.results.get("console cold" + _suffix(workers), {})
            warm = row.results.get("console warm" + _suffix(workers), {})
            engine = row.results.get("engine 1st" + _suffix(workers), {})
            cells = []
            for r in (cold, warm):
                cpu = float(r["cpu_s"]) * 1000 / row.nodes if r else None
                cells.append(f"{r['wall_s']:>9.1f} s {cpu:>8.1f}" if r and cpu is not None else f"{'-':>20}")
            own = [r.get("engine_cpu_s") for r in (engine, warm)]
            parts = [f"{float(x) * 1000 / row.nodes:.1f}" if isinstance(x, float | int) else "-" for x in own]
            cells.append(f"{' / '.join(parts):>24}")
            print(f"{'':<20}{workers:>7}  " + "  ".join(cells) + f"  {engine.get('first_verdict_s')} s")


def main() -> None:
    """Run the benchmark for every size asked for and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", default="64,256,1024", help="comma list of fleet sizes (default 64,256,1024)")
    ap.add_argument("--fanout", type=int, default=64, help="peers' fan-out; the console's max_handshakes is 64")
    ap.add_argument("--peers", default="pdsh,clush,parallel-ssh", help="comma list of peers to run ('' for none)")
    ap.add_argument("--sshd", type=int, default=0, metavar="N", help="add a row against N real sshd nodes")
    ap.add_argument("--slurm", type=int, default=0, metavar="N", help="add a --via-slurm row on an N-node Slurm lab")
    ap.add_argument(
        "--workers", default="", help="comma list of engine worker counts to run the console with too (e.g. 1,2)"
    )
    ap.add_argument("--json", type=Path, help="also write the measurements to this file")
    args = ap.parse_args()
    raise_nofile()
    peers = [p for p in args.peers.split(",") if p]
    workers = [int(n) for n in args.workers.split(",") if n]
    rows = [bench_sim(int(n), args.fanout, peers, workers) for n in args.nodes.split(",") if n]
    if args.sshd:
        rows.append(bench_sshd(args.sshd, args.fanout))
    if args.slurm:
        from _slurm import bench_slurm  # needs root and the Slurm daemons; imported only when asked for

        print(f"Slurm lab of {args.slurm} nodes: sweep --via-slurm", flush=True)
        slurm = Row("slurm lab", args.slurm, 0)
        bench_slurm(args.slurm, slurm)
        rows.append(slurm)
    print_table(rows)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))


if __name__ == "__main__":
    main()
