"""An RDMA port is judged on every reading of it: listed twice is unreadable (never counted twice), and a
port one reading calls down (rdma link's physical_state, ibv_devinfo's state) is not active and has no rate.

Inputs: the rdma link sample of the parser tests, and the simulator's answers to the probes as a sweep
runs them (``rdma link``, ``ibv_devinfo -v``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.checks import ProbeOutcome, build_facts, evaluate_node, load_packs
from console.inventory.model import Node, StackPin
from console.model.findings import Finding, Status
from console.probes.base import ParseError
from console.probes.host import parse_rdma_link
from console.sim.commands import context_for, run_program
from console.sim.faults import Fault, FaultKind
from console.sim.models import ClusterSpec, NodeSpec
from console.sim.specs import GpuModel, stack_preset
from console.sweep.catalog import ProbeSet, probes_for

RDMA_LINK = Path(__file__).parents[1] / "reliability" / "fixtures" / "host" / "rdma-link.txt"
NODE = Node(name="n1", pool="p", gpu_model="MI300X", gpu_count=8, address="127.0.0.1")
NIC_CHECKS = ("nic.port_active", "nic.count", "nic.rate")


def _answers(faults: list[Fault]) -> dict[str, str]:
    """What the simulated node's ``rdma link`` and ``ibv_devinfo -v`` print, by probe id."""
    spec = NodeSpec(name="n1", gpu_model=GpuModel.MI300X, pool="p", stack=stack_preset("6.4.1"))
    cluster = ClusterSpec(name="c", seed=7, nodes=[spec], faults=faults)
    probes = [p for p in probes_for(ProbeSet.QUICK) if p.id in ("host.nic", "host.nic_rate")]
    return {p.id: run_program(context_for(cluster, spec.name), list(p.argv)).stdout for p in probes}


def _findings(answers: dict[str, str]) -> list[Finding]:
    outcomes = {}
    for probe in probes_for(ProbeSet.QUICK):
        if probe.id in answers:
            try:
                outcomes[probe.id] = ProbeOutcome(probe.id, probe.parse(answers[probe.id]), None, 1)
            except ParseError as exc:  # as the engine keeps it: the probe failed, and why
                outcomes[probe.id] = ProbeOutcome(probe.id, None, f"unreadable output: {exc.reason}", 1)
    findings = evaluate_node(load_packs()["MI300X"], build_facts(NODE, StackPin(), outcomes))
    return [f for f in findings if f.check_id in NIC_CHECKS]


def _not_passed(findings: list[Finding]) -> dict[tuple[str, str | None], Status]:
    return {(f.check_id, f.subject.port): f.status for f in findings if f.status is not Status.PASS}


def test_a_healthy_node_passes_every_port() -> None:
    findings = _findings(_answers([]))
    assert len(findings) == 17 and not _not_passed(findings)  # 8 ports active, their count, 8 rates


def test_a_port_listed_twice_is_unreadable_not_counted_twice() -> None:
    # The sample with mlx5_0's line again where mlx5_7's was: still eight lines, one port gone.
    lines = RDMA_LINK.read_text().splitlines(keepends=True)
    twice = "".join([*lines[:7], lines[0]])
    with pytest.raises(ParseError, match="rdma link lists mlx5_0/1 twice"):
        parse_rdma_link(twice)
    findings = _findings({**_answers([]), "host.nic": twice})
    assert _not_passed(findings) == {("nic.port_active", None): Status.UNKNOWN, ("nic.count", None): Status.UNKNOWN}


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 7), st.integers(0, 8), st.booleans())
def test_any_port_listed_again_anywhere_is_unreadable(line: int, at: int, replace: bool) -> None:
    # The sample with one of its lines again at any place, as an extra line or in place of another port's.
    lines = RDMA_LINK.read_text().splitlines(keepends=True)
    port = lines[line].split()[1]
    mangled = [*lines[:at], lines[line], *lines[at + 1 if replace else at :]]
    if sum(text.split()[1] == port for text in mangled) < 2:  # replaced its own line: nothing listed twice
        assert parse_rdma_link("".join(mangled))
        return
    with pytest.raises(ParseError, match=f"rdma link lists {port} twice"):
        parse_rdma_link("".join(mangled))


def test_a_port_active_with_its_physical_link_disabled_fails() -> None:
    sample = RDMA_LINK.read_text()
    disabled = sample.replace(
        "mlx5_3/1 state ACTIVE physical_state LINK_UP", "mlx5_3/1 state ACTIVE physical_state DISABLED"
    )
    assert disabled != sample
    findings = _findings({**_answers([]), "host.nic": disabled})
    assert _not_passed(findings) == {("nic.port_active", "mlx5_3/1"): Status.FAIL}
    [failed] = [f for f in findings if f.status is Status.FAIL]
    assert failed.message == "RDMA port: not active: state ACTIVE, physical_state DISABLED, ibv_devinfo ACTIVE"


def test_a_port_ibv_devinfo_reads_down_fails_and_its_rate_is_not_judged() -> None:
    answers = _answers([])
    ibv = answers["host.nic_rate"]
    block = ibv.index("hca_id:\tmlx5_3")
    state = ibv.index("PORT_ACTIVE (4)", block)
    # Only the state word changes: the width and speed it printed are no rate of a working port.
    answers["host.nic_rate"] = ibv[:state] + "PORT_DOWN (1)" + ibv[state + len("PORT_ACTIVE (4)") :]
    findings = _findings(answers)
    assert _not_passed(findings) == {
        ("nic.port_active", "mlx5_3/1"): Status.FAIL,
        ("nic.rate", "mlx5_3/1"): Status.UNKNOWN,
    }


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        (FaultKind.NIC_LISTED_TWICE, {("nic.port_active", None): Status.UNKNOWN, ("nic.count", None): Status.UNKNOWN}),
        (FaultKind.NIC_PHYS_DISABLED, {("nic.port_active", "mlx5_3/1"): Status.FAIL}),
        (
            FaultKind.NIC_PORT_FLAP,
            {("nic.port_active", "mlx5_3/1"): Status.FAIL, ("nic.rate", "mlx5_3/1"): Status.UNKNOWN},
        ),
    ],
)
def test_each_disagreement_the_simulator_makes_is_never_pass(
    kind: FaultKind, expected: dict[tuple[str, str | None], Status]
) -> None:
    nic = 0 if kind is FaultKind.NIC_LISTED_TWICE else 3
    assert _not_passed(_findings(_answers([Fault(kind=kind, node="n1", params={"nic": nic})]))) == expected
