"""Slow-changing probes reused on warm reruns, revalidated by two cheap reads: the node's stack stamp.

The OS, kernel, ROCm and firmware versions of a node change with an upgrade and a reboot or a driver
reload, not between two sweeps a minute apart. A rerun on warm connections therefore sends the stamp
probes instead (``host.stamp``: boot id, loaded amdgpu version, ROCm and OS release, one ``cat``;
``host.module_stamp``: the amdgpu module's sysfs inode, new at every load, one ``stat``) and keeps
the last outcomes when the stamp is the same, byte for byte, as when they last ran. When it differs,
or cannot be read, they run again at once, so a changed stack is never judged on old output.
Outcomes older than ``max_age_s`` are not reused either, which bounds what no stamp shows (an
``amd-smi`` upgraded on its own). Only outcomes that were usable are kept; a probe that failed runs
again every time.

Everything else (GPU list, static facts such as power cap and partition mode, metrics, RAS, links,
NICs, the driver installed on disk) changes without a reboot and always runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from console.checks import ProbeOutcome
from console.sweep.catalog import STAMP_PROBES, ProbeSpec

DEFAULT_MAX_AGE_S = 900.0


@dataclass(frozen=True)
class _Stamp:
    text: str
    taken_at: float


@dataclass(frozen=True)
class Plan:
    """One node's probes for this pass: ``now`` runs at once; ``deferred`` only if the stamp changed."""

    now: list[ProbeSpec]
    deferred: list[ProbeSpec]


def stamp_of(outcomes: Mapping[str, ProbeOutcome]) -> str | None:
    """The stamp: every stamp probe's answer, or None when one did not come back as output."""
    texts = []
    for probe in STAMP_PROBES:
        outcome = outcomes.get(probe)
        if outcome is None or outcome.problem is not None or not isinstance(outcome.parsed, str):
            return None
        texts.append(outcome.parsed)
    return "\x00".join(texts)


class SteadyCache:
    """Per node: the stamp under which the slow-changing probes last ran."""

    def __init__(self, max_age_s: float = DEFAULT_MAX_AGE_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_age_s = max_age_s
        self._clock = clock
        self._stamps: dict[str, _Stamp] = {}

    def plan(
        self, node: str, probes: Sequence[ProbeSpec], kept: Mapping[str, ProbeOutcome], refresh: bool = False
    ) -> Plan:
        """Split ``probes``: slow-changing ones with a usable outcome in ``kept`` and a fresh stamp wait.

        Without the stamp probes among ``probes`` nothing can be revalidated, so everything runs.
        """
        stamp = self._stamps.get(node)
        reusable = (
            not refresh
            and stamp is not None
            and self._clock() - stamp.taken_at <= self.max_age_s
            and set(STAMP_PROBES) <= {p.id for p in probes}
        )
        if not reusable:
            return Plan(list(probes), [])
        now: list[ProbeSpec] = []
        deferred: list[ProbeSpec] = []
        for spec in probes:
            outcome = kept.get(spec.id)
            (deferred if spec.slow_changing and outcome is not None and outcome.usable else now).append(spec)
        return Plan(now, deferred)

    def unchanged(self, node: str, stamp: str | None) -> bool:
        """True when ``stamp`` is what the node answered when its slow-changing probes last ran."""
        known = self._stamps.get(node)
        return stamp is not None and known is not None and known.text == stamp

    def ran(self, node: str, stamp: str | None, started_at: float) -> None:
        """The slow-changing probes ran under ``stamp`` (None: unknown, so nothing will be reused).

        ``started_at`` (this cache's clock) is when that pass began: the age counts from the oldest output.
        """
        if stamp is None:
            self._stamps.pop(node, None)
        else:
            self._stamps[node] = _Stamp(stamp, started_at)

    def forget(self, node: str) -> None:
        """Nothing of ``node`` is reused any more (it was unreachable, or its outcomes were dropped)."""
        self._stamps.pop(node, None)

    def now(self) -> float:
        """This cache's clock."""
        return self._clock()
