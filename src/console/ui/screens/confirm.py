"""The confirm dialog of actions that change things: frozen targets, reason, dry-run commands, default No.

It opens in the reason field, so what the operator types at once is the reason; Enter there never
confirms: it asks for the plan for that reason at once and moves on (to the count, else to No).

When the plan leaves nodes out by their pool's cap, the dialog says which and why, and offers an
override: typing ``override`` plans again with the cap overridden (the audit log keeps that it was).

When the plan may borrow nodes the operator did not select (the multinode level's baseline partners), it
names them and the dialog offers a checkbox: unticked, it plans again without them.

The targets are fixed when the key was pressed (by node name) and never change while the dialog is
open. The plan is asked for again whenever the reason changes, and "Yes" is enabled only when the
plan on screen is the plan for the reason typed, the service did not refuse it, and (above the
threshold) the operator typed the number of targets.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import ClassVar, Generic, Protocol, TypeVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Button, Checkbox, Input, Static

from console.inventory.hostlist import fold
from console.service.run_plan import RunPlan
from console.ui.registry import UiAction
from console.ui.text import safe


class ShownPlan(Protocol):
    """What the dialog reads of a plan: a catalogued action's ``ActionPlan`` as the engine made it, or a
    run's ``RunPlan`` (the multinode level, a workload)."""

    @property
    def targets(self) -> tuple[str, ...]: ...
    @property
    def reason(self) -> str: ...
    @property
    def forced(self) -> bool: ...
    @property
    def refused(self) -> str | None: ...
    @property
    def where(self) -> str: ...
    @property
    def notes(self) -> tuple[str, ...]: ...
    @property
    def decisions(self) -> Mapping[str, str]: ...
    @property
    def capped(self) -> tuple[str, ...]: ...
    @property
    def held(self) -> tuple[str, ...]: ...
    def command_lines(self) -> list[str]: ...


PlanT = TypeVar("PlanT", bound=ShownPlan)
# planner(reason) -> the plan; planner(reason, force=True) -> the plan with the pool caps overridden.
Planner = Callable[..., Awaitable[PlanT]]
OVERRIDE_WORD = "override"


class TargetList(VerticalScroll, can_focus=False):
    """The frozen targets; scrolls with the mouse but stays out of the tab order (tab from No reaches
    the reason field)."""


REPLAN_DELAY_S = 0.2
# Enter never confirms (it moves on, and lands on No): without this line an operator pressed enter twice
# and cancelled, not knowing that Yes is reached with tab.
KEYS_HINT = Content.assemble(
    ("enter", "bold $accent"),
    (" next field (never confirms)   ", "$muted"),
    ("tab", "bold $accent"),
    (" to Yes, then ", "$muted"),
    ("enter", "bold $accent"),
    (" to confirm   ", "$muted"),
    ("esc", "bold $accent"),
    (" cancel", "$muted"),
)
# The planner's words are the command line's (``--force``); in this dialog the override is typed.
CLI_OVERRIDE = "--force"
DIALOG_OVERRIDE = f'typing "{OVERRIDE_WORD}"'


class ConfirmScreen(ModalScreen[PlanT | None], Generic[PlanT]):
    """Asks before ``action`` runs on ``targets``; dismisses with the confirmed plan or None."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="confirm-cancel")]

    def __init__(
        self,
        action: UiAction,
        targets: tuple[str, ...],
        planner: Planner[PlanT],
        *,
        count_threshold: int = 5,
        target_noun: str = "node",
    ) -> None:
        super().__init__()
        self.action_spec = action
        self.targets = tuple(targets)
        self.planner = planner
        self.needs_count = len(self.targets) > count_threshold
        self.target_noun = target_noun
        self.preview: PlanT | None = None
        self.force = False
        self.borrow: bool | None = None  # the borrow checkbox's value once the plan offers one
        self._replan_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        """Title, targets, reason, plan, count and the two buttons (No first)."""
        count = len(self.targets)
        noun = self.target_noun + ("" if count == 1 else "s")
        danger = "bold $health-crit" if self.action_spec.dangerous else "bold $accent"
        with Vertical(id="confirm-box", classes="-dangerous" if self.action_spec.dangerous else ""):
            yield Static(Content.assemble((f"{self.action_spec.title} {count} {noun}?", danger)), id="confirm-title")
            with TargetList(id="confirm-targets"):
                yield Static(self._targets_content())
            yield Input(placeholder="reason (kept with the action in the audit log)", id="confirm-reason")
            yield Static(Content.styled("asking for the plan…", "$muted"), id="confirm-plan")
            if self.needs_count:
                yield Input(placeholder=f"type {count} to confirm {count} {noun}", id="confirm-count")
            with Horizontal(id="confirm-buttons"):
                yield Button("No", id="confirm-no", variant="primary")
                yield Button(f"Yes, {self.action_spec.title.lower()}", id="confirm-yes", variant="error", disabled=True)
            yield Static(KEYS_HINT, id="confirm-keys")

    def _targets_content(self) -> Content:
        folded = fold(self.targets) if self.target_noun == "node" else ", ".join(self.targets)
        return Content.assemble(
            ("targets (fixed when the key was pressed): ", "$muted"),
            (safe(folded), "bold"),
            "\n",
            (" ".join(safe(t) for t in self.targets), ""),
        )

    def on_mount(self) -> None:
        """Focus the reason field, then ask for the plan."""
        self.query_one("#confirm-reason", Input).focus()
        self._replan()

    @property
    def reason(self) -> str:
        """The reason as typed."""
        return self.query_one("#confirm-reason", Input).value.strip()

    @on(Input.Changed, "#confirm-reason")
    def _reason_changed(self) -> None:
        self._update_yes()
        if self._replan_timer is not None:
            self._replan_timer.stop()
        self._replan_timer = self.set_timer(REPLAN_DELAY_S, self._replan)

    @on(Input.Changed, "#confirm-count")
    def _count_changed(self) -> None:
        self._update_yes()

    @on(Input.Changed, "#confirm-override")
    def _override_changed(self, event: Input.Changed) -> None:
        force = event.value.strip().lower() == OVERRIDE_WORD
        if force != self.force:
            self.force = force
            self._update_yes()
            self._replan()

    def _offer_override(self, preview: PlanT) -> None:
        """Mount the override field the first time a plan leaves nodes out by the cap or their case."""
        if (preview.capped or preview.held) and not self.query("#confirm-override"):
            n = len(preview.capped or preview.held)
            nodes = f"{n} node{'' if n == 1 else 's'}"
            why = f"the {nodes} past the cap" if preview.capped else f"the {nodes} their case holds (not revalidated)"
            field = Input(placeholder=f"type {OVERRIDE_WORD} to take {why} too", id="confirm-override")
            self.query_one("#confirm-box", Vertical).mount(field, before=self.query_one("#confirm-buttons"))

    @on(Checkbox.Changed, "#confirm-borrow")
    def _borrow_changed(self, event: Checkbox.Changed) -> None:
        if event.value != self.borrow:
            self.borrow = event.value
            self._update_yes()
            self._replan()

    def _offer_borrow(self, preview: PlanT) -> None:
        """Mount the borrow choice the first time a plan names nodes outside the targets it may take."""
        if isinstance(preview, RunPlan) and preview.borrowable and not self.query("#confirm-borrow"):
            self.borrow = preview.borrow
            label = f"borrow baseline partners when needed: {fold(preview.borrowable)} (not selected)"
            box = Checkbox(label, value=preview.borrow, id="confirm-borrow")
            self.query_one("#confirm-box", Vertical).mount(box, before=self.query_one("#confirm-buttons"))

    @on(Input.Submitted)
    def _no_enter_confirm(self, event: Input.Submitted) -> None:
        # Enter in a text field must never confirm: it moves on, to the count still to type or to No.
        event.stop()
        if event.input.id == "confirm-reason" and self._replan_timer is not None:
            # The reason is complete: plan for it now rather than after the typing pause, so Yes is
            # ready by the time the operator tabs to it.
            self._replan_timer.stop()
            self._replan_timer = None
            self._replan()
        if event.input.id == "confirm-reason" and self.needs_count:
            self.query_one("#confirm-count", Input).focus()
        else:
            self.query_one("#confirm-no", Button).focus()

    @work(exclusive=True, group="confirm-plan")
    async def _replan(self) -> None:
        reason = self.reason
        borrow = self.borrow
        # Only a planner that offered the borrow choice is asked with it.
        options = {"force": True} if self.force else {}
        if borrow is not None:
            options["borrow"] = borrow
        force = self.force
        try:
            preview = await self.planner(reason, **options)
        except Exception as exc:  # a failing planner must leave the dialog usable (No still works)
            if reason == self.reason and force == self.force and borrow == self.borrow:
                self.preview = None
                failed = f"could not plan: {type(exc).__name__}: {exc}"
                self.query_one("#confirm-plan", Static).update(refusal_content(failed))
                self._update_yes()
            return
        if reason != self.reason or preview.forced != self.force or borrow != self.borrow:
            return  # typed on meanwhile; the next plan is on its way
        self._offer_override(preview)
        self._offer_borrow(preview)
        self.preview = preview
        self.query_one("#confirm-plan", Static).update(plan_content(preview))
        self._update_yes()

    def _count_ok(self) -> bool:
        if not self.needs_count:
            return True
        return self.query_one("#confirm-count", Input).value.strip() == str(len(self.targets))

    @property
    def can_confirm(self) -> bool:
        """True when Yes is allowed: a fresh, unrefused plan for these targets and, if needed, the count.

        A plan may take in more than the targets (a rollback asked on one node acts on its pool), never fewer.
        """
        preview = self.preview
        return (
            preview is not None
            and preview.refused is None
            and preview.reason == self.reason
            and preview.forced == self.force
            and set(self.targets) <= set(preview.targets)
            and (self.borrow is None or (isinstance(preview, RunPlan) and preview.borrow == self.borrow))
            and self._count_ok()
        )

    def _update_yes(self) -> None:
        self.query_one("#confirm-yes", Button).disabled = not self.can_confirm

    @on(Button.Pressed, "#confirm-no")
    def action_cancel(self) -> None:
        """Leave without doing anything."""
        self.dismiss(None)

    @on(Button.Pressed, "#confirm-yes")
    def _confirm(self) -> None:
        if self.can_confirm:
            self.dismiss(self.preview)


def refusal_content(refused: str) -> Content:
    """Why nothing may run, in the dialog's words."""
    return Content.assemble(("refused: ", "bold $health-crit"), (safe(_dialog_words(refused)), "$health-crit"))


def plan_content(preview: ShownPlan) -> Content:
    """The dry run: where it runs, each exact command, notes, or why it was refused."""
    parts: list[str | tuple[str, str]] = []
    if preview.refused and not preview.reason and "reason is required" in preview.refused:
        # Nothing typed yet: the dialog waits for the reason; it is no refusal of anything the operator did.
        parts += [("waiting for a reason: ", "bold $health-warn"), (safe(preview.refused), "$muted")]
        return Content.assemble(*parts)
    if preview.refused:
        return refusal_content(preview.refused)
    parts += [("will run", "bold"), (f" {safe(preview.where)}" if preview.where else "", "$muted")]
    lines = preview.command_lines()
    if not lines:
        parts += ["\n", ("  (no commands: only the console's history changes)", "$muted")]
    for line in lines:
        parts += ["\n  ", (safe(line), "bold")]
    for target, decision in preview.decisions.items():
        parts += ["\n", (f"  {safe(target)}: ", "$muted"), safe(_dialog_words(decision))]
    for note in preview.notes:
        parts += ["\n", ("  note: ", "$muted"), safe(_dialog_words(note))]
    return Content.assemble(*parts)


def _dialog_words(text: str) -> str:
    """``text`` with the command line's override (``--force``) named as this dialog takes it."""
    return text.replace(CLI_OVERRIDE, DIALOG_OVERRIDE)
