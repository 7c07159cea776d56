"""The Rich console every command prints through, and the warnings several commands print.

Text from nodes, schedulers, files and other operators passes through it: every string it renders (a
line, a table cell, a prompt) is made inert first (``console.inert.printable``: an escape sequence in a
drain reason is shown as ``\x1b]0;...``, never obeyed), no emoji codes (a BDF such as ``0000:ab:00.0``
would print a symbol), no highlighting, and no wrapping at 80 columns when the output is a log or a
pipe, where an operator greps for a whole message.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from console.inert import printable
from console.inventory.model import Inventory
from console.store import Store
from console.store.pins import pin_overrides

# Tables written to a pipe or a log: as wide as their rows, never cut at Rich's 80-column default
# (``history`` cut its node lists there).
PIPE_WIDTH = 1000


class _CommandConsole(Console):
    """Rich's console, except that a reader who went away ends the command as ``console.cli`` says."""

    def on_broken_pipe(self) -> None:
        # Rich's own answer is SystemExit(1), which a prolog or gate reads as "a node failed" and which
        # skips the CLI's BrokenPipeError handler (exit 141, as for a tool killed by SIGPIPE).
        self.quiet = True  # nothing more is written to a pipe nobody reads
        raise BrokenPipeError

    def render_str(self, text: str, **options: Any) -> Text:
        """Every string printed (lines, table cells, titles) is rendered inert, whichever caller forgot."""
        return super().render_str(printable(text, keep_newlines=True), **options)


def plain_console(*, stderr: bool = False) -> Console:
    """A console for command output (``stderr`` for errors and progress)."""
    console = _CommandConsole(stderr=stderr, highlight=False, emoji=False, soft_wrap=True)
    if not console.is_terminal:
        console.width = PIPE_WIDTH
    return console


def warn_pin_overrides(inventory: Inventory, store: Store) -> None:
    """Say on stderr where a stored pin overrides the inventory's (pin, drift and sweep)."""
    err = plain_console(stderr=True)
    for line in pin_overrides(inventory, store):
        err.print(f"[yellow]warning:[/] {escape(printable(line))}")  # pin values come from nodes' stacks
