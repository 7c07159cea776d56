"""The key hints at the bottom of a screen, written from the action registry.

Textual's ``Footer`` rebuilds one widget per key every time a screen is shown; with a screen switch
per ``enter``/``esc`` that was a large share of the switch. This is one line of text instead.
"""

from __future__ import annotations

from collections.abc import Mapping

from textual.content import Content
from textual.widgets import Static

from console.ui.registry import visible_actions

PALETTE_HINT = ("ctrl+p", "palette")


def key_bar_content(read_only: bool, screen: str, keymap: Mapping[str, str] | None = None) -> Content:
    """``key title`` pairs of the screen's footer actions (dangerous ones gone in read-only mode), with the
    operator's own keys from ``keymap``."""
    parts: list[str | tuple[str, str]] = []
    pairs = [(a.key_shown(keymap), a.title) for a in visible_actions(read_only, screen) if a.footer]
    for key, title in [*pairs, PALETTE_HINT]:
        parts += [(f" {key} ", "bold $accent"), (f"{title} ", "$foreground"), " "]
    return Content.assemble(*parts)


class KeyBar(Static):
    """One line of key hints for ``screen``."""

    def __init__(
        self, read_only: bool, screen: str, *, keymap: Mapping[str, str] | None = None, id: str | None = None
    ) -> None:
        super().__init__(key_bar_content(read_only, screen, keymap), id=id, classes="key-bar")
