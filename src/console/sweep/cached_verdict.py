"""Answering from a node's last report instead of checking it again: Slurm's HealthCheckProgram and
prolog have seconds, not the minutes a check takes.

A periodic ``check-local --json FILE`` (a systemd timer, cron, or the HealthCheckProgram itself on a
slower interval) keeps the report fresh; ``check-local --from-cache FILE`` answers from it at once.
A report that is missing, unreadable, of another node or older than its limit is no answer: the node
is UNKNOWN, never PASS. In a prolog the answer can be scoped to the job's GPUs (``SLURM_JOB_GPUS``):
a fault on a GPU the job does not get does not hold the job back.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from console.checks import CheckPack
from console.model.findings import Finding, NodeVerdict, Scope, roll_up
from console.sweep.clock import unusable_time
from console.sweep.node_report import LocalCheckReport, read_report

# How old a cached report may be: two runs of a periodic check every 15 minutes (an estimate: one late
# or failed run is forgiven, two are not).
DEFAULT_MAX_AGE_S = 1800.0


def read_cached(path: Path, node: str, max_age_s: float, now: float | None = None) -> LocalCheckReport | str:
    """The report in ``path`` when it is ``node``'s and at most ``max_age_s`` old, else why it is no answer."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return f"no cached report: {path}: {getattr(exc, 'strerror', None) or exc}"
    found = read_report(text)
    if not isinstance(found, LocalCheckReport):
        return f"cached report {path}: {found[1]}"
    if found.node != node:
        return f"cached report {path} is of {found.node}, not of {node}"
    now = time.time() if now is None else now
    skewed = unusable_time(found.finished_at, now, f"cached report {path}")
    if skewed is not None:
        return skewed
    age = now - found.finished_at
    if age > max_age_s:
        return f"cached report {path} is {age:.0f} s old, older than {max_age_s:g} s: the periodic check is not running"
    if found.outcome != "done":
        return f"cached report {path}: its check ended {found.outcome}"
    return found


# Above any node's GPU count (8 GPUs in CPX mode are 64 partitions): a bound on what ``--gpus 0-99999999999``
# may cost, which took 31 s and 3 GB as a set of every index.
MAX_GPU_INDEX = 1023


def gpu_list(text: str) -> set[int] | None:
    """``SLURM_JOB_GPUS`` (``0,1,3``; ranges ``0-3`` too) as GPU indices; None for an empty list (all GPUs).

    ValueError for an index above ``MAX_GPU_INDEX`` or a range backwards, before any set is built."""
    gpus: set[int] = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        first, _, last = part.partition("-")
        low, high = int(first), int(last or first)
        if not 0 <= low <= high <= MAX_GPU_INDEX:
            raise ValueError(f"{part}: GPU indices run from 0 to {MAX_GPU_INDEX}, low to high")
        gpus.update(range(low, high + 1))
    return gpus or None


def scoped(report: LocalCheckReport, gpus: set[int] | None, pack: CheckPack | None) -> NodeVerdict:
    """The report's verdict, limited to ``gpus`` (all when None): a finding about another GPU, or a link
    with neither end among them, does not count; the node's own findings always do."""
    findings = [f for f in report.findings if gpus is None or _concerns(f, gpus)]
    family_of = {c.id: c.family for c in pack.checks} if pack is not None else {}
    return roll_up(report.node, findings, report.passed, _families(report.passed, family_of))


def _concerns(finding: Finding, gpus: set[int]) -> bool:
    subject = finding.subject
    if subject.scope is Scope.GPU and subject.gpu is not None:
        return subject.gpu in gpus
    if subject.scope is Scope.LINK and subject.gpu is not None:
        return subject.gpu in gpus or subject.peer in gpus
    return True


def _families(checks: Iterable[str], family_of: Mapping[str, str]) -> set[str]:
    return {family_of[c] for c in checks if c in family_of}
