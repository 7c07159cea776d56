"""The Rich console every command prints through.

Text from nodes and tools passes through it: no emoji codes (a BDF such as ``0000:ab:00.0`` would
print a symbol), no highlighting, and no wrapping at 80 columns when the output is a log or a pipe,
where an operator greps for a whole message.
"""

from __future__ import annotations

from rich.console import Console


def plain_console(*, stderr: bool = False) -> Console:
    """A console for command output (``stderr`` for errors and progress)."""
    return Console(stderr=stderr, highlight=False, emoji=False, soft_wrap=True)
