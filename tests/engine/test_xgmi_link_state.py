"""XGMI link states amd-smi leaves unsaid: a direct link whose state is N/A or missing is UNKNOWN, never SKIP.

The simulator's nodes (amd-smi of ROCm 6.4.1 and 7.0.2, which list the link states) answer the quick
probes as a sweep runs them; the facts are judged by each model's own pack.
"""

from __future__ import annotations

import pytest

from console.checks import build_facts, evaluate_node, load_packs
from console.inventory.model import Node, StackPin
from console.model.findings import Finding, Status
from console.sim.faults import Fault, FaultKind
from console.sim.models import ClusterSpec, NodeSpec
from console.sim.specs import GpuModel, stack_preset
from tests.engine.simulated import simulated_outcomes

XGMI_PROBES = ("amdsmi.xgmi", "amdsmi.xgmi_status")


def _link_findings(model: GpuModel, rocm: str, faults: list[Fault], *, listed: bool = False) -> list[Finding]:
    """The ``xgmi.link_up`` findings of one simulated node with ``faults``, from its amd-smi xgmi outputs
    (and, ``listed``, ``amd-smi list``: the GPUs the node has)."""
    spec = NodeSpec(name="n1", gpu_model=model, pool="p", stack=stack_preset(rocm))
    cluster = ClusterSpec(name="c", seed=7, nodes=[spec], faults=faults)
    wanted = (*XGMI_PROBES, "amdsmi.list") if listed else XGMI_PROBES
    outcomes = simulated_outcomes(cluster, spec.name, wanted)
    node = Node(name=spec.name, pool=spec.pool, gpu_model=model.value, gpu_count=8, address="127.0.0.1")
    findings = evaluate_node(load_packs()[model.value], build_facts(node, StackPin(), outcomes))
    return [f for f in findings if f.check_id == "xgmi.link_up"]


def _by_pair(findings: list[Finding]) -> dict[tuple[int | None, int | None], Status]:
    return {(f.subject.gpu, f.subject.peer): f.status for f in findings}


@pytest.mark.parametrize(
    ("model", "rocm", "links"),
    [(GpuModel.MI300X, "6.4.1", 56), (GpuModel.MI355X, "7.0.2", 56), (GpuModel.MI250X, "6.4.1", 32)],
)
def test_a_healthy_node_passes_every_direct_link_and_observes_no_other(model: GpuModel, rocm: str, links: int) -> None:
    pairs = _by_pair(_link_findings(model, rocm, []))
    # MI250X (simulated): 4 GCD pairs within an OAM and 12 same-parity pairs across OAMs, both ways.
    assert len(pairs) == links and set(pairs.values()) == {Status.PASS}


@pytest.mark.parametrize(("model", "rocm"), [(GpuModel.MI300X, "6.4.1"), (GpuModel.MI250X, "6.4.1")])
def test_a_direct_link_whose_state_is_na_is_unknown(model: GpuModel, rocm: str) -> None:
    # GPUs 0 and 2 are directly linked on both models (MI250X: same parity, one link).
    fault = Fault(kind=FaultKind.XGMI_LINK_STATE_NA, node="n1", gpu=0, peer=2)
    findings = _link_findings(model, rocm, [fault])
    pairs = _by_pair(findings)
    assert pairs[(0, 2)] is pairs[(2, 0)] is Status.UNKNOWN
    assert {status for pair, status in pairs.items() if pair not in ((0, 2), (2, 0))} == {Status.PASS}
    [said] = {f.message for f in findings if f.status is Status.UNKNOWN}
    assert "link status not reported" in said


@pytest.mark.parametrize(("model", "rocm"), [(GpuModel.MI300X, "6.4.1"), (GpuModel.MI355X, "7.0.2")])
def test_a_gpu_whose_status_row_is_left_out_is_unknown_on_a_fully_connected_node(model: GpuModel, rocm: str) -> None:
    fault = Fault(kind=FaultKind.XGMI_STATUS_ROW_MISSING, node="n1", gpu=3)
    pairs = _by_pair(_link_findings(model, rocm, [fault]))
    assert len(pairs) == 56
    unknown = {dst for (src, dst), status in pairs.items() if src == 3 and status is Status.UNKNOWN}
    assert unknown == set(range(8)) - {3}
    assert {status for (src, _), status in pairs.items() if src != 3} == {Status.PASS}


def test_a_gpu_whose_status_row_is_left_out_is_unknown_on_mi250x_where_it_has_ports() -> None:
    fault = Fault(kind=FaultKind.XGMI_STATUS_ROW_MISSING, node="n1", gpu=2)
    pairs = _by_pair(_link_findings(GpuModel.MI250X, "6.4.1", [fault]))
    # GCD 2: four links to its OAM sibling 3, one each to the same-parity GCDs 0, 4 and 6 (the metric table's
    # counters say so); GCDs 1, 5 and 7 are reached through a neighbour and are not observed.
    assert {dst for (src, dst), status in pairs.items() if src == 2} == {0, 3, 4, 6}
    assert {status for (src, _), status in pairs.items() if src == 2} == {Status.UNKNOWN}


@pytest.mark.parametrize(
    ("model", "rocm"), [(GpuModel.MI300X, "6.4.1"), (GpuModel.MI355X, "7.0.2"), (GpuModel.MI250X, "6.4.1")]
)
def test_a_status_table_with_no_row_at_all_is_never_pass(model: GpuModel, rocm: str) -> None:
    # 6.4's JSON is then an empty list, which fails the probe; 7.x's an empty link_status table.
    fault = Fault(kind=FaultKind.XGMI_STATUS_ROW_MISSING, node="n1", gpu=0, params={"all": True})
    statuses = {f.status for f in _link_findings(model, rocm, [fault])}
    assert statuses == {Status.UNKNOWN}


@pytest.mark.parametrize(("model", "rocm"), [(GpuModel.MI300X, "6.4.1"), (GpuModel.MI355X, "7.0.2")])
def test_a_gpu_left_out_of_both_xgmi_tables_has_every_link_unknown(model: GpuModel, rocm: str) -> None:
    # amd-smi list names GPU 3; neither xgmi table does, as row or as column.
    fault = Fault(kind=FaultKind.XGMI_GPU_UNLISTED, node="n1", gpu=3)
    findings = _link_findings(model, rocm, [fault], listed=True)
    pairs = _by_pair(findings)
    assert len(pairs) == 56
    assert {pair for pair, status in pairs.items() if status is not Status.PASS} == {
        pair for pair in pairs if 3 in pair
    }
    assert {status for pair, status in pairs.items() if 3 in pair} == {Status.UNKNOWN}


def test_a_gpu_left_out_of_both_xgmi_tables_is_unknown_on_mi250x() -> None:
    fault = Fault(kind=FaultKind.XGMI_GPU_UNLISTED, node="n1", gpu=2)
    findings = _link_findings(GpuModel.MI250X, "6.4.1", [fault], listed=True)
    [unread] = [f for f in findings if f.status is not Status.PASS]
    assert (unread.status, unread.subject.gpu, unread.subject.peer) == (Status.UNKNOWN, 2, None)
    assert unread.message == "XGMI link: GPU 2 is in neither xgmi table"


@pytest.mark.parametrize(("model", "rocm"), [(GpuModel.MI300X, "6.4.1"), (GpuModel.MI355X, "7.0.2")])
@pytest.mark.parametrize(("word", "status"), [("D", Status.FAIL), ("N/A", Status.UNKNOWN)])
def test_a_link_the_two_tables_disagree_on_is_never_up(model: GpuModel, rocm: str, word: str, status: Status) -> None:
    # ``xgmi -l`` reads the link down (or cannot read it) after ``xgmi``'s own table read it up.
    fault = Fault(kind=FaultKind.XGMI_LINK_FLAP, node="n1", gpu=1, peer=4, params={"status": word})
    findings = _link_findings(model, rocm, [fault])
    pairs = _by_pair(findings)
    assert {pair for pair, found in pairs.items() if found is not Status.PASS} == {(1, 4), (4, 1)}
    assert pairs[(1, 4)] is pairs[(4, 1)] is status
    said = {f.message for f in findings if f.status is status}
    assert said == {
        "XGMI link: down: amd-smi xgmi: U; amd-smi xgmi -l: D"
        if word == "D"
        else "XGMI link: the tables disagree (amd-smi xgmi: U; amd-smi xgmi -l: N/A)"
    }


@pytest.mark.parametrize(("model", "rocm"), [(GpuModel.MI300X, "6.4.1"), (GpuModel.MI355X, "7.0.2")])
def test_a_status_row_printed_twice_keeps_the_down_link_it_once_showed(model: GpuModel, rocm: str) -> None:
    # ``xgmi -l`` prints GPU 1's row twice: 1->4 D, then U. The later row must not wipe out the D.
    fault = Fault(kind=FaultKind.XGMI_STATUS_ROW_REPEATED, node="n1", gpu=1, peer=4)
    pairs = _by_pair(_link_findings(model, rocm, [fault]))
    assert len(pairs) == 56
    assert {pair: status for pair, status in pairs.items() if status is not Status.PASS} == {(1, 4): Status.FAIL}
