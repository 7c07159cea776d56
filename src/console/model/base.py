"""Base pydantic types shared by every model: strictness and the 'unavailable with a reason' rule.

A tool that prints ``N/A`` or ``Not supported`` for a field has told us something different from
a zero. Models keep such fields as ``None`` and record why in ``unavailable`` (field name ->
reason), so a check can say "could not read power cap: N/A" instead of passing a zero.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from functools import partial
from typing import Any, ClassVar, Self, cast

from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo


class Model(BaseModel):
    """Base for every boundary type: extra keys are rejected, values are validated on assignment."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False)


class Numerous(Model):
    """A model made by the hundred per node (findings and their evidence, parsed GPU records): every
    instance shares one fields-set instead of carrying its own.

    pydantic keeps a set of the fields given at construction in each instance: for a finding and its
    evidence that was 1.4 of 2.2 KB, i.e. ~400 MB of a 1,024-node sweep. Nothing here reads it
    (no ``exclude_unset``), and an assignment adds a field name the shared set already holds.
    """

    _every_field: ClassVar[set[str]]
    _field_list: ClassVar[tuple[tuple[str, FieldInfo], ...]]
    _shared_defaults: ClassVar[dict[str, Any]]
    _factories: ClassVar[tuple[tuple[str, Callable[[], Any]], ...]]

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls._every_field = set(cls.model_fields)  # complete only once pydantic has built the class
        cls._field_list = tuple(cls.model_fields.items())
        # Each field's default, read once: ``FieldInfo.get_default`` per omitted field and instance was
        # a third of ``trusted`` (~170,000 calls in a 256-node sweep). A factory is still called each time.
        # Every field is in ``_shared_defaults``, in declared order (a factory's by a placeholder), so an
        # instance's values are that dict copied and updated: no loop over the fields in Python.
        defaults = [(name, *_default_of(field)) for name, field in cls._field_list]
        cls._shared_defaults = {name: default for name, _, default in defaults}
        cls._factories = tuple((name, factory) for name, factory, _ in defaults if factory is not None)

    def model_post_init(self, context: Any, /) -> None:
        # After validation, from keywords or from JSON alike. An ``__init__`` here made pydantic build
        # every nested instance (a report's findings) through it: each was validated twice.
        object.__setattr__(self, "__pydantic_fields_set__", type(self)._every_field)

    @classmethod
    def trusted(cls, **values: Any) -> Self:
        """An instance of values the caller already gave the fields' exact types, without validation.

        For the checks' hot path (~285 findings per node, each with its evidence): validating what our
        own code just built cost a fifth of judging a node. Omitted fields take their defaults;
        assignment is still validated. Tests compare such instances with validated copies.
        """
        data = values
        if values.keys() != cls._every_field:
            unknown = values.keys() - cls._every_field
            if unknown:
                raise TypeError(f"{cls.__name__} has no field {', '.join(sorted(unknown))}")
            data = cls._shared_defaults.copy()
            data.update(values)
            for name, factory in cls._factories:
                if name not in values:
                    data[name] = factory()
        instance = cls.__new__(cls)
        object.__setattr__(instance, "__dict__", data)
        object.__setattr__(instance, "__pydantic_fields_set__", cls._every_field)
        object.__setattr__(instance, "__pydantic_extra__", None)
        object.__setattr__(instance, "__pydantic_private__", None)
        return instance


# Defaults that may be shared by every instance; pydantic copies any other (a list, a dict, a model).
_SHAREABLE = (type(None), bool, int, float, str, bytes, Enum)


def _default_of(field: FieldInfo) -> tuple[Callable[[], Any] | None, Any]:
    """(a factory, None), or (None, a default every instance may share), for a field ``trusted`` omits."""
    default = field.default
    if field.default_factory is None and isinstance(default, _SHAREABLE):
        return None, default
    if field.default_factory is not None and not field.default_factory_takes_validated_data:
        return cast("Callable[[], Any]", field.default_factory), None  # ``dict``, ``list``: called directly
    return partial(field.get_default, call_default_factory=True), None


class WithUnavailable(Numerous):
    """A model whose optional fields may be missing from the tool output for a known reason."""

    unavailable: dict[str, str] = Field(
        default_factory=dict,
        description="field name -> why it is None (e.g. 'N/A', 'not supported', 'absent in output')",
    )

    def mark_unavailable(self, field: str, reason: str) -> None:
        """Record that ``field`` is None because the tool said ``reason``."""
        self.unavailable[field] = reason
