"""What each command's ``--json`` prints, as pydantic models: the source of the published JSON schemas.

The sweep report (``SweepReport``), the check-local report (``LocalCheckReport``), drift rows (``DriftRow``)
and findings are the models the commands print. The other outputs are built as dicts by their command;
the models below describe them field by field, every object closed (``extra="forbid"``), so a field added
to an output without its model fails ``tests/integration/test_json_schemas.py``, which runs every command
and validates what it prints. ``console.commands.generate`` writes the schema files from these.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from console.model.findings import Finding
from console.probes.base import ParsedOutput


class Output(BaseModel):
    """A closed JSON object: a field the command adds without adding it here is a schema failure."""

    model_config = ConfigDict(extra="forbid")


class HistorySweep(Output):
    """``history --json``: one sweep, newest first."""

    sweep: int
    started_at: float = Field(description="Unix time (seconds, UTC)")
    level: str
    status: str = Field(description="how the sweep ended: ok, interrupted, cancelled, deadline, running, ...")
    nodes: str = Field(description="the nodes swept, as a hostlist")
    summary: dict[str, Any] = Field(description="the sweep's counts per verdict and its outcome")


class HistoryNodeRow(Output):
    """``history --node NODE --json``: the node's verdict in one sweep, newest first."""

    sweep: int
    status: str
    reason: str
    started_at: float = Field(description="Unix time (seconds, UTC) the sweep started")


class NodeDiff(Output):
    """One node's changes between a pool's baseline and a later sweep."""

    node: str
    verdict: tuple[str | None, str | None] = Field(description="[baseline, sweep]; null where the node was not")
    stack: dict[str, tuple[str | None, str | None]]
    findings: list[tuple[str, str | None, str | None, str]] = Field(description="[key, was, is, message]")
    figures: list[tuple[str, float, float]] = Field(description="[key, was, is]")
    uncompared: list[tuple[str, str, str]] = Field(description="[key, status, message] of checks one sweep ran")
    regressed: bool


class PoolDiff(Output):
    """``diff --json``: one pool against its accepted baseline."""

    baseline: int | None
    sweep: int | None
    nodes: list[NodeDiff]
    regressed: list[str]


class AuditEntry(Output):
    """``audit --json``: one operator action, newest first."""

    id: int
    at: float = Field(description="Unix time (seconds, UTC) the intent was written")
    finished_at: float | None
    user: str
    action: str
    targets: list[str]
    inputs: dict[str, Any]
    commands: list[str]
    output: str | None
    outcome: str


class CaseStepRow(Output):
    """One step of a remediation case."""

    case_id: int
    at: float
    user: str
    step: str
    stage: str
    note: str
    sweep_id: int | None
    audit_id: int | None


class CaseRow(Output):
    """``cases --json``: one remediation case (its ``steps`` with ``--node``)."""

    id: int
    node: str
    stage: str
    action: str | None
    passes: int
    passes_required: int
    strikes: int
    max_strikes: int
    opened_at: float
    opened_by: str
    sweep_id: int | None
    findings: list[str]
    closed_at: float | None
    next: str
    steps: list[CaseStepRow] | None = None


class PolicySetting(Output):
    """One lifecycle setting and the table it came from."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    value: Any
    from_: str = Field(alias="from")


class RevalidatedNode(Output):
    """``revalidate --json``: what one node's revalidation recorded, and its case after it."""

    outcome: str
    case: CaseRow


class ActionPlanOut(Output):
    """The plan of an action: the exact commands, where they run, and why anything is left out."""

    kind: str
    targets: list[str]
    where: str
    commands: list[list[str]]
    decisions: dict[str, str]
    notes: list[str]
    refused: str | None
    capped: list[str]


class ActionResultOut(Output):
    """What executing the plan did."""

    ok: bool
    outcome: str
    per_target: dict[str, str]
    audit_id: int | None


class ActionOutput(Output):
    """``drain|resume|... --json``: the plan, and the result unless it was a dry run."""

    plan: ActionPlanOut
    result: ActionResultOut | None = None


class Change(Output):
    """A stack field the accepted run had one value of and the pool has another now."""

    accepted: str
    current: str


class AcceptanceRecordOut(Output):
    """One recorded run of a workload on a pool (accepted, regressed or blocked)."""

    id: int
    workload: str
    pool: str
    outcome: str
    stack: dict[str, str]
    figures: dict[str, float | str] = Field(description="a non-finite figure as text: 'nan', 'inf'")
    sweep_id: int | None
    at: float
    user: str
    reason: str
    audit_id: int | None
    nodes: dict[str, dict[str, str]]


class RunInProgressOut(Output):
    """A run that has not ended."""

    started_at: float
    nodes: list[str]
    sweep_id: int | None
    settled: str
    owner: str


class TrendRunOut(Output):
    """One run in the trend: its sweep, when, its worst status and its figures."""

    sweep_id: int
    at: float
    status: str
    figures: dict[str, float | str]


class FigureTrendOut(Output):
    """One figure over the runs, oldest first, and which way the newest moved."""

    values: list[float | str]
    direction: str


class Trend(Output):
    """The runs of the workload on the pool and each figure's trend."""

    runs: list[TrendRunOut]
    figures: dict[str, FigureTrendOut]


class ComparisonOut(Output):
    """One figure of a run beside the reference figure it is held to."""

    figure: str
    reference: float | str
    value: float | str
    ratio: float | str | None = Field(description="value / reference; null when the reference is 0")
    tolerance: float = Field(description="how far the worse way it may move, a fraction of the reference")
    better: str = Field(description="higher, lower or either")
    source: str
    beyond: bool


class NewestRunOut(Output):
    """The newest run of the workload on the pool, held to the reference figures."""

    sweep_id: int
    status: str
    figures: dict[str, float | str]
    compared: list[ComparisonOut]


class RepeatRunOut(Output):
    """One passing run acceptance rests on."""

    sweep_id: int
    nodes: list[str]
    figures: dict[str, float | str]


class SpreadOut(Output):
    """How far apart one figure is over the repeat runs: (max - min) / |mean|."""

    figure: str
    values: list[float | str]
    spread: float | str
    tolerance: float
    wider: bool


class RepeatabilityOut(Output):
    """The runs the accepted stack's acceptance rests on, and their spread."""

    needed: int
    runs: list[RepeatRunOut]
    spreads: list[SpreadOut]


class AcceptanceStateOut(Output):
    """One workload on one pool."""

    workload: str
    pool: str
    state: str
    settled_state: str
    current_stack: dict[str, str]
    accepted: AcceptanceRecordOut | None
    regressed: AcceptanceRecordOut | None
    blocked: AcceptanceRecordOut | None
    changes: dict[str, Change]
    uncovered: dict[str, dict[str, Change]]
    running: RunInProgressOut | None
    unstable: AcceptanceRecordOut | None
    reference: AcceptanceRecordOut | None = Field(description="whose figures every run is held to")
    failing_since: int | None = Field(description="the first run (sweep) of the not acceptable runs in a row")
    newest: NewestRunOut | None
    repeatability: RepeatabilityOut | None
    trend: Trend


class AcceptanceOutput(Output):
    """``acceptance --json``: every workload's state per pool and how many fail the gate."""

    states: list[AcceptanceStateOut]
    failed: int


class WorkloadOutput(Output):
    """``workload --json``: the findings of one workload run."""

    workload: str
    findings: list[Finding]


class JudgedFromHistory(Output):
    """One node as the history judges it."""

    node: str
    status: str
    reason: str
    sweep_id: int | None
    level: str | None
    checked_at: float | None = Field(description="Unix time (seconds, UTC) of the check the verdict comes from")


class FromHistoryReport(Output):
    """``sweep --max-age AGE --json FILE``: the verdicts read from the history, no node contacted."""

    from_history: bool
    level: str
    max_age_s: float
    exit_code: int
    nodes: list[JudgedFromHistory]


class AfidMeaning(BaseModel):
    """What an AMD Field ID means (``known`` false: not in the console's table)."""

    model_config = ConfigDict(extra="forbid")

    afid: int
    known: bool
    action: str | None = None
    category: str | None = None
    error_type: str | None = None
    severity: str | None = None
    physical: str | None = None
    what_to_do: str | None = None
    doc: str | None = None


class ParseVerdict(Output):
    """How the output was judged, or why it was not (``status`` null)."""

    model: str | None
    model_from: str | None
    named_models: list[str]
    probes: list[str]
    status: str | None
    reason: str
    fragment: bool
    counts: dict[str, int]
    not_applicable: dict[str, str]


class ParseOutput(ParsedOutput):
    """``parse --json``: the parser's answer (its ``data`` per tool), then the verdict and the findings."""

    data: dict[str, Any] | None = Field(  # type: ignore[assignment]
        default=None, description="what the parser read: the tool's model in console.model, as JSON"
    )
    verdict: ParseVerdict
    findings: list[Finding]


class ConfigFile(Output):
    """A config file the console looks at."""

    scope: str = Field(description="system (under /etc) or user (under $XDG_CONFIG_HOME)")
    path: str
    read: bool = Field(description="it exists and was read")


class ConfigSetting(Output):
    """One default a config file gives."""

    command: str | None = Field(description="the command it is for; null: every command that has the option")
    key: str
    value: Any
    source: str = Field(description="the file it comes from (the strongest that sets it)")


class ConfigOutput(Output):
    """``config --json``: the files looked at and each effective setting with its source."""

    files: list[ConfigFile]
    settings: list[ConfigSetting]
    built_in: list[str] = Field(description="shared keys no file sets: the built-in default holds")
