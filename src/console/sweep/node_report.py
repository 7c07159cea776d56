"""What ``check-local`` reports after judging its own node, and what a console may take from it.

The node runs the probes and judges them with the same packs as any sweep (``console.sweep.local_check``),
then sends a compact report instead of its raw outputs: the verdict, every finding that is not PASS in
full with its evidence, the PASS findings as counts per check (except those kept whole for their figures
or remarks: ``console.model.kept``), the readings of the checks only a console can judge (pool medians,
changes since the last sweep), its stack and a digest of every probe's output. Raw outputs come along
only when asked (``--raw``) or when the node is not PASS, so the console can judge those nodes again
itself and keep their outputs. A console takes a report only when it can vouch for it (``admit``): a
report of another format, judged with other packs or pins, or missing a probe or a check makes the node
UNKNOWN.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from pydantic import Field, ValidationError

from console.checks import CheckPack, NodeFacts, ProbeOutcome
from console.checks.evaluate import observe, pack_variables
from console.checks.metrics import CHANGE_METRICS, Observation
from console.inventory.model import Node, Pool, StackPin
from console.model.base import Model
from console.model.findings import Finding, NodeVerdict, Status, Subject, worst
from console.store import ProbeRunRecord
from console.sweep.bundle import Section
from console.sweep.catalog import ProbeSet, ProbeSpec, probes_for
from console.sweep.events import Event

REPORT_FORMAT = "instinct-console-check-local-2"
# Read off the head of a report that did not parse (cut, garbled), to say whose it was.
_FORMAT_FIELD = re.compile(r'"format"\s*:\s*"([^"]*)"')
_NODE_FIELD = re.compile(r'"node"\s*:\s*"([^"]+)"')


class ProbeDigest(Model):
    """One probe as the node ran it: how it ended, how much it printed and a hash of what it printed."""

    probe: str
    exit_status: int | None
    size: int = Field(description="bytes of output")
    sha256: str = Field(description="SHA-256 of the output (hex), to match it with one fetched later")


class LocalProbeRun(Model):
    """One probe's raw output as the node saw it; ``exit_status`` None when it never finished."""

    probe: str
    exit_status: int | None
    output: str


class Reading(Model):
    """One figure a check the node cannot judge alone reads (a pool median's input, a counter now)."""

    subject: Subject
    value: float | str | bool | None
    missing: str | None = None
    probe: str | None = None
    key: str | None = None
    detail: str | None = None

    def observation(self) -> Observation:
        """The reading as the checks read a metric's."""
        return Observation(self.subject, self.value, self.missing, self.probe, self.key, self.detail)


class LocalCheckReport(Model):
    """What ``check-local --json`` prints: the node judged on the node.

    ``format`` and ``node`` come first, so that even a cut line says whose report it was.
    """

    format: Literal["instinct-console-check-local-2"] = "instinct-console-check-local-2"
    node: str
    pool: str
    gpu_model: str
    level: str
    outcome: str = Field(description="done, cancelled or deadline")
    duration_s: float
    finished_at: float = Field(description="when the check ended, in seconds since the epoch")
    judged_with: str = Field(description="digest of the check pack, pin and expectations the node was judged with")
    status: Status
    reason: str
    families: dict[str, Status] = Field(default_factory=dict)
    findings: list[Finding] = Field(
        default_factory=list, description="every finding not PASS, and the PASS ones whose figures are compared"
    )
    passed: dict[str, int] = Field(default_factory=dict, description="the other PASS findings, counted per check")
    readings: dict[str, list[Reading]] = Field(
        default_factory=dict, description="metric -> the node's readings for checks a console judges (pool medians)"
    )
    stack: dict[str, str] = Field(default_factory=dict)
    probes: list[ProbeDigest] = Field(default_factory=list)
    raw: list[LocalProbeRun] | None = Field(None, description="every probe's output: with --raw, or when not PASS")
    collector: str | None = Field(
        None, description="which path read the GPUs: the amdsmi library (for which probes) or the amd-smi command (why)"
    )


@dataclass
class WorkerJudged:
    """A node as an engine worker process judged it: its report, what the screens show of it, and the
    probe runs for the console's one store writer to keep."""

    report: LocalCheckReport | None  # None when the node could not be checked: ``unreachable`` says why
    unreachable: str | None = None
    # The node's GPU records, XGMI links and NIC ports, each packed by the worker (``pack_screen``): the
    # engine keeps them so (``PackedFacts``), and the worker's core packs them, not the engine's.
    gpus: bytes = b""
    xgmi: bytes = b""
    nics: bytes = b""
    # ``amd-smi list`` parsed, sent only for a node short of GPUs: the console tells which one vanished.
    listed: ProbeOutcome | None = None
    runs: list[ProbeRunRecord] = field(default_factory=list)


class JudgedByWorkers(Protocol):
    """Engine worker processes that check and judge nodes (``--workers``; ``console.sweep.checker_workers``)."""

    def start(self, first: list[Node]) -> None:
        """Start the workers in the background; the nodes of ``first`` whose worker is not running yet are
        checked in the engine's process instead, from now on."""

    async def ready(self, node: Node) -> None:
        """Start the worker that checks ``node`` if it is not running (TransportError when it cannot)."""

    async def judge(  # noqa: PLR0917
        self,
        node: Node,
        probes: list[ProbeSpec],
        refresh: bool,
        pin: StackPin,
        relay: Callable[[Event], None],
        deadline: float | None,
        pool: Pool | None = None,
    ) -> WorkerJudged:
        """Check and judge ``node`` in its worker by ``deadline`` (``time.monotonic``; None: the probes'
        own timeouts); its probe events go to ``relay`` as they come. ``pin`` and ``pool`` are the console's
        now (a pin stored, a framework image rolled back since the worker started).

        Raises TransportError when the node could not be reached, or its worker died or would not start.
        """

    def cutting(self, reason: str | None) -> None:
        """From now on, a node whose ``judge`` is cancelled is cut short by the sweep's ``reason``: its
        worker judges it on what came back and sends that (``cut_reports``). None: plain cancels again."""

    async def cut_reports(self, wait_s: float) -> dict[str, WorkerJudged]:
        """What the workers judged of the nodes cut short since ``cutting``, waiting at most ``wait_s`` for
        them; a node not back by then is cancelled in its worker. Ends the cutting."""

    async def close(self) -> None:
        """Stop every worker (each cancels its nodes and waits for their kills on the nodes)."""


def judged_with(pack: CheckPack | None, pin: StackPin, node: Node) -> str:
    """What the node's verdict depends on besides its outputs, as a digest both ends compute alike."""
    expect = [node.gpu_model, node.gpu_count, node.nic_count, node.nic_rate_gbps]
    text = (pack.model_dump_json() if pack is not None else "") + pin.model_dump_json() + json.dumps(expect)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def console_checks(pack: CheckPack) -> list[str]:
    """Metrics of the checks a console judges from a node's readings: pool medians, changes over time."""
    return [
        c.metric for c in pack.checks if c.enabled and (c.relative_to == "pool-median" or c.metric in CHANGE_METRICS)
    ]


def build_report(  # noqa: PLR0917
    node: Node,
    level: str,
    outcome: str,
    duration_s: float,
    verdict: NodeVerdict,
    facts: NodeFacts,
    pack: CheckPack | None,
    sections: Iterable[Section],
    *,
    raw: bool,
) -> LocalCheckReport:
    """The compact report of a node judged here (raw outputs with ``raw``, or when it is not PASS)."""
    changes = {c.id for c in pack.checks if c.metric in CHANGE_METRICS} if pack is not None else set()
    # The engine counted the PASS findings not kept whole already (``console.model.kept``). A check of
    # change needs the history: the console judges it (no history here).
    kept = [f for f in verdict.findings if f.check_id not in changes]
    passed = {check: n for check, n in verdict.passed.items() if check not in changes}
    readings: dict[str, list[Reading]] = {}
    if pack is not None:
        variables = pack_variables(pack, facts)
        for check in pack.checks:
            fleet = check.enabled and check.relative_to == "pool-median"
            if fleet and (not check.requires or any(p in facts.outcomes for p in check.requires)):
                readings[check.metric] = [_reading(o) for o in observe(check.metric, facts, variables)]
    parts = list(sections)
    return LocalCheckReport(
        node=node.name,
        pool=node.pool,
        gpu_model=node.gpu_model,
        level=level,
        outcome=outcome,
        duration_s=duration_s,
        finished_at=time.time(),
        judged_with=judged_with(pack, facts.pin, node),
        status=verdict.status,
        reason=verdict.reason,
        families=verdict.families,
        findings=kept,
        passed=passed,
        readings=readings,
        stack=facts.stack,
        probes=[
            ProbeDigest(
                probe=s.probe,
                exit_status=s.exit_status,
                size=len(s.output),
                sha256=hashlib.sha256(s.output).hexdigest(),
            )
            for s in parts
        ],
        raw=[
            LocalProbeRun(probe=s.probe, exit_status=s.exit_status, output=s.output.decode("utf-8", "replace"))
            for s in parts
        ]
        if raw or verdict.status is not Status.PASS
        else None,
    )


def _reading(o: Observation) -> Reading:
    value = o.value if isinstance(o.value, float | str | bool) or o.value is None else float(o.value)
    return Reading(subject=o.subject, value=value, missing=o.missing, probe=o.probe, key=o.key, detail=o.detail)


def read_report(text: str) -> LocalCheckReport | tuple[str | None, str]:
    """The report one task printed, or (its node when it can still be read, why it cannot be used)."""
    try:
        return LocalCheckReport.model_validate_json(text)
    except ValidationError as exc:
        node = _NODE_FIELD.search(text[:4096])
        name = node.group(1) if node else None
        said = _FORMAT_FIELD.search(text[:256])
        if said is not None and said.group(1) != REPORT_FORMAT:
            return name, f"a check-local report of format {said.group(1)!r}, not {REPORT_FORMAT!r}: update the console"
        if any(e["type"] == "json_invalid" for e in exc.errors()):
            return name, f"its check-local report is cut or garbled ({len(text)} characters, not whole JSON)"
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return name, f"its check-local report does not read as one: {where}: {first['msg']}"


def admit(  # noqa: PLR0917
    report: LocalCheckReport,
    node: Node,
    probes: Iterable[str],
    expected_with: str,
    pack: CheckPack,
    pin: StackPin,
    *,
    whole_level: bool = True,
) -> str | None:
    """Why this console cannot take ``report`` as ``node``'s verdict (None: it can).

    A PASS must cover what a PASS here would: every probe asked for answered and every check that
    applies judged, with the same packs and pins; a verdict must follow from its findings. An engine
    worker's report may cover some families of a level only (a rerun): ``whole_level`` False.
    """
    if report.node != node.name or report.pool != node.pool or report.gpu_model != node.gpu_model:
        return f"the report is of {report.node} ({report.pool}, {report.gpu_model}), not of this node"
    if any(f.subject.node != node.name for f in report.findings):
        return "findings about another node"
    if report.judged_with != expected_with:
        return "judged with other check packs, pins or expectations than this console's"
    wanted, ran = set(probes), {p.probe for p in report.probes}
    if whole_level:
        try:
            claimed = {p.id for p in probes_for(ProbeSet(report.level))}
        except ValueError:
            return f"judged at an unknown level {report.level!r}"
        if claimed != wanted:
            return f"judged at level {report.level}, not at the level asked for"
    if ran != wanted:
        lacking, extra = sorted(wanted - ran), sorted(ran - wanted)
        return (
            "the report's probes are not those asked for"
            + (f": lacks {', '.join(lacking)}" if lacking else "")
            + (f"; has {', '.join(extra)}" if extra else "")
        )
    statuses = [f.status for f in report.findings] + ([Status.PASS] if report.passed else [])
    if worst(statuses) is not report.status:
        return f"its verdict {report.status.value} does not follow from its findings ({worst(statuses).value})"
    known = {c.id for c in pack.checks}
    if unknown := sorted(set(report.passed) - known):
        return f"PASS counted for checks this console does not have: {', '.join(unknown[:5])}"
    if report.status is Status.PASS:
        judged = {f.check_id for f in report.findings} | set(report.passed)
        lacking = sorted(c for c in applicable_checks(pack, wanted, pin) if c not in judged)
        if lacking:
            return f"PASS without judging {', '.join(lacking[:5])}" + (" ..." if len(lacking) > 5 else "")
        fleet = [m for m in console_checks(pack) if m not in CHANGE_METRICS and m not in report.readings]
        needed = {c.metric for c in pack.checks if c.metric in fleet and (not c.requires or set(c.requires) & wanted)}
        if needed:
            return f"no readings for the pool's comparisons: {', '.join(sorted(needed))}"
    return None


def applicable_checks(pack: CheckPack, probes: set[str], pin: StackPin) -> list[str]:
    """Ids of the checks a node judged with ``probes`` against ``pin`` reports on (pool medians and changes
    are the console's; a pin check of a field not pinned says nothing)."""
    pinned = pin.pinned_fields()
    return [
        c.id
        for c in pack.checks
        if c.enabled
        and c.relative_to != "pool-median"
        and c.metric not in CHANGE_METRICS
        and (not c.requires or set(c.requires) & probes)
        and (c.compare != "pin" or _pinned(c.pin_field or "", pinned))
    ]


def _pinned(field: str, pinned: dict[str, str]) -> bool:
    if field.endswith(".*"):
        return any(key.startswith(field[:-1]) for key in pinned)
    return field in pinned


__all__ = [
    "REPORT_FORMAT",
    "JudgedByWorkers",
    "LocalCheckReport",
    "LocalProbeRun",
    "ProbeDigest",
    "Reading",
    "WorkerJudged",
    "admit",
    "applicable_checks",
    "build_report",
    "console_checks",
    "judged_with",
    "read_report",
]
