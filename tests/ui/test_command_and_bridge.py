"""The ``tui`` command's arguments and errors, and the engine thread bridge."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from console.actions.baseline import plan_accept
from console.actions.model import ActionKind, ActionPlan, ActionRequest
from console.checks import CheckPack
from console.cli import COMMAND_MODULES, build_parser, main
from console.exitcodes import exit_code_for
from console.inventory import load_inventory
from console.service.assembly import EngineSpec
from console.service.commands import PlanAction, SchedulerStates, perform
from console.service.context import EngineContext, load_action_service
from console.store import Store
from console.store.db import StoreError
from console.sweep.engine import SweepEngine
from console.transport.connect import transport_for
from console.ui.bridge import EngineBridge


@pytest.fixture
def hostfile(tmp_path: Path) -> Path:
    path = tmp_path / "hosts"
    path.write_text("gpu[001-004]\n")
    return path


def test_tui_is_a_registered_command_with_its_options() -> None:
    assert "tui" in COMMAND_MODULES
    args = build_parser().parse_args(["tui", "-i", "c.toml", "--read-only", "--probes", "full", "--no-sweep"])
    assert (args.inventory, args.read_only, args.probes, args.no_sweep, args.theme) == (
        "c.toml",
        True,
        "full",
        True,
        "dark",
    )


def test_the_engine_runs_in_its_own_process_unless_asked_for_a_thread() -> None:
    assert build_parser().parse_args(["tui"]).engine == "process"
    assert build_parser().parse_args(["tui", "--engine", "thread"]).engine == "thread"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["tui", "--engine", "fork"])


def test_missing_cluster_file_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tui", "-i", str(tmp_path / "nope.toml")]) == 2
    assert "nope.toml" in capsys.readouterr().err


def test_no_cluster_file_anywhere(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert main(["tui"]) == 2
    assert "no cluster file" in capsys.readouterr().err


def test_unknown_theme_is_a_usage_error(hostfile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["tui", "-i", str(hostfile), "--store", str(tmp_path / "h.sqlite"), "--theme", "sepia"])
    assert code == 2
    assert "unknown theme 'sepia'" in capsys.readouterr().err


def test_bridge_runs_jobs_on_the_engine_thread_and_stops(
    hostfile: Path, packs: dict[str, CheckPack], tmp_path: Path
) -> None:
    inventory = load_inventory(hostfile)
    events: list[object] = []
    bridge = EngineBridge(EngineSpec(inventory, packs, tmp_path / "h.sqlite"), events.append)
    bridge.start()
    try:

        async def where(ctx: EngineContext) -> tuple[str, bool, str | None]:
            return threading.current_thread().name, isinstance(ctx.engine, SweepEngine), ctx.actions_problem

        name, has_engine, problem = bridge.submit(where).result(10)
        assert name == "console-engine" and has_engine and problem is None  # console.actions is built in

        async def ui_side() -> tuple[str, object]:
            # From another loop (the UI's): the job's result, and a command's through the same thread.
            return (await asyncio.wrap_future(bridge.submit(where)))[0], await bridge.ask(SchedulerStates())

        thread_name, states = asyncio.run(ui_side())
        assert thread_name == "console-engine" and isinstance(states, dict)
    finally:
        bridge.stop()
    assert not bridge.running


def test_bridge_start_reports_a_broken_engine(hostfile: Path, packs: dict[str, CheckPack], tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")  # the history database cannot be opened under a file
    bridge = EngineBridge(EngineSpec(load_inventory(hostfile), packs, not_a_dir / "h.sqlite"), lambda event: None)
    with pytest.raises(StoreError, match="cannot create or open the history database"):
        bridge.start()


def test_actions_need_the_history_database(hostfile: Path, packs: dict[str, CheckPack]) -> None:
    inventory = load_inventory(hostfile)
    engine = SweepEngine(inventory, transport_for(inventory), packs, None)
    service, problem = load_action_service(inventory, engine, None, read_only=False)
    assert service is None and problem is not None and "history database" in problem
    context = EngineContext(engine, None, None, problem)
    preview = asyncio.run(perform(context, PlanAction(ActionKind.DRAIN, ("gpu001",), reason="x")))
    assert preview.refused == problem and preview.targets == ("gpu001",)


def test_accept_plan_refusals(tmp_path: Path) -> None:
    """The console's A is planned on the engine side (``plan_accept``) and refuses what the CLI's accept does."""
    store = Store(tmp_path / "h.sqlite")
    try:

        def plan(sweep_id: int | None, pools: tuple[str, ...] = ("p",), running: bool = False) -> ActionPlan:
            return plan_accept(ActionRequest(ActionKind.ACCEPT, pools, sweep_id=sweep_id), store, running=running)

        assert plan(None).refused == "wait for a full sweep to finish"
        assert plan(3, running=True).refused == "wait for a full sweep to finish"
        # What the CLI's accept refuses, the console refuses: unknown, cancelled, or unfinished sweeps.
        assert plan(3).refused == f"no sweep 3 in {store.path}"
        for status in ("cancelled", "deadline", "done"):
            store.finish_sweep(store.start_sweep("quick", "x", "", None), status, {})
        planned = plan(3, ("b", "a"))
        assert planned.refused is None and planned.targets == ("a", "b")
        assert planned.notes == ("pool a: baseline sweep #none -> #3", "pool b: baseline sweep #none -> #3")
        for sweep_id, why in ((1, "was cancelled before it finished"), (2, "ran out of its deadline")):
            refused = plan(sweep_id).refused
            assert refused is not None and refused.startswith(f"sweep {sweep_id} {why}"), refused
    finally:
        store.close()


def test_one_exit_code_rule_for_sweeps_reports_and_drift() -> None:
    from console.model.findings import Status

    assert exit_code_for([Status.PASS, Status.WARN]) == 0
    assert exit_code_for([Status.PASS, Status.WARN], fail_on_warn=True) == 1  # drift: a WARN is drift
    assert exit_code_for([Status.PASS, Status.UNKNOWN]) == 3
    assert exit_code_for([Status.PASS, Status.UNKNOWN], allow_unknown=0.5) == 0
    assert exit_code_for([Status.UNKNOWN, Status.FAIL]) == 1
    assert exit_code_for([Status.FAIL], "deadline") == 4 and exit_code_for([Status.PASS], "cancelled") == 130
    assert exit_code_for([]) == 0
