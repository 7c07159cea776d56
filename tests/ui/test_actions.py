"""The action registry and every action's flow: keys, footer, palette, help, confirm dialogs, read-only."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.command import CommandList
from textual.widgets import Button, Input, OptionList, Static

from console.actions.baseline import accept_baseline
from console.actions.model import ActionKind, ActionPlan, ActionRequest, Step
from console.actions.planning import refused
from console.checks import CheckPack
from console.model.findings import Status
from console.service.assembly import EngineSpec
from console.store import Store
from console.store.upgrade import INTERRUPTED
from console.sweep.events import SweepDone
from console.ui.app import ConsoleApp
from console.ui.palette import palette_commands
from console.ui.registry import ACTIONS, BY_ID, visible_actions
from console.ui.screens.acceptance import AcceptanceScreen
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.detail import DetailScreen
from console.ui.screens.dialogs import FamilyPicker, TextScreen
from console.ui.screens.help import HelpScreen, help_content
from console.ui.screens.main import MainScreen
from console.ui.screens.remediation import RemediationScreen
from console.ui.widgets.key_bar import KeyBar
from tests.ui.conftest import FIXED_NOW
from tests.ui.helpers import feed, main_screen, wait_until
from tests.ui.synthetic import SyntheticFleet, synthetic_fleet

SIZE = (170, 50)


def test_registry_ids_and_keys_are_unique_per_screen() -> None:
    assert len(BY_ID) == len(ACTIONS)
    for screen in ("main", "detail", "acceptance"):
        keys = [a.key for a in ACTIONS if a.screen == screen]
        assert len(keys) == len(set(keys)), keys


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: a.id)
def test_every_registry_action_has_a_handler(action: object) -> None:
    from console.ui.registry import UiAction

    assert isinstance(action, UiAction)
    screens = {"main": MainScreen, "detail": DetailScreen, "remediation": RemediationScreen}
    screen = {**screens, "acceptance": AcceptanceScreen}[action.screen]
    assert callable(getattr(screen, f"action_{action.action_name}", None)), action.id


def test_every_catalogued_key_runs_the_one_parameterised_handler() -> None:
    catalogued = [a for a in ACTIONS if a.kind is not None]
    assert {a.kind for a in catalogued} >= {ActionKind.DRAIN, ActionKind.ACCEPT, ActionKind.APPROVE}
    # The acceptance view's B keeps its own handler: it plans the selected row's pool, not a node's.
    assert all(a.handler == f"act('{a.id}')" for a in catalogued if a.id != "acceptance-rollback")
    for copied in ("drain", "resume", "cordon", "uncordon", "repaired", "escalate", "enforce_pin", "pin_stack"):
        assert not hasattr(MainScreen, f"action_{copied}"), copied
    assert not hasattr(MainScreen, "action_accept_baseline") and not hasattr(RemediationScreen, "action_approve")
    # Read-only mode hides the dangerous ones by the id the handler is given, and keeps the others.
    screen = MainScreen(read_only=True)
    assert screen.check_action("act", ("drain",)) is None and screen.check_action("act", ("accept",))


async def test_bindings_footer_help_and_palette_come_from_the_registry(make_app: Callable[..., ConsoleApp]) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(pilot)
        bound = {b.id for _key, b in screen._bindings}
        assert bound == {a.id for a in visible_actions(False, "main")}
        footer = {b.description for _key, b in screen._bindings if b.show}
        assert footer == {a.title for a in ACTIONS if a.screen == "main" and a.footer}
        key_bar = str(screen.query_one(KeyBar).render())
        assert all(f"{a.key_display} {a.title}" in key_bar for a in ACTIONS if a.screen == "main" and a.footer)
        texts = [c.text for c in palette_commands(app)]
        assert any("drain" in t for t in texts) and any(t.startswith("theme: instinct-light") for t in texts)
        help_text = help_content(False).plain
        for action in ACTIONS:
            assert action.description in help_text
            # its title ends before its description starts (a long title ran into it)
            assert f"{action.title}  " in help_text.split(action.description)[0].splitlines()[-1]
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)


async def test_read_only_hides_dangerous_actions_everywhere(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet
) -> None:
    app = make_app(read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        screen = main_screen(pilot)
        # the remediation and acceptance views' keys: their own tests
        dangerous = [a for a in ACTIONS if a.dangerous and a.screen == "main"]
        # Multi-node RCCL changes nothing but takes every GPU of its nodes for minutes: refused as well.
        assert {a.id for a in dangerous} == {
            "drain", "resume", "cordon", "uncordon", "enforce-pin", "pin", "multinode", "multinode-fleet",
            "repaired", "escalate", "rollback",
        }  # fmt: skip
        # The acceptance view's run (it takes a pool's GPUs) and roll-back keys, likewise (test_acceptance_view).
        assert {a.id for a in ACTIONS if a.dangerous and a.screen == "acceptance"} == {
            "acceptance-run", "acceptance-rollback",
        }  # fmt: skip
        bound = {b.id for _key, b in screen._bindings}
        assert not bound & {a.id for a in dangerous}
        for action in dangerous:
            assert screen.check_action(action.action_name, ()) is None
            await pilot.press(action.key)
            assert isinstance(app.screen, MainScreen), action.id
            # The key says why nothing happens (it gave no feedback at all).
            said = app._notifications
            assert any(n.message == f"{action.title}: not available in read-only mode (--read-only)" for n in said)
        await screen.run_action("drain")  # even called by name it does nothing
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        texts = " ".join(c.text for c in palette_commands(app))
        assert (
            "drain" not in texts and "resume" not in texts and "enforce pin" not in texts and "pin stack" not in texts
        )
        assert "READ-ONLY" in str(screen.query_one("#summary", Static).render())
        assert "Drain" not in str(screen.query_one(KeyBar).render())


async def test_drain_confirm_freezes_targets_defaults_to_no_and_cancels(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        grid = main_screen(pilot).grid
        names = [n.name for n in fleet.inventory.nodes]
        await pilot.press("down", "space", "space")  # marks names[1], names[2]
        await pilot.press("d")
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen)
        assert dialog.targets == (names[1], names[2])
        assert app.focused is dialog.query_one("#confirm-reason", Input)  # what is typed at once is the reason
        assert dialog.query_one("#confirm-yes", Button).disabled
        # enter lands on No: the dialog says so, and how Yes is reached
        keys = str(dialog.query_one("#confirm-keys", Static).render())
        assert "enter next field (never confirms)" in keys and "tab to Yes, then enter to confirm" in keys
        await pilot.press("tab")  # from the reason to No (Yes is disabled)
        assert app.focused is dialog.query_one("#confirm-no", Button)
        await pilot.press("shift+tab")
        assert app.focused is dialog.query_one("#confirm-reason", Input)
        assert not dialog.query("#confirm-count")  # two nodes: no count to type
        # The grid changes behind the dialog: other marks, another sort, new verdicts.
        grid.toggle_mark(names[5])
        main_screen(pilot).action_sort("severity")
        await feed(pilot, fleet.node_done()[:4])
        assert dialog.targets == (names[1], names[2])
        # No engine in this test: the plan, once it came, says why nothing can run.
        await wait_until(pilot, lambda: "refused" in str(dialog.query_one("#confirm-plan", Static).render()))
        await pilot.press("enter")  # enter in the reason never confirms: it moves to No
        assert app.focused is dialog.query_one("#confirm-no", Button)
        await pilot.press("enter")  # default No
        assert isinstance(app.screen, MainScreen)


async def test_resume_enforce_and_pin_open_the_same_confirm_with_their_scope(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        names = [n.name for n in fleet.inventory.nodes]
        for key, title, targets in (
            ("u", "Resume", (names[0],)),
            ("E", "Enforce pin", (names[0],)),
            ("P", "Pin stack", (names[0],)),
        ):
            await pilot.press(key)
            dialog = app.screen
            assert isinstance(dialog, ConfirmScreen)
            assert dialog.action_spec.title == title and dialog.targets == targets
            await pilot.press("escape")
            assert isinstance(app.screen, MainScreen)


class DialogHost(App[None]):
    """Hosts one confirm dialog with a planner that always accepts, to test its own rules."""

    def __init__(self, targets: tuple[str, ...]) -> None:
        super().__init__()
        self.targets = targets
        self.result: ActionPlan | str | None = "open"
        self.plans: list[str] = []

    def compose(self) -> ComposeResult:
        yield Static("host")

    async def planner(self, reason: str) -> ActionPlan:
        self.plans.append(reason)
        request = ActionRequest(ActionKind.DRAIN, self.targets, reason)
        if not reason:
            return refused(request, "a reason is required for drain")
        argv = ("scontrol", "update", f"nodename={','.join(self.targets)}", "state=DRAIN", f"reason={reason}")
        return ActionPlan(request, (argv,), "ctl01", steps=(Step("ctl01", argv, self.targets),))

    def on_mount(self) -> None:
        def done(preview: ActionPlan | None) -> None:
            self.result = preview

        self.push_screen(ConfirmScreen(BY_ID["drain"], self.targets, self.planner, count_threshold=5), done)


async def test_above_the_threshold_the_count_must_be_typed() -> None:
    targets = tuple(f"gpu{i:03d}" for i in range(1, 8))
    host = DialogHost(targets)
    async with host.run_test(size=SIZE) as pilot:
        dialog = host.screen
        assert isinstance(dialog, ConfirmScreen)
        yes = dialog.query_one("#confirm-yes", Button)
        # No reason yet: the dialog waits for one (no "refused" before the operator typed anything).
        await wait_until(
            pilot, lambda: "waiting for a reason" in str(dialog.query_one("#confirm-plan", Static).render())
        )
        assert yes.disabled and "refused" not in str(dialog.query_one("#confirm-plan", Static).render())
        dialog.query_one("#confirm-reason", Input).focus()
        await pilot.press(*"bad hbm")
        await wait_until(pilot, lambda: "state=DRAIN" in str(dialog.query_one("#confirm-plan", Static).render()))
        assert host.plans[-1] == "bad hbm"
        assert yes.disabled  # seven nodes: the count is still missing
        dialog.query_one("#confirm-count", Input).focus()
        await pilot.press("6")
        assert yes.disabled
        await pilot.press("backspace", "7")
        assert not yes.disabled
        await pilot.press("enter")  # enter in a field never confirms; it moves to No
        assert host.result == "open" and host.focused is dialog.query_one("#confirm-no", Button)
        await pilot.click("#confirm-yes")
        assert isinstance(host.result, ActionPlan)
        assert host.result.targets == targets and host.result.reason == "bad hbm"


async def test_a_changed_reason_needs_a_fresh_plan_before_yes() -> None:
    host = DialogHost(("gpu001",))
    async with host.run_test(size=SIZE) as pilot:
        dialog = host.screen
        assert isinstance(dialog, ConfirmScreen)
        dialog.query_one("#confirm-reason", Input).focus()
        await pilot.press(*"ok")
        yes = dialog.query_one("#confirm-yes", Button)
        await wait_until(pilot, lambda: not yes.disabled)
        await pilot.press("x")  # the plan on screen is for "ok", not "okx"
        assert yes.disabled
        await wait_until(pilot, lambda: not yes.disabled)
        await pilot.press("escape")
        assert host.result is None


async def test_a_reason_typed_at_once_is_kept_and_enter_makes_yes_ready() -> None:
    """The walk-through typed a reason as the dialog opened (lost: No had the focus), then tabbed to a
    Yes still disabled by the pause before a replan."""
    host = DialogHost(("gpu001",))
    async with host.run_test(size=SIZE) as pilot:
        dialog = host.screen
        assert isinstance(dialog, ConfirmScreen)
        await pilot.press(*"hbm ecc", "enter")
        assert dialog.reason == "hbm ecc"
        yes = dialog.query_one("#confirm-yes", Button)
        assert host.focused is dialog.query_one("#confirm-no", Button)
        assert dialog._replan_timer is None  # planned at enter, not after the typing pause
        await wait_until(pilot, lambda: host.plans[-1:] == ["hbm ecc"] and not yes.disabled)
        await pilot.press("tab")
        assert host.focused is yes
        await pilot.press("enter")
        assert isinstance(host.result, ActionPlan) and host.result.reason == "hbm ecc"


async def test_rerun_family_picker_and_rerun_without_engine(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        await pilot.press("f")
        assert isinstance(app.screen, FamilyPicker)
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)
        await pilot.press("r")
        assert any("engine is not running" in n.message for n in app._notifications)


async def test_rerun_of_a_family_the_level_does_not_run_says_so_instead_of_done_in_no_time(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet
) -> None:
    """The walk-through's 'Rerun family' of rvs at the standard level said 'done in 0:00' and ran nothing."""
    app = make_app(level="standard")
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        await pilot.press("f")
        picker = app.screen
        assert isinstance(picker, FamilyPicker)
        options = picker.query_one(OptionList)
        rvs = options.get_option("rvs")
        assert rvs.disabled and "full level only" in str(rvs.prompt)
        assert not options.get_option("ecc").disabled
        await pilot.press("escape")
        app.link.rerun(("gpu001",), {"rvs"})  # the palette's way in, which has no picker
        await pilot.pause()
        said = [n.message for n in app._notifications]
        assert "rvs: nothing to rerun at the standard level (its probes run at the full level)" in said
        assert not any("rerunning" in message for message in said)


async def test_accept_baseline_then_diff(packs: dict[str, CheckPack], tmp_path: Path) -> None:
    history = Store(tmp_path / "history.sqlite")
    fleet = synthetic_fleet(8, "mi300x,mi355x", 2, faults="none", store=history)  # healthy: a baseline
    sweep_id = fleet.events[0].sweep_id  # type: ignore[union-attr]
    app = ConsoleApp(
        fleet.inventory,
        packs,
        store=history,
        clock=lambda: FIXED_NOW,
        export_dir=tmp_path,
        refresh_interval_s=0.0,
        **with_engine(fleet, packs, history),
    )
    try:
        async with app.run_test(size=SIZE) as pilot:
            await feed(pilot, fleet.events)
            await pilot.press("A")
            dialog = app.screen
            assert isinstance(dialog, ConfirmScreen)
            assert dialog.targets == tuple(sorted(fleet.inventory.pools))
            assert not dialog.query("#confirm-count")
            await wait_until(pilot, lambda: f"#{sweep_id}" in str(dialog.query_one("#confirm-plan", Static).render()))
            await pilot.click("#confirm-yes")
            assert isinstance(app.screen, MainScreen)
            # Carried out on the engine side, through its own connection to the history database.
            await wait_until(pilot, lambda: all(history.baseline(pool) == sweep_id for pool in fleet.inventory.pools))
            entry = history.audit_log(1)[0]
            # Audited as the CLI's accept is: same action and inputs, intent and outcome in one row.
            assert entry["action"] == "accept" and json.loads(entry["targets"]) == sorted(fleet.inventory.pools)
            assert json.loads(entry["inputs"]) == {"sweep": sweep_id}
            assert entry["finished_at"] is not None and entry["outcome"].startswith(f"sweep {sweep_id} is the baseline")
            await pilot.press("D")
            report = app.screen
            assert isinstance(report, TextScreen)
            text = report.body.plain
            assert f"baseline #{sweep_id} -> #{sweep_id}" in text and "nothing changed" in text
    finally:
        history.close()


async def test_accept_baseline_refuses_a_sweep_with_failing_nodes(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, store: Store, packs: dict[str, CheckPack]
) -> None:
    """The demo faults leave FAIL and UNKNOWN nodes: such a sweep is no baseline from the dialog (the CLI's
    accept --allow-failing is the deliberate way), and the refusal names them and writes nothing."""
    app = make_app(**with_engine(fleet, packs, store))
    failing = sorted(n for n, v in fleet.verdicts.items() if v.status in (Status.FAIL, Status.UNKNOWN))
    assert failing
    audited = len(store.audit_log(1000))
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        await pilot.press("A")
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen)
        plan = dialog.query_one("#confirm-plan", Static)
        await wait_until(pilot, lambda: "--allow-failing" in str(plan.render()))
        assert failing[0] in str(plan.render())
        assert dialog.query_one("#confirm-yes", Button).disabled
    assert all(store.baseline(pool) is None for pool in fleet.inventory.pools)
    assert len(store.audit_log(1000)) == audited


async def test_accept_baseline_refuses_what_the_cli_refuses(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, tmp_path: Path, packs: dict[str, CheckPack]
) -> None:
    history = Store(tmp_path / "history.sqlite")
    cancelled = history.start_sweep("quick", "synthetic", "", None)
    history.finish_sweep(cancelled, "cancelled", {})
    events = [e.model_copy(update={"sweep_id": cancelled}) for e in fleet.events[:-1]]
    events.append(SweepDone(sweep_id=cancelled, outcome="cancelled", counts={}, duration_s=1.0))
    app = make_app(store=history, **with_engine(fleet, packs, history))
    try:
        async with app.run_test(size=SIZE) as pilot:
            await feed(pilot, events)
            await pilot.press("A")
            dialog = app.screen
            assert isinstance(dialog, ConfirmScreen)
            plan = dialog.query_one("#confirm-plan", Static)
            await wait_until(pilot, lambda: dialog.preview is not None)
            shown = str(plan.render())
            assert f"refused: sweep {cancelled} was cancelled before it finished" in shown, shown
            assert dialog.query_one("#confirm-yes", Button).disabled
            await pilot.press("escape")
            # A sweep that finished is planned; if it is found interrupted before Yes, nothing is accepted.
            done = history.start_sweep("quick", "synthetic", "", None)
            history.finish_sweep(done, "done", {})
            await feed(pilot, [e.model_copy(update={"sweep_id": done}) for e in fleet.events])
            await pilot.press("A")
            dialog = app.screen
            assert isinstance(dialog, ConfirmScreen)
            yes = dialog.query_one("#confirm-yes", Button)
            await wait_until(pilot, lambda: not yes.disabled)
            history.finish_sweep(done, INTERRUPTED, {})
            await pilot.click("#confirm-yes")
            await wait_until(pilot, lambda: isinstance(app.screen, MainScreen))
            await wait_until(pilot, lambda: any(n.title == "Accept baseline" for n in app._notifications))
            said = [(n.title, n.message) for n in app._notifications]
            assert (
                "Accept baseline",
                f"sweep {done} was interrupted: its process ended before the sweep"
                " finished: not a baseline; sweep again and accept that one",
            ) in said, said
        assert history.baselines() == {}
        assert not [row for row in history.audit_log(10) if row["action"] == "accept"]
    finally:
        history.close()


def with_engine(fleet: SyntheticFleet, packs: dict[str, CheckPack], store: Store) -> dict[str, object]:
    """A console's options for an engine on a thread of the test over ``store`` (no sweep at start): accepting
    a baseline runs on the engine side, as every catalogued action does."""
    spec = EngineSpec(fleet.inventory, packs, store.path, local=True)
    return {"engine_spec": spec, "engine_in_thread": True, "start_sweep": False}


def test_accept_baseline_commits_its_intent_before_the_baseline_changes(tmp_path: Path) -> None:
    history = Store(tmp_path / "history.sqlite")
    try:
        sweep_id = history.start_sweep("quick", "synthetic", "", None)
        history.finish_sweep(sweep_id, "done", {})
        seen: list[tuple[str, object]] = []
        accept = history.accept

        def accept_watched(pool: str, sweep: int, user: str) -> None:
            intent = history.audit_log(1)[0]
            seen.append((intent["action"], intent["finished_at"]))
            accept(pool, sweep, user)

        history.accept = accept_watched
        outcome = accept_baseline(history, sweep_id, ("p1", "p2"), reason="new firmware everywhere")
        assert outcome.ok and seen == [("accept", None), ("accept", None)]
        entry = history.audit_log(1)[0]
        assert json.loads(entry["inputs"]) == {"sweep": sweep_id, "reason": "new firmware everywhere"}
        assert entry["finished_at"] is not None and history.baselines() == {"p1": sweep_id, "p2": sweep_id}
    finally:
        history.close()


async def test_export_report_writes_the_verdicts_shown(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, tmp_path: Path
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        await pilot.press("x")
        files = list(tmp_path.glob("instinct-console-sweep*.json"))
        assert len(files) == 1
        # Where it went, as a whole path (the walk-through had to guess the directory).
        assert any(n.message == str(files[0].resolve()) for n in app._notifications)
        report = json.loads(files[0].read_text())
        assert {n["node"] for n in report["nodes"]} == {n.name for n in fleet.inventory.nodes}
        assert report["counts"]["FAIL"] == sum(1 for v in fleet.verdicts.values() if v.status is Status.FAIL)
        assert report["exit_code"] == 1


def test_palette_entries_are_named_by_their_group(make_app: Callable[..., ConsoleApp]) -> None:
    """They read 'the: resume' and 'finding: help' (the first word of the group's title)."""
    texts = {c.text for c in palette_commands(make_app())}
    assert {"cluster: resume (u)", "view: help (?)", "history: accept baseline (A)"} <= texts
    assert "sweep: rerun family rvs" in texts
    assert not [t for t in texts if t.startswith(("the:", "finding:"))]


def _palette_offers(app: ConsoleApp, text: str) -> bool:
    """The command palette's highlighted command is one for ``text`` (its search has answered)."""
    lists = app.screen.query(CommandList)
    if not lists:
        return False
    shown = lists.first()
    index = shown.highlighted
    return index is not None and text in str(shown.get_option_at_index(index).prompt).lower()


async def test_palette_runs_registry_actions_and_switches_themes(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, tmp_path: Path
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        await pilot.press("ctrl+p")
        await pilot.press(*"export report")
        await wait_until(pilot, lambda: _palette_offers(app, "export report"))
        await pilot.press("enter")
        await wait_until(pilot, lambda: bool(list(tmp_path.glob("instinct-console-sweep*.json"))))
        await pilot.press("ctrl+p")
        await pilot.press(*"theme: instinct-high")
        await wait_until(pilot, lambda: _palette_offers(app, "instinct-high"))
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.theme == "instinct-high-contrast")
        await pilot.press("T")
        assert app.theme != "instinct-high-contrast"


async def test_a_filter_with_a_key_no_node_has_says_so_and_verdicts_match_in_any_case(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet
) -> None:
    """``verdikt=FAIL`` and ``verdict=fail`` showed 0 nodes with no hint."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        screen = main_screen(pilot)
        failing = {r.name for r in app.state.rows() if r.status is Status.FAIL}
        assert failing
        await pilot.press("slash", *"verdict=fail")
        await pilot.pause()
        assert set(screen.grid.order) == failing
        await pilot.press(*["backspace"] * len("verdict=fail"), *"verdikt=FAIL")
        await pilot.pause()
        summary = str(screen.query_one("#summary", Static).render())
        assert screen.grid.row_count == 0 and "no label 'verdikt' (labels: " in summary and "verdict" in summary
