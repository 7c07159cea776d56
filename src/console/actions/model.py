"""The action vocabulary the CLI and the TUI share: what to do (request), how (plan), what happened (result)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from enum import StrEnum


class ActionKind(StrEnum):
    """Operator actions; the value is the audit log's ``action`` column."""

    DRAIN = "drain"
    RESUME = "resume"
    UNDRAIN = "undrain"
    CORDON = "cordon"
    UNCORDON = "uncordon"
    PIN = "pin"
    UNPIN = "unpin"
    ENFORCE_PIN = "enforce-pin"
    ACCEPT = "accept"  # a sweep as its pools' baseline
    REPAIRED = "repaired"  # a drained node's repair is done: its case is revalidated next
    ESCALATE = "escalate"  # a drained node goes to the vendor (RMA): its case closes
    ROLLBACK = "rollback"  # a pool back to its last accepted stack: pin, holds, workload images
    REVALIDATE = "revalidate"  # sweep repaired nodes and record a pass or a strike on their cases
    APPROVE = "approve"  # carry out what watch proposed (approve-to-run): its drain or resume


SLURM_KINDS = frozenset({ActionKind.DRAIN, ActionKind.RESUME, ActionKind.UNDRAIN})
KUBE_KINDS = frozenset({ActionKind.CORDON, ActionKind.UNCORDON})
# Steps of a node's remediation case (console.store.lifecycle): they change the history database only.
CASE_KINDS = frozenset({ActionKind.REPAIRED, ActionKind.ESCALATE})
# Plans that hold packages on nodes: dry runs unless applied (``pin --enforce --apply``, ``rollback --apply``).
HOLD_KINDS = frozenset({ActionKind.ENFORCE_PIN, ActionKind.ROLLBACK})


@dataclass(frozen=True)
class ActionRequest:
    """What the operator asked for. ``targets`` are node names (already expanded from a hostlist)."""

    kind: ActionKind
    targets: tuple[str, ...]
    reason: str = ""
    sweep_id: int | None = None
    force: bool = False
    pool: str | None = None
    from_node: str | None = None
    image_digest: str | None = None  # PIN only: recorded with the stack when the node's facts lack it
    workload: str | None = None  # ROLLBACK only: whose accepted stack (default: the pool's newest accepted)
    level: str | None = None  # REVALIDATE only: the probe level (default: the [lifecycle] policy's)
    proposal_ids: tuple[int, ...] = ()  # APPROVE only: which proposals (default: the targets' open ones)


@dataclass(frozen=True)
class Decision:
    """What a plan does with one target: act on it or not, and the line the operator reads."""

    act: bool
    note: str
    no_op: bool = False


@dataclass(frozen=True)
class Step:
    """One command of a plan: the exact argv, where it runs, and the targets it acts on."""

    where: str
    argv: tuple[str, ...]
    targets: tuple[str, ...]

    def shown(self) -> str:
        """``where$ argv`` as an operator would type it (argv shell-quoted)."""
        return f"{self.where}$ {shlex.join(self.argv)}"


@dataclass(frozen=True)
class ActionPlan:
    """The dry run of a request: the exact commands, where they run, and why anything is left out.

    ``where`` is ``local``, the Slurm controller, ``kubernetes``, ``store`` or the hostlist of the nodes
    the commands run on (one step per node in ``steps``). ``refused`` says why nothing may run.
    ``decisions`` says, per target, what the plan does with it (``drain``, ``no-op: ...``, ``skip: ...``).
    """

    request: ActionRequest
    commands: tuple[tuple[str, ...], ...]
    where: str
    notes: tuple[str, ...] = ()
    refused: str | None = None
    steps: tuple[Step, ...] = ()
    decisions: dict[str, str] = field(default_factory=dict)
    # Targets held back by their pool's cap: the others run and the result is not ok (all of them when
    # none fits, and the plan is refused); forcing the request overrides the cap.
    capped: tuple[str, ...] = ()
    # Targets their remediation case holds out (not revalidated yet); forcing the request resumes them.
    held: tuple[str, ...] = ()

    @property
    def acting_on(self) -> tuple[str, ...]:
        """Targets some step acts on, in request order."""
        acted = {t for step in self.steps for t in step.targets}
        return tuple(t for t in self.request.targets if t in acted)

    # What the console's confirm dialog reads: the plan crosses the wire as it is (console.service.commands).

    @property
    def targets(self) -> tuple[str, ...]:
        """The targets asked for (nodes, or pools for ``accept``)."""
        return self.request.targets

    @property
    def reason(self) -> str:
        """The operator's reason, as planned."""
        return self.request.reason

    @property
    def forced(self) -> bool:
        """True when planned with the cap (or a case's hold) overridden."""
        return self.request.force

    def command_lines(self) -> list[str]:
        """Each command as the operator would type it, prefixed with where it runs (``ctl01$ scontrol ...``)."""
        return [step.shown() for step in self.steps] or [f"$ {shlex.join(argv)}" for argv in self.commands]


@dataclass(frozen=True)
class ActionResult:
    """What executing a plan did: overall ``ok``, a one-line ``outcome`` and a line per target."""

    ok: bool
    outcome: str
    per_target: dict[str, str]
    audit_id: int | None = None
