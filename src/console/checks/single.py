"""One tool output judged on its own (``instinct-console parse --model``): the facts of a node that ran only
the probe which prints that output, evaluated against a GPU model's pack as a sweep evaluates a node.

A check applies when one of its ``requires`` is that probe and it needs nothing one output cannot give:
no pool median, no pool pin, no figure of the cluster file (``$gpu_count``). The others are counted as
not applicable, each with why, never reported UNKNOWN. So is a check of what the output printed nothing of at
all, not even ``N/A`` (``amd-smi metric --ecc`` holds no throttle section, ``monitor -p`` no temperature
column): the command was not asked for it. What it printed as ``N/A``, or could not be read, is judged as in a
sweep.

A fragment (grep-filtered amd-smi text, the tail of an RVS JSON log: ``summary["fragment"]``) is judged
for what it shows only: a value it does not show is not judged (filtered out is not "not reported"), nor
is the tool's own success, which the filter may have removed the lines of, unless it shows a failure.
ECC counts of single blocks it shows add up to a lower bound of the totals: enough to fail or warn, never
to pass. A whole output with the blocks and no totals (``metric --ecc-blocks``) lists every block amd-smi
counts: their sums are the totals.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel

from console.checks.evaluate import evaluate_check, observe
from console.checks.facts import NodeFacts, ProbeOutcome, build_facts
from console.checks.metrics import Absent
from console.checks.spec import CheckPack, CheckSpec
from console.inventory.model import Node, StackPin
from console.model.findings import Finding, NodeVerdict, Status, roll_up
from console.model.gpu import GpuIdentity, GpuRecord, LinkStatus
from console.model.rccl import RcclRank
from console.model.rvs import RvsGpu
from console.probes import rvs
from console.probes.base import ParsedOutput
from console.probes.ids import ProbeId, Tool

# The node the facts are about: findings name it, so it says where they come from.
NODE = "pasted"

# Which catalogued probe reads an output of this tool and kind: the sweep asks each tool for exactly these
# kinds (console.sweep.catalog; tests/probes/test_parse_verdicts.py holds this table to it), and
# ``amd-smi monitor`` and the default view (``amd-smi`` alone) print a subset of ``metric``'s readings
# (power, temperatures, use, ECC and PCIe counters, violations), so they are judged like metric output.
# Other kinds (rocm-smi, rocminfo, all_gather_perf) are read by no probe, and so by no check.
PROBES_OF_KIND: dict[tuple[Tool, str], tuple[ProbeId, ...]] = {
    (Tool.AMD_SMI, "version"): (ProbeId.AMDSMI_VERSION,),
    (Tool.AMD_SMI, "list"): (ProbeId.AMDSMI_LIST,),
    (Tool.AMD_SMI, "static"): (ProbeId.AMDSMI_STATIC,),
    (Tool.AMD_SMI, "metric"): (ProbeId.AMDSMI_METRIC,),
    (Tool.AMD_SMI, "monitor"): (ProbeId.AMDSMI_METRIC,),
    (Tool.AMD_SMI, "default"): (ProbeId.AMDSMI_METRIC,),
    (Tool.AMD_SMI, "firmware"): (ProbeId.AMDSMI_FIRMWARE,),
    (Tool.AMD_SMI, "bad-pages"): (ProbeId.AMDSMI_BAD_PAGES,),
    (Tool.AMD_SMI, "ras"): (ProbeId.AMDSMI_CPER,),
    (Tool.AMD_SMI, "xgmi"): (ProbeId.AMDSMI_XGMI, ProbeId.AMDSMI_XGMI_STATUS),
    (Tool.TRANSFERBENCH, "a2a"): (ProbeId.TB_A2A,),
    (Tool.TRANSFERBENCH, "p2p"): (ProbeId.TB_P2P,),
    (Tool.TRANSFERBENCH, "healthcheck"): (ProbeId.TB_HEALTHCHECK,),
    (Tool.RCCL_TESTS, "all_reduce_perf"): (ProbeId.RCCL_ALL_REDUCE,),
    # The one RVS probe reads the log of a whole level-3 run: a module's log, the summary or the JSON log is
    # part of what it reads. ``rvs -g`` lists GPUs and runs nothing.
    **{(Tool.RVS, kind): (ProbeId.RVS_LEVEL3,) for kind in sorted(rvs.KINDS - {"gpu-list"})},
}

# Metrics that read whether the tool reported a failure (``ParsedOutput.ok``): a fragment may have lost the
# lines that would say so, so there only a failure it shows is judged.
_TOOL_SAID_OK = frozenset({"node.amdsmi_ok", "rccl.ok", "rvs.ok", "tb.a2a_ok", "tb.p2p_ok", "tb.healthcheck_ok"})
# Metrics of the ECC totals, and the per-block count that adds up to each.
_ECC_TOTALS = {
    "gpu.ecc_correctable": "correctable",
    "gpu.ecc_uncorrectable": "uncorrectable",
    "gpu.ecc_deferred": "deferred",
}
_LOWER_BOUND = "a lower bound: the sum of the ECC blocks shown"

_MODEL_NAME = re.compile(r"\bMI\d{3}[A-Z]?\b")


@dataclass(frozen=True)
class OutputVerdict:
    """What a pack says of one output: its findings, the checks that do not apply to it, and the roll-up."""

    model: str
    probes: tuple[str, ...]
    findings: list[Finding]
    not_applicable: dict[str, str]  # check id -> why it does not apply to this one output
    verdict: NodeVerdict
    fragment: bool

    def counts(self) -> dict[str, int]:
        """Findings per status, worst first (statuses with none left out)."""
        order = sorted(Status, key=lambda s: -s.severity)
        return {s.value: n for s in order if (n := sum(f.status is s for f in self.findings))}


def is_fragment(parsed: ParsedOutput) -> bool:
    """True when the parser read ``parsed`` as part of an output (grep-filtered lines, a log's tail)."""
    return parsed.summary.get("fragment") is True


def probes_reading(parsed: ParsedOutput) -> tuple[str, ...]:
    """The probe ids a sweep would have filed this output under (empty when no probe reads its kind).

    ``amd-smi xgmi`` prints the link metric table, ``xgmi -l`` the link status: both are the kind
    ``xgmi``, filed under the probe(s) whose table the output holds.
    """
    probes = PROBES_OF_KIND.get((parsed.tool, parsed.kind), ())
    if probes != (ProbeId.AMDSMI_XGMI, ProbeId.AMDSMI_XGMI_STATUS):
        return tuple(probes)
    links = getattr(parsed.data, "xgmi_links", None) or []
    metric = any(link.bit_rate_gbps is not None or link.read_bytes is not None for link in links)
    status = bool(getattr(parsed.data, "xgmi_ports", None)) or any(
        link.status not in (LinkStatus.UNKNOWN, LinkStatus.SELF) for link in links
    )
    chosen = [ProbeId.AMDSMI_XGMI] if metric or not status else []
    return (*chosen, ProbeId.AMDSMI_XGMI_STATUS) if status else tuple(chosen)


def named_models(parsed: ParsedOutput) -> list[str]:
    """GPU models the output names (``MI300X`` from amd-smi's market name, RVS's GPU list, an RCCL rank line,
    rocminfo's marketing name), sorted; a VF or OAM suffix is not part of the model."""
    names: set[str] = set()
    for found in _walk(parsed.data):
        if isinstance(found, GpuIdentity):
            texts = [found.market_name, found.product_name]
        elif isinstance(found, RvsGpu):
            texts = [found.name]
        elif isinstance(found, RcclRank):
            texts = [found.gpu_name]
        else:
            continue
        names.update(model for text in texts if text for model in _MODEL_NAME.findall(text.upper()))
    return sorted(names)


def _walk(value: Any) -> Iterator[Any]:
    if isinstance(value, BaseModel):
        yield value
        for item in value.__dict__.values():
            yield from _walk(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _walk(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _walk(item)


def judge_output(pack: CheckPack, parsed: ParsedOutput, probes: Sequence[str]) -> OutputVerdict:
    """``parsed`` judged by ``pack`` as the only output of a node, filed under ``probes``."""
    model = pack.pack.model
    node = Node(name=NODE, pool=NODE, gpu_model=model, gpu_count=0, address=NODE)
    facts = build_facts(node, StackPin(), {probe: ProbeOutcome(probe, parsed) for probe in probes})
    fragment = is_fragment(parsed)
    bounded = _with_block_sums(facts) if fragment else None
    if not fragment:
        # A whole ``metric --ecc-blocks`` lists every block amd-smi counts, and its totals are their sums.
        facts = _with_block_sums(facts)[0]
    # The pack's own variables only: what the cluster file says of a node ($gpu_count) is not known here.
    variables: dict[str, Any] = pack.pack.values()
    sources = {name: sv for name in pack.pack.vars if (sv := pack.pack.source_of(name)) is not None}
    findings: list[Finding] = []
    not_applicable: dict[str, str] = {}
    for check in pack.checks:
        if not check.enabled:
            continue
        why = _why_not_applicable(check, probes, variables)
        if why is None:
            if fragment:
                judged = _shown(check, facts, bounded, variables, sources)
                why = None if judged else "not shown in the fragment"
            else:
                judged = evaluate_check(check, facts, variables, None, sources)
                why = _not_in_output(check, facts, variables)
            if why is None:
                findings.extend(judged)
        if why is not None:
            not_applicable[check.id] = why
    return OutputVerdict(model, tuple(probes), findings, not_applicable, roll_up(NODE, findings), fragment)


def _not_in_output(check: CheckSpec, facts: NodeFacts, variables: dict[str, Any]) -> str | None:
    """Why ``check`` does not apply to a whole output that printed nothing of what it reads (``amd-smi metric
    --ecc`` holds no throttle section, ``monitor -p`` no temperature column): not even an ``N/A``. None when
    the output printed a value, an ``N/A`` or something unreadable for it, which is judged as in a sweep."""
    observations = observe(check.metric, facts, variables)
    if not observations:
        return "not in this output"
    if all(o.value is None and isinstance(o.missing, Absent) for o in observations):
        return f"not in this output ({observations[0].missing})"
    return None


def _why_not_applicable(check: CheckSpec, probes: Sequence[str], variables: dict[str, Any]) -> str | None:
    if not set(check.requires) & set(probes):
        return f"reads {', '.join(check.requires) or 'no probe'}"
    if check.relative_to == "pool-median":
        return "compares with the pool's median"
    if check.compare == "pin":
        return "compares with the pool's pinned versions"
    for condition in check.conditions():
        if condition is not None and condition.operand.startswith("$") and condition.operand[1:] not in variables:
            return f"needs {condition.operand} from the cluster file"
    return None


def _shown(
    check: CheckSpec,
    facts: NodeFacts,
    bounded: tuple[NodeFacts, set[tuple[str, int | None, str | None]]] | None,
    variables: dict[str, Any],
    sources: dict[str, Any],
) -> list[Finding]:
    """The findings of ``check`` on a fragment: only values it shows; the tool's success only when it failed."""
    attribute = _ECC_TOTALS.get(check.metric)
    if attribute is not None and bounded is not None:
        bound_facts, bound = bounded
        judged = []
        for finding in evaluate_check(check, bound_facts, variables, None, sources):
            if (attribute, finding.subject.gpu, finding.subject.gpu_bdf) not in bound:
                judged.append(finding)
            elif finding.status in (Status.FAIL, Status.WARN) and _rises(check):
                judged.append(finding.model_copy(update={"message": f"{finding.message}; {_LOWER_BOUND}"}))
            # else: a lower bound under the limit says nothing of the total
    else:
        judged = evaluate_check(check, facts, variables, None, sources)
    shown = [f for f in judged if f.evidence.observed is not None]
    if check.metric in _TOOL_SAID_OK:
        shown = [f for f in shown if f.status is not Status.PASS]
    return shown


def _rises(check: CheckSpec) -> bool:
    """True when every limit of ``check`` is crossed upwards (``> 0``, ``>= 100``): a lower bound can cross it."""
    return all(c is None or c.op in (">", ">=") for c in check.conditions())


def _with_block_sums(facts: NodeFacts) -> tuple[NodeFacts, set[tuple[str, int | None, str | None]]]:
    """The facts with each ECC total a fragment does not show set to the sum of the blocks it shows, and
    which (total, GPU index, PCI address) those are."""
    bound: set[tuple[str, int | None, str | None]] = set()
    gpus: list[GpuRecord] = []
    for gpu in facts.gpus:
        ecc = gpu.ecc
        sums: dict[str, int] = {}
        for attribute in _ECC_TOTALS.values():
            counts = [c for block in (ecc.blocks if ecc else []) if (c := getattr(block, attribute)) is not None]
            if ecc is not None and getattr(ecc, attribute) is None and counts:
                sums[attribute] = sum(counts)
                bound.add((attribute, gpu.identity.index, gpu.identity.bdf))
        gpus.append(gpu.model_copy(update={"ecc": ecc.model_copy(update=sums)}) if ecc is not None and sums else gpu)
    return replace(facts, gpus=gpus), bound
