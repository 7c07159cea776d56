"""Drain and resume from the TUI, by keyboard, against the REAL slurmctld of the Slurm lab.

The console is the real ``ConsoleApp`` with its engine thread and the action service that thread
builds (``console.service.context.load_action_service``); the inventory has no Slurm controller, so
``scontrol`` runs on this host with the lab's ``SLURM_CONF`` (set by the ``lab`` fixture). No sweep
runs: one verdict per lab node is fed in, ``gpu003`` FAILED. What happened is read back with Slurm's
own tools (``sinfo``), from the history database's audit log, and from the grid's SCHED column.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import time
from collections.abc import Callable
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Button, Input

from console.inventory import from_mapping
from console.model.findings import Finding, Status, Subject, roll_up
from console.store import Store
from console.sweep.events import NodeDone, NodeSnapshot, SweepDone, SweepStarted
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.main import MainScreen
from tests.harness.slurm_lab import SlurmLab
from tests.ui.helpers import cell_text, feed, local_console, main_screen, type_text

SIZE = (170, 50)
TAG = "instinct-console:"
FAILED = "gpu003"
REASON = "xgmi link 2-5 down"


async def wait_for(check: Callable[[], bool], what: str, timeout_s: float = 20.0) -> None:
    """Poll ``check`` on the UI loop until it holds."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached in {timeout_s} s: {what}")
        await asyncio.sleep(0.05)


def drained_list(lab: SlurmLab) -> list[str]:
    """Every line of ``sinfo -R`` as ``node|state|reason`` (sinfo pads the reason to its width)."""
    out = lab.run("sinfo", "-R", "-h", "-N", "-o", "%N|%T|%500E").stdout
    return [line.rstrip() for line in out.splitlines() if line.strip()]


def verdict_events(sweep_id: int, nodes: list[str]) -> list[object]:
    """One finished sweep: every node PASS except ``FAILED`` (an XGMI link down)."""

    def finding(node: str, status: Status, message: str) -> Finding:
        return Finding(
            check_id="xgmi.link_up", family="xgmi", status=status, subject=Subject(node=node), message=message
        )

    events: list[object] = [SweepStarted(sweep_id=sweep_id, nodes=nodes, probes=["xgmi"], level="quick")]
    for node in nodes:
        bad = node == FAILED
        found = finding(node, Status.FAIL if bad else Status.PASS, "link 2-5 down" if bad else "all links up")
        events.append(
            NodeDone(sweep_id=sweep_id, pool="mi300x", verdict=roll_up(node, [found]), snapshot=NodeSnapshot())
        )
    counts = {Status.PASS: len(nodes) - 1, Status.FAIL: 1}
    events.append(SweepDone(sweep_id=sweep_id, outcome="done", counts=counts, duration_s=0.0))
    return events


async def confirm_by_keyboard(pilot: Pilot[int], dialog: ConfirmScreen, reason: str, count: str) -> None:
    """Type the reason (when given) and the count, wait for the fresh plan, then tab to Yes and press it."""
    app = pilot.app
    if reason:
        assert app.focused is dialog.query_one("#confirm-reason", Input)  # the dialog opens in it
        await type_text(pilot, reason)
    dialog.query_one("#confirm-count", Input).focus()
    await type_text(pilot, count)
    yes = dialog.query_one("#confirm-yes", Button)
    await wait_for(lambda: not yes.disabled, "the plan for the typed reason enables Yes")
    await pilot.press("enter")  # enter in a field only moves to No
    assert app.focused is dialog.query_one("#confirm-no", Button)
    await pilot.press("tab")
    assert app.focused is yes
    await pilot.press("enter")


async def test_drain_and_resume_from_the_tui_reach_the_real_slurmctld(
    lab: SlurmLab, store: Store, tmp_path: Path
) -> None:
    nodes = list(lab.nodes)
    inventory = from_mapping(
        {"name": "iclab", "pools": [{"name": "mi300x", "gpu_model": "MI300X", "nodes": ",".join(nodes)}]}
    )
    assert inventory.slurm.controller == ""  # Slurm commands run here, with the lab's SLURM_CONF
    sweep_id = store.start_sweep("quick", "iclab", ",".join(nodes), None)
    # Even one node needs its count typed.
    app = local_console(inventory, store, tmp_path, confirm_threshold=0, scheduler_poll_s=0.5)
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, verdict_events(sweep_id, nodes))  # type: ignore[arg-type]
        assert app.bridge is not None and app.bridge.running
        grid = main_screen(pilot).grid
        await wait_for(lambda: all(app.state.row(n).scheduler_word == "idle" for n in nodes), "SCHED read from Slurm")
        await pilot.pause()
        assert cell_text(pilot, FAILED, "verdict") == "✗ FAIL"
        assert cell_text(pilot, FAILED, "sched") == "idle"

        # Select the failed node with the arrow keys, then drain it.
        assert grid.cursor_key != FAILED
        for _ in range(len(nodes)):
            if grid.cursor_key == FAILED:
                break
            await pilot.press("down")
        assert grid.cursor_key == FAILED
        await pilot.press("d")
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen) and dialog.action_spec.id == "drain"
        assert dialog.targets == (FAILED,)
        await confirm_by_keyboard(pilot, dialog, REASON, "1")
        assert isinstance(app.screen, MainScreen)

        tagged = f"{TAG} {REASON} [sweep {sweep_id}]"
        drain_argv = ("scontrol", "update", f"NodeName={FAILED}", "State=DRAIN", f'Reason="{tagged}"')
        assert dialog.preview is not None and dialog.preview.command_lines() == ["local$ " + shlex.join(drain_argv)]
        await wait_for(lambda: app.state.row(FAILED).scheduler_word == "drained", "SCHED shows the drain")

        # slurmctld itself: drained, with the console's tagged reason, listed by sinfo -R; nobody else touched.
        assert lab.state(FAILED) == "drained"
        assert lab.reason(FAILED) == tagged
        assert drained_list(lab) == [f"{FAILED}|drained|{tagged}"]
        for node in nodes:
            if node != FAILED:
                assert lab.state(node) == "idle", node
                assert lab.reason(node) == "", node

        # The audit log (written by the engine thread's own connection) has the exact command.
        entry = store.audit_log(1)[0]
        assert entry["action"] == "drain" and json.loads(entry["targets"]) == [FAILED]
        assert REASON in entry["inputs"]
        assert json.loads(entry["commands"]) == ["local$ " + shlex.join(drain_argv)]
        assert entry["outcome"] == f"drained {FAILED}"
        assert "[local] exit=0" in entry["output"]
        drain_audit = entry["id"]

        await pilot.pause()
        assert cell_text(pilot, FAILED, "sched") == "drained"
        assert any(f"drained {FAILED}" in n.message for n in app._notifications)

        # Resume it from the TUI: the cursor is still on it.
        assert grid.cursor_key == FAILED
        await pilot.press("u")
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen) and dialog.action_spec.id == "resume"
        assert dialog.targets == (FAILED,)
        await confirm_by_keyboard(pilot, dialog, "", "1")
        assert isinstance(app.screen, MainScreen)
        resume_argv = ("scontrol", "update", f"NodeName={FAILED}", "State=RESUME")
        await wait_for(lambda: app.state.row(FAILED).scheduler_word == "idle", "SCHED shows the resume")

        assert lab.wait_state(FAILED, "idle", timeout_s=10) == "idle"
        assert lab.reason(FAILED) == ""
        assert drained_list(lab) == []
        assert all(lab.state(node) == "idle" for node in nodes)
        entry = store.audit_log(1)[0]
        assert entry["id"] > drain_audit and entry["action"] == "resume"
        assert json.loads(entry["commands"]) == ["local$ " + shlex.join(resume_argv)]
        assert entry["outcome"] == f"resumed {FAILED}"
        await pilot.pause()
        assert cell_text(pilot, FAILED, "sched") == "idle"


async def test_drain_past_the_cap_from_the_tui_takes_what_fits_then_an_override_is_typed(
    lab: SlurmLab, store: Store, tmp_path: Path
) -> None:
    """The walk-through marked failing nodes in pools past their cap and got nothing drained."""
    nodes = list(lab.nodes)
    assert len(nodes) == 6  # one pool of six: cap max(2, 10 %) = 2
    inventory = from_mapping(
        {"name": "iclab", "pools": [{"name": "mi300x", "gpu_model": "MI300X", "nodes": ",".join(nodes)}]}
    )
    sweep_id = store.start_sweep("quick", "iclab", ",".join(nodes), None)
    # Even one node needs its count typed.
    app = local_console(inventory, store, tmp_path, confirm_threshold=0, scheduler_poll_s=0.5)
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, verdict_events(sweep_id, nodes))  # type: ignore[arg-type]
        await wait_for(lambda: all(app.state.row(n).scheduler_word == "idle" for n in nodes), "SCHED read")
        grid = main_screen(pilot).grid
        for name in nodes[:3]:
            grid.toggle_mark(name)
        await pilot.press("d")
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen) and dialog.targets == tuple(nodes[:3])
        await type_text(pilot, REASON)
        await wait_for(lambda: dialog.preview is not None and dialog.preview.reason == REASON, "the plan")
        assert dialog.preview is not None and dialog.preview.capped == (nodes[2],)
        plan_text = str(dialog.query_one("#confirm-plan").render())
        assert f"1 of 3 nodes left out by the cap: {nodes[2]}" in plan_text
        assert "skip: cap: cap 2 = max(2, 10% of 6)" in plan_text
        await confirm_by_keyboard(pilot, dialog, "", "3")
        await wait_for(lambda: lab.state(nodes[1]) == "drained", "two drained")
        assert (lab.state(nodes[0]), lab.state(nodes[2])) == ("drained", "idle")
        assert json.loads(store.audit_log(1)[0]["inputs"])["force"] is False

        # Now nothing fits: the plan is refused, and the override must be typed.
        grid.clear_marks()
        for name in nodes[2:4]:
            grid.toggle_mark(name)
        await pilot.press("d")
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen) and dialog.targets == tuple(nodes[2:4])
        await type_text(pilot, REASON)
        await wait_for(lambda: bool(dialog.query("#confirm-override")), "the override is offered")
        assert dialog.preview is not None and dialog.preview.refused and dialog.preview.capped == tuple(nodes[2:4])
        dialog.query_one("#confirm-count", Input).focus()
        await type_text(pilot, "2")
        yes = dialog.query_one("#confirm-yes", Button)
        assert yes.disabled  # refused until overridden
        dialog.query_one("#confirm-override", Input).focus()
        await type_text(pilot, "override")
        await wait_for(lambda: not yes.disabled, "the forced plan enables Yes")
        assert dialog.preview is not None and dialog.preview.forced and not dialog.preview.refused
        yes.focus()
        await pilot.press("enter")
        await wait_for(lambda: lab.state(nodes[3]) == "drained", "forced drain")
        entry = store.audit_log(1)[0]
        assert json.loads(entry["inputs"])["force"] is True
        assert any("cap overridden" in note for note in json.loads(entry["inputs"])["notes"])
