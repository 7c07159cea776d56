"""The one way the console carries out a catalogued action, whichever screen's key asked for it.

A key bound to ``act('<id>')`` resolves its targets on its screen (frozen there, by node name) and
hands them here: the engine plans the action (``PlanAction``: its ``ActionPlan`` comes back as the
action service made it), the confirm dialog shows that plan and asks, and the plan confirmed goes back
to the engine to be carried out (``EngineLink.execute_plan``). What each action plans on (nodes, the
cursor node's pool, the pools of the last sweep) follows its catalogue entry's ``targets``. The
multinode level, the one run outside the catalogue asked for from the node grid, takes the same dialog
with its own plan (``RunPlan``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from console.actions.catalogue import Targets, entry
from console.actions.model import ActionPlan
from console.inventory.model import Inventory
from console.model.findings import Status
from console.service.commands import PlanAction
from console.service.multinode_run import MULTINODE_TITLE, PlanMultinode
from console.service.run_plan import RunPlan
from console.ui.registry import Scope, UiAction
from console.ui.screens.confirm import ConfirmScreen
from console.ui.state import NodeRow

if TYPE_CHECKING:
    from console.ui.app import ConsoleApp

ENGINE_DOWN = "the engine is not running"
FAILED = (Status.FAIL, Status.UNKNOWN)


def scope_targets(
    scope: Scope,
    *,
    cursor: str | None,
    marked: Collection[str],
    shown: Sequence[str],
    rows: Sequence[NodeRow],
    inv: Inventory,
) -> tuple[str, ...]:
    """The node names an action of ``scope`` acts on: ``cursor`` the grid's cursor node, ``marked`` its marks,
    ``shown`` its rows in order, ``rows`` every node's row in the inventory's (``inv``) order."""
    if scope is Scope.ALL_FAILED:
        return tuple(r.name for r in rows if r.status in FAILED)
    if scope in (Scope.MARKED, Scope.VISIBLE) and marked:
        return tuple(r.name for r in rows if r.name in marked)
    if scope is Scope.VISIBLE:
        return tuple(shown)
    if scope is Scope.FLEET:
        return tuple(r.name for r in rows)
    if scope is Scope.POOL:
        if cursor is None:
            return ()
        pool = inv.node(cursor).pool
        return tuple(n.name for n in inv.nodes if n.pool == pool)
    return (cursor,) if cursor is not None else ()


class ActionFlow:
    """Plans, confirms and carries out catalogued actions for ``app``'s screens."""

    def __init__(self, app: ConsoleApp) -> None:
        self.app = app

    def baseline_pools(self) -> tuple[str, ...]:
        """The pools of the nodes the last sweep covered (what ``accept`` makes a baseline of)."""
        app = self.app
        names = set(app.state.names())
        return tuple(sorted({app.inventory.node(n).pool for n in app.state.progress.nodes if n in names}))

    def start(self, action: UiAction, targets: tuple[str, ...], *, with_sweep: bool = True) -> None:
        """Plan ``action`` on ``targets``, ask in the confirm dialog, and carry out the plan confirmed.

        ``with_sweep``: the request cites the sweep on screen (a drain's reason is tagged with it).
        """
        app = self.app
        if action.kind is None or (app.read_only and action.dangerous):
            return
        kind, scope = action.kind, entry(action.kind).targets
        progress = app.state.progress
        sweep_id = (progress.sweep_id or None) if with_sweep else None
        if scope is Targets.POOLS:  # the pools a finished sweep covered; none while one runs
            targets = self.baseline_pools()
            sweep_id = None if progress.running else progress.last_full_sweep_id
            if not targets:
                app.notify("no sweep to accept yet")
                return
        if not targets:
            app.notify("no node selected")
            return
        one = scope in (Targets.NODE, Targets.POOL)  # the pool of the first target, from that node
        pool = app.inventory.node(targets[0]).pool if one else None
        from_node = targets[0] if one else None

        async def planner(reason: str, force: bool = False) -> ActionPlan:
            asked = PlanAction(kind, targets, reason, sweep_id, pool, from_node, force=force)
            if app.bridge is None:
                return ActionPlan(request=asked.request, commands=(), where="", refused=ENGINE_DOWN)
            plan: ActionPlan = await app.bridge.ask(asked)
            return plan

        def done(plan: ActionPlan | None) -> None:
            if plan is None:
                app.notify(f"{action.title}: cancelled, nothing was done")
            elif app.state.store_fault is not None:  # its audit row cannot be written: it is not done at all
                app.notify(f"{action.title}: not done: the history database failed (see the banner)", severity="error")
            else:
                app.link.execute_plan(plan, action.title)

        noun = "pool" if scope is Targets.POOLS else "node"
        screen = ConfirmScreen(action, targets, planner, count_threshold=app.confirm_threshold, target_noun=noun)
        app.push_screen(screen, done)

    def start_multinode(self, action: UiAction, targets: tuple[str, ...]) -> None:
        """Ask, then run the multinode level on ``targets``; the plan is the engine's ``RunPlan``, and the
        dialog's borrow choice starts from the console's (``tui --no-baseline-partners``)."""
        app = self.app
        if not targets:
            app.notify("no node selected")
            return

        async def planner(reason: str, force: bool = False, borrow: bool | None = None) -> RunPlan:
            borrow = app.baseline_partners if borrow is None else borrow
            if app.bridge is None:
                return RunPlan(action.id, MULTINODE_TITLE, targets, reason, refused=ENGINE_DOWN)
            plan: RunPlan = await app.bridge.ask(PlanMultinode(targets, reason, *app.pairing, borrow))
            return plan

        def done(plan: RunPlan | None) -> None:
            if plan is None:
                app.notify(f"{action.title}: cancelled, nothing was done")
                return
            app.link.start_multinode(plan.targets, plan.reason, plan.borrow)
            app.main_screen.action_toggle_pair_view(True)

        app.push_screen(ConfirmScreen(action, targets, planner, count_threshold=app.confirm_threshold), done)
