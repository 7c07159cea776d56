"""What TransferBench did not measure is unread, never passed: a pair its a2a printed N/A for or left out
(a GPU HIP does not enumerate), and a healthcheck that ended before its all-to-all test.

The simulator's MI300X node answers the probes as a sweep runs them (amd-smi list for the node's GPUs,
then TransferBench); the real a2a sample with a cell turned N/A is judged the same way.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.checks import ProbeOutcome, build_facts, evaluate_node, load_packs
from console.checks.metrics import METRICS, NO_VARIABLES
from console.inventory.model import Node, StackPin
from console.model.findings import Finding, Status
from console.model.gpu import GpuIdentity, GpuRecord
from console.probes import Tool, parse_output
from console.sim.commands import context_for, run_program
from console.sim.faults import Fault, FaultKind
from console.sim.models import ClusterSpec, NodeSpec
from console.sim.specs import GpuModel, stack_preset
from console.sweep.catalog import ProbeSet, probes_for
from console.sweep.engine import probe_problem

A2A_SAMPLE = Path(__file__).parents[1] / "fixtures" / "real" / "transferbench" / "a2a-64M-8CU-mi300x-v160-full.txt"
PROBES = ("amdsmi.list", "tb.a2a", "tb.p2p", "tb.healthcheck")
NODE = Node(name="n1", pool="p", gpu_model="MI300X", gpu_count=8, address="127.0.0.1")


def _outcomes(faults: list[Fault]) -> dict[str, ProbeOutcome]:
    spec = NodeSpec(name="n1", gpu_model=GpuModel.MI300X, pool="p", stack=stack_preset("6.4.1"))
    cluster = ClusterSpec(name="c", seed=7, nodes=[spec], faults=faults)
    outcomes = {}
    for probe in probes_for(ProbeSet.STANDARD):
        if probe.id in PROBES:
            reply = run_program(context_for(cluster, spec.name), list(probe.argv))
            assert probe_problem(reply.exit_status, (reply.stdout + reply.stderr).encode(), probe) is None
            parse = getattr(probe.parse, "fresh", probe.parse)
            outcomes[probe.id] = ProbeOutcome(probe.id, parse(reply.stdout + reply.stderr), None, 1)
    return outcomes


def _findings(outcomes: dict[str, ProbeOutcome], *checks: str) -> list[Finding]:
    findings = evaluate_node(load_packs()["MI300X"], build_facts(NODE, StackPin(), outcomes))
    return [f for f in findings if f.check_id in checks]


def _by_pair(findings: list[Finding], check: str) -> dict[tuple[int | None, int | None], Status]:
    return {(f.subject.gpu, f.subject.peer): f.status for f in findings if f.check_id == check}


PAIR_CHECKS = ("tb.a2a_pair", "tb.a2a_link")


def test_a_healthy_run_judges_every_ordered_pair() -> None:
    findings = _findings(_outcomes([]), *PAIR_CHECKS)
    for check in PAIR_CHECKS:
        pairs = _by_pair(findings, check)
        assert len(pairs) == 56 and set(pairs.values()) == {Status.PASS}, check


def _sample_with_na(pairs: set[tuple[int, int]]) -> dict[str, ProbeOutcome]:
    """The real a2a sample with the summary cells of ``pairs`` (source, destination) printed N/A."""
    lines = A2A_SAMPLE.read_text().splitlines()
    for src, dst in pairs:
        row = next(k for k, line in enumerate(lines) if line.startswith(f"GPU {src:02d} "))
        cells = lines[row].split()
        cells[2 + dst] = "N/A"  # the row's label is two words
        lines[row] = f"{cells[0]} {cells[1]}   " + "   ".join(cells[2:])
    parsed = parse_output("\n".join(lines) + "\n", tool=Tool.TRANSFERBENCH)
    return {"tb.a2a": ProbeOutcome("tb.a2a", parsed, None, 1)}


def test_a_pair_the_sample_prints_na_for_is_unknown() -> None:
    findings = _findings(_sample_with_na({(1, 4)}), *PAIR_CHECKS)
    for check in PAIR_CHECKS:
        pairs = _by_pair(findings, check)
        assert pairs.pop((1, 4)) is Status.UNKNOWN, check
        assert len(pairs) == 55 and set(pairs.values()) == {Status.PASS}, check
    assert {f.message for f in findings if f.subject.gpu == 1 and f.subject.peer == 4} == {
        "a2a GPU pair bandwidth: printed N/A for GPU 1 -> GPU 4",
        "a2a GPU pair vs the node's pairs: printed N/A for GPU 1 -> GPU 4",
    }


PAIRS = [(src, dst) for src in range(8) for dst in range(8) if src != dst]


@settings(max_examples=40, deadline=None)
@given(st.sets(st.sampled_from(PAIRS), min_size=1, max_size=20))
def test_whichever_cells_the_sample_prints_na_for_are_exactly_the_unknown_pairs(unread: set[tuple[int, int]]) -> None:
    findings = _findings(_sample_with_na(unread), "tb.a2a_pair")
    pairs = _by_pair(findings, "tb.a2a_pair")
    assert {pair for pair, status in pairs.items() if status is Status.UNKNOWN} == unread
    assert len(pairs) == 56 and {status for pair, status in pairs.items() if pair not in unread} == {Status.PASS}


def test_a_pair_the_simulated_run_leaves_out_is_unknown_both_ways() -> None:
    fault = Fault(kind=FaultKind.TRANSFERBENCH_PAIR_NA, node="n1", gpu=1, peer=4)
    findings = _findings(_outcomes([fault]), *PAIR_CHECKS)
    for check in PAIR_CHECKS:
        pairs = _by_pair(findings, check)
        assert {pair for pair, status in pairs.items() if status is not Status.PASS} == {(1, 4), (4, 1)}
        assert pairs[(1, 4)] is pairs[(4, 1)] is Status.UNKNOWN


def test_a_run_on_a_gpu_fewer_than_the_node_has_leaves_its_pairs_unknown() -> None:
    # HIP numbers the seven GPUs it sees 0..6: the pairs of index 7 are the ones never measured.
    fault = Fault(kind=FaultKind.TRANSFERBENCH_GPU_UNSEEN, node="n1", gpu=3)
    findings = _findings(_outcomes([fault]), *PAIR_CHECKS)
    for check in PAIR_CHECKS:
        pairs = _by_pair(findings, check)
        unread = {pair for pair, status in pairs.items() if status is Status.UNKNOWN}
        assert unread == {(7, k) for k in range(7)} | {(k, 7) for k in range(7)}, check
        assert len(pairs) == 56


@pytest.mark.parametrize("faults", [[], [Fault(kind=FaultKind.TRANSFERBENCH_HEALTHCHECK_SHORT, node="n1")]])
def test_a_healthcheck_that_ends_before_all_to_all_is_unknown(faults: list[Fault]) -> None:
    [finding] = _findings(_outcomes(faults), "tb.healthcheck")
    if not faults:
        assert finding.status is Status.PASS
        return
    assert finding.status is Status.UNKNOWN
    assert finding.message == "TransferBench healthcheck: incomplete: no 'Testing all-to-all XGMI copies' line"


def test_on_partitioned_gpus_a_pair_printed_na_is_not_presumed_a_link() -> None:
    # CPX: eight logical GPUs per OAM, and a2a's direct links join only some of them. Which pairs it should
    # measure is not every pair: the N/A cell is not read as a link unread (it is on an SPX node, above).
    facts = build_facts(NODE, StackPin(), _sample_with_na({(1, 4)}))
    facts.gpus = [GpuRecord(identity=GpuIdentity(index=k, compute_partition="CPX")) for k in range(8)]
    observed = {(o.subject.gpu, o.subject.peer): o.value for o in METRICS["link.tb_a2a_gbps"](facts, NO_VARIABLES)}
    assert len(observed) == 55 and (1, 4) not in observed and None not in observed.values()
    facts.gpus = [GpuRecord(identity=GpuIdentity(index=k, compute_partition="SPX")) for k in range(8)]
    observed = {(o.subject.gpu, o.subject.peer): o.value for o in METRICS["link.tb_a2a_gbps"](facts, NO_VARIABLES)}
    assert len(observed) == 56 and observed[(1, 4)] is None


def test_a_p2p_run_whose_matrices_lost_a_gpus_rows_is_never_pass() -> None:
    assert [f.status for f in _findings(_outcomes([]), "tb.p2p_ok")] == [Status.PASS]
    fault = Fault(kind=FaultKind.TRANSFERBENCH_P2P_ROW_LOST, node="n1", gpu=3)
    [finding] = _findings(_outcomes([fault]), "tb.p2p_ok")
    assert finding.status is Status.FAIL
    assert "incomplete: p2p unidirectional matrix has no row for GPU 03" in finding.message
