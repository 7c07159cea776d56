"""Joining one GPU's records from several amd-smi subcommands: nothing one of them knows is lost."""

from __future__ import annotations

import pytest

from console.checks import build_facts
from console.checks.facts import ProbeOutcome
from console.inventory.model import Node, StackPin
from console.model.findings import Status
from console.sim.commands import context_for, run_program
from console.sim.faults import Fault, FaultKind
from console.sim.models import example_cluster
from console.sim.specs import GpuModel
from console.sweep.catalog import PROBES_BY_ID
from tests.engine.test_model_packs import _judge


def _facts_with_bad_pages(order: tuple[str, ...]) -> tuple[Node, object]:
    cluster = example_cluster(nodes_per_model={GpuModel.MI300X: 1}, with_faults=False)
    name = cluster.nodes[0].name
    cluster.faults = [
        Fault(kind=FaultKind.ECC_UNCORRECTABLE, node=name, gpu=2, params={"count": 3}),
        Fault(kind=FaultKind.BAD_PAGES_OVER_THRESHOLD, node=name, gpu=5),
    ]
    outcomes = {}
    for probe in order:
        spec = PROBES_BY_ID[probe]
        reply = run_program(context_for(cluster, name), list(spec.argv))
        outcomes[probe] = ProbeOutcome(probe, getattr(spec.parse, "fresh", spec.parse)(reply.stdout), None, 1)
    node = Node(name=name, pool="p", gpu_model="MI300X", gpu_count=8, address="127.0.0.1")
    return node, build_facts(node, StackPin(), outcomes)


@pytest.mark.parametrize(
    "order",
    [("amdsmi.list", "amdsmi.static", "amdsmi.bad_pages"), ("amdsmi.list", "amdsmi.bad_pages", "amdsmi.static")],
    ids=["static first (as a sweep joins them)", "bad-pages first"],
)
def test_pages_from_bad_pages_and_the_threshold_from_static_both_survive(order: tuple[str, ...]) -> None:
    """The empty bad-page record of `amd-smi static` used to win the merge: every GPU read 0 pages."""
    _, facts = _facts_with_bad_pages(order)
    pages = {gpu.identity.index: gpu.bad_pages for gpu in facts.gpus}  # type: ignore[attr-defined]
    assert len(pages[2].pending) == 3 and pages[2].threshold == 128
    assert len(pages[5].retired) > 128 and pages[5].threshold == 128
    assert not pages[0].retired and not pages[0].pending and pages[0].threshold == 128


def test_a_gpu_past_its_bad_page_threshold_fails_and_pending_pages_warn() -> None:
    _, facts = _facts_with_bad_pages(("amdsmi.list", "amdsmi.static", "amdsmi.bad_pages"))
    findings = {(f.check_id, f.subject.gpu): f.status for f in _judge(GpuModel.MI300X, facts)}  # type: ignore[arg-type]
    assert findings[("ras.bad_pages_retired", 5)] is Status.FAIL
    assert findings[("ras.bad_pages_pending", 2)] is Status.WARN
    assert findings[("ras.bad_pages_retired", 0)] is Status.PASS


def test_the_gpu_table_shows_the_power_cap_the_check_reads() -> None:
    """The GPUs tab showed the cap n/a (the narrowed metric has none) while the check read 750 W from static."""
    _, facts = _facts_with_bad_pages(("amdsmi.list", "amdsmi.static", "amdsmi.metric"))
    caps = {gpu.identity.index: gpu.metrics.power_cap_w for gpu in facts.gpus}  # type: ignore[attr-defined]
    judged = {f.subject.gpu: f.evidence.observed for f in _judge(GpuModel.MI300X, facts) if f.check_id == "power.cap"}  # type: ignore[arg-type]
    assert judged and all(caps[gpu] == observed == 750 for gpu, observed in judged.items()), (caps, judged)


def test_rvs_failures_name_the_gpu_by_index_and_pci_address() -> None:
    """RVS names a GPU by its KFD gpu_id ('[GPU:: 10279]'); the finding says which GPU that is."""
    cluster = example_cluster(nodes_per_model={GpuModel.MI300X: 1}, with_faults=False)
    name = cluster.nodes[0].name
    cluster.faults = [Fault(kind=FaultKind.RVS_GST_LOW, node=name, gpu=3)]
    outcomes = {}
    for probe in ("amdsmi.list", "amdsmi.static", "rvs.level3"):
        spec = PROBES_BY_ID[probe]
        reply = run_program(context_for(cluster, name), list(spec.argv))
        outcomes[probe] = ProbeOutcome(probe, getattr(spec.parse, "fresh", spec.parse)(reply.stdout), None, 1)
    node = Node(name=name, pool="p", gpu_model="MI300X", gpu_count=8, address="127.0.0.1")
    facts = build_facts(node, StackPin(), outcomes)
    gpu3 = next(g for g in facts.gpus if g.identity.index == 3)
    failing = [f for f in _judge(GpuModel.MI300X, facts) if f.family == "rvs" and f.status is Status.FAIL]  # type: ignore[arg-type]
    said = " ".join(f.message for f in failing)
    assert failing and f"gpu3, {gpu3.identity.bdf} (RVS id " in said, said
    assert "[GPU::" not in said, said
