"""Every operator action of the console, declared once.

The registry drives the key bindings (with stable ids, so ``App.set_keymap`` can rebind them), the
footer, the command palette and the help screen; ``console.ui.keymap`` rebinds them from the user's
key file. ``handler`` is the Textual action run on the action's screen. The actions that change
something come from ``console.actions.catalogue``, with its id, title, description and danger, and run
through one parameterised handler, ``act('<id>')`` (``console.ui.acting``): dangerous ones (drain,
resume, pins) are not bound at all in ``--read-only`` mode, and every one of them goes through the
confirm dialog.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from textual.binding import Binding

from console.actions.catalogue import entry
from console.actions.model import ActionKind


class Scope(StrEnum):
    """Which nodes an action acts on, resolved (and frozen) when its key is pressed."""

    NODE = "node"
    MARKED = "marked"
    ALL_FAILED = "all-failed"
    VISIBLE = "visible"
    POOL = "pool"
    FLEET = "fleet"
    GLOBAL = "global"

    @property
    def describe(self) -> str:
        """How the help screen explains the scope."""
        return _SCOPE_TEXT[self]


_SCOPE_TEXT = {
    Scope.NODE: "the node under the cursor",
    Scope.MARKED: "marked nodes, else the node under the cursor",
    Scope.ALL_FAILED: "every FAIL or UNKNOWN node",
    Scope.VISIBLE: "marked nodes, else every node shown",
    Scope.POOL: "marked nodes, else every node of the cursor's pool",
    Scope.FLEET: "every node",
    Scope.GLOBAL: "the console",
}


@dataclass(frozen=True)
class UiAction:
    """One operator action."""

    id: str
    title: str
    key: str
    scope: Scope
    handler: str
    description: str
    group: str
    dangerous: bool = False
    confirm: bool = False
    footer: bool = False
    screen: str = "main"
    # Checked before the key reaches the focused widget: what is typed right after it must already
    # find the widget the action focused (e.g. the filter line after "/").
    priority: bool = False
    kind: ActionKind | None = None  # the catalogue's action it runs (None: the console's own)

    @property
    def action_name(self) -> str:
        """The Textual action name without its arguments (what ``check_action`` receives)."""
        return self.handler.split("(", 1)[0]

    @property
    def key_display(self) -> str:
        """The default key as the help screen prints it."""
        return self.key_shown()

    def key_shown(self, keymap: Mapping[str, str] | None = None) -> str:
        """The key as the help screen prints it, the operator's own from ``keymap`` (``console.ui.keymap``)."""
        keys = (keymap or {}).get(self.id, self.key)
        return "/".join(_KEY_NAMES.get(k, k) for k in keys.split(","))


# The one handler of every catalogued action: ``action_act(action_id)`` on its screen (console.ui.acting).
ACT = "act"


def _catalogued(
    kind: ActionKind,
    key: str,
    scope: Scope,
    group: str,
    *,
    footer: bool = False,
    screen: str = "main",
    handler: str | None = None,
) -> UiAction:
    """The console's key for a catalogued action: its id, title, description and danger come from there.

    On another screen than the main one the id is ``<screen>-<action>``: ids are unique across screens.
    Its handler is ``act('<id>')`` unless the screen needs its own (``handler``).
    """
    e = entry(kind)
    uid = e.id if screen == "main" else f"{screen}-{e.id}"
    return UiAction(uid, e.title, key, scope, handler or f"{ACT}('{uid}')", e.summary, group, dangerous=e.dangerous,
                    confirm=True, footer=footer, screen=screen, kind=kind)  # fmt: skip


_KEY_NAMES = {"question_mark": "?", "slash": "/", "space": "space", "enter": "enter", "escape": "esc"}

ACTIONS: tuple[UiAction, ...] = (
    # finding your way
    UiAction("help", "Help", "question_mark", Scope.GLOBAL, "help", "keys, colours and the filter grammar", "view",
             footer=True),
    UiAction("filter", "Filter", "slash", Scope.GLOBAL, "filter",
             "text, hostlist, key=value labels (pool=, rack=, verdict=FAIL, sched=drained, drift=yes); ! inverts",
             "view", footer=True, priority=True),
    UiAction("clear-filter", "Clear filter", "escape", Scope.GLOBAL, "clear_filter", "show every node again", "view"),
    UiAction("open-detail", "Details", "enter", Scope.NODE, "open_detail",
             "GPUs, findings with evidence, stack vs pin, history, raw output", "view", footer=True),
    UiAction("mark", "Mark", "space", Scope.NODE, "mark", "mark or unmark the node for a multi-node action", "view",
             footer=True),
    UiAction("clear-marks", "Clear marks", "C", Scope.GLOBAL, "clear_marks", "unmark every node", "view"),
    UiAction("sort-name", "Sort by name", "N", Scope.GLOBAL, "sort('name')", "natural order of node names", "view"),
    UiAction("sort-severity", "Sort by verdict", "V", Scope.GLOBAL, "sort('severity')",
             "FAIL, UNKNOWN, WARN, PASS, then not yet judged", "view"),
    UiAction("sort-pool", "Sort by pool", "O", Scope.GLOBAL, "sort('pool')", "pool, then name", "view"),
    UiAction("problems-first", "Problems first", "z", Scope.GLOBAL, "toggle_problems_first",
             "keep FAIL, UNKNOWN and WARN nodes on top in any sort", "view", footer=True),
    UiAction("toggle-links", "Link panel", "l", Scope.GLOBAL, "toggle_links",
             "show or hide the XGMI/TransferBench, PCIe and NIC panel", "view"),
    UiAction("pause", "Pause updates", "p", Scope.GLOBAL, "toggle_pause",
             "freeze the screen while results keep arriving; press again to catch up", "view"),
    UiAction("cycle-theme", "Next theme", "T", Scope.GLOBAL, "cycle_theme", "dark, light, high contrast", "view"),
    # sweeps
    UiAction("rerun", "Rerun", "r", Scope.MARKED, "rerun", "run every probe of the sweep level again", "sweep",
             footer=True),
    UiAction("rerun-family", "Rerun family", "f", Scope.MARKED, "rerun_family",
             "pick one check family and run only its probes again", "sweep"),
    UiAction("rerun-failed", "Rerun failed", "R", Scope.ALL_FAILED, "rerun_failed",
             "run the sweep level again on every FAIL or UNKNOWN node", "sweep"),
    UiAction("new-sweep", "New sweep", "S", Scope.GLOBAL, "new_sweep", "sweep every node again", "sweep"),
    UiAction("restart-engine", "Restart engine", "e", Scope.GLOBAL, "restart_engine",
             "start the sweep engine again after it died, and say what was lost with it", "sweep"),
    UiAction("cancel-sweep", "Cancel sweep", "K", Scope.GLOBAL, "cancel_sweep",
             "stop the sweep; probes in flight are killed on the nodes", "sweep"),
    UiAction("give-up", "Give up on node", "w", Scope.MARKED, "give_up",
             "stop waiting for a stuck node: its probes are killed on it, it reads UNKNOWN, the sweep goes on",
             "sweep"),
    # Heavy: every GPU of the nodes is taken for minutes, so it asks first and read-only mode refuses it.
    UiAction("multinode", "Multi-node RCCL", "m", Scope.POOL, "multinode('pool')",
             "standard probes, then all_reduce_perf over node pairs; a failed pair's node reruns with another "
             "good node before it is named", "sweep", dangerous=True, confirm=True),
    UiAction("multinode-fleet", "Multi-node RCCL, every node", "M", Scope.FLEET, "multinode('fleet')",
             "the multinode level on every node, pool by pool", "sweep", dangerous=True, confirm=True),
    UiAction("pair-view", "Node-pair view", "L", Scope.GLOBAL, "toggle_pair_view",
             "the link panel shows the multi-node heatmap (busbw / floor per node pair) and the stragglers",
             "view"),
    # the cluster (dangerous)
    _catalogued(ActionKind.DRAIN, "d", Scope.MARKED, "cluster", footer=True),
    _catalogued(ActionKind.RESUME, "u", Scope.MARKED, "cluster"),
    _catalogued(ActionKind.CORDON, "c", Scope.MARKED, "cluster"),
    _catalogued(ActionKind.UNCORDON, "U", Scope.MARKED, "cluster"),
    # a drained node's remediation case (console.store.lifecycle)
    _catalogued(ActionKind.REPAIRED, "a", Scope.MARKED, "cluster"),
    _catalogued(ActionKind.ESCALATE, "X", Scope.MARKED, "cluster"),
    UiAction("remediation", "Remediation view", "H", Scope.GLOBAL, "remediation_view",
             "nodes per stage of the remediation loop: age, next step and who takes it, strikes, breaker, "
             "proposals", "cluster"),
    _catalogued(ActionKind.ENFORCE_PIN, "E", Scope.MARKED, "cluster"),
    _catalogued(ActionKind.PIN, "P", Scope.NODE, "cluster"),
    _catalogued(ActionKind.ROLLBACK, "B", Scope.NODE, "cluster"),
    # history
    _catalogued(ActionKind.ACCEPT, "A", Scope.GLOBAL, "history"),
    UiAction("diff-baseline", "Diff baseline", "D", Scope.GLOBAL, "diff_baseline",
             "what changed since each pool's accepted baseline", "history"),
    UiAction("acceptance", "Workload acceptance", "W", Scope.GLOBAL, "acceptance_view",
             "each workload on each pool: state, accepted and current stack, figures", "history"),
    UiAction("copy-hostlist", "Copy hostlist", "y", Scope.VISIBLE, "copy_hostlist",
             "fold the nodes into a hostlist and put it on the clipboard", "history"),
    UiAction("export-report", "Export report", "x", Scope.GLOBAL, "export_report",
             "write the JSON sweep report to the export directory", "history"),
    UiAction("quit", "Quit", "q", Scope.GLOBAL, "quit", "stop the sweep and leave", "view", footer=True),
    # the detail screen of one node
    UiAction("raw-output", "Raw output", "r", Scope.NODE, "raw_output",
             "the stored output of the probe behind the selected finding or probe run", "detail", footer=True,
             screen="detail"),
    UiAction("show-findings", "Findings", "1", Scope.NODE, "show_tab('findings')", "every finding with its evidence",
             "detail", footer=True, screen="detail"),
    UiAction("show-gpus", "GPUs", "2", Scope.NODE, "show_tab('gpus')",
             "temperatures, power, clocks, VRAM, ECC, bad pages, sparklines over the session", "detail", footer=True,
             screen="detail"),
    UiAction("show-stack", "Stack", "3", Scope.NODE, "show_tab('stack')", "stack versions against the pool pin",
             "detail", footer=True, screen="detail"),
    UiAction("show-history", "History", "4", Scope.NODE, "show_tab('history')", "verdicts of earlier sweeps",
             "detail", footer=True, screen="detail"),
    UiAction("show-probes", "Probes", "5", Scope.NODE, "show_tab('probes')", "every probe run with its raw output",
             "detail", footer=True, screen="detail"),
    UiAction("back", "Back", "escape", Scope.GLOBAL, "back", "back to the node list", "detail", footer=True,
             screen="detail"),
    # the remediation view (H): the cursor node's case, through the catalogue like every action
    _catalogued(ActionKind.REPAIRED, "a", Scope.NODE, "remediation", footer=True, screen="remediation"),
    _catalogued(ActionKind.REVALIDATE, "v", Scope.NODE, "remediation", footer=True, screen="remediation"),
    _catalogued(ActionKind.APPROVE, "p", Scope.NODE, "remediation", footer=True, screen="remediation"),
    _catalogued(ActionKind.ESCALATE, "X", Scope.NODE, "remediation", footer=True, screen="remediation"),
    UiAction("remediation-back", "Back", "escape", Scope.GLOBAL, "back", "back to the node list", "remediation",
             footer=True, screen="remediation"),
    # the acceptance view (W): one row per workload and pool
    # Heavy like the multi-node runs: the pool's GPUs are taken for the workload's run, so it asks first
    # and read-only mode refuses it.
    UiAction("acceptance-run", "Run workload", "r", Scope.POOL, "run_workload",
             "run the selected workload on its pool now (quick probes first); where the stack changed, the outcome "
             "is recorded: accepted again or regressed", "acceptance", dangerous=True, confirm=True, footer=True,
             screen="acceptance"),
    # Accepting a workload's run (accept --workload) is not the catalogue's "accept" (a sweep as baseline).
    UiAction("acceptance-accept-run", "Accept run", "a", Scope.POOL, "accept_workload",
             "accept the selected workload's last passed run on its pool, with a reason (audited)", "acceptance",
             confirm=True, footer=True, screen="acceptance"),
    _catalogued(ActionKind.ROLLBACK, "B", Scope.POOL, "acceptance", footer=True, screen="acceptance",
                handler="rollback_pool"),
    UiAction("acceptance-close", "Back", "escape", Scope.GLOBAL, "close", "back to the node list", "acceptance",
             footer=True, screen="acceptance"),
)  # fmt: skip

BY_ID: dict[str, UiAction] = {a.id: a for a in ACTIONS}
DANGEROUS_ACTION_NAMES = frozenset(a.action_name for a in ACTIONS if a.dangerous)


def hidden_when_read_only(action: str, parameters: tuple[object, ...]) -> bool:
    """True when the Textual action ``action(*parameters)`` is a dangerous one (read-only mode hides it).

    ``act`` runs every catalogued action: its parameter, the action's id, says which (without one it is
    hidden: it could not run anyway).
    """
    if action == ACT:
        named = BY_ID.get(str(parameters[0])) if parameters else None
        return named is None or named.dangerous
    return action in DANGEROUS_ACTION_NAMES


GROUP_TITLES = {
    "view": "Finding your way",
    "sweep": "Sweeps",
    "cluster": "The cluster",
    "history": "History and reports",
    "detail": "Node details",
    "remediation": "Remediation view (H)",
    "acceptance": "Workload acceptance (W)",
}


def visible_actions(read_only: bool, screen: str = "main") -> list[UiAction]:
    """The actions an operator can use on ``screen``: dangerous ones disappear in read-only mode."""
    return [a for a in ACTIONS if a.screen == screen and not (read_only and a.dangerous)]


def bindings(read_only: bool, screen: str = "main") -> list[Binding]:
    """Key bindings of ``screen``, one per usable action, each with the action's stable id.

    In read-only mode a dangerous action's key is not bound to it; it only says why nothing happens
    (pressing ``d`` gave no feedback at all).
    """
    usable = [
        Binding(a.key, a.handler, a.title, show=a.footer, id=a.id, tooltip=a.description, priority=a.priority)
        for a in visible_actions(read_only, screen)
    ]
    refused = [
        Binding(a.key, f"read_only_refusal('{a.id}')", a.title, show=False, id=f"read-only-{a.id}")
        for a in ACTIONS
        if read_only and a.dangerous and a.screen == screen
    ]
    return usable + refused


def pair_keys_hint(read_only: bool, keymap: Mapping[str, str] | None = None) -> str:
    """The keys of the multi-node runs and the node-pair view, as the link panel's pair line says them."""
    pool, fleet, view = (BY_ID[k].key_shown(keymap) for k in ("multinode", "multinode-fleet", "pair-view"))
    if read_only:
        return f"{view}: node-pair view (starting runs is off in read-only mode)"
    return f"{pool}: run on the marked nodes, else the cursor's pool; {fleet}: every node; {view}: node-pair view"
