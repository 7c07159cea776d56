"""The engine process and its wire: frames, start-up failures, commands, events and endings, for real.

Every test starts ``python -m console.service.host`` as the console does; the nodes are loopback
addresses nothing listens on, so sweeps end quickly with every node unreachable.
"""

from __future__ import annotations

import io
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.actions.model import ActionKind, ActionPlan, ActionResult
from console.checks import CheckPack, load_packs
from console.inventory import load_inventory
from console.inventory.model import Inventory
from console.model.findings import Status
from console.model.multinode import CollectiveRun, MultinodeResult
from console.service.assembly import EngineSpec
from console.service.client import EngineError, EngineGone, ProcessBridge, describe_error
from console.service.commands import (
    ExecuteAction,
    PlanAction,
    PlanMultinode,
    StartMultinode,
    StartSweep,
)
from console.service.run_plan import RunPlan
from console.service.wire import WireError, encode, read_frame
from console.sweep.events import (
    Event,
    MultinodeDone,
    MultinodeRunDone,
    MultinodeStarted,
    NodeDone,
    SweepDone,
    SweepStarted,
)


@pytest.fixture(scope="module")
def packs() -> dict[str, CheckPack]:
    return load_packs()


@pytest.fixture
def inventory(tmp_path: Path) -> Inventory:
    # Port 9 on loopback: nothing listens, so every connection is refused at once.
    path = tmp_path / "cluster.toml"
    path.write_text(
        'name = "lab"\n[ssh]\nport = 9\n[[pools]]\nname = "p"\ngpu_model = "MI300X"\nnodes = "127.0.0.[11-13]"\n'
    )
    return load_inventory(path)


@pytest.fixture
def started(
    inventory: Inventory, packs: dict[str, CheckPack], tmp_path: Path
) -> Iterator[tuple[ProcessBridge, list[Event]]]:
    events: list[Event] = []
    bridge = ProcessBridge(EngineSpec(inventory, packs, tmp_path / "history.sqlite"), events.append)
    bridge.start()
    bridge.wait_ready()
    yield bridge, events
    bridge.stop()


def test_frames_round_trip_and_a_broken_stream_is_named() -> None:
    messages = [("ready",), ("events", [1, "two"]), ("reply", 3, True, {"a": [1.5]})]
    stream = io.BytesIO(b"".join(encode(m) for m in messages))
    assert [read_frame(stream) for _ in messages] == messages
    assert read_frame(stream) is None  # a clean end between frames
    whole = encode(("reply", 1, True, "x" * 100))
    with pytest.raises(WireError, match=r"ended .* short of a frame"):
        read_frame(io.BytesIO(whole[:-10]))
    with pytest.raises(WireError, match="out of step"):
        read_frame(io.BytesIO(b"\xff\xff\xff\xff" + b"junk"))
    with pytest.raises(WireError, match="unreadable frame"):
        read_frame(io.BytesIO(len(b"junk").to_bytes(4, "big") + b"junk"))


def test_a_sweep_streams_compact_verdicts_and_replies_after_its_events(
    started: tuple[ProcessBridge, list[Event]],
) -> None:
    bridge, events = started
    assert bridge.request(StartSweep("quick")).result(60) is None
    kinds = [type(e) for e in events]
    assert kinds[0] is SweepStarted and kinds[-1] is SweepDone  # the reply came after the last event
    done = [e for e in events if isinstance(e, NodeDone)]
    assert sorted(e.verdict.node for e in done) == ["127.0.0.11", "127.0.0.12", "127.0.0.13"]
    for event in done:
        assert event.verdict.status is Status.UNKNOWN
        assert event.findings_total == len(event.verdict.findings) >= 1
        assert all(f.status is not Status.PASS for f in event.verdict.findings)


def test_multinode_events_cross_the_wire_as_they_are() -> None:
    run = CollectiveRun(seq=3, pool="p", nodes=["a", "b"], purpose="confirm", status=Status.FAIL, busbw_gbps=150.5)
    events = [
        MultinodeStarted(sweep_id=2, nodes=["a", "b"]),
        MultinodeRunDone(sweep_id=2, run=run),
        MultinodeDone(sweep_id=2, result=MultinodeResult(launcher="mpirun", runs=[run]), stopped=True),
    ]
    assert read_frame(io.BytesIO(encode(("events", events)))) == ("events", events)


def test_the_multinode_level_runs_in_the_engine_and_streams_its_phase(
    started: tuple[ProcessBridge, list[Event]],
) -> None:
    bridge, events = started
    nodes = ("127.0.0.11", "127.0.0.12", "127.0.0.13")
    preview = bridge.request(PlanMultinode(nodes)).result(30)
    assert isinstance(preview, RunPlan) and preview.refused is None
    assert preview.commands[0][:6] == ("mpirun", "-np", "16", "-N", "8", "-H")
    result = bridge.request(StartMultinode(nodes)).result(60)
    # Every node unreachable: the per-node sweep ran, then the phase said why no pair could run.
    assert isinstance(result, MultinodeResult) and result.runs == []
    assert "no node of the pool passed its own probes" in result.pools[0].note
    kinds = [type(e) for e in events]
    assert kinds.index(SweepStarted) < kinds.index(SweepDone) < kinds.index(MultinodeStarted)
    assert kinds[-1] is MultinodeDone  # the reply came after the phase's last event
    done = events[-1]
    assert isinstance(done, MultinodeDone) and done.result == result


def test_a_read_only_engine_refuses_the_multinode_level(
    inventory: Inventory, packs: dict[str, CheckPack], tmp_path: Path
) -> None:
    bridge = ProcessBridge(EngineSpec(inventory, packs, tmp_path / "h.sqlite", read_only=True), lambda event: None)
    bridge.start()
    try:
        nodes = ("127.0.0.11", "127.0.0.12")
        assert "read-only" in (bridge.request(PlanMultinode(nodes)).result(30).refused or "")
        with pytest.raises(EngineError, match="PermissionError: read-only mode"):
            bridge.request(StartMultinode(nodes)).result(30)
    finally:
        bridge.stop()


def test_a_failed_command_says_what_failed_and_the_engine_goes_on(
    started: tuple[ProcessBridge, list[Event]],
) -> None:
    bridge, _ = started
    future = bridge.request(StartSweep("explode"))
    with pytest.raises(EngineError) as caught:
        future.result(30)
    assert describe_error(caught.value) == "ValueError: 'explode' is not a valid ProbeSet"
    assert bridge.running


def test_the_action_plan_crosses_the_wire_as_the_service_made_it(
    started: tuple[ProcessBridge, list[Event]],
) -> None:
    bridge, _ = started
    plan = bridge.request(PlanAction(ActionKind.DRAIN, ("127.0.0.11",), reason="test")).result(30)
    # The service's own plan, not a copy of its fields: what the dialog shows is what comes back to run.
    assert isinstance(plan, ActionPlan) and plan.request.kind is ActionKind.DRAIN and plan.targets == ("127.0.0.11",)
    outcome = bridge.request(ExecuteAction(plan)).result(30)
    # No Slurm here: the engine side reads it again before acting, says why not, and audits the attempt.
    assert isinstance(outcome, ActionResult) and not outcome.ok and outcome.audit_id is not None


def test_start_up_failure_is_reported_with_the_engines_words(
    inventory: Inventory, packs: dict[str, CheckPack], tmp_path: Path
) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    problems: list[str] = []
    bridge = ProcessBridge(
        EngineSpec(inventory, packs, not_a_dir / "history.sqlite"), lambda event: None, problems.append
    )
    bridge.start()
    # The console does not wait for the engine to be built: start() returns before the engine (a new
    # Python process that must import and build first) can have said "ready" or "failed". A state,
    # not a time: a loaded machine only makes the engine later.
    assert not bridge._ready.is_set()
    early = bridge.request(StartSweep("quick"))  # sent before the engine is known to have failed
    with pytest.raises(EngineGone, match=r"the engine could not start: .*Error"):
        bridge.wait_ready()
    with pytest.raises(EngineGone, match=r"the engine could not start: .*Error"):
        early.result(10)
    deadline = time.monotonic() + 10
    while not problems and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(problems) == 1 and problems[0].startswith("the engine could not start: "), problems
    assert not bridge.running
    bridge.stop()


def test_the_engine_ends_when_the_console_goes_away(started: tuple[ProcessBridge, list[Event]]) -> None:
    bridge, _ = started
    proc = bridge._proc
    assert proc is not None and proc.stdin is not None
    proc.stdin.close()  # what the console's death looks like from the engine's side
    assert proc.wait(15) == 0
    deadline = time.monotonic() + 10
    while bridge.running and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not bridge.running
    with pytest.raises(EngineGone, match="exit status 0"):
        bridge.request(StartSweep("quick")).result(5)


def test_a_crash_fails_the_commands_in_flight(started: tuple[ProcessBridge, list[Event]]) -> None:
    bridge, _ = started
    assert bridge.pid is not None
    # Stopped first, the engine cannot answer the request before it dies: on a busy machine it once did.
    subprocess.run(["kill", "-STOP", str(bridge.pid)], check=True)
    future = bridge.request(StartSweep("quick"))
    subprocess.run(["kill", "-9", str(bridge.pid)], check=True)
    with pytest.raises(EngineGone, match=r"exit status -9"):
        future.result(15)


def test_the_engine_log_keeps_this_run_and_the_one_before(
    inventory: Inventory, packs: dict[str, CheckPack], tmp_path: Path
) -> None:
    log = tmp_path / "engine.log"
    for _ in range(2):
        bridge = ProcessBridge(EngineSpec(inventory, packs, None), lambda event: None, log_path=log)
        bridge.start()
        bridge.wait_ready()
        bridge.stop()
    assert log.is_file() and (tmp_path / "engine.log.1").is_file()


def test_an_event_the_console_cannot_take_is_reported_once_and_the_rest_still_arrive(
    inventory: Inventory, packs: dict[str, CheckPack], tmp_path: Path
) -> None:
    taken: list[Event] = []
    problems: list[str] = []

    def on_event(event: Event) -> None:
        if isinstance(event, NodeDone):
            raise RuntimeError("cannot draw this")
        taken.append(event)

    bridge = ProcessBridge(EngineSpec(inventory, packs, tmp_path / "h.sqlite"), on_event, problems.append)
    bridge.start()
    try:
        bridge.request(StartSweep("quick")).result(60)
        assert problems == ["an engine event could not be shown: RuntimeError: cannot draw this"]
        assert isinstance(taken[-1], SweepDone) and bridge.running  # three NodeDone failed; the rest came
    finally:
        bridge.stop()


def test_the_probe_timeout_reaches_the_engine_process(packs: dict[str, CheckPack], tmp_path: Path) -> None:
    """tui --probe-timeout: the engine process caps a node whose amd-smi hangs, as the sweep command does."""
    from console.sim.faults import FaultKind
    from console.sim.specs import GpuModel
    from tests.multinode.simcluster import start_cluster

    events: list[Event] = []
    with start_cluster(2, GpuModel.MI300X, FaultKind.COMMAND_HANG) as sim:
        hung = sim.cluster().faults[0].node
        spec = EngineSpec(load_inventory(sim.inventory_path), packs, tmp_path / "h.sqlite", probe_timeout_cap_s=3)
        bridge = ProcessBridge(spec, events.append)
        bridge.start()
        try:
            started = time.monotonic()
            assert bridge.request(StartSweep("quick")).result(60) is None
            took = time.monotonic() - started
        finally:
            bridge.stop()
    verdicts = {e.verdict.node: e.verdict for e in events if isinstance(e, NodeDone)}
    assert took < 15 and verdicts[hung].status is Status.UNKNOWN
    assert "probe timeout" in verdicts[hung].reason and verdicts["sim001"].status is Status.PASS


def test_the_engine_log_is_written_line_by_line_and_survives_a_kill_9(
    inventory: Inventory, packs: dict[str, CheckPack], tmp_path: Path
) -> None:
    """``engine.log`` was empty after the engine's kill -9 (issue 34): each line is on disk as it happens."""
    log = tmp_path / "engine.log"
    bridge = ProcessBridge(EngineSpec(inventory, packs, None), lambda event: None, log_path=log)
    bridge.start()
    bridge.wait_ready()
    bridge.request(StartSweep("quick")).result(30)
    deadline = time.monotonic() + 30
    while "sweep" not in log.read_text(errors="replace") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert bridge.pid is not None
    subprocess.run(["kill", "-9", str(bridge.pid)], check=True)
    bridge.stop()
    lines = log.read_text(errors="replace").splitlines()
    assert any("engine" in line and "serving lab" in line for line in lines), lines
    assert any("StartSweep" in line for line in lines), lines
    assert all(line[:4].isdigit() for line in lines), "every line starts with its time"


def test_the_engine_log_is_never_written_through_a_link(
    inventory: Inventory, packs: dict[str, CheckPack], tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("theirs\n")
    (tmp_path / "engine.log").symlink_to(victim)
    bridge = ProcessBridge(EngineSpec(inventory, packs, None), lambda event: None, log_path=tmp_path / "engine.log")
    bridge.start()
    bridge.wait_ready()
    bridge.stop()
    assert victim.read_text() == "theirs\n"
