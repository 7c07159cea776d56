"""A declared workload's command line, and its figures read from what it printed (docs/workloads.md).

Both pure: ``workload_argv`` builds the argv (bare, in the site's container, through ``srun`` for N
nodes) in one place; ``read_figures`` reads the figures the workload's ``results`` name. A figure
the output does not hold is listed as missing, a ``nan``/``inf`` is kept as the non-finite number it
is (it fails), and a JSON line that does not parse is said, never skipped silently.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from console.model.workload import CRITERION, ContainerSpec, ResultsSpec, StepsSpec, WorkloadSpec

__all__ = [
    "SRUN_IMMEDIATE_S",
    "BadStep",
    "Figures",
    "Steps",
    "container_argv",
    "is_finite",
    "read_figures",
    "read_steps",
    "split_tasks",
    "srun_refusal",
    "workload_argv",
]

# What a containerised workload needs to reach the GPUs (ROCm's container guidance: the KFD and DRI
# devices, the video and render groups, host IPC for RCCL's shared memory), and the host's network.
_GPU_OPTIONS = (
    "--device=/dev/kfd",
    "--device=/dev/dri",
    "--group-add=video",
    "--group-add=render",
    "--ipc=host",
    "--network=host",
)


# How long srun waits for the group's nodes before it gives up: a node drained, down or busy in Slurm
# refuses the run at once (UNKNOWN: not run) instead of queueing it until the workload's timeout.
SRUN_IMMEDIATE_S = 30
# What srun prints when Slurm would not start the job (srun(1), Slurm 22.05-24.11): no run, no verdict.
_SRUN_REFUSED = re.compile(
    r"^srun: error: (Unable to allocate resources|Immediate execution impossible|Job submit/allocate failed)"
    r"|^srun: Required node not available",
    re.MULTILINE,
)


def workload_argv(spec: WorkloadSpec, hosts: Sequence[str] = ()) -> tuple[str, ...]:
    """What runs: the command, in the container when one is declared, through srun for more than one node.

    ``hosts`` are the nodes of the group the console placed the run on: srun is held to exactly them
    (``--nodelist``), or Slurm would place it on any N nodes and the findings would name the wrong ones.
    Slurm ends the job at the workload's timeout (``--time``) should the console's kill not reach it,
    ``--kill-on-bad-exit`` ends every task once one fails, as a synchronous job cannot go on, and
    ``--label`` starts each line with its task's number, so each task's result is judged on its own.
    """
    argv: tuple[str, ...] = tuple(spec.command)
    if spec.container is not None:
        argv = container_argv(spec.container, argv)
    if spec.nodes > 1:
        placed = (f"--nodelist={','.join(hosts)}",) if hosts else ()
        limits = (f"--immediate={SRUN_IMMEDIATE_S}", f"--time={math.ceil(spec.timeout_s / 60) + 1}")
        # --label: each line starts with its task's number, so every task's result is judged (split_tasks).
        argv = ("srun", f"--nodes={spec.nodes}", *placed, "--ntasks-per-node=1", *limits, "--kill-on-bad-exit=1",
                "--label", *argv)  # fmt: skip
    return argv


def container_argv(container: ContainerSpec, argv: Sequence[str]) -> tuple[str, ...]:
    """``argv`` run in ``container`` with the node's GPUs: the one place a command is put in a container
    (a site workload's, the framework probe of a pool that names its framework's container)."""
    if container.runtime == "apptainer":
        return ("apptainer", "exec", "--rocm", *container.options, container.image, *argv)
    return (container.runtime, "run", "--rm", *_GPU_OPTIONS, *container.options, container.image, *argv)


def srun_refusal(stderr: str) -> str | None:
    """srun's line saying Slurm did not start the job (nodes drained, down, busy, unknown), else None."""
    found = _SRUN_REFUSED.search(stderr)
    if found is None:
        return None
    return stderr[found.start() :].splitlines()[0].strip()


# srun --label: the task's number, right-aligned to the widest, a colon and a space (srun(1), "-l").
_TASK_LABEL = re.compile(r" *(\d+): ")


def split_tasks(text: str, tasks: int) -> list[str] | None:
    """Each srun task's lines, by task number (``srun --label`` starts each line with it), the labels
    taken off; a task that printed nothing has ''. None when no line carries a label (srun was run
    without ``--label``: the tasks cannot be told apart). Lines without a label are srun's own."""
    per: list[list[str]] = [[] for _ in range(tasks)]
    labelled = False
    for line in text.splitlines():
        found = _TASK_LABEL.match(line)
        if found is None:
            continue
        labelled = True
        task = int(found.group(1))
        if task < tasks:
            per[task].append(line[found.end() :])
    return ["".join(f"{line}\n" for line in lines) for lines in per] if labelled else None


@dataclass
class Figures:
    """The figures one run printed: by name, with those missing and what could not be read."""

    values: dict[str, float] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def read_figures(results: ResultsSpec, text: str, wanted: list[str]) -> Figures:
    """The figures of ``text``; ``wanted`` are those the criteria read (missing when absent)."""
    figures = Figures()
    if results.json_prefix is not None:
        _from_json_line(results.json_prefix, text, figures)
    for name, pattern in results.regex.items():
        matches = re.findall(pattern, text, re.MULTILINE)
        if not matches:
            continue
        number = _number(matches[-1])
        if number is None:
            figures.problems.append(f"{name}: {str(matches[-1])[:60]!r} is not a number")
        else:
            figures.values[name] = number
    figures.missing = [name for name in dict.fromkeys(wanted) if name not in figures.values]
    return figures


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))  # "51,234" as some tools group thousands; "nan" stays nan
    except ValueError:
        return None


def _from_json_line(prefix: str, text: str, figures: Figures) -> None:
    lines = [line[len(prefix) :] for line in text.splitlines() if line.startswith(prefix)]
    if not lines:
        figures.problems.append(f"no line starts with {prefix!r}")
        return
    # Every such line is read, not only the last: a run may print progress lines before its result, and one
    # that came out corrupted is said even when a later line holds the figures (the last line's). Under srun
    # each task's lines are read on their own (``split_tasks``).
    shown = prefix.strip()
    for number, line in enumerate(lines, start=1):
        where = f"the last {shown!r} line" if number == len(lines) else f"{shown!r} line {number} of {len(lines)}"
        try:
            document = json.loads(line)
        except ValueError as exc:
            figures.problems.append(f"{where} is not JSON: {exc}")
            continue
        if not isinstance(document, dict):
            figures.problems.append(f"{where} is not a JSON object")
            continue
        if number == len(lines):
            _flatten("", document, figures.values)


def _flatten(stem: str, value: Any, into: dict[str, float]) -> None:
    """Numbers of a JSON object by dotted key; booleans, text and lists are not figures."""
    if isinstance(value, dict):
        for key, inner in value.items():
            _flatten(f"{stem}.{key}" if stem else str(key), inner, into)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        into[stem] = float(value)
    elif isinstance(value, str) and value.lower() in ("nan", "inf", "-inf", "infinity", "-infinity"):
        into[stem] = float(value)  # a JSON writer that spells NaN as text: still a NaN


def is_finite(value: float) -> bool:
    """False for NaN and infinities: a figure no criterion can pass."""
    return math.isfinite(value)


@dataclass(frozen=True)
class BadStep:
    """The first step at which a figure went bad: not finite, or out of its band."""

    step: int
    figure: str
    value: float
    band: str | None  # the band's condition it met; None: not finite

    def line(self) -> str:
        """``step 40: loss is nan`` or ``step 70: loss 14.2 (out of band: > 12)``."""
        if self.band is None:
            return f"step {self.step}: {self.figure} is {self.value}"
        return f"step {self.step}: {self.figure} {self.value:g} (out of band: {self.band})"


@dataclass
class Steps:
    """What the per-step lines of one run say: how many were read, the first bad one, what could not be read."""

    read: int = 0
    first_bad: BadStep | None = None
    problems: list[str] = field(default_factory=list)


_COMPARE = {
    "<": float.__lt__,
    "<=": float.__le__,
    ">": float.__gt__,
    ">=": float.__ge__,
    "==": float.__eq__,
    "!=": float.__ne__,
}


def _out_of_band(condition: str, value: float) -> bool:
    found = CRITERION.match(condition)
    return found is not None and bool(_COMPARE[found.group(1)](value, float(found.group(2))))


def read_steps(spec: StepsSpec, text: str) -> Steps:
    """The per-step lines of ``text`` (those ``spec.pattern`` matches), up to the first bad step: a figure
    that is not finite, or meets its band's condition. A step or figure that is not a number is said."""
    pattern = re.compile(spec.pattern)
    steps = Steps()
    for line in text.splitlines():
        found = pattern.search(line)
        if found is None:
            continue
        steps.read += 1
        raw_step = found.group("step")
        step = int(raw_step) if raw_step is not None and raw_step.isdigit() else None
        if step is None:
            steps.problems.append(f"step {str(raw_step)[:20]!r} is not a step number")
            continue
        for name, raw in found.groupdict().items():
            if name == "step" or raw is None:
                continue
            value = _number(raw)
            if value is None:
                steps.problems.append(f"step {step}: {name} {raw[:40]!r} is not a number")
                continue
            band = spec.bands.get(name)
            if not math.isfinite(value) or (band is not None and _out_of_band(band, value)):
                steps.first_bad = BadStep(step, name, value, band if math.isfinite(value) else None)
                return steps
    return steps
