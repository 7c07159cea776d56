"""The JSON schema of every ``--json`` output, written from the models so the files cannot drift.

``python -m console.commands.generate`` writes one ``schemas/NAME.schema.json`` per output, which the wheel
carries as ``console/_data/schemas``.
``tests/integration/test_json_schemas.py`` fails when a file differs from what this writes, and runs each
command to validate what it prints against its file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter

from console.actions.pin import DriftRow
from console.commands import outputs
from console.report.formats import SweepReport, report_json_schema
from console.sweep.node_report import LocalCheckReport

BASE_ID = "https://instinct-console.invalid/schemas/"


@dataclass(frozen=True)
class Published:
    """One output: its file name (without ``.schema.json``), the command that prints it, and its type."""

    name: str
    command: str
    shape: Any
    version: int = 1


PUBLISHED: tuple[Published, ...] = (
    Published("sweep-report", "sweep --json FILE, demo --json FILE", SweepReport),
    Published("sweep-from-history", "sweep --max-age AGE --json FILE", outputs.FromHistoryReport),
    Published("check-local-report", "check-local --json FILE", LocalCheckReport),
    Published("history", "history --json", list[outputs.HistorySweep]),
    Published("history-node", "history --node NODE --json", list[outputs.HistoryNodeRow]),
    Published("diff", "diff --json", dict[str, outputs.PoolDiff]),
    Published("audit", "audit --json", list[outputs.AuditEntry]),
    Published("cases", "cases --json", list[outputs.CaseRow]),
    Published("cases-policy", "cases --policy --json", dict[str, dict[str, outputs.PolicySetting]]),
    Published("revalidate", "revalidate --json", dict[str, outputs.RevalidatedNode]),
    Published("action", "drain|resume|undrain|cordon|uncordon|... --json", outputs.ActionOutput),
    Published("pins", "pin --show --json", dict[str, dict[str, str]]),
    Published("drift", "drift --json", list[DriftRow]),
    Published("acceptance", "acceptance --json", outputs.AcceptanceOutput),
    Published("workload", "workload --json", outputs.WorkloadOutput),
    Published("parse", "parse --json", outputs.ParseOutput),
    Published("config", "config --json", outputs.ConfigOutput),
)


def json_schema(item: Published) -> dict[str, Any]:
    """The schema of one output, with its draft, id and the command that prints it."""
    if item.shape is SweepReport:  # published before this module, as its own function gives it
        return report_json_schema()
    schema: dict[str, Any] = TypeAdapter(item.shape).json_schema(by_alias=True)
    schema.setdefault("title", item.name)
    schema["description"] = f"What `instinct-console {item.command}` prints. " + schema.get("description", "")
    schema["description"] = schema["description"].strip()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{BASE_ID}{item.name}-v{item.version}.json",
        **schema,
    }


def schema_text(item: Published) -> str:
    """The file's text: stable key order, one trailing newline."""
    return json.dumps(json_schema(item), indent=2, sort_keys=True) + "\n"
