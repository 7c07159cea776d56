"""The command palette's console commands, generated from the action registry, plus per-family
reruns and the console themes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

from console.ui.registry import Scope, visible_actions
from console.ui.state import FAMILIES

if TYPE_CHECKING:
    from console.ui.app import ConsoleApp


@dataclass(frozen=True)
class PaletteCommand:
    """One palette entry."""

    text: str
    help: str
    run: Callable[[], object]


def palette_commands(app: ConsoleApp) -> list[PaletteCommand]:
    """Every command the palette offers right now (dangerous ones are absent in read-only mode)."""
    main = app.main_screen
    commands = []
    for action in visible_actions(app.read_only, "main"):
        # The group's own short name: the first word of its title read "the: resume", "finding: help".
        text = f"{action.group}: {action.title.lower()} ({action.key_shown(app.keymap)})"
        commands.append(PaletteCommand(text, action.description, partial(main.run_action, action.handler)))
    for family in FAMILIES:
        commands.append(
            PaletteCommand(
                f"sweep: rerun family {family}",
                "on the marked nodes, else the node under the cursor",
                partial(_rerun_family, app, family),
            )
        )
    for name in app.console_themes:
        commands.append(PaletteCommand(f"theme: {name}", "switch the console's colours", partial(app.use_theme, name)))
    return commands


class ConsoleCommands(Provider):
    """Palette provider over ``palette_commands``."""

    async def search(self, query: str) -> Hits:
        """Commands whose text matches ``query``, best first."""
        matcher = self.matcher(query)
        app: ConsoleApp = self.app  # type: ignore[assignment]
        for command in palette_commands(app):
            score = matcher.match(command.text)
            if score > 0:
                yield Hit(score, matcher.highlight(command.text), command.run, text=command.text, help=command.help)

    async def discover(self) -> Hits:
        """Every command, when nothing is typed yet."""
        app: ConsoleApp = self.app  # type: ignore[assignment]
        for command in palette_commands(app):
            yield DiscoveryHit(command.text, command.run, text=command.text, help=command.help)


def _rerun_family(app: ConsoleApp, family: str) -> None:
    """Rerun one family on the marked (else cursor) nodes."""
    app.link.rerun(app.main_screen.targets(Scope.MARKED), {family})
