"""Turning observations into findings: thresholds, pins and fleet-relative comparisons.

Rules that keep "could not check" from reading as healthy:
* a check whose required probe ran and did not answer is never PASS: what would have passed is
  UNKNOWN with the probe's reason (a FAIL or WARN seen in the data that did come back stays);
  ``requires_any`` checks need only one of their alternative sources;
* a probe the node's tool does not know (an older amd-smi) makes the check UNKNOWN with the tool's own
  words, or SKIP when ``when_unsupported`` names a probe that answered and judges the same thing;
* a value the tool reported as N/A gives the check's ``on_missing`` status (UNKNOWN by default), and
  so does a check whose probe answered but reported nothing for it at all; a reading lost (``unread``:
  printed and not read, NaN, N/A on one GPU while the others report it, a GPU the probe left out) is
  UNKNOWN whatever ``on_missing`` says, and so is a value printed that is no reading (-3 %);
* a comparison that cannot be made (unset variable, text where a number was expected) is UNKNOWN.
A check whose probes were not part of this sweep gives no finding at all.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from console.checks.facts import NodeFacts, ProbeOutcome
from console.checks.metrics import METRICS, Observation, Variables
from console.checks.spec import CheckPack, CheckSpec, Condition, SourcedValue
from console.model.family import Family
from console.model.findings import UNJUDGED_ACTION, Evidence, Finding, Remedy, SourceKind, Status, Subject
from console.model.kept import kept_whole


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


def observe(metric: str, facts: NodeFacts, variables: Variables) -> list[Observation]:
    """The node's readings of ``metric``: those it sent already made (``NodeFacts.readings``), else the metric's,
    given the pack's ``variables`` for the node (``pack_variables``; without them, each setting's default)."""
    given = facts.readings.get(metric)
    return given if given is not None else METRICS[metric](facts, variables)


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
    if status is Status.FAIL:
        evidence.action = obs.action or check.action
        evidence.action_source = obs.action_source or check.action_source
    elif status is Status.WARN:
        evidence.action, evidence.action_source = check.warn_action, check.action_source
    elif status is Status.UNKNOWN:
        evidence.action, evidence.action_source = Remedy.RERUN, UNJUDGED_ACTION
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


def _pin_value(pinned: dict[str, str], check: CheckSpec, obs: Observation) -> str | None:
    field = check.pin_field or ""
    if field.endswith(".*"):
        return pinned.get(f"{field[:-2]}.{obs.key}") if obs.key else None
    return pinned.get(field)


def _pinned(pinned: dict[str, str], check: CheckSpec, obs: Observation) -> bool:
    """Whether the pool pins what ``obs`` reads: its block, or (``obs.key`` None: a GPU unread whole) any block."""
    field = check.pin_field or ""
    if obs.key is None and field.endswith(".*"):
        return any(name.startswith(field[:-1]) for name in pinned)
    return _pin_value(pinned, check, obs) is not None


def evaluate_check(
    check: CheckSpec,
    facts: NodeFacts,
    variables: dict[str, Any],
    run_ids: dict[str, int] | None = None,
    sources: dict[str, SourcedValue] | None = None,
    *,
    counted: Counter[str] | None = None,
) -> list[Finding]:
    """Findings of one check on one node (fleet-relative checks are left to ``evaluate_fleet``).

    With ``counted``, a PASS that is not ``kept_whole`` is only counted there under the check's id, never
    built: what every sweep does (``NodeVerdict.passed``). Without it every PASS is a finding (the pin and
    single-check views show each one).
    """
    run_ids = run_ids or {}
    sources = sources or {}
    if not check.enabled or check.relative_to == "pool-median":
        return []
    if check.requires and not any(p in facts.outcomes for p in check.requires):
        return []
    probe_problem, on_problem = _blocked(check, facts)
    observations = observe(check.metric, facts, variables)
    if probe_problem and (check.relative_to == "node-median" or all(o.value is None for o in observations)):
        # Nothing of what it reads came back: one finding for the node, not the same reason per GPU or link.
        return [_node_finding(check, facts, on_problem, probe_problem, run_ids)]
    if check.relative_to == "node-median":
        return _relative(check, observations, variables, "node median", run_ids, facts, counted)
    if not observations:
        # The probe answered but said nothing about what this check reads (no XGMI error counts at all):
        # said as a finding, never silently absent.
        said = f"not reported by {check.requires[0] if check.requires else 'the probes'}"
        return [_node_finding(check, facts, check.on_missing, said, run_ids)]
    judging = _Judging(check, probe_problem, on_problem, run_ids, counted)
    findings: list[Finding] = []
    limits: Limits | None = None
    # The pin's fields, read once for the check: one firmware pin check reads ~80 blocks of 8 GPUs.
    pinned = facts.pin.pinned_fields() if check.compare == "pin" else {}
    for obs in observations:
        if obs.value is None:
            if check.compare == "pin" and not probe_problem and not _pinned(pinned, check, obs):
                continue  # a block no pin names has nothing to be compared with (the consistency check reads it)
            found: Finding | None = judging.unread(obs)
        elif check.compare == "pin":
            found = judging.against_pin(obs, _pin_value(pinned, check, obs))
        else:
            limits = limits or Limits.of(check, variables)
            found = judging.against_limits(obs, limits, sources)
        if found is not None:
            findings.append(found)
    return findings


@dataclass(frozen=True)
class _Judging:
    """One check judging the subjects of one node: ``problem`` is why it cannot PASS there (``_blocked``)."""

    check: CheckSpec
    problem: str | None
    on_problem: Status
    run_ids: dict[str, int]
    counted: Counter[str] | None

    def unread(self, obs: Observation) -> Finding:
        """A subject with no value: the probe's problem, else ``on_missing`` (SKIP for a counter some models
        or releases lack), which never covers a reading lost (UNKNOWN)."""
        check, problem = self.check, self.problem
        status = self.on_problem if problem else Status.UNKNOWN if obs.unread else check.on_missing
        reason = problem or obs.missing or "not reported"
        evidence = _evidence(check, obs, None, self.run_ids)
        if obs.unread and not problem:
            evidence.observed = reason  # what was printed instead of a value, for whoever reruns it
        return _finding(check, obs, status, f"{check.title}: {reason}", evidence)

    def against_pin(self, obs: Observation, expected: str | None) -> Finding | None:
        """A value compared with the pool's pin (None: no pin names it, or a PASS only counted)."""
        check = self.check
        if expected is None:
            return None
        status = Status.PASS if str(obs.value) == expected else check.on_mismatch
        if status is Status.PASS and self.problem:
            return _unjudged(check, obs, self.on_problem, self.problem, self.run_ids)
        if status is Status.PASS and _counted(check, obs, self.counted):
            return None
        message = f"{check.title}: {obs.value}" + ("" if status is Status.PASS else f" (pool pin {expected})")
        evidence = _evidence(check, obs, f"== {expected}", self.run_ids, kind=SourceKind.PIN)
        return _finding(check, obs, status, message, evidence)

    def against_limits(self, obs: Observation, limits: Limits, sources: dict[str, SourcedValue]) -> Finding | None:
        """A value judged against the check's fail and warn limits (None: a PASS only counted)."""
        check = self.check
        status, expected, var = limits.judge(check, obs.value)
        if status is Status.PASS and self.problem:
            # Judged on what the other probes said, while one it needs did not answer: not healthy.
            return _unjudged(check, obs, self.on_problem, self.problem, self.run_ids)
        if status is Status.PASS and _counted(check, obs, self.counted):
            return None
        shown = fmt_value(obs.value, check.unit)
        if check.value_names:
            shown = check.value_names.get(fmt_value(obs.value, None), shown)
        message = f"{check.title}: {shown}"
        if status is not Status.PASS and not check.value_names:
            message += f" ({expected})"
        if obs.detail and (status is not Status.PASS or obs.always_detail):
            message += f": {obs.detail}"
        evidence = _evidence(check, obs, expected, self.run_ids, sources.get(var or ""))
        return _finding(check, obs, status, message, evidence)


def _counted(check: CheckSpec, obs: Observation, counted: Counter[str] | None) -> bool:
    """Counts a PASS of ``check`` on ``obs`` in ``counted`` instead of building it, when it is not kept whole."""
    remarked = bool(obs.detail and obs.always_detail)
    if counted is None or kept_whole(check.id, check.family, obs.value, obs.subject.scope, remarked=remarked):
        return False
    counted[check.id] += 1
    return True


def _unjudged(check: CheckSpec, obs: Observation, status: Status, reason: str, run_ids: dict[str, int]) -> Finding:
    """The finding of a subject the check could not judge: ``status`` (UNKNOWN or SKIP), and why."""
    return _finding(check, obs, status, f"{check.title}: {reason}", _evidence(check, obs, None, run_ids))


def _node_finding(check: CheckSpec, facts: NodeFacts, status: Status, reason: str, run_ids: dict[str, int]) -> Finding:
    """The check's one finding for the whole node, when it has nothing to say per GPU, link or port."""
    obs = Observation(facts.subject(), None, probe=check.requires[0] if check.requires else None)
    return _unjudged(check, obs, status, reason, run_ids)


def _blocked(check: CheckSpec, facts: NodeFacts) -> tuple[str | None, Status]:
    """Why the check cannot be trusted to PASS on this node (None when it can), and the status it gets."""
    failed = facts.failed(check.requires)
    if not failed or (check.requires_any and facts.answered(check.requires)):
        return None, Status.UNKNOWN
    reason = failed[0].why
    if all(o.unsupported for o in failed):
        cover = check.when_unsupported
        if cover is not None and facts.answered([cover]):
            return f"{reason}; {cover} measures this instead", Status.SKIP
        hint = f"; {cover} (a deeper level) measures this instead" if cover else ""
        return reason + hint, Status.UNKNOWN
    return reason, Status.UNKNOWN


def pack_variables(pack: CheckPack, facts: NodeFacts) -> dict[str, Any]:
    """Variables a pack's conditions may use: the pack's own plus what the node's pool expects of it
    (its GPU count, and its NIC count and rate where the cluster file gives them)."""
    variables: dict[str, Any] = {**pack.pack.values(), "gpu_count": facts.node.gpu_count}
    node = facts.node
    if node.nic_count is not None:
        variables["nic_count"] = node.nic_count
    if node.nic_rate_gbps is not None:
        variables["nic_rate_gbps"] = node.nic_rate_gbps
    return variables


def evaluate_node(
    pack: CheckPack,
    facts: NodeFacts,
    run_ids: dict[str, int] | None = None,
    only: Iterable[CheckSpec] | None = None,
    *,
    counted: Counter[str] | None = None,
) -> list[Finding]:
    """Every non-fleet check of ``pack`` (or those of ``only``) on one node; PASS findings only counted in
    ``counted`` when given (see ``evaluate_check``)."""
    variables = pack_variables(pack, facts)
    sources = {name: sv for name in pack.pack.vars if (sv := pack.pack.source_of(name)) is not None}
    findings: list[Finding] = []
    for check in pack.checks if only is None else only:
        findings.extend(evaluate_check(check, facts, variables, run_ids, sources, counted=counted))
    return findings


def _numeric(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _relative(  # noqa: PLR0917
    check: CheckSpec,
    observed: list[Observation],
    variables: dict[str, Any],
    what: str,
    run_ids: dict[str, int],
    facts: NodeFacts | None = None,
    counted: Counter[str] | None = None,
) -> list[Finding]:
    """Judge each value as a ratio to the median of ``observed`` (``counted`` as in ``evaluate_check``).

    Within a node (``facts`` given), a subject without a value gets the check's ``on_missing`` status, and
    too few values to compare is said as a SKIP finding rather than left out; across a pool it is not, as a
    pool of fewer nodes than ``min_fleet`` is no fault of any.
    """
    numbers = [n for o in observed if (n := _numeric(o.value)) is not None]
    median = statistics.median(numbers) if len(numbers) >= check.min_fleet else 0.0
    if median <= 0:
        if facts is None:
            return []
        said = f"{len(numbers)} values to compare, fewer than the {check.min_fleet} it needs"
        unread = [o.missing or "not reported" for o in observed if o.value is None]
        if unread:  # fewer values because some were not read: that is no SKIP
            return [_node_finding(check, facts, check.on_missing, f"{said}; {unread[0]}", run_ids)]
        return [_node_finding(check, facts, Status.SKIP, said, run_ids)]
    findings = []
    limits = Limits.of(check, variables)
    for obs in observed:
        value = _numeric(obs.value)
        if value is None:
            if facts is not None and obs.value is None:
                # A subject of the node left unread (a GPU pair TransferBench printed N/A for) is compared
                # with nothing: said, never dropped. Across a pool, a node's unread values are its own checks'.
                reason = obs.missing or "not reported"
                findings.append(_unjudged(check, obs, check.on_missing, reason, run_ids))
            continue
        ratio = value / median
        status, expected, _ = limits.judge(check, ratio)
        if status is Status.PASS and _counted(check, obs, counted):
            continue
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
            observed.extend(observe(check.metric, facts, pack_variables(pack, facts)))
        if len({o.subject.node for o in observed}) >= check.min_fleet:
            variables = pack.pack.values()
            findings.extend(_relative(check, observed, variables, "pool median", {}))
    return findings


def unreachable_finding(node: str, reason: str, *, lead: str = "could not check") -> Finding:
    """The single finding for a node that could not be checked at all (or, with another ``lead``, whose
    connection dropped under a probe after others had answered)."""
    return Finding(
        check_id="node.reachable",
        family=Family.REACHABILITY,
        status=Status.UNKNOWN,
        subject=Subject(node=node),
        message=f"{lead}: {reason}",
        evidence=Evidence(action=Remedy.RERUN, action_source=UNJUDGED_ACTION),
    )


def unanswered_probe_finding(facts: NodeFacts, outcome: ProbeOutcome, family: str, command: str) -> Finding:
    """The finding of a probe that ran and gave nothing to read, whether or not a check needed it.

    UNKNOWN: a node is PASS only when everything the sweep asked was answered. SKIP when the node's
    tool does not know the probe at all (its checks say whether something else covered it).
    """
    status = Status.SKIP if outcome.unsupported else Status.UNKNOWN
    return Finding.trusted(
        check_id=f"probe.{outcome.probe}",
        family=family,
        status=status,
        subject=facts.subject(),
        message=f"{command}: {outcome.problem or 'no output'}",
        evidence=Evidence.trusted(
            probe=outcome.probe,
            probe_run_id=outcome.run_id,
            action=Remedy.RERUN if status is Status.UNKNOWN else None,
            action_source=UNJUDGED_ACTION if status is Status.UNKNOWN else None,
        ),
    )
