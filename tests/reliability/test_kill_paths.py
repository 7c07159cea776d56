"""Checking a node leaves nothing behind on it: every kill path against real sshd, with a probe that
ignores SIGTERM (it traps TERM, INT and HUP, and so does the ``sleep`` it waits on).

The node's ``amd-smi list`` hangs that way. Each path must end it: the node's own ``timeout -k``
(the bundle), the console's probe-timeout cap, Ctrl-C and SIGTERM of the ``sweep`` command. Before
issue 16, each left the probe running for ever, re-parented to PID 1: the console killed only the
first process group of the command, and GNU ``timeout`` had moved the probe to a group of its own.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.checks import load_packs
from console.inventory import load_inventory
from console.model.findings import Status
from console.sim.faults import Fault, FaultKind
from console.sweep import SweepEngine
from console.sweep.bundle import bundle_script, bundle_timeout, node_grace_s, split_bundle
from console.sweep.catalog import PROBES_BY_ID
from console.transport.connect import transport_for
from tests.reliability.simfleet import SimOnSshd, start_sim_on_sshd

# Grouped under xdist with the other modules that start engine workers, as CI was measured green with
# them (the leak checks themselves count only this test process's own descendants).
pytestmark = pytest.mark.xdist_group("engine-workers")

STUBBORN = "sim002"
SLACK_S = 3.0  # a busy 2-core machine


def _stubborn_probes(sim: SimOnSshd) -> list[str]:
    """Command lines on the stubborn node other than sshd's own: what a sweep left running."""
    found = []
    for pid in sim.fleet.processes(STUBBORN):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z" and "sshd" not in cmdline and cmdline.strip():
            found.append(cmdline.strip())
    return found


def _wait(condition: object, what: str, timeout_s: float) -> float:
    started = time.monotonic()
    while not condition():  # type: ignore[operator]
        assert time.monotonic() - started < timeout_s, what
        time.sleep(0.05)
    return time.monotonic() - started


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimOnSshd]:
    fault = Fault(kind=FaultKind.IGNORES_SIGTERM, node=STUBBORN, params={"args": "list"})
    sim = start_sim_on_sshd(3, [fault], tmp_path_factory.mktemp("kill-paths"))
    try:
        yield sim
    finally:
        sim.fleet.stop()


@pytest.fixture
def clean(sim: SimOnSshd) -> Iterator[SimOnSshd]:
    assert _stubborn_probes(sim) == []
    yield sim
    # Whatever a failed test left behind must not leak into the next one. A process listed a moment ago
    # may be gone by now (a kill the console started in the background finished): nothing to do then.
    for pid in sim.fleet.processes(STUBBORN):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except (FileNotFoundError, ProcessLookupError):
            continue
        if "sshd" not in cmdline:
            subprocess.run(["kill", "-9", str(pid)], check=False)


@pytest.mark.root
def test_the_nodes_own_timeout_kills_a_probe_that_ignores_sigterm(clean: SimOnSshd) -> None:
    """The bundle alone, as when the console is gone: TERM at T, KILL at T + grace, the next probe runs."""
    spec = PROBES_BY_ID["amdsmi.list"]
    from dataclasses import replace

    probes = [replace(spec, timeout_s=2.0), PROBES_BY_ID["host.kernel"]]
    inventory = load_inventory(clean.inventory_path)

    async def bundle() -> tuple[float, dict[str, object]]:
        transport = transport_for(inventory)
        try:
            started = time.monotonic()
            result = await transport.run_script(STUBBORN, bundle_script(probes), timeout_s=bundle_timeout(probes))
            return time.monotonic() - started, dict(split_bundle(result.stdout, probes))
        finally:
            await transport.close()

    elapsed, sections = asyncio.run(bundle())
    assert sections["amdsmi.list"].exit_status == 137  # type: ignore[attr-defined]
    assert sections["host.kernel"].exit_status == 0  # type: ignore[attr-defined]
    assert 2.0 + node_grace_s(2.0) * 0.9 <= elapsed < bundle_timeout(probes) + SLACK_S
    assert _stubborn_probes(clean) == []


@pytest.mark.root
def test_the_probe_timeout_cap_kills_it_and_the_verdict_comes_within_the_cap(clean: SimOnSshd) -> None:
    inventory = load_inventory(clean.inventory_path)

    async def sweep() -> tuple[float, Status, float]:
        engine = SweepEngine(inventory, transport_for(inventory), load_packs(), probe_timeout_cap_s=3.0)
        started = time.monotonic()
        result = await engine.run([inventory.node(STUBBORN)])
        answered = time.monotonic() - started
        await engine.close()
        return answered, result.verdicts[STUBBORN].status, time.monotonic() - started

    answered, status, closed = asyncio.run(sweep())
    assert status is Status.UNKNOWN
    assert answered < 3.0 * 1.1 + SLACK_S  # the verdict does not wait for the kill's grace
    assert closed < answered + SLACK_S  # closing ends the grace: SIGKILL at once
    _wait(lambda: _stubborn_probes(clean) == [], f"left on the node: {_stubborn_probes(clean)}", SLACK_S)


@pytest.mark.root
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupting_the_sweep_command_kills_it(clean: SimOnSshd, tmp_path: Path, sig: signal.Signals) -> None:
    sweep = subprocess.Popen(
        [sys.executable, "-m", "console", "sweep", "-i", str(clean.inventory_path), "--store", str(tmp_path / "h.db")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait(lambda: any("sleep 3600" in p for p in _stubborn_probes(clean)), "the stubborn probe never ran", 30)
        sweep.send_signal(sig)
        assert sweep.wait(30) == 130
    finally:
        if sweep.poll() is None:
            sweep.kill()
            sweep.wait()
    left = _stubborn_probes(clean)
    said = sweep.stderr.read().decode(errors="replace") if sweep.stderr else ""
    assert left == [], f"the command exited with the probe still running on the node: {said[-3000:]}"


@pytest.mark.root
@pytest.mark.parametrize("workers", [0, 2], ids=["engine", "two-workers"])
def test_cancelling_a_sweep_kills_it_on_the_node(clean: SimOnSshd, workers: int) -> None:
    """``cancel`` (the console's CancelSweep) ends the sweep as cancelled, every node with a verdict, and the
    probe killed on the node, also where it runs in an engine worker process: the cancel reaches it there
    and the worker's transport kills it before the worker exits. Before, a cancel left the nodes it cut
    without a verdict and the sweep "done" (a KeyError building its result)."""
    from console.service.assembly import EngineSpec, build_engine
    from console.sweep.checker_workers import WorkerChecker
    from tests.transport.conftest import engine_workers_left

    inventory = load_inventory(clean.inventory_path)
    engine = build_engine(EngineSpec(inventory, load_packs(), None, workers=workers), None)
    assert isinstance(engine.checker, WorkerChecker) == (workers > 0)

    async def cancelled_sweep() -> tuple[str, Status, str]:
        sweep = asyncio.ensure_future(engine.run())
        started = time.monotonic()
        while not any("sleep 3600" in p for p in _stubborn_probes(clean)):
            assert time.monotonic() - started < 30, "the stubborn probe never ran"
            await asyncio.sleep(0.05)
        engine.cancel()
        result = await sweep
        await engine.close()
        assert set(result.verdicts) == {n.name for n in inventory.nodes}
        return result.outcome, result.verdicts[STUBBORN].status, result.verdicts[STUBBORN].reason

    outcome, status, reason = asyncio.run(cancelled_sweep())
    assert outcome == "cancelled"
    assert status is Status.UNKNOWN and "cancelled" in reason, reason
    _wait(lambda: _stubborn_probes(clean) == [], f"left on the node: {_stubborn_probes(clean)}", SLACK_S)
    assert engine_workers_left() == []
