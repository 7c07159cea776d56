"""Turning observations into findings: thresholds, pins and fleet-relative comparisons.

Rules that keep "could not check" from reading as healthy:
* a check whose required probe failed gives UNKNOWN with the probe's reason, or SKIP when the node's
  tool is too old to have that probe at all (its reason says so);
* a value the tool reported as N/A gives the check's ``on_missing`` status (UNKNOWN by default);
* a comparison that cannot be made (unset variable, text where a number was expected) is UNKNOWN.
A check whose probes were not part of this sweep gives no finding at all.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from console.checks.facts import NodeFacts
from console.checks.metrics import METRICS, Observation
from console.checks.spec import CheckPack, CheckSpec, Condition, SourcedValue
from console.model.findings import Evidence, Finding, SourceKind, Status, Subject


def fmt_value(value: Any, unit: str | None) -> str:
    """Readable value: bytes as GiB, floats with 4 significant digits, the unit appended."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float) and unit == "bytes":
        return f"{value / 2**30:.1f} GiB"
    if isinstance(value, float):
        text = str(int(value)) if value.is_integer() else f"{value:.4g}"
    else:
        text = str(value)
    return f"{text} {unit}" if unit and unit != "bytes" else text


def _evidence(
    check: CheckSpec,
    obs: Observation,
    expected: str | None,
    run_ids: dict[str, int],
    cited: SourcedValue | None = None,
    *,
    kind: SourceKind | None = None,
) -> Evidence:
    value = obs.value
    # The types Evidence.observed validates to (an int becomes a float), built without validating.
    if isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    elif not isinstance(value, float | str | bool) and value is not None:
        value = str(value)
    if kind is None:
        kind = cited.source_kind if cited is not None else check.source_kind
    return Evidence.trusted(
        observed=value,
        expected=expected,
        unit=check.unit,
        source=cited.source if cited is not None else check.source,
        source_kind=kind,
        probe=obs.probe,
        probe_run_id=run_ids.get(obs.probe or ""),
    )


def _finding(check: CheckSpec, obs: Observation, status: Status, message: str, evidence: Evidence) -> Finding:
    return Finding.trusted(
        check_id=check.id, family=check.family, status=status, subject=obs.subject, message=message, evidence=evidence
    )


@dataclass(frozen=True)
class _Limit:
    status: Status
    condition: Condition
    operand: Any
    text: str  # "< 32", variables filled in
    variable: str | None  # the ``$name`` the operand comes from


@dataclass(frozen=True)
class Limits:
    """A check's fail/warn conditions resolved against one node's variables, judged per subject."""

    rules: tuple[_Limit, ...]
    passed: str  # "fail if < 32; warn if < 48": what a PASS was judged against
    passed_variable: str | None

    @classmethod
    def of(cls, check: CheckSpec, variables: dict[str, Any]) -> Limits:
        """Resolve once per node and check; every GPU and link of the node is then only compared."""
        rules = []
        for status, cond in zip((Status.FAIL, Status.WARN), check.conditions(), strict=True):
            if cond is None:
                continue
            variable = cond.operand[1:] if cond.operand.startswith("$") else None
            operand = cond.resolve(variables)
            # Byte counts read as GiB, like the value they are compared with ("190.1 GiB (fail if < 190.1 GiB)").
            text = f"{cond.op} {fmt_value(operand, 'bytes')}" if _is_bytes(check, operand) else cond.text(variables)
            rules.append(_Limit(status, cond, operand, text, variable))
        passed = "; ".join(f"{rule.status.value.lower()} if {rule.text}" for rule in rules)
        return cls(tuple(rules), passed, rules[0].variable if rules else None)

    def judge(self, check: CheckSpec, value: Any) -> tuple[Status, str, str | None]:
        """Status, the limits as text, and the variable the deciding limit came from (for its source)."""
        for rule in self.rules:
            held = rule.condition.holds_for(value, rule.operand)
            if held is None:
                return Status.UNKNOWN, f"cannot compare {fmt_value(value, check.unit)} with {rule.text}", rule.variable
            if held:
                return rule.status, f"{rule.status.value.lower()} if {rule.text}", rule.variable
        return Status.PASS, self.passed, self.passed_variable


def _is_bytes(check: CheckSpec, operand: Any) -> bool:
    return check.unit == "bytes" and isinstance(operand, int | float) and not isinstance(operand, bool)


def _pin_value(facts: NodeFacts, check: CheckSpec, obs: Observation) -> str | None:
    field = check.pin_field or ""
    pinned = facts.pin.pinned_fields()
    if field.endswith(".*"):
        return pinned.get(f"{field[:-2]}.{obs.key}") if obs.key else None
    return pinned.get(field)


def evaluate_check(
    check: CheckSpec,
    facts: NodeFacts,
    variables: dict[str, Any],
    run_ids: dict[str, int] | None = None,
    sources: dict[str, SourcedValue] | None = None,
) -> list[Finding]:
    """Findings of one check on one node (fleet-relative checks are left to ``evaluate_fleet``)."""
    run_ids = run_ids or {}
    sources = sources or {}
    if not check.enabled or check.relative_to == "pool-median":
        return []
    if check.requires and not any(p in facts.outcomes for p in check.requires):
        return []
    probe_problem = facts.missing_reason(check.requires)
    on_problem = Status.SKIP if probe_problem and facts.unsupported(check.requires) else Status.UNKNOWN
    observations = METRICS[check.metric](facts)
    if check.relative_to == "node-median":
        return _relative(check, observations, variables, "node median", run_ids)
    findings: list[Finding] = []
    limits: Limits | None = None
    for obs in observations:
        if obs.value is None:
            status = on_problem if probe_problem else check.on_missing
            reason = probe_problem or obs.missing or "not reported"
            findings.append(
                _finding(check, obs, status, f"{check.title}: {reason}", _evidence(check, obs, None, run_ids))
            )
            continue
        if check.compare == "pin":
            expected = _pin_value(facts, check, obs)
            if expected is None:
                continue
            status = Status.PASS if str(obs.value) == expected else check.on_mismatch
            message = f"{check.title}: {obs.value}" + ("" if status is Status.PASS else f" (pool pin {expected})")
            evidence = _evidence(check, obs, f"== {expected}", run_ids, kind=SourceKind.PIN)
            findings.append(_finding(check, obs, status, message, evidence))
            continue
        limits = limits or Limits.of(check, variables)
        status, expected, var = limits.judge(check, obs.value)
        shown = fmt_value(obs.value, check.unit)
        if check.value_names:
            shown = check.value_names.get(fmt_value(obs.value, None), shown)
        message = f"{check.title}: {shown}"
        if status is not Status.PASS and not check.value_names:
            message += f" ({expected})"
        if obs.detail and status is not Status.PASS:
            message += f": {obs.detail}"
        evidence = _evidence(check, obs, expected, run_ids, sources.get(var or ""))
        findings.append(_finding(check, obs, status, message, evidence))
    return findings


def pack_variables(pack: CheckPack, facts: NodeFacts) -> dict[str, Any]:
    """Variables a pack's conditions may use: the pack's own plus the node's expected GPU count."""
    return {**pack.pack.values(), "gpu_count": facts.node.gpu_count}


def evaluate_node(pack: CheckPack, facts: NodeFacts, run_ids: dict[str, int] | None = None) -> list[Finding]:
    """Every non-fleet check of ``pack`` on one node, plus UNKNOWN findings for unreachable nodes."""
    variables = pack_variables(pack, facts)
    sources = {name: sv for name in pack.pack.vars if (sv := pack.pack.source_of(name)) is not None}
    findings: list[Finding] = []
    for check in pack.checks:
        findings.extend(evaluate_check(check, facts, variables, run_ids, sources))
    return findings


def _numeric(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _relative(
    check: CheckSpec, observed: list[Observation], variables: dict[str, Any], what: str, run_ids: dict[str, int]
) -> list[Finding]:
    """Judge each value as a ratio to the median of ``observed`` (skipped with fewer than ``min_fleet``)."""
    numbers = [n for o in observed if (n := _numeric(o.value)) is not None]
    if len(numbers) < check.min_fleet:
        return []
    median = statistics.median(numbers)
    if median <= 0:
        return []
    findings = []
    limits = Limits.of(check, variables)
    for obs in observed:
        value = _numeric(obs.value)
        if value is None:
            continue
        ratio = value / median
        status, expected, _ = limits.judge(check, ratio)
        shown, middle = fmt_value(obs.value, check.unit), fmt_value(median, check.unit)
        message = f"{check.title}: {shown} = {ratio:.0%} of {what} {middle}"
        evidence = _evidence(check, obs, f"ratio to {what}: {expected}", run_ids, kind=SourceKind.FLEET)
        findings.append(_finding(check, obs, status, message, evidence))
    return findings


def evaluate_fleet(pack: CheckPack, pool_facts: Iterable[NodeFacts]) -> list[Finding]:
    """Fleet-relative checks: each value against the pool median of the same metric."""
    nodes = list(pool_facts)
    findings: list[Finding] = []
    for check in pack.checks:
        if not check.enabled or check.relative_to != "pool-median":
            continue
        observed: list[Observation] = []
        for facts in nodes:
            if check.requires and not any(p in facts.outcomes for p in check.requires):
                continue
            observed.extend(METRICS[check.metric](facts))
        if len({o.subject.node for o in observed}) >= check.min_fleet:
            variables = pack.pack.values()
            findings.extend(_relative(check, observed, variables, "pool median", {}))
    return findings


def unreachable_finding(node: str, reason: str, *, lead: str = "could not check") -> Finding:
    """The single finding for a node that could not be checked at all (or, with another ``lead``, whose
    connection dropped under a probe after others had answered)."""
    return Finding(
        check_id="node.reachable",
        family="reachability",
        status=Status.UNKNOWN,
        subject=Subject(node=node),
        message=f"{lead}: {reason}",
    )
