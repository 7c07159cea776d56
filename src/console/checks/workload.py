"""Judging one run of a declared workload: its exit status, its figures, and the site's criteria.

Every finding is ``workload.<name>.<what>`` in the family ``workload``. A run on N nodes is judged per
srun task: each task's result, named by its task and node. What could not be read (a
figure the output does not hold, a JSON line that does not parse) is UNKNOWN with why, never PASS; a
NaN or infinite figure FAILs whether a criterion reads it or not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from console.checks.evaluate import fmt_value
from console.checks.spec import Condition
from console.model.family import Family
from console.model.findings import Evidence, Finding, Remedy, Status, Subject
from console.model.workload import WorkloadSpec
from console.probes.workload import is_finite, read_figures, read_steps, split_tasks

FAMILY = Family.WORKLOAD
WORKLOAD_ACTION = (
    "estimate: rerun the workload; a failure that repeats after a stack change is a regression: restore the"
    " accepted stack (docs/sources/actions.md#workloads)"
)


def judge_workload(
    spec: WorkloadSpec, subject: Subject, output: str, exit_status: int, hosts: Sequence[str] = ()
) -> list[Finding]:
    """The findings of one run of ``spec`` that printed ``output`` and ended with ``exit_status``.

    A run on N nodes is judged task by task (``srun --label``: task i on ``hosts[i]``, one task per
    node in the group's order): every task's result must be there and pass, and each finding about a
    task's figures names the task and its node. Output with no task labels cannot be told apart by
    task: UNKNOWN, whatever its last line says.
    """
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
    if spec.nodes == 1:
        return findings + _judge_result(spec, output, finding, "")
    tasks = split_tasks(output, spec.nodes)
    if tasks is None:
        said = (
            f"no line carries an srun task label (--label): the results of its {spec.nodes} tasks cannot be told apart"
        )
        return [*findings, finding("output", Status.UNKNOWN, said)]
    for task, text in enumerate(tasks):
        node = f" on {hosts[task]}" if task < len(hosts) else ""
        findings += _judge_result(spec, text, finding, f"task {task}{node}: ")
    return findings


class _Make(Protocol):
    def __call__(self, what: str, status: Status, message: str, **evidence: object) -> Finding: ...


def _judge_result(spec: WorkloadSpec, output: str, finding: _Make, where: str) -> list[Finding]:
    """The findings of one result (a run's, or one srun task's: ``where`` names it in each message)."""
    figures = read_figures(spec.results, output, [c.figure for c in spec.criteria])
    found = [finding("output", Status.UNKNOWN, where + problem) for problem in figures.problems]
    if not figures.values and not figures.problems:
        # Nothing any pattern reads: no result, whatever the exit status says (a task that printed none).
        found.append(finding("output", Status.UNKNOWN, f"{where}no result: it printed no figure"))
    for name, number in figures.values.items():
        if not is_finite(number):
            found.append(
                finding(name, Status.FAIL, f"{where}{name} is {number}", observed=str(number), expected="finite")
            )
    if spec.results.steps is not None:
        found.append(_judge_steps(spec, output, finding, where))
    for criterion in spec.criteria:
        value = figures.values.get(criterion.figure)
        if value is None:
            found.append(finding(criterion.figure, Status.UNKNOWN, f"{where}{criterion.figure} is not in the output"))
            continue
        if not is_finite(value):
            continue  # said above, once per figure
        status, line = _judged(criterion.fail_if, criterion.warn_if, value)
        message = f"{where}{criterion.figure}: {fmt_value(value, None)}"
        message += f" ({line})" if status is not Status.PASS else ""
        found.append(finding(criterion.figure, status, message, observed=value, expected=line, source=criterion.source))
    return found


def _judge_steps(spec: WorkloadSpec, output: str, finding: _Make, where: str) -> Finding:
    """The per-step lines of one result: FAIL naming the first bad step (``read_steps``), UNKNOWN when none
    was read or one could not be, else PASS."""
    assert spec.results.steps is not None
    steps = read_steps(spec.results.steps, output)
    if steps.first_bad is not None:
        bad = steps.first_bad
        expected = f"not {bad.band}" if bad.band is not None else "finite"
        return finding("steps", Status.FAIL, f"{where}first bad {bad.line()}", observed=bad.step, expected=expected)
    if steps.problems:
        return finding("steps", Status.UNKNOWN, f"{where}{steps.problems[0]}")
    if not steps.read:
        return finding("steps", Status.UNKNOWN, f"{where}no line matches its steps pattern")
    return finding("steps", Status.PASS, f"{where}{steps.read} steps, each finite and in band", observed=steps.read)


def _judged(fail_if: str | None, warn_if: str | None, value: float) -> tuple[Status, str]:
    """FAIL or WARN with the line crossed, else PASS with every line (the criteria use check-pack conditions)."""
    lines = [(Status.FAIL, fail_if), (Status.WARN, warn_if)]
    for status, text in lines:
        if text is not None and Condition.parse(text).holds(value, {}):
            return status, f"{status.value.lower()} if {text.strip()}"
    return Status.PASS, "; ".join(f"{s.value.lower()} if {t.strip()}" for s, t in lines if t is not None)
