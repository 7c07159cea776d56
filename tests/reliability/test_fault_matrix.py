"""Fault matrix on real OpenSSH: one sweep of 64 sshd nodes, ten of them faulty in ten different ways.

Every faulty node must get the right verdict with a reason that names its fault; every healthy node
must PASS (no false alarm from a neighbour's fault); the sweep must end within the probe timeout plus
10 % although nodes hang; and no probe the console gave up on may still run on its node afterwards.

Tool faults come from the simulator (replayed by real processes on each node, see replay.py);
connection faults are real: a stopped sshd, a revoked key, a reinstalled host, a SIGSTOPped sshd,
and a tool that kills the sshd serving its own connection halfway through its output.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from console.checks import load_packs
from console.inventory import load_inventory
from console.model.findings import Status
from console.sim.faults import Fault, FaultKind
from console.store import Store
from console.sweep import SweepEngine, SweepResult
from console.transport.connect import transport_for
from tests.harness.sshd_fleet import SshdFleet
from tests.reliability.simfleet import SimOnSshd, report_matrix, start_sim_on_sshd, watch_arrivals

NODES = 64
PROBE_TIMEOUT_S = 30.0  # 64 healthy nodes take 8-20 s on this 2-core machine, depending on the load
ON_TIME = 1.10  # the sweep ends within the probe timeout + 10 %


@dataclass(frozen=True)
class Case:
    """One row of the matrix: a fault on a node, the verdict it must get, and its reason (one of ``words``)."""

    fault: str
    node: str
    expect: Status
    words: tuple[str, ...]
    sim: FaultKind | None = None  # injected through the simulator's replies
    inject: Callable[[SshdFleet, str], None] | None = None  # or through the fleet's controls


CASES = (
    Case(
        "command hangs",
        "sim005",
        Status.UNKNOWN,
        ("timed out on the node", "no answer within"),
        sim=FaultKind.COMMAND_HANG,
    ),
    Case("garbage output", "sim011", Status.UNKNOWN, ("unreadable output",), sim=FaultKind.GARBAGE_OUTPUT),
    Case("trickling output", "sim017", Status.PASS, (), sim=FaultKind.SLOW_TRICKLE),
    Case("tool missing", "sim023", Status.UNKNOWN, ("amd-smi: command not found",), sim=FaultKind.TOOL_MISSING),
    Case("driver not loaded", "sim029", Status.FAIL, ("driver not initialized",), sim=FaultKind.DRIVER_NOT_LOADED),
    Case("drop mid-command", "sim037", Status.UNKNOWN, ("connection lost",), sim=FaultKind.SSH_DROP_MID_COMMAND),
    Case("connection refused", "sim043", Status.UNKNOWN, ("refused",), inject=SshdFleet.stop_node),
    Case("auth failure", "sim049", Status.UNKNOWN, ("auth-failed",), inject=SshdFleet.revoke_client_key),
    Case("changed host key", "sim055", Status.UNKNOWN, ("host key changed",), inject=SshdFleet.swap_host_key),
    Case(
        "sshd frozen (SIGSTOP)",
        "sim061",
        Status.UNKNOWN,
        ("connect-timeout: ssh handshake", "no answer within"),  # whichever gives up first
        inject=SshdFleet.freeze_node,
    ),
)


@dataclass
class MatrixRun:
    """The fleet, the sweep's result and when each node's verdict arrived (seconds after the start)."""

    sim: SimOnSshd
    result: SweepResult
    arrived: dict[str, float]
    fingerprints: tuple[str, str]  # the changed-key node: the key known_hosts holds, the key it now shows
    store: Path


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MatrixRun]:
    base = tmp_path_factory.mktemp("matrix")
    faults = [Fault(kind=c.sim, node=c.node) for c in CASES if c.sim is not None]
    sim = start_sim_on_sshd(NODES, faults, base)
    try:
        known = sim.fleet.host_key_fingerprint("sim055")
        for case in CASES:
            if case.inject is not None:
                case.inject(sim.fleet, case.node)
        shown = sim.fleet.host_key_fingerprint("sim055")
        result, arrived = asyncio.run(_sweep(sim, base / "history.sqlite"))
        rows = [(c.fault, c.node, c.expect.value) for c in CASES]
        report_matrix(f"real sshd, loopback, {NODES} nodes", rows, result, arrived)
        yield MatrixRun(sim, result, arrived, (known, shown), base / "history.sqlite")
    finally:
        sim.fleet.stop()  # fails the module if any node process outlived the sweep


async def _sweep(sim: SimOnSshd, store_path: Path) -> tuple[SweepResult, dict[str, float]]:
    inventory = load_inventory(sim.inventory_path)
    store = Store(store_path)
    engine = SweepEngine(inventory, transport_for(inventory), load_packs(), store, probe_timeout_cap_s=PROBE_TIMEOUT_S)
    arrived = watch_arrivals(engine)
    try:
        return await engine.run(level="quick"), arrived
    finally:
        await engine.close()
        store.close()


def _reason(run: MatrixRun, node: str) -> str:
    return run.result.verdicts[node].reason


@pytest.mark.root
@pytest.mark.parametrize("case", CASES, ids=[c.fault for c in CASES])
def test_fault_gets_its_verdict_and_reason(matrix: MatrixRun, case: Case) -> None:
    verdict = matrix.result.verdicts[case.node]
    assert verdict.status is case.expect, f"{case.fault} on {case.node}: {verdict.status} ({verdict.reason})"
    reason = verdict.reason.lower()
    assert not case.words or any(word in reason for word in case.words), f"{case.fault}: reason {verdict.reason!r}"


@pytest.mark.root
def test_changed_host_key_names_node_and_both_fingerprints(matrix: MatrixRun) -> None:
    reason = _reason(matrix, "sim055")
    known, shown = matrix.fingerprints
    assert known != shown
    assert "sim055" in reason and known in reason and shown in reason


@pytest.mark.root
def test_no_false_alarm_on_healthy_nodes(matrix: MatrixRun) -> None:
    faulty = {c.node for c in CASES}
    wrong = {
        name: (v.status.value, v.reason)
        for name, v in matrix.result.verdicts.items()
        if name not in faulty and v.status is not Status.PASS
    }
    assert not wrong
    assert len(matrix.result.verdicts) == NODES and matrix.result.outcome == "done"


@pytest.mark.root
def test_sweep_ends_within_the_probe_timeout_plus_ten_percent(matrix: MatrixRun) -> None:
    slowest = " ".join(f"{n}:{t:.1f}" for n, t in sorted(matrix.arrived.items(), key=lambda kv: kv[1]))
    assert matrix.result.duration_s <= PROBE_TIMEOUT_S * ON_TIME, slowest
    late = {node: round(t, 1) for node, t in matrix.arrived.items() if t > PROBE_TIMEOUT_S * ON_TIME}
    assert not late
    hung = [c.node for c in CASES if c.sim is FaultKind.COMMAND_HANG]
    assert all(matrix.arrived[node] >= PROBE_TIMEOUT_S * 0.9 for node in hung), "a hang was given up too early"


@pytest.mark.root
def test_store_holds_every_verdict_and_is_intact(matrix: MatrixRun) -> None:
    store = Store(matrix.store)
    try:
        assert store.integrity_ok()
        rows = {r["node"]: r["status"] for r in store.node_verdicts(matrix.result.sweep_id)}
        assert rows == {name: v.status.value for name, v in matrix.result.verdicts.items()}
    finally:
        store.close()


@pytest.mark.root
def test_no_probe_left_running_on_any_node(matrix: MatrixRun) -> None:
    """``ps`` on every reachable node over a fresh connection: only sshd and the ps session itself remain."""
    fleet = matrix.sim.fleet
    unreachable = {c.node for c in CASES if c.inject is not None}
    nodes = [n.name for n in fleet.nodes if n.name not in unreachable]

    async def listings() -> dict[str, list[str]]:
        transport = transport_for(load_inventory(matrix.sim.inventory_path))
        try:
            done = await asyncio.gather(*(transport.run(n, ["ps", "-eo", "args"], timeout_s=30) for n in nodes))
        finally:
            await transport.close()
        return {r.node: r.stdout.decode().splitlines()[1:] for r in done}

    leftovers = {
        node: [line for line in lines if not line.startswith(("sshd", "/usr/sbin/sshd")) and "ps -eo args" not in line]
        for node, lines in asyncio.run(listings()).items()
    }
    assert not {node: lines for node, lines in leftovers.items() if lines}
