"""A check judges only what was measured and read: on simulated nodes (the renderers' real output), an
RVS or rccl-tests run that passes on fewer GPUs than amd-smi lists, ends after its first action, or prints
a verdict or a #wrong count the parser cannot read, and an amd-smi reading printed as an impossible value,
leave their check UNKNOWN, with why, never PASS (nor SKIP)."""

from __future__ import annotations

import pytest

from console.checks import NodeFacts, ProbeOutcome, build_facts, evaluate_node, load_packs
from console.inventory.model import Node, StackPin
from console.model.findings import Finding, Status
from console.sim.commands import context_for, run_program
from console.sim.faults import Fault, FaultKind
from console.sim.models import example_cluster
from console.sim.specs import GpuModel
from console.sweep.catalog import ProbeSet, probes_for
from console.sweep.engine import probe_problem

_WANTED = ("amdsmi.list", "amdsmi.static", "amdsmi.metric", "rccl.all_reduce", "rvs.level3")


def _facts(*faults: Fault) -> NodeFacts:
    """A simulated MI300X's amd-smi, rccl and RVS outputs, parsed as a sweep parses them."""
    cluster = example_cluster(nodes_per_model={GpuModel("MI300X"): 1}, with_faults=False)
    name = cluster.nodes[0].name
    cluster = cluster.model_copy(update={"faults": [f.model_copy(update={"node": name}) for f in faults]})
    outcomes: dict[str, ProbeOutcome] = {}
    for spec in probes_for(ProbeSet.FULL):
        if spec.id not in _WANTED:
            continue
        reply = run_program(context_for(cluster, name), list(spec.argv))
        text = reply.stdout + reply.stderr
        problem = probe_problem(reply.exit_status, text.encode(), spec)
        parse = getattr(spec.parse, "fresh", spec.parse)
        outcomes[spec.id] = ProbeOutcome(spec.id, None if problem else parse(text), problem, 1)
    node = Node(name=name, pool="p", gpu_model="MI300X", gpu_count=8, address="127.0.0.1")
    return build_facts(node, StackPin(), outcomes)


def _findings(facts: NodeFacts, check_id: str) -> list[Finding]:
    return [f for f in evaluate_node(load_packs()["MI300X"], facts) if f.check_id == check_id]


def test_a_healthy_node_passes_the_rvs_and_rccl_checks() -> None:
    findings = [f for f in evaluate_node(load_packs()["MI300X"], _facts()) if f.family in ("rvs", "rccl")]
    assert {f.check_id for f in findings} >= {"rvs.ok", "rvs.failures", "rccl.complete", "rccl.wrong"}
    assert [f.message for f in findings if f.status is not Status.PASS and f.check_id != "rccl.busbw_fleet"] == []


@pytest.mark.parametrize(
    ("fault", "check_id", "why"),
    [
        (Fault(kind=FaultKind.RCCL_FEWER_RANKS, node="x"), "rccl.complete", "tested 4 of the 8 GPUs"),
        (Fault(kind=FaultKind.RVS_GPU_UNSEEN, node="x", gpu=3), "rvs.ok", "tested 7 of the 8 GPUs"),
        (Fault(kind=FaultKind.RVS_STOPS_EARLY, node="x"), "rvs.ok", "names no GPU it tested"),
        (Fault(kind=FaultKind.RVS_PEQT_WORD, node="x"), "rvs.failures", "peqt verdict 'FAILED' is neither"),
        (Fault(kind=FaultKind.RCCL_UNVALIDATED, node="x"), "rccl.wrong", "#wrong not read in 62 result cell(s)"),
        (Fault(kind=FaultKind.RCCL_HEADER_LINE_LOST, node="x"), "rccl.complete", "units header line(s) missing"),
    ],
)
def test_a_run_that_did_not_judge_every_gpu_is_unknown(fault: Fault, check_id: str, why: str) -> None:
    [finding] = _findings(_facts(fault), check_id)
    assert finding.status is Status.UNKNOWN
    assert why in finding.message


@pytest.mark.parametrize(
    ("field", "check_id", "why"),
    [
        ("ecc", "ecc.uncorrectable", "negative count: -1"),
        ("throttle", "throttle.thermal", "TVIOL: not a percentage: -3"),
    ],
)
def test_an_impossible_amdsmi_reading_is_unknown_on_its_gpu(field: str, check_id: str, why: str) -> None:
    # -1 errors or -3 % throttled is a failed read printed as a value: not 0, and not a counter the GPU lacks.
    fault = Fault(kind=FaultKind.AMDSMI_IMPOSSIBLE_READING, node="x", gpu=3, params={"field": field})
    findings = _findings(_facts(fault), check_id)
    assert {f.subject.gpu for f in findings if f.status is not Status.PASS} == {3}
    [finding] = [f for f in findings if f.subject.gpu == 3]
    assert finding.status is Status.UNKNOWN and why in finding.message
