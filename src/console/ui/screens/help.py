"""The help screen, generated from the action registry, with the colour legend and the filter grammar."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from console.ui.registry import ACTIONS, GROUP_TITLES
from console.ui.rows import FAMILY_TITLES
from console.ui.text import SEVERITY_ORDER, STATUS_GLYPH, STATUS_STYLE

Part = str | tuple[str, str]
FILTER_HELP = (
    ("sim01", "node names containing the text"),
    ("gpu[001-016]", "a hostlist"),
    ("pool=mi300x-a", "a label: pool, model, rack, ... as in the cluster file"),
    ("verdict=FAIL", "live labels: verdict=PASS|WARN|FAIL|UNKNOWN|none, sched=drained, drift=yes"),
    ("!verdict=PASS", "a leading ! inverts a term; terms separated by spaces must all match"),
)
STATUS_MEANING = {
    "PASS": "every check passed",
    "WARN": "worth a look, not a reason to drain",
    "FAIL": "a check failed: drain before the next job",
    "UNKNOWN": "could not be checked (unreachable, timeout, unreadable output): never counts as healthy",
    "SKIP": "does not apply to this node",
    None: "no verdict yet",
}


def help_content(read_only: bool, keymap: Mapping[str, str] | None = None) -> Content:
    """Keys per group from the registry (the operator's own from ``keymap``), then colours, glyphs, columns
    and the filter grammar."""
    parts: list[Part] = []
    width = max(len(a.title) for a in ACTIONS) + 2  # the longest title still ends before its description
    for group, title in GROUP_TITLES.items():
        actions = [a for a in ACTIONS if a.group == group]
        if not actions:
            continue
        parts += [(title, "bold $accent"), "\n"]
        for action in actions:
            hidden = read_only and action.dangerous
            style = "$muted" if hidden else ""
            parts += [(f"  {action.key_shown(keymap):>7}  ", style or "bold"), (action.title.ljust(width), style)]
            parts += [(action.description, "$muted")]
            if action.dangerous:
                parts += [
                    (
                        "  dangerous: confirm, " + ("hidden (read-only)" if hidden else "hidden in --read-only"),
                        "$health-warn",
                    )
                ]
            elif action.confirm:
                parts += [("  asks first", "$muted")]
            parts += [(f"  [{action.scope.describe}]", "$muted"), "\n"]
        parts.append("\n")
    parts += [("Verdicts", "bold $accent"), "\n"]
    for status in SEVERITY_ORDER:
        label = status.value if status is not None else "pending"
        key = status.value if status is not None else None
        parts += [(f"  {STATUS_GLYPH[status]} {label:<8}", STATUS_STYLE[status]), (STATUS_MEANING[key], "$muted"), "\n"]
    parts += [("  Δ", "bold $drift"), ("         stack or firmware differs from the pool pin", "$muted"), "\n"]
    parts += [("  ◆", "bold $marked"), ("         marked for a multi-node action", "$muted"), "\n\n"]
    parts += [("Family columns", "bold $accent"), "\n  "]
    parts += [f"{short}={family}  " for family, short in FAMILY_TITLES.items()]
    parts += ["\n\n", ("Link heatmap", "bold $accent"), "\n  "]
    parts += [("■ more than 3 % above the floor  ", "$heat-good"), ("■ within 3 % of the floor  ", "$heat-near")]
    parts += [("■ below the floor  ", "$heat-low"), ("✗ XGMI link down", "$health-crit")]
    parts += ["\n  floors come from the model's check pack (tb_a2a_pair_min_gbps, pcie_gts)\n\n"]
    parts += [("Filter ( / )", "bold $accent"), "\n"]
    for example, meaning in FILTER_HELP:
        parts += [(f"  {example:<16}", "bold"), (meaning, "$muted"), "\n"]
    return Content.assemble(*parts)


class HelpScreen(ModalScreen[None]):
    """Every key of every screen, from the registry."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "close", "Close", id="help-close")]

    def __init__(self, read_only: bool, keymap: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self.read_only = read_only
        self.keymap = keymap

    def compose(self) -> ComposeResult:
        """One scrollable page."""
        with Vertical(id="help-box"):
            yield Static(Content.styled("instinct-console keys", "bold"), id="help-title")
            with VerticalScroll(id="help-scroll"):
                yield Static(help_content(self.read_only, self.keymap))

    def action_close(self) -> None:
        """Back."""
        self.dismiss(None)
