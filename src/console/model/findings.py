"""Verdicts and the evidence behind them: what the checks produce and the store, UI and reports show."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from pydantic import Field, model_validator

from console.model.base import Model, Numerous


class Status(StrEnum):
    """Verdict of a check, a GPU, a link or a node.

    UNKNOWN means "could not check" (unreachable, timeout, parse error, value not reported) and never
    counts as healthy. SKIP means "does not apply here" (e.g. the healthcheck preset on gfx950).
    """

    PASS = "PASS"
    WARN = "WARN"
    FAIL = "FAIL"
    UNKNOWN = "UNKNOWN"
    SKIP = "SKIP"

    @property
    def severity(self) -> int:
        """Order used to roll findings up: FAIL > UNKNOWN > WARN > PASS > SKIP."""
        return _SEVERITY[self]


_SEVERITY = {Status.SKIP: 0, Status.PASS: 1, Status.WARN: 2, Status.UNKNOWN: 3, Status.FAIL: 4}


def worst(statuses: list[Status] | tuple[Status, ...], default: Status = Status.UNKNOWN) -> Status:
    """The most severe status of ``statuses`` (``default`` when there are none)."""
    return max(statuses, key=lambda s: s.severity) if statuses else default


class Remedy(StrEnum):
    """What a finding calls for, mildest first: the next step an operator (or the remediation loop) takes."""

    MONITOR = "monitor"  # count it; repeats within a window escalate
    RERUN = "rerun"  # no hardware verdict yet: run the check again (after fixing what stopped it)
    RESTORE_STACK = "restore-stack"  # install the pool's pinned driver, ROCm or firmware again
    RESET_GPU = "reset-gpu"  # reset the GPU (or set back what was changed on it), then revalidate
    REBOOT = "reboot"  # reboot the node, then revalidate
    INSPECT = "inspect"  # a physical inspection: reseat, retorque, cooling, cable or the link's far end
    RMA = "rma"  # return the part

    @property
    def rank(self) -> int:
        """Order of gravity: RMA is the gravest."""
        return _REMEDY_ORDER.index(self)


_REMEDY_ORDER = list(Remedy)


def gravest(remedies: list[Remedy | None]) -> Remedy | None:
    """The gravest of ``remedies`` (None when there is none)."""
    present = [r for r in remedies if r is not None]
    return max(present, key=lambda r: r.rank) if present else None


class SourceKind(StrEnum):
    """How much a threshold can be trusted (as tagged in thresholds.md)."""

    VENDOR_SPEC = "vendor-spec"
    VENDOR_SAMPLE = "vendor-sample"
    THIRD_PARTY = "third-party"
    ESTIMATE = "estimate"
    FLEET = "fleet-relative"
    PIN = "pool-pin"


class Scope(StrEnum):
    """What a finding is about."""

    NODE = "node"
    GPU = "gpu"
    LINK = "link"
    NIC = "nic"


class Subject(Model):
    """The node, GPU, link or NIC port a finding names."""

    node: str
    scope: Scope = Scope.NODE
    gpu: int | None = Field(None, description="GPU index on the node")
    gpu_bdf: str | None = None
    peer: int | None = Field(None, description="peer GPU index for a link")
    peer_bdf: str | None = None
    port: str | None = Field(None, description="NIC device/port, e.g. mlx5_0/1")

    def label(self) -> str:
        """Short human name: ``gpu012``, ``gpu012 gpu3``, ``gpu012 gpu3-gpu5``, ``gpu012 mlx5_0/1``."""
        if self.scope is Scope.LINK and self.gpu is not None and self.peer is not None:
            return f"{self.node} gpu{self.gpu}-gpu{self.peer}"
        if self.scope is Scope.GPU and self.gpu is not None:
            return f"{self.node} gpu{self.gpu}"
        if self.scope is Scope.NIC and self.port:
            return f"{self.node} {self.port}"
        return self.node


class Evidence(Numerous):
    """What a verdict rests on: the figure, the threshold and where the threshold comes from."""

    observed: float | str | bool | None = None
    expected: str | None = Field(None, description="the threshold as text, e.g. '>= 32 GT/s'")
    unit: str | None = None
    source: str | None = Field(None, description="where the threshold comes from")
    source_kind: SourceKind | None = None
    probe: str | None = Field(None, description="probe id whose output holds the figure")
    probe_run_id: int | None = Field(None, description="store id of the raw output")
    action: Remedy | None = Field(None, description="what a finding that did not pass calls for")
    action_source: str | None = Field(None, description="where that action comes from")


# What a finding nothing could judge calls for, whichever check or phase made it.
UNJUDGED_ACTION = "not judged: fix what the finding names (access, the tool, the probe), then rerun"


class Finding(Numerous):
    """One check's verdict on one subject, with evidence and a one-line message."""

    check_id: str
    family: str
    status: Status
    subject: Subject
    message: str
    evidence: Evidence = Field(default_factory=Evidence)

    @model_validator(mode="after")
    def _unjudged_calls_for_a_rerun(self) -> Finding:
        # Every phase that makes findings (checks, multi-node runs, workloads, a vanished GPU) says UNKNOWN
        # the same way: nothing was judged, so the next step is to fix what stopped it and run it again.
        if self.status is Status.UNKNOWN and self.evidence.action is None:
            self.evidence.action, self.evidence.action_source = Remedy.RERUN, UNJUDGED_ACTION
        return self


class NodeVerdict(Model):
    """Roll-up of every finding on one node, per family."""

    node: str
    status: Status
    families: dict[str, Status] = Field(default_factory=dict)
    findings: list[Finding] = Field(default_factory=list)
    reason: str = Field("", description="one line: the worst finding's message")
    action: Remedy | None = Field(None, description="the gravest action its worst findings call for")
    # Every sweep keeps its PASS findings as counts, not records, but for those read again
    # (console.model.kept): in memory, in the store and on the wire, a node costs what its problems do.
    passed: dict[str, int] = Field(
        default_factory=dict, description="PASS findings not kept as records, counted per check id"
    )

    @property
    def total(self) -> int:
        """How many findings the verdict stands for: those it holds and those it counts."""
        return len(self.findings) + sum(self.passed.values())


def worst_action(findings: list[Finding], status: Status | None = None) -> Remedy | None:
    """The gravest action the findings of the worst status (or of ``status``) call for; None for PASS or SKIP."""
    status = status or worst([f.status for f in findings], default=Status.PASS)
    if status not in (Status.FAIL, Status.WARN, Status.UNKNOWN):
        return None
    return gravest([f.evidence.action for f in findings if f.status is status])


def roll_up(
    node: str, findings: list[Finding], passed: dict[str, int] | None = None, passed_families: Iterable[str] = ()
) -> NodeVerdict:
    """Summarise a node's findings: worst status overall and per family, and the headline reason.

    ``passed`` counts PASS findings kept as numbers (``console.model.kept``), in ``passed_families``.
    """
    families: dict[str, Status] = dict.fromkeys(passed_families, Status.PASS)
    for finding in findings:
        current = families.get(finding.family)
        if current is None or finding.status.severity > current.severity:
            families[finding.family] = finding.status
    status = worst([f.status for f in findings] + ([Status.PASS] if passed else []), default=Status.UNKNOWN)
    headline = max(findings, key=lambda f: f.status.severity, default=None)
    reason = ""
    if headline is not None and status not in (Status.PASS, Status.SKIP):
        where = headline.subject.label()[len(node) :].strip()
        reason = f"{where} {headline.message}" if where else headline.message
    if not findings and not passed:
        reason = "no checks ran"
    action = worst_action(findings, status)
    return NodeVerdict(
        node=node,
        status=status,
        families=families,
        findings=findings,
        reason=reason,
        action=action,
        passed=dict(passed or {}),
    )
