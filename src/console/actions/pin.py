"""ROCm stack pins per pool and drift: a node's fingerprint, the effective pin, and verdicts per field.

A pin is a set of fields (``rocm``, ``kernel``, ``amdgpu_driver``, ``firmware.<BLOCK>``...) as
``StackPin.pinned_fields`` names them. The operator sets one per pool from a known-good node; the
store keeps it, and it wins field by field over the inventory's ``[pools.pin]``.

Drift verdicts reuse the check packs: every enabled check of family ``stack`` or ``firmware`` is
evaluated against the effective pin, one pinned field at a time, so each finding belongs to exactly
one field. A pinned field no pack check compares (``rccl``, ``rvs``, ``transferbench``) gets a pin
check built on the same metric; one no sweep observes (``firmware_bundle``; ``image_digest`` unless the
pool runs its framework probe in an image named by digest, ``[pools.framework]``) is reported as
UNKNOWN rather than silently passing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from pydantic import Field

from console.checks import METRICS, CheckPack, CheckSpec, NodeFacts
from console.checks.evaluate import evaluate_check, pack_variables
from console.inventory.model import StackPin
from console.model.base import Model
from console.model.family import DRIFT_FAMILIES, Family
from console.model.findings import Finding, SourceKind, Status, worst
from console.store.pins import pin_from_fields


def fingerprint(stack: Mapping[str, str], image_digest: str | None = None) -> StackPin:
    """A node's stack (``NodeFacts.stack``) as the pin it would set: OS, kernel, ROCm, driver, firmware..."""
    fields = dict(stack)
    if image_digest:
        fields["image_digest"] = image_digest
    return pin_from_fields(fields)


def pin_changes(old: StackPin, new: StackPin) -> list[str]:
    """``rocm: 6.4.0 -> 6.4.1`` lines for every field that a new pin sets, drops or changes."""
    before, after = old.pinned_fields(), new.pinned_fields()
    lines = []
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key):
            lines.append(f"{key}: {before.get(key, '(unpinned)')} -> {after.get(key, '(unpinned)')}")
    return lines


class DriftRow(Model):
    """One node and pinned field: the worst verdict over its subjects (GPUs for firmware) and what was seen."""

    node: str
    field: str
    status: Status
    pinned: str | None = None
    observed: list[str] = Field(default_factory=list)
    message: str = ""
    subjects: list[str] = Field(default_factory=list)


def _pin_check(field: str) -> CheckSpec | None:
    """A pin check for a stack field the packs do not compare, on the same metric; None if nothing measures it."""
    metric = f"stack.{field}"
    if metric not in METRICS:
        return None
    return CheckSpec(
        id=f"stack.{field}",
        title=field,
        family=Family.STACK,
        metric=metric,
        compare="pin",
        pin_field=field,
        source="pool pin",
        source_kind=SourceKind.PIN,
    )


def _fields_of(check: CheckSpec, pinned: Mapping[str, str]) -> list[str]:
    field = check.pin_field or ""
    if field.endswith(".*"):
        return sorted(k for k in pinned if k.startswith(field[:-1]))
    return [field] if field in pinned else []


def _row(node: str, field: str, pinned: str | None, findings: list[Finding]) -> DriftRow:
    status = worst([f.status for f in findings])
    bad = [f for f in findings if f.status is status] or findings
    observed = sorted({str(f.evidence.observed) for f in findings if f.evidence.observed is not None})
    subjects = sorted({f.subject.label() for f in bad if f.subject.label() != node})
    return DriftRow(
        node=node,
        field=field,
        status=status,
        pinned=pinned,
        observed=observed,
        message=bad[0].message if bad else "",
        subjects=subjects,
    )


def _unobserved(node: str, field: str, pinned: Mapping[str, str]) -> DriftRow:
    message = f"{field}: not observed by this sweep"
    return DriftRow(node=node, field=field, status=Status.UNKNOWN, pinned=pinned[field], message=message)


def drift_rows(facts: NodeFacts, pin: StackPin, pack: CheckPack | None) -> list[DriftRow]:
    """Drift verdicts of one node against ``pin``: one row per pinned field (plus node-internal firmware checks)."""
    # One copy for every check below: an engine worker's node keeps its GPU records packed, read once here.
    facts = replace(facts)
    node = facts.node.name
    pinned = pin.pinned_fields()
    checks = [c for c in (pack.checks if pack else []) if c.enabled and c.family in DRIFT_FAMILIES]
    variables = pack_variables(pack, facts) if pack else {}
    rows: list[DriftRow] = []
    covered: set[str] = set()
    for check in checks:
        if check.compare != "pin":
            findings = evaluate_check(check, replace(facts, pin=pin), variables)
            if findings:
                rows.append(_row(node, check.id, None, findings))
            continue
        for field in _fields_of(check, pinned):
            # A pin holding only this field: the check compares nothing else, so its findings are this field's.
            findings = evaluate_check(check, replace(facts, pin=pin_from_fields({field: pinned[field]})), variables)
            covered.add(field)
            rows.append(_row(node, field, pinned[field], findings) if findings else _unobserved(node, field, pinned))
    for field in sorted(set(pinned) - covered):
        extra = _pin_check(field)
        findings = evaluate_check(extra, replace(facts, pin=pin), variables) if extra else []
        rows.append(_row(node, field, pinned[field], findings) if findings else _unobserved(node, field, pinned))
    return rows


def drift_report(
    facts: Iterable[NodeFacts], pins: Mapping[str, StackPin], packs: Mapping[str, CheckPack]
) -> list[DriftRow]:
    """Drift rows of every node, each against its pool's effective pin and its GPU model's pack."""
    rows: list[DriftRow] = []
    for node_facts in facts:
        node = node_facts.node
        rows.extend(drift_rows(node_facts, pins.get(node.pool, StackPin()), packs.get(node.gpu_model)))
    return rows
