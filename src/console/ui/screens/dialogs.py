"""Small modal screens: pick a check family, read a text report, read raw probe output."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static, TextArea
from textual.widgets.option_list import Option

from console.ui.state import FAMILIES
from console.ui.text import safe, safe_block

ALL_FAMILIES = "*"


class FamilyPicker(ModalScreen[str | None]):
    """Choose the check family to rerun (or every family); dismisses with its name or None."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="picker-cancel")]

    def __init__(self, targets: tuple[str, ...], absent: dict[str, str] | None = None) -> None:
        super().__init__()
        self.targets = targets
        # Families no probe of this sweep level judges, with where they run: shown, not choosable.
        self.absent = absent or {}

    def compose(self) -> ComposeResult:
        """The families as an option list."""
        with Vertical(id="picker-box"):
            yield Static(Content.styled(f"Rerun which checks on {len(self.targets)} node(s)?", "bold"))
            options = [Option("every family", id=ALL_FAMILIES)]
            for family in FAMILIES:
                why = self.absent.get(family)
                label = f"{family}  ({why})" if why else family
                options.append(Option(label, id=family, disabled=why is not None))
            yield OptionList(*options, id="picker-list")

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        """Leave without rerunning."""
        self.dismiss(None)


class TextScreen(ModalScreen[None]):
    """A titled, scrollable text (baseline diff, hostlist); escape or q closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "close", "Close", id="text-close")]

    def __init__(self, title: str, body: Content) -> None:
        super().__init__()
        self.title_text = title
        self.body = body

    def compose(self) -> ComposeResult:
        """Title over the scrollable body."""
        with Vertical(id="text-box"):
            yield Static(Content.styled(safe(self.title_text), "bold"), id="text-title")
            with VerticalScroll(id="text-scroll"):
                yield Static(self.body, id="text-body")

    def action_close(self) -> None:
        """Back to where the operator was."""
        self.dismiss(None)


class RawOutputScreen(ModalScreen[None]):
    """The stored output of one probe run, read-only and scrollable; control characters are made visible."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "close", "Close", id="raw-close")]

    def __init__(self, title: str, stdout: bytes, stderr: bytes) -> None:
        super().__init__()
        self.title_text = title
        text = safe_block(stdout.decode("utf-8", errors="replace"))
        if stderr:
            text += "\n──── stderr ────\n" + safe_block(stderr.decode("utf-8", errors="replace"))
        self.text = text

    def compose(self) -> ComposeResult:
        """Title over a read-only text area."""
        with Vertical(id="raw-box"):
            yield Static(Content.styled(safe(self.title_text), "bold"), id="raw-title")
            yield TextArea(self.text, read_only=True, soft_wrap=False, show_line_numbers=True, id="raw-text")

    def on_mount(self) -> None:
        """Focus the text so arrows and page keys scroll it."""
        self.query_one(TextArea).focus()

    def action_close(self) -> None:
        """Back to the node's details."""
        self.dismiss(None)
