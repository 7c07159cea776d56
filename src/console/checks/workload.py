"""Judging one run of a declared workload: its exit status, its figures, and the site's criteria.

Every finding is ``workload.<name>.<what>`` in the family ``workload``. What could not be read (a
figure the output does not hold, a JSON line that does not parse) is UNKNOWN with why, never PASS; a
NaN or infinite figure FAILs whether a criterion reads it or not.
"""

from __future__ import annotations

from console.checks.evaluate import fmt_value
from console.checks.spec import Condition
from console.model.findings import Evidence, Finding, Remedy, Status, Subject
from console.model.workload import WorkloadSpec
from console.probes.workload import is_finite, read_figures

FAMILY = "workload"
WORKLOAD_ACTION = (
    "estimate: rerun the workload; a failure that repeats after a stack change is a regression: restore the"
    " accepted stack (docs/sources/actions.md#workloads)"
)


def judge_workload(spec: WorkloadSpec, subject: Subject, output: str, exit_status: int) -> list[Finding]:
    """The findings of one run of ``spec`` that printed ``output`` and ended with ``exit_status``."""
    base = f"workload.{spec.name}"

    def finding(what: str, status: Status, message: str, **evidence: object) -> Finding:
        if status in (Status.FAIL, Status.WARN):
            evidence.update(action=Remedy.RERUN, action_source=WORKLOAD_ACTION)
        return Finding(
            check_id=f"{base}.{what}",
            family=FAMILY,
            status=status,
            subject=subject,
            message=f"{spec.name}: {message}",
            evidence=Evidence.model_validate(evidence),
        )

    exited = Status.PASS if exit_status == 0 else Status.FAIL
    findings = [
        finding("exit", exited, f"exit status {exit_status}", observed=float(exit_status), expected="== 0"),
    ]
    figures = read_figures(spec.results, output, [c.figure for c in spec.criteria])
    findings += [finding("output", Status.UNKNOWN, problem) for problem in figures.problems]
    for name, number in figures.values.items():
        if not is_finite(number):
            findings.append(finding(name, Status.FAIL, f"{name} is {number}", observed=str(number), expected="finite"))
    for criterion in spec.criteria:
        value = figures.values.get(criterion.figure)
        if value is None:
            findings.append(finding(criterion.figure, Status.UNKNOWN, f"{criterion.figure} is not in the output"))
            continue
        if not is_finite(value):
            continue  # said above, once per figure
        status, line = _judged(criterion.fail_if, criterion.warn_if, value)
        message = f"{criterion.figure}: {fmt_value(value, None)}" + (f" ({line})" if status is not Status.PASS else "")
        findings.append(
            finding(criterion.figure, status, message, observed=value, expected=line, source=criterion.source)
        )
    return findings


def _judged(fail_if: str | None, warn_if: str | None, value: float) -> tuple[Status, str]:
    """FAIL or WARN with the line crossed, else PASS with every line (the criteria use check-pack conditions)."""
    lines = [(Status.FAIL, fail_if), (Status.WARN, warn_if)]
    for status, text in lines:
        if text is not None and Condition.parse(text).holds(value, {}):
            return status, f"{status.value.lower()} if {text.strip()}"
    return Status.PASS, "; ".join(f"{s.value.lower()} if {t.strip()}" for s, t in lines if t is not None)
