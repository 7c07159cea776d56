"""What a metric is: a function of a node's facts and its pack's variables giving observations, by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from console.model.findings import Remedy, Subject

if TYPE_CHECKING:
    from console.checks.facts import NodeFacts


@dataclass(frozen=True)
class Observation:
    """One reading of a metric on one subject."""

    subject: Subject
    value: float | str | bool | None
    missing: str | None = None
    probe: str | None = None
    key: str | None = None  # e.g. the firmware block name, for per-block pins
    detail: str | None = None
    always_detail: bool = False  # said in a PASS message too (CPER records a check ignored)
    action: Remedy | None = None  # what this subject calls for, when it is not the check's (a CPER record's AFID)
    action_source: str | None = None
    # The tool printed something for this value that was not read (garbled, NaN, a word of no known meaning),
    # or left the subject out while reporting it for the others: UNKNOWN whatever the check's ``on_missing``,
    # which stands only for a value the tool does not report here at all (docs/verdicts.md).
    unread: bool = False


class Unread(str):
    """The reason a value is missing when it is a reading lost, not one the tool does not give (``unread``)."""

    __slots__ = ()


class Absent(str):
    """The reason a value is missing when the output printed nothing for it at all (no key, no section, not
    even ``N/A``): a pasted output judged alone (``console.checks.single``) did not show it, so a check of it
    does not apply there; in a sweep it is missing like any value the tool did not report."""

    __slots__ = ()


# The pack's variables as the node's checks see them (``evaluate.pack_variables``): the few metrics that
# take a setting rather than a threshold read it here (how old a CPER record may be and still count, whether
# every GPU pair has a direct XGMI link), passed to them, never written into the facts.
Variables = Mapping[str, Any]
NO_VARIABLES: Variables = MappingProxyType({})

Metric = Callable[["NodeFacts", Variables], list[Observation]]
METRICS: dict[str, Metric] = {}


def metric(name: str) -> Callable[[Metric], Metric]:
    """Register a metric under ``name`` (the name packs use)."""

    def register(func: Metric) -> Metric:
        if name in METRICS:  # two families claiming one name: the second would silently replace the first
            raise ValueError(f"metric {name!r} is registered twice")
        METRICS[name] = func
        return func

    return register


def register(name: str, func: Metric) -> None:
    """Register a metric made by a factory (one per probe or field) under ``name``."""
    metric(name)(func)
