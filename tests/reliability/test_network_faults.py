"""Network faults on real links: twelve sshd nodes, each in its own network namespace behind a bridge.

A cable pulled mid-probe, a node that drops every packet, a cable pulled before the sweep, 20 % packet
loss, a 2 Mbit/s link and 100 ms of latency each way (user-space proxy: this kernel has no netem).
The first three must be named UNKNOWN with a reason that says what happened; the last three are slow
but healthy links and must PASS. The sweep ends within the probe timeout + 10 %, no lab packet leaves
through another interface, and nothing the sweep started outlives the node's own timeouts.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Iterator
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
from tests.harness.netns import NetnsFleet
from tests.reliability.latency import DelayProxy
from tests.reliability.simfleet import NAME_PREFIX, SimOnSshd, report_matrix, start_sim_on_sshd, watch_arrivals

NODES = 12
PROBE_TIMEOUT_S = 20.0
ON_TIME = 1.10
DELAY_S = 0.1
LINGER_S = 15.0  # after the sweep, the node's own timeouts must have ended what the console could not kill


@dataclass(frozen=True)
class Case:
    fault: str
    node: str
    expect: Status
    words: tuple[str, ...]  # the reason holds one of these


CASES = (
    Case("cable pulled mid-probe", "sim002", Status.UNKNOWN, ("no answer within", "connection lost")),
    Case("blackhole (packets dropped)", "sim004", Status.UNKNOWN, ("connect-timeout: tcp connect",)),
    Case("20 % packet loss", "sim006", Status.PASS, ()),
    Case("slow link, 2 Mbit/s", "sim008", Status.PASS, ()),
    Case(f"latency {DELAY_S * 1000:.0f} ms each way", "sim010", Status.PASS, ()),
    Case("cable pulled before the sweep", "sim012", Status.UNKNOWN, ("connect-timeout", "unreachable")),
)
MID_PROBE = "sim002"
PROXIED = "sim010"


@dataclass
class NetRun:
    sim: SimOnSshd
    fleet: NetnsFleet
    result: SweepResult
    proxied_connections: int
    guard_hits: int
    leftovers: dict[str, list[str]]


def _free_proxy_address() -> tuple[str, int]:
    """An address in the proxies' loopback block (127.3.0.0/16) with a free port."""
    host = f"127.3.{os.getpid() % 250 + 1}.{NODES}"
    with socket.socket() as probe:
        probe.bind((host, 0))
        return host, int(probe.getsockname()[1])


def _trust_proxy(fleet: NetnsFleet, node: str, listen: tuple[str, int]) -> None:
    """known_hosts: the proxy's address presents the node's own host key."""
    key_type, key = fleet.node(node).original_host_key.with_suffix(".orig.pub").read_text().split()[:2]
    with fleet.known_hosts.open("a") as known:
        known.write(f"[{listen[0]}]:{listen[1]} {key_type} {key}\n")


@pytest.fixture(scope="module")
def net(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetRun]:
    base = tmp_path_factory.mktemp("netns")
    listen = _free_proxy_address()
    trickle = [Fault(kind=FaultKind.SLOW_TRICKLE, node=MID_PROBE)]  # its probes last 3 s: time to pull the cable
    fleet = NetnsFleet(NODES, prefix=NAME_PREFIX)
    sim = start_sim_on_sshd(NODES, trickle, base, fleet=fleet, endpoints={PROXIED: listen})
    try:
        _trust_proxy(fleet, PROXIED, listen)
        fleet.blackhole("sim004")
        fleet.loss("sim006", 20)
        fleet.throttle("sim008", 2000)
        fleet.link_down("sim012")
        result, connections = asyncio.run(_sweep(sim, fleet, listen, base / "history.sqlite"))
        fleet.reset()
        leftovers = asyncio.run(_leftovers(sim, time.monotonic() + LINGER_S))
        yield NetRun(sim, fleet, result, connections, fleet.guard_hits(), leftovers)
    finally:
        fleet.stop()


async def _sweep(sim: SimOnSshd, fleet: NetnsFleet, listen: tuple[str, int], db: Path) -> tuple[SweepResult, int]:
    proxy = await DelayProxy(listen, (fleet.node(PROXIED).addr, fleet.port), DELAY_S).start()
    inventory = load_inventory(sim.inventory_path)
    store = Store(db)
    engine = SweepEngine(inventory, transport_for(inventory), load_packs(), store, probe_timeout_cap_s=PROBE_TIMEOUT_S)
    arrived = watch_arrivals(engine)
    try:
        sweep = asyncio.ensure_future(engine.run(level="quick"))
        while not any(line.startswith("amd-smi") for line in sim.exec_log(MID_PROBE)):
            assert not sweep.done(), "the sweep ended before the probe started"
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # halfway through its first trickled output
        fleet.link_down(MID_PROBE)
        result = await sweep
        rows = [(c.fault, c.node, c.expect.value) for c in CASES]
        report_matrix(f"network namespaces, {NODES} nodes", rows, result, arrived)
        return result, proxy.connections
    finally:
        await engine.close()
        store.close()
        await proxy.close()


async def _leftovers(sim: SimOnSshd, until: float) -> dict[str, list[str]]:
    """Processes other than sshd and the observer's ps on each node, once they are gone or ``until``.

    The proxied node is left out: its proxy is gone, and nothing there was given up.
    """
    transport = transport_for(load_inventory(sim.inventory_path))
    try:
        while True:
            done = await asyncio.gather(
                *(
                    transport.run(n.name, ["ps", "-eo", "args"], timeout_s=10)
                    for n in sim.fleet.nodes
                    if n.name != PROXIED
                )
            )
            left = {
                r.node: [
                    line
                    for line in r.stdout.decode().splitlines()[1:]
                    if not line.startswith(("sshd", "/usr/sbin/sshd")) and "ps -eo args" not in line
                ]
                for r in done
            }
            left = {node: lines for node, lines in left.items() if lines}
            if not left or time.monotonic() > until:
                return left
            await asyncio.sleep(0.5)
    finally:
        await transport.close()


@pytest.mark.root
@pytest.mark.parametrize("case", CASES, ids=[c.fault for c in CASES])
def test_network_fault_gets_its_verdict(net: NetRun, case: Case) -> None:
    verdict = net.result.verdicts[case.node]
    assert verdict.status is case.expect, f"{case.fault} on {case.node}: {verdict.status} ({verdict.reason})"
    reason = verdict.reason.lower()
    assert not case.words or any(word in reason for word in case.words), f"{case.fault}: {verdict.reason!r}"


@pytest.mark.root
def test_healthy_nodes_pass_and_the_proxy_carried_its_node(net: NetRun) -> None:
    faulty = {c.node for c in CASES}
    wrong = {
        n: (v.status.value, v.reason)
        for n, v in net.result.verdicts.items()
        if n not in faulty and v.status is not Status.PASS
    }
    assert not wrong
    assert net.proxied_connections >= 1


@pytest.mark.root
def test_sweep_ends_within_the_probe_timeout_plus_ten_percent(net: NetRun) -> None:
    assert net.result.outcome == "done"
    assert net.result.duration_s <= PROBE_TIMEOUT_S * ON_TIME


@pytest.mark.root
def test_no_lab_packet_left_through_another_interface(net: NetRun) -> None:
    assert net.guard_hits == 0


@pytest.mark.root
def test_nothing_outlives_the_nodes_own_timeouts(net: NetRun) -> None:
    assert net.leftovers == {}
