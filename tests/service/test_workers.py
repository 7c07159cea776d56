"""Engine worker processes (``--workers``), for real: the simulator's nodes over SSH, real worker processes.

The same fleet with faults is swept in process and with one and two workers: the verdicts and their
reasons must be the same, and the events of each node must come in the same order. A worker killed while
its node hangs makes that node UNKNOWN, saying so, and the next sweep starts a new worker.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from console.checks import CheckPack, load_packs
from console.cli import main
from console.inventory import load_inventory
from console.model.findings import Status
from console.service.assembly import EngineSpec, build_engine
from console.service.workers import AUTO_MIN_CORES, AUTO_MIN_NODES, WorkerPool, default_workers
from console.sim.faults import FaultKind
from console.sim.launcher import SimCluster, start_sim_cluster
from console.sim.specs import GpuModel
from console.store import Store
from console.sweep.catalog import ProbeSet, probes_for
from console.sweep.checker_workers import WorkerChecker
from console.sweep.engine import FIRST_WAVE
from console.sweep.events import Event, NodeDone, ProbeFinished, ProbeStarted
from tests.multinode.simcluster import start_cluster
from tests.transport.conftest import engine_workers_left, local_processes_matching

# Grouped under xdist with the other modules that start engine workers, as CI was measured green with
# them (the leak checks themselves count only this test process's own descendants).
pytestmark = pytest.mark.xdist_group("engine-workers")

CAP_S = 8.0  # a hung probe costs this, not its catalogue timeout
# The fleet compared between modes: a healthy node must never reach the cap, even on a busy machine.
FLEET_CAP_S = 15.0


@pytest.fixture(scope="module")
def packs() -> dict[str, CheckPack]:
    return load_packs()


@pytest.fixture(scope="module")
def faulty() -> Iterator[SimCluster]:
    """Twelve nodes with the simulator's demo faults (hardware, a hang, a refused connection, ...)."""
    with start_sim_cluster(12, "mi300x", faults="demo", time_factor=400) as sim:
        yield sim


def _sweep(
    sim: SimCluster, packs: dict[str, CheckPack], workers: int, store_path: Path
) -> tuple[dict[str, tuple[Status, str]], list[Event]]:
    inventory = load_inventory(sim.inventory_path)
    spec = EngineSpec(inventory, packs, store_path, probe_timeout_cap_s=FLEET_CAP_S, workers=workers)
    store = Store(store_path)
    engine = build_engine(spec, store)
    assert isinstance(engine.checker, WorkerChecker) == (workers > 0)
    events: list[Event] = []
    engine.subscribe(events.append)

    async def run() -> dict[str, tuple[Status, str]]:
        try:
            result = await engine.run()
        finally:
            await engine.close()
        return {name: (v.status, v.reason) for name, v in result.verdicts.items()}

    try:
        return asyncio.run(run()), events
    finally:
        store.close()


def _order(events: list[Event], node: str) -> list[str]:
    """The kinds of a node's events, in the order they came."""
    return [type(e).__name__ for e in events if getattr(e, "node", None) == node or _done_for(e, node)]


def _done_for(event: Event, node: str) -> bool:
    return isinstance(event, NodeDone) and event.verdict.node == node


def _comparable(verdicts: dict[str, tuple[Status, str]]) -> dict[str, tuple[Status, str]]:
    """Status, and the root cause of a node not judged (the last clause of its reason).

    Which probe a hung node's reason names first, and whether its own timeout or the cap ended it,
    depends on what answered before the cap on a busy machine, with or without workers; a FAIL or
    WARN node may name another reading first (the simulator's temperatures move between sweeps).
    """
    return {
        n: (s, _cause(r) if s is Status.UNKNOWN else r if s is Status.PASS else "") for n, (s, r) in verdicts.items()
    }


def _cause(reason: str) -> str:
    last = reason.rsplit(": ", 1)[-1]
    return "a timeout" if "no answer within" in last or "timed out" in last else last


def test_one_and_two_workers_judge_a_faulty_fleet_as_the_engine_does(
    faulty: SimCluster, packs: dict[str, CheckPack], tmp_path: Path
) -> None:
    alone, alone_events = _sweep(faulty, packs, 0, tmp_path / "alone.db")
    one, _ = _sweep(faulty, packs, 1, tmp_path / "one.db")
    two, two_events = _sweep(faulty, packs, 2, tmp_path / "two.db")
    statuses = {status for status, _ in alone.values()}
    assert {Status.PASS, Status.FAIL, Status.UNKNOWN} <= statuses, "the fleet must have faults and healthy nodes"
    assert _comparable(one) == _comparable(alone)
    assert _comparable(two) == _comparable(alone)
    for node in alone:
        order = _order(two_events, node)
        # Every probe event of a node comes before its verdict, as from the engine alone.
        first_done = order.index("NodeDone")
        assert "NodeDone" not in order[:first_done] and set(order[first_done:]) == {"NodeDone"}, (node, order)
        probes = [e for e in two_events if isinstance(e, ProbeStarted | ProbeFinished) and e.node == node]
        same = [e for e in alone_events if isinstance(e, ProbeStarted | ProbeFinished) and e.node == node]
        assert sorted((type(e).__name__, e.probe) for e in probes) == sorted(
            (type(e).__name__, e.probe) for e in same
        ), node
    # What the screens show of a node comes from its worker: its GPUs and links, its stored probe runs.
    for node, (status, _) in alone.items():
        if status is Status.PASS:
            shown = [e for e in two_events if isinstance(e, NodeDone) and e.verdict.node == node][-1].snapshot
            assert len(shown.gpus) == 8 and shown.xgmi and shown.stack, node
            assert len(shown.probe_runs) == len(probes_for(ProbeSet.QUICK)), (node, shown.probe_runs)
    # One store writer: every node's verdict, and the probe runs of every node that answered.
    store = Store(tmp_path / "two.db")
    try:
        sweep = store.latest_sweep_id()
        assert sweep is not None
        stored = {row["node"]: row["status"] for row in store.node_verdicts(sweep)}
        # The workers compressed the outputs; the store reads them back as it reads its own.
        done = [e for e in two_events if isinstance(e, NodeDone) and e.verdict.status is Status.PASS]
        for run_id in done[-1].snapshot.probe_runs.values():
            output = store.probe_output(run_id)
            assert output is not None and output[0], run_id
    finally:
        store.close()
    assert stored == {name: status.value for name, (status, _) in alone.items()}
    assert engine_workers_left() == []


def test_the_first_wave_is_checked_in_the_engine_process_while_the_workers_start(
    faulty: SimCluster, packs: dict[str, CheckPack], tmp_path: Path
) -> None:
    """The first verdict does not wait ~1 s for a worker to start: the first wave's nodes are checked in
    the engine's own process, judged as a worker judges them, and stay there in the next sweep (their
    connection and reuse with them); the rest of the fleet goes to the workers."""
    inventory = load_inventory(faulty.inventory_path)
    names = [n.name for n in inventory.nodes]
    store = Store(tmp_path / "h.db")
    engine = build_engine(
        EngineSpec(inventory, packs, tmp_path / "h.db", probe_timeout_cap_s=FLEET_CAP_S, workers=1), store
    )
    assert isinstance(engine.checker, WorkerChecker)
    pool = engine.checker.pool
    assert isinstance(pool, WorkerPool)
    events: list[Event] = []
    engine.subscribe(events.append)

    async def run() -> list[dict[str, tuple[Status, str]]]:
        results = []
        try:
            for _ in range(2):
                result = await engine.run()
                results.append({n: (v.status, v.reason) for n, v in result.verdicts.items()})
                # every node but the first wave's went to the worker, which runs
                assert pool.here == set(names[:FIRST_WAVE]), pool.here
                assert all(pool.pid_for(n) is not None for n in names[FIRST_WAVE:])
        finally:
            await engine.close()
        return results

    try:
        first, second = asyncio.run(run())
        sweep = store.latest_sweep_id()
        assert sweep is not None
        stored = {row["node"]: row["status"] for row in store.node_verdicts(sweep)}
    finally:
        store.close()
    assert _comparable(first) == _comparable(second)
    assert stored == {name: status.value for name, (status, _) in second.items()}
    done = [e.verdict.node for e in events if isinstance(e, NodeDone)]
    assert done[0] in names[:FIRST_WAVE], done
    # Judged here as a worker judges: compact, the PASS findings counted per check, and every probe event.
    for node in names[:FIRST_WAVE]:
        if second[node][0] is Status.PASS:
            shown = [e for e in events if isinstance(e, NodeDone) and e.verdict.node == node][-1]
            assert shown.snapshot.gpus and len(shown.verdict.findings) < 100, node
            finished = [e for e in events if isinstance(e, ProbeFinished) and e.node == node]
            assert len(finished) >= len(probes_for(ProbeSet.QUICK)), node
    assert engine_workers_left() == []


@pytest.fixture(scope="module")
def hanging() -> Iterator[SimCluster]:
    """Four nodes, amd-smi hanging on one of them."""
    with start_cluster(4, GpuModel.MI300X, FaultKind.COMMAND_HANG) as sim:
        yield sim


def test_giving_up_a_node_in_a_worker_ends_it_there(hanging: SimCluster, packs: dict[str, CheckPack]) -> None:
    hung = hanging.cluster().faults[0].node
    inventory = load_inventory(hanging.inventory_path)
    engine = build_engine(EngineSpec(inventory, packs, None, workers=2), None)
    given: list[bool] = []

    def give_up_at_the_hang(event: Event) -> None:
        if isinstance(event, ProbeStarted) and event.node == hung and not given:
            given.append(engine.give_up(hung))

    engine.subscribe(give_up_at_the_hang)

    async def run() -> dict[str, tuple[Status, str]]:
        try:
            result = await engine.run()  # no cap: only the give-up ends the hung node
        finally:
            await engine.close()
        return {n: (v.status, v.reason) for n, v in result.verdicts.items()}

    verdicts = asyncio.run(run())
    assert given == [True]
    assert verdicts[hung][0] is Status.UNKNOWN and "given up by the operator" in verdicts[hung][1], verdicts[hung]
    assert all(s is Status.PASS for n, (s, _) in verdicts.items() if n != hung), verdicts
    assert engine_workers_left() == []


def test_a_killed_worker_makes_its_node_unknown_and_the_next_sweep_starts_another(
    hanging: SimCluster, packs: dict[str, CheckPack]
) -> None:
    hung = hanging.cluster().faults[0].node
    inventory = load_inventory(hanging.inventory_path)
    spec = EngineSpec(inventory, packs, None, probe_timeout_cap_s=CAP_S, workers=2)
    engine = build_engine(spec, None)
    assert isinstance(engine.checker, WorkerChecker)
    pool = engine.checker.pool
    assert isinstance(pool, WorkerPool)
    killed: list[int] = []

    def kill_at_the_hang(event: Event) -> None:
        # The hung node's first probe is out: its worker dies with it in flight.
        if isinstance(event, ProbeStarted) and event.node == hung and not killed:
            pid = pool.pid_for(hung)
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    unsubscribe = engine.subscribe(kill_at_the_hang)

    async def run() -> tuple[dict[str, tuple[Status, str]], dict[str, tuple[Status, str]], int | None]:
        try:
            first = await engine.run()
            unsubscribe()
            second = await engine.run()
            return (
                {n: (v.status, v.reason) for n, v in first.verdicts.items()},
                {n: (v.status, v.reason) for n, v in second.verdicts.items()},
                pool.pid_for(hung),
            )
        finally:
            await engine.close()

    first, second, restarted = asyncio.run(run())
    assert killed, "the hung node's probes never started"
    assert set(first) == {n.name for n in inventory.nodes}  # never silently absent
    status, reason = first[hung]
    assert status is Status.UNKNOWN
    assert f"(pid {killed[0]}) ended" in reason and "SIGKILL" in reason, reason
    # A new worker checks it next time: its hang is found (UNKNOWN past the cap), not the dead worker.
    assert restarted is not None and restarted != killed[0]
    assert second[hung][0] is Status.UNKNOWN and "engine worker" not in second[hung][1], second[hung]
    assert all(s is Status.PASS for n, (s, _) in second.items() if n != hung), second
    assert engine_workers_left() == []


def test_the_sweep_command_takes_workers_and_defaults_to_none_for_a_small_fleet(
    faulty: SimCluster, tmp_path: Path
) -> None:
    statuses = {}
    for workers in (["--workers", "2"], []):
        report = tmp_path / f"report{len(workers)}.json"
        argv = ["sweep", "-i", str(faulty.inventory_path), "--store", str(tmp_path / f"h{len(workers)}.db")]
        main([*argv, "--probe-timeout", str(FLEET_CAP_S), "--json", str(report), *workers])
        statuses[len(workers)] = {n["node"]: n["status"] for n in json.loads(report.read_text())["nodes"]}
    assert statuses[2] == statuses[0] and len(statuses[2]) == 12
    # Both judge alike: most PASS findings stored as counts per check, those with a figure or a remark whole.
    passing, counted = {}, {}
    for given in (2, 0):
        with closing(sqlite3.connect(tmp_path / f"h{given}.db")) as db:
            passing[given] = db.execute("SELECT count(*) FROM findings WHERE status = 'PASS'").fetchone()[0]
            counted[given] = db.execute("SELECT sum(c.value) FROM node_verdicts v, json_each(v.passed) c").fetchone()[0]
    assert passing[2] == passing[0] and counted[2] == counted[0], (passing, counted)
    assert passing[0] * 5 < counted[0], (passing, counted)
    assert default_workers(AUTO_MIN_NODES - 1, 16) == 0
    assert default_workers(AUTO_MIN_NODES, 16) == 15  # one core stays the engine's
    assert default_workers(AUTO_MIN_NODES, AUTO_MIN_CORES - 1) == 0  # measured slower on 2 cores
    assert default_workers(AUTO_MIN_NODES, AUTO_MIN_CORES) == AUTO_MIN_CORES - 1
    here = len(os.sched_getaffinity(0))
    assert default_workers(AUTO_MIN_NODES) == (0 if here < AUTO_MIN_CORES else here - 1)


def test_reruns_go_to_the_worker_that_has_the_node(hanging: SimCluster, packs: dict[str, CheckPack]) -> None:
    """A rerun of the whole quick set and of one family (its probes only, judged with the node's other
    outputs the worker still has) gives the node's verdict again, through the same worker."""
    hung = hanging.cluster().faults[0].node
    inventory = load_inventory(hanging.inventory_path)
    healthy = next(n.name for n in inventory.nodes if n.name != hung)
    engine = build_engine(EngineSpec(inventory, packs, None, probe_timeout_cap_s=CAP_S, workers=2), None)
    assert isinstance(engine.checker, WorkerChecker)
    pool = engine.checker.pool
    assert isinstance(pool, WorkerPool)

    async def run() -> list[tuple[Status, str, int | None]]:
        seen = []
        try:
            await engine.run([inventory.node(healthy)])
            seen.append((engine.verdicts[healthy].status, engine.verdicts[healthy].reason, pool.pid_for(healthy)))
            for families in (None, {"firmware"}):
                result = await engine.rerun([healthy], families=families)
                assert result is not None
                verdict = result.verdicts[healthy]
                seen.append((verdict.status, verdict.reason, pool.pid_for(healthy)))
        finally:
            await engine.close()
        return seen

    seen = asyncio.run(run())
    assert [s for s, _, _ in seen] == [Status.PASS] * 3, seen
    assert len({pid for _, _, pid in seen}) == 1 and seen[0][2] is not None


def test_a_worker_that_never_says_ready_is_killed_and_its_node_is_unknown(
    packs: dict[str, CheckPack], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker silent at start (stuck importing, a wrong interpreter) must not hold the sweep for ever:
    its nodes' budgets only start once it is ready. Before, the sweep waited on it with no deadline."""
    from dataclasses import replace

    from console.inventory import from_mapping
    from console.service import workers
    from console.service.assembly import build_transport

    monkeypatch.setattr(workers, "START_WAIT_S", 0.5)
    inventory = from_mapping(
        {
            "name": "silent",
            "pools": [{"name": "p", "gpu_model": "MI300X", "nodes": "gpu001"}],
            "hosts": {"gpu001": {"address": "127.0.0.1"}},
        }
    )
    spec = EngineSpec(inventory, packs, None, workers=1)
    # A process that reads nothing and says nothing: the marker lets the test find it, were it left behind.
    silent = [sys.executable, "-c", "import time; time.sleep(3600)", "instinct-silent-worker"]
    pool = WorkerPool(spec, 1, command=silent)
    engine = build_engine(spec, None, WorkerChecker(pool, build_transport(replace(spec, workers=0))))

    async def run() -> tuple[Status, str]:
        try:
            # The bound is the test's own guard: without the fix the sweep never ends.
            result = await asyncio.wait_for(engine.run(), 60)
        finally:
            await engine.close()
        verdict = result.verdicts["gpu001"]
        return verdict.status, verdict.reason

    status, reason = asyncio.run(run())
    assert status is Status.UNKNOWN
    assert "would not start" in reason and "not ready within 0.5 s" in reason, reason
    assert local_processes_matching("instinct-silent-worker") == []


# A worker that answers ready, takes its first node, then sends a frame that is no message and runs on.
_OUT_OF_STEP = """
import struct, sys, time
from console.service.wire import encode
def frame():
    (length,) = struct.unpack(">I", sys.stdin.buffer.read(4))
    return sys.stdin.buffer.read(length)
frame()  # the engine's spec
sys.stdout.buffer.write(encode(("ready",)))
sys.stdout.buffer.flush()
frame()  # its first node
sys.stdout.buffer.write(struct.pack(">I", 5) + b"xxxxx")
sys.stdout.buffer.flush()
time.sleep(3600)
"""


# A frame that reads, holding a message of the wrong shape (a review found it killed the pool's reader).
_MISSHAPEN = _OUT_OF_STEP.replace('struct.pack(">I", 5) + b"xxxxx"', 'encode(("judged",))')


@pytest.mark.parametrize(
    ("script", "said"),
    [(_OUT_OF_STEP, "unreadable frame"), (_MISSHAPEN, "does not fit")],
    ids=["unreadable", "misshapen"],
)
def test_a_worker_out_of_step_fails_its_nodes_and_is_stopped(
    packs: dict[str, CheckPack], monkeypatch: pytest.MonkeyPatch, script: str, said: str
) -> None:
    """A frame the pool cannot read leaves the stream out of step: its nodes are UNKNOWN at once, saying
    why, and the worker is stopped (killed when it does not stop). Before, the pool waited for it to exit
    on its own, and with no --probe-timeout its nodes waited with it for ever."""
    from dataclasses import replace

    from console.inventory import from_mapping
    from console.service import workers
    from console.service.assembly import build_transport

    monkeypatch.setattr(workers, "STOP_WAIT_S", 0.5)  # the fake ignores the stop: it is killed after this
    inventory = from_mapping(
        {
            "name": "garbled",
            "pools": [{"name": "p", "gpu_model": "MI300X", "nodes": "gpu001"}],
            "hosts": {"gpu001": {"address": "127.0.0.1"}},
        }
    )
    spec = EngineSpec(inventory, packs, None, workers=1)
    fake = [sys.executable, "-c", script, "instinct-garbled-worker"]
    pool = WorkerPool(spec, 1, command=fake)
    engine = build_engine(spec, None, WorkerChecker(pool, build_transport(replace(spec, workers=0))))

    async def run() -> tuple[Status, str]:
        try:
            result = await asyncio.wait_for(engine.run(), 60)  # the test's own guard: before, it never ended
        finally:
            await engine.close()
        verdict = result.verdicts["gpu001"]
        return verdict.status, verdict.reason

    status, reason = asyncio.run(run())
    assert status is Status.UNKNOWN
    assert said in reason, reason
    assert local_processes_matching("instinct-garbled-worker") == []


# A worker that answers ready, takes its first node, then writes one stderr line over what the pool's line
# reader took (16 MiB), then more than the pool's pipe buffered ahead of it (32 MiB), and ends with a status.
_LOUD = """
import struct, sys
from console.service.wire import encode
def frame():
    (length,) = struct.unpack(">I", sys.stdin.buffer.read(4))
    return sys.stdin.buffer.read(length)
frame()  # the engine's spec
sys.stdout.buffer.write(encode(("ready",)))
sys.stdout.buffer.flush()
frame()  # its first node
sys.stderr.buffer.write(b"x" * (24 << 20) + b"\\n")
for i in range(40):
    sys.stderr.buffer.write(b"line %d " % i + b"y" * (1 << 20) + b"\\n")
sys.stderr.buffer.write(b"the worker's last words\\n")
sys.stderr.buffer.flush()
sys.exit(3)
"""


def test_a_worker_printing_a_huge_stderr_line_is_still_read_and_kept_small(packs: dict[str, CheckPack]) -> None:
    """A stderr line over the pipe's line limit ended the pool's reading of that stderr: the worker then
    blocked on a full pipe, and its node with it, for ever. Its stderr is now read in chunks, and what is
    kept of it is bounded whatever it prints: its last words still name why its node is UNKNOWN."""
    import tracemalloc
    from dataclasses import replace

    from console.inventory import from_mapping
    from console.service.assembly import build_transport

    inventory = from_mapping(
        {
            "name": "loud",
            "pools": [{"name": "p", "gpu_model": "MI300X", "nodes": "gpu001"}],
            "hosts": {"gpu001": {"address": "127.0.0.1"}},
        }
    )
    spec = EngineSpec(inventory, packs, None, workers=1)
    loud = [sys.executable, "-c", _LOUD, "instinct-loud-worker"]
    pool = WorkerPool(spec, 1, command=loud)
    engine = build_engine(spec, None, WorkerChecker(pool, build_transport(replace(spec, workers=0))))

    async def run() -> tuple[Status, str]:
        try:
            result = await asyncio.wait_for(engine.run(), 60)  # the test's own guard: before, it never ended
        finally:
            await engine.close()
        verdict = result.verdicts["gpu001"]
        return verdict.status, verdict.reason

    tracemalloc.start()
    try:
        status, reason = asyncio.run(run())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert status is Status.UNKNOWN
    assert "exit status 3" in reason and "it said: the worker's last words" in reason, reason
    # It printed 64 MiB; the pool buffers at most a few MiB of a pipe ahead of its reader, and keeps less.
    assert peak < 8 << 20, f"{peak / 2**20:.1f} MiB at the peak"
    assert local_processes_matching("instinct-loud-worker") == []


# A worker that answers ready, takes its first node and sends back a report this console cannot vouch for
# (judged with other packs or pins), then waits for the pool to stop it.
_REFUSED_REPORT = """
import struct, sys
from console.model.findings import Status
from console.service.wire import encode
from console.sweep.node_report import LocalCheckReport, WorkerJudged
def frame():
    (length,) = struct.unpack(">I", sys.stdin.buffer.read(4))
    return sys.stdin.buffer.read(length)
frame()  # the engine's spec
sys.stdout.buffer.write(encode(("ready",)))
sys.stdout.buffer.flush()
frame()  # its first node
report = LocalCheckReport(
    node="gpu001", pool="p", gpu_model="MI300X", level="quick", outcome="done", duration_s=0.0,
    finished_at=0.0, judged_with="another console's", status=Status.PASS, reason="healthy",
)
sys.stdout.buffer.write(encode(("judged", "gpu001", WorkerJudged(report))))
sys.stdout.buffer.flush()
sys.stdin.buffer.read()  # until the pool stops it
"""


def test_a_worker_report_refused_is_named_as_the_workers(packs: dict[str, CheckPack]) -> None:
    """A node whose engine worker's report cannot be taken is UNKNOWN saying so in worker mode's words.
    Before, the engine told it "its check-local report cannot be taken", though check-local never ran:
    a --via-slurm message leaking into --workers."""
    from dataclasses import replace

    from console.inventory import from_mapping
    from console.service.assembly import build_transport

    inventory = from_mapping(
        {
            "name": "refused",
            "pools": [{"name": "p", "gpu_model": "MI300X", "nodes": "gpu001"}],
            "hosts": {"gpu001": {"address": "127.0.0.1"}},
        }
    )
    spec = EngineSpec(inventory, packs, None, workers=1)
    fake = [sys.executable, "-c", _REFUSED_REPORT, "instinct-refused-worker"]
    pool = WorkerPool(spec, 1, command=fake)
    engine = build_engine(spec, None, WorkerChecker(pool, build_transport(replace(spec, workers=0))))

    async def run() -> tuple[Status, str]:
        try:
            result = await asyncio.wait_for(engine.run(), 60)  # the test's own guard
        finally:
            await engine.close()
        verdict = result.verdicts["gpu001"]
        return verdict.status, verdict.reason

    status, reason = asyncio.run(run())
    assert status is Status.UNKNOWN
    assert "its engine worker's report cannot be taken: judged with other check packs" in reason, reason
    assert "check-local" not in reason, reason
    assert local_processes_matching("instinct-refused-worker") == []
