"""What changed between an accepted baseline sweep and a later one: the "accepted twice" view.

A run is accepted only when it passes again after a driver, ROCm, firmware or image change; this
diff names exactly what changed per node: stack fields, verdicts, findings and figures that moved
beyond noise.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field

from console.model.findings import Finding, Status, roll_up
from console.model.kept import COUNTER_CHECKS, FIGURE_FAMILIES
from console.store.db import Store

NOISE_FRACTION = 0.05


@dataclass
class NodeDiff:
    """Changes on one node between two sweeps."""

    node: str
    verdict: tuple[str | None, str | None] = (None, None)
    stack: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    findings: list[tuple[str, str | None, str | None, str]] = field(default_factory=list)
    figures: list[tuple[str, float, float]] = field(default_factory=list)
    # Findings that are not PASS in checks only one of the two sweeps ran (key, status, message): shown,
    # never compared, never a regression.
    uncompared: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """True when anything differs."""
        return self.verdict[0] != self.verdict[1] or bool(
            self.stack or self.findings or self.figures or self.uncompared
        )

    @property
    def verdict_changed(self) -> bool:
        """True when the node's verdict differs (the rest may have moved under the same verdict)."""
        return self.verdict[0] != self.verdict[1]

    @property
    def regressed(self) -> bool:
        """True when the verdict or a finding got worse: what a pipeline gating on ``diff`` stops for."""
        before, after = self.verdict
        if before is not None and after is not None and _worse(before, after):  # not a node new to the pool
            return True
        return any(new is not None and _worse(old, new) for _key, old, new, _message in self.findings)


_BAD = frozenset({Status.FAIL.value, Status.UNKNOWN.value})


def _worse(before: str | None, after: str) -> bool:
    """Whether ``after`` is a regression from ``before``.

    A check that was not judged before (absent, or SKIP: no history on a first sweep, a tool too old to
    ask) regresses only to FAIL or UNKNOWN: a SKIP that becomes PASS is the check now running, not a
    node getting worse (ranked by severity alone, every node regressed against a first-sweep baseline).
    """
    if before is None or before == Status.SKIP.value:
        return after in _BAD
    return Status(after).severity > Status(before).severity


_ANSWERED = ("node.", "probe.")  # node.reachable and probe.<id>: no level runs them more than another


def _rolled(node: str, findings: dict[str, Finding]) -> str:
    """The verdict ``findings`` alone give (PASS when none of them is worse)."""
    return roll_up(node, list(findings.values())).status.value if findings else Status.PASS.value


def _counted(row: sqlite3.Row | None) -> set[str]:
    """The checks a node's verdict row counted PASS findings of."""
    return set(json.loads(row["passed"] or "{}")) if row is not None else set()


def _key(finding: Finding) -> str:
    return f"{finding.check_id} {finding.subject.label()}"


def _numeric(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def diff_sweeps(store: Store, base_id: int, new_id: int, nodes: list[str] | None = None) -> list[NodeDiff]:
    """Per-node differences between sweep ``base_id`` and sweep ``new_id`` (only nodes that changed).

    A node the newer sweep did not reach has no stack to compare (its verdict change says why), and a
    node it did not sweep at all is not a change. Like is compared with like: a check the baseline did
    not run at all (a quick baseline against a full sweep) is no change, while a new subject of a check
    it ran (a GPU it did not see) is.
    """
    base_checks, new_checks = store.check_ids(base_id), store.check_ids(new_id)
    # Whether a node and its probes answered is judged at every level; the checks proper are compared
    # when both sweeps ran them. When they ran different checks (a quick baseline, a full sweep), each
    # verdict is rolled up again from what is compared.
    compared_checks = (base_checks & new_checks) | {c for c in base_checks | new_checks if c.startswith(_ANSWERED)}
    same_checks = base_checks | new_checks == compared_checks
    base_rows = {r["node"]: r for r in store.node_verdicts(base_id)}
    new_rows = {r["node"]: r for r in store.node_verdicts(new_id)}
    names = sorted(new_rows)
    if nodes is not None:
        names = [n for n in names if n in set(nodes)]
    diffs = []
    for name in names:
        old, new = base_rows.get(name), new_rows.get(name)
        diff = NodeDiff(node=name, verdict=(old["status"] if old else None, new["status"] if new else None))
        old_stack = json.loads(old["stack"]) if old else {}
        new_stack = json.loads(new["stack"]) if new else {}
        compared = sorted(set(old_stack) | set(new_stack)) if old_stack and new_stack else []
        for key in compared:
            if not same_checks and (old_stack.get(key) is None or new_stack.get(key) is None):
                continue  # read by one level only (RCCL's version in a full sweep, not a quick one): not a change
            if old_stack.get(key) != new_stack.get(key):
                diff.stack[key] = (old_stack.get(key), new_stack.get(key))
        old_all, new_all = store.findings(base_id, name), store.findings(new_id, name)
        # Checks whose PASS findings the sweep kept as counts on this node (console.model.kept).
        old_passed, new_passed = _counted(old), _counted(new)
        old_findings = {_key(f): f for f in old_all if f.check_id in compared_checks}
        new_findings = {_key(f): f for f in new_all if f.check_id in compared_checks}
        if not same_checks and old is not None and new is not None:
            diff.verdict = (_rolled(name, old_findings), _rolled(name, new_findings))
            diff.uncompared = [
                (_key(f), f.status.value, f.message)
                for f in new_all
                if f.check_id not in compared_checks and f.status not in (Status.PASS, Status.SKIP)
            ]
        for key in sorted(set(old_findings) | set(new_findings)):
            before, after = old_findings.get(key), new_findings.get(key)
            if after is None and before is not None and before.status not in (Status.PASS, Status.SKIP):
                if before.check_id in new_passed:  # it passes now, counted: a problem that went away
                    diff.findings.append(
                        (
                            key,
                            before.status.value,
                            Status.PASS.value,
                            f"{before.check_id}: passed (counted, not kept whole)",
                        )
                    )
                continue
            if after is None or before is None:
                continue
            if before.status != after.status:
                if before.status is not Status.SKIP or after.status is not Status.PASS:  # SKIP -> PASS: it runs now
                    diff.findings.append((key, before.status.value, after.status.value, after.message))
                continue
            a, b = _numeric(before.evidence.observed), _numeric(after.evidence.observed)
            if a is None or b is None:
                continue
            counter_moved = after.check_id in COUNTER_CHECKS and a != b
            figure_moved = after.family in FIGURE_FAMILIES and abs(b - a) > NOISE_FRACTION * max(abs(a), 1e-9)
            if counter_moved or figure_moved:
                diff.figures.append((key, a, b))
        for key in sorted(set(new_findings) - set(old_findings)):
            f = new_findings[key]
            if f.status not in (Status.PASS, Status.SKIP):
                # PASS before when the baseline counted that check's passes on this node.
                before_status = Status.PASS.value if f.check_id in old_passed else None
                diff.findings.append((key, before_status, f.status.value, f.message))
        if diff.changed:
            diffs.append(diff)
    return diffs
