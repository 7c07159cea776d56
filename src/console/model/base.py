"""Base pydantic types shared by every model: strictness and the 'unavailable with a reason' rule.

A tool that prints ``N/A`` or ``Not supported`` for a field has told us something different from
a zero. Models keep such fields as ``None`` and record why in ``unavailable`` (field name ->
reason), so a check can say "could not read power cap: N/A" instead of passing a zero.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Model(BaseModel):
    """Base for every boundary type: extra keys are rejected, values are validated on assignment."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False)


class WithUnavailable(Model):
    """A model whose optional fields may be missing from the tool output for a known reason."""

    unavailable: dict[str, str] = Field(
        default_factory=dict,
        description="field name -> why it is None (e.g. 'N/A', 'not supported', 'absent in output')",
    )

    def mark_unavailable(self, field: str, reason: str) -> None:
        """Record that ``field`` is None because the tool said ``reason``."""
        self.unavailable[field] = reason
