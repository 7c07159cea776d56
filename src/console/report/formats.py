"""Sweep reports for machines: JSON (with a published schema), JUnit XML, Prometheus textfile, hostlists."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal
from xml.etree import ElementTree as ET

from pydantic import Field

from console import __version__
from console.files import write_file
from console.inert import printable, redact
from console.inventory.hostlist import fold
from console.inventory.model import Inventory
from console.model.base import Model
from console.model.findings import Finding, NodeVerdict, Remedy, Status
from console.model.multinode import MultinodeResult
from console.timestamps import iso_utc

REPORT_SCHEMA_VERSION = "1"


class NodeReport(Model):
    """One node in a report."""

    node: str
    pool: str
    gpu_model: str
    status: Status
    reason: str
    action: Remedy | None = Field(None, description="the gravest action the node's worst findings call for")
    families: dict[str, Status] = Field(default_factory=dict)
    stack: dict[str, str] = Field(default_factory=dict)
    findings: list[Finding] = Field(default_factory=list)


class SweepReport(Model):
    """The ``--json`` report of a sweep. Its JSON schema is published as schemas/sweep-report.schema.json."""

    schema_version: Literal["1"] = "1"
    tool: Literal["instinct-console"] = "instinct-console"
    tool_version: str = __version__
    sweep_id: int
    cluster: str = Field("", description="the cluster's name ([cluster] name in the cluster file)")
    inventory: str
    level: str
    started_at: float = Field(description="Unix time")
    started: str = Field("", description="started_at as ISO 8601 with its zone (UTC), e.g. 2026-12-07T23:40:05Z")
    duration_s: float
    outcome: Literal["done", "cancelled", "deadline"]
    exit_code: int
    counts: dict[Status, int]
    failed_nodes: str = Field(description="hostlist of FAIL nodes, for sbatch --exclude")
    unknown_nodes: str = Field(description="hostlist of nodes that could not be checked")
    nodes: list[NodeReport]
    multinode: MultinodeResult | None = Field(None, description="multi-node RCCL runs (probe set multinode)")
    store_problem: str | None = Field(
        None,
        description="the history database failed during the sweep: the fault and what was not stored (exit 5)",
    )


def build_report(
    inventory: Inventory,
    verdicts: dict[str, NodeVerdict],
    stacks: dict[str, dict[str, str]],
    *,
    sweep_id: int,
    level: str,
    started_at: float,
    duration_s: float,
    outcome: Literal["done", "cancelled", "deadline"],
    exit_code: int,
    multinode: MultinodeResult | None = None,
    store_problem: str | None = None,
) -> SweepReport:
    """Assemble the report from the engine's verdicts, in inventory order."""
    nodes = []
    counts = {status: 0 for status in Status}
    for node in inventory.nodes:
        verdict = verdicts.get(node.name)
        if verdict is None:
            continue
        counts[verdict.status] += 1
        nodes.append(
            NodeReport(
                node=node.name,
                pool=node.pool,
                gpu_model=node.gpu_model,
                status=verdict.status,
                reason=redact(verdict.reason),
                action=verdict.action,
                families=verdict.families,
                stack=stacks.get(node.name, {}),
                findings=[
                    f.model_copy(update={"message": redact(f.message)})
                    for f in verdict.findings
                    if f.status is not Status.PASS
                ],
            )
        )
    return SweepReport(
        sweep_id=sweep_id,
        cluster=inventory.name,
        inventory=inventory.source,
        level=level,
        started_at=started_at,
        started=iso_utc(started_at),
        duration_s=round(duration_s, 3),
        outcome=outcome,
        exit_code=exit_code,
        counts=counts,
        failed_nodes=fold(n.node for n in nodes if n.status is Status.FAIL),
        unknown_nodes=fold(n.node for n in nodes if n.status is Status.UNKNOWN),
        nodes=nodes,
        multinode=multinode,
        store_problem=store_problem,
    )


def report_json_schema() -> dict[str, object]:
    """The JSON schema of ``SweepReport`` (what schemas/sweep-report.schema.json holds)."""
    schema = SweepReport.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://instinct-console.invalid/schemas/sweep-report-v1.json"
    return schema


def write_json(report: SweepReport, path: str, *, force: bool = False) -> None:
    """Write the report to ``path`` (``-`` for stdout) as ``console.files`` writes every output."""
    text = report.model_dump_json(indent=2) + "\n"
    if path == "-":
        import sys

        sys.stdout.write(text)
    else:
        write_file(path, text, force=force)


def junit_xml(report: SweepReport, all_verdicts: dict[str, NodeVerdict]) -> str:
    """JUnit XML: one testsuite per node, one testcase per finding (FAIL=failure, UNKNOWN=error) and one per
    check whose PASS findings are counted."""
    root = ET.Element("testsuites", name="instinct-console", time=f"{report.duration_s:.3f}")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for node in report.nodes:
        verdict = all_verdicts.get(node.node)
        findings = verdict.findings if verdict else []
        suite = ET.SubElement(root, "testsuite", name=node.node, hostname=node.node)
        props = ET.SubElement(suite, "properties")
        for prop, text in (("pool", node.pool), ("gpu_model", node.gpu_model), ("verdict", node.status.value)):
            ET.SubElement(props, "property", name=prop, value=text)
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for finding in findings:
            counts["tests"] += 1
            case = ET.SubElement(
                suite, "testcase", classname=f"{node.node}.{finding.family}", name=_case_name(finding), time="0"
            )
            evidence = finding.evidence.model_dump_json(exclude_none=True)
            if finding.status is Status.FAIL:
                counts["failures"] += 1
                ET.SubElement(case, "failure", message=finding.message, type="FAIL").text = evidence
            elif finding.status is Status.UNKNOWN:
                counts["errors"] += 1
                ET.SubElement(case, "error", message=finding.message, type="UNKNOWN").text = evidence
            elif finding.status is Status.SKIP:
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=finding.message)
            elif finding.status is Status.WARN:
                ET.SubElement(case, "system-out").text = f"WARN: {finding.message}"
        # PASS findings kept as counts (console.model.kept): one passing case per check, saying how many.
        for check_id, passed in sorted((verdict.passed if verdict else {}).items()):
            counts["tests"] += 1
            ET.SubElement(suite, "testcase", classname=node.node, name=f"{check_id} ({passed} passed)", time="0")
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for key, value in totals.items():
        root.set(key, str(value))
    _inert(root)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _inert(root: ET.Element) -> None:
    """Names and messages come from inventories and tools: no secrets, and no characters XML 1.0 cannot carry."""
    for element in root.iter():
        element.attrib = {key: printable(redact(value)) for key, value in element.attrib.items()}
        if element.text:
            element.text = printable(redact(element.text), keep_newlines=True)


def _case_name(finding: Finding) -> str:
    label = finding.subject.label()
    suffix = label[len(finding.subject.node) :].strip()
    return f"{finding.check_id} {suffix}".strip()


_STATUS_VALUE = {Status.PASS: 0, Status.SKIP: 0, Status.WARN: 1, Status.FAIL: 2, Status.UNKNOWN: 3}


def _label(value: str) -> str:
    return printable(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def prometheus_textfile(report: SweepReport) -> str:
    """node_exporter textfile: per-node verdict gauge (0 pass, 1 warn, 2 fail, 3 unknown) and sweep facts.

    Every series carries the cluster's name: one Prometheus scrapes the textfiles of several clusters'
    admin hosts, and pool names repeat between clusters. Freshness is ``time() -
    instinct_console_sweep_timestamp_seconds`` in PromQL, so an alert can fire on a sweep that stopped.
    """
    cluster = f'cluster="{_label(report.cluster)}"'
    lines = [
        "# HELP instinct_console_node_verdict Node verdict of the last sweep (0 pass, 1 warn, 2 fail, 3 unknown).",
        "# TYPE instinct_console_node_verdict gauge",
    ]
    for node in report.nodes:
        lines.append(
            f'instinct_console_node_verdict{{{cluster},node="{_label(node.node)}",pool="{_label(node.pool)}",'
            f'model="{_label(node.gpu_model)}"}} {_STATUS_VALUE[node.status]}'
        )
    lines += [
        "# HELP instinct_console_nodes Nodes per verdict in the last sweep.",
        "# TYPE instinct_console_nodes gauge",
    ]
    lines += [f'instinct_console_nodes{{{cluster},status="{s.value}"}} {n}' for s, n in report.counts.items()]
    lines += [
        "# HELP instinct_console_sweep_duration_seconds Wall time of the last sweep.",
        "# TYPE instinct_console_sweep_duration_seconds gauge",
        f"instinct_console_sweep_duration_seconds{{{cluster}}} {report.duration_s}",
        "# HELP instinct_console_sweep_timestamp_seconds When the last sweep started (Unix time).",
        "# TYPE instinct_console_sweep_timestamp_seconds gauge",
        f"instinct_console_sweep_timestamp_seconds{{{cluster}}} {report.started_at:.0f}",
        "# HELP instinct_console_sweep_complete 1 when the last sweep ran to its end, 0 when cancelled or cut short.",
        "# TYPE instinct_console_sweep_complete gauge",
        f'instinct_console_sweep_complete{{{cluster},level="{_label(report.level)}"}} {int(report.outcome == "done")}',
    ]
    return "\n".join(lines) + "\n"


def dump_schema(path: Path) -> None:
    """Write the report schema to ``path``."""
    write_file(path, json.dumps(report_json_schema(), indent=2, sort_keys=True) + "\n")
