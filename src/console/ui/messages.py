"""Messages the console posts to itself. ``FleetChanged`` is the only one the engine's events send."""

from __future__ import annotations

from textual.message import Message


class FleetChanged(Message):
    """Some nodes changed in ``LiveState``: repaint. Carries no data, so a dropped duplicate loses nothing."""

    def can_replace(self, message: Message) -> bool:
        """Consecutive notifications collapse into one."""
        return isinstance(message, FleetChanged)


class EngineProblem(Message):
    """The engine hit an error the operator must see (a failed rerun, a broken transport, its process died)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
