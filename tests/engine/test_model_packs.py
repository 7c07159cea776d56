"""Every GPU model's pack: its datasheet values, a healthy node of that model passing, and its limits biting.

The datasheet table is written out here on purpose, apart from the packs: a slip in a pack (Gen4 for a
Gen5 part, a board power off by ten) must fail a test, not only change verdicts on real clusters.
"""

from __future__ import annotations

from typing import Any

import pytest

from console.checks import CheckPack, NodeFacts, ProbeOutcome, build_facts, evaluate_node, load_packs
from console.inventory.model import Node, StackPin
from console.model.findings import Finding, Status
from console.sim.commands import context_for, run_program
from console.sim.models import example_cluster
from console.sim.specs import GpuModel
from console.sweep.catalog import ProbeSet, probes_for
from console.sweep.engine import probe_problem

GIB = 2**30
# model: (PCI device id, HBM per GPU as amd-smi lists it in GiB, host PCIe GT/s, board power W).
# AMD Instinct datasheets; an MI250X is listed as two GPUs (GCDs) of 64 GiB each.
DATASHEET: dict[str, tuple[str, int, int, int]] = {
    "MI250X": ("0x740c", 64, 16, 560),
    "MI300X": ("0x74a1", 192, 32, 750),
    "MI325X": ("0x74a5", 256, 32, 1000),
    "MI350X": ("0x75a0", 288, 32, 1000),
    "MI355X": ("0x75a3", 288, 32, 1400),
}
PROBLEMS = (Status.WARN, Status.FAIL, Status.UNKNOWN)


def _var(pack: CheckPack, name: str) -> Any:
    return pack.pack.values()[name]


@pytest.mark.parametrize("model", sorted(DATASHEET))
def test_pack_holds_the_datasheet_values(model: str) -> None:
    pack = load_packs()[model]
    device_id, hbm_gib, pcie_gts, power_w = DATASHEET[model]
    assert str(_var(pack, "device_id")).lower() == device_id
    assert _var(pack, "pcie_gts") == pcie_gts
    assert _var(pack, "power_cap_w") == power_w
    # The VRAM floor is 99 % of nominal: a GPU reporting less has lost memory (retired rows, bad stacks).
    assert _var(pack, "vram_min_bytes") == pytest.approx(0.99 * hbm_gib * GIB, rel=1e-3)
    assert 0 < _var(pack, "bad_page_threshold") <= 512
    assert _var(pack, "rccl_busbw_min_gbps") < _var(pack, "rccl_busbw_warn_gbps")


def _healthy_facts(model: GpuModel, level: ProbeSet = ProbeSet.QUICK) -> tuple[Node, NodeFacts]:
    """A healthy simulated node of ``model``: the probes' outputs at ``level``, parsed as a sweep parses them."""
    cluster = example_cluster(nodes_per_model={model: 1}, with_faults=False)
    spec = cluster.nodes[0]
    outcomes = {}
    for probe in probes_for(level):
        if probe.family in ("rccl", "rvs"):
            continue  # slow to simulate and parse, and judged by tests of their own
        reply = run_program(context_for(cluster, spec.name), list(probe.argv))
        if reply.exit_status != 0 and probe.fallback:  # an older amd-smi without the narrow options
            reply = run_program(context_for(cluster, spec.name), list(probe.fallback))
        problem = probe_problem(reply.exit_status, (reply.stdout + reply.stderr).encode(), probe)
        if problem is not None:  # as the engine keeps it: no parsed output, the reason why
            outcomes[probe.id] = ProbeOutcome(probe.id, None, problem, 1)
            continue
        # A fresh parse: the sweep's parser hands back its cached result for unchanged text, and the
        # tests below change what they got.
        parse = getattr(probe.parse, "fresh", probe.parse)
        outcomes[probe.id] = ProbeOutcome(probe.id, parse(reply.stdout + reply.stderr), None, 1)
    node = Node(name=spec.name, pool=spec.pool, gpu_model=model.value, gpu_count=8, address="127.0.0.1")
    return node, build_facts(node, StackPin(), outcomes)


def _judge(model: GpuModel, facts: NodeFacts) -> list[Finding]:
    return evaluate_node(load_packs()[model.value], facts)


@pytest.mark.parametrize("model", list(GpuModel), ids=lambda m: m.value)
def test_a_healthy_node_of_each_model_passes_its_own_pack(model: GpuModel) -> None:
    _, facts = _healthy_facts(model)
    findings = _judge(model, facts)
    assert len(facts.gpus) == 8
    assert {"inventory.gpu_count", "inventory.device_id", "pcie.speed", "power.cap"} <= {f.check_id for f in findings}
    if model is GpuModel.MI250X:
        # An amd-smi older than ROCm 6.4 has no link-status table: a quick sweep cannot tell a link is up,
        # and says so with the tool's own words (never PASS); TransferBench's a2a measures the links.
        [unknown] = [f for f in findings if f.status in PROBLEMS]
        assert unknown.check_id == "xgmi.link_up" and unknown.status is Status.UNKNOWN
        assert "unrecognized arguments: -l" in unknown.message and "tb.a2a" in unknown.message
        _, facts = _healthy_facts(model, ProbeSet.STANDARD)
        findings = _judge(model, facts)
    assert not [f.message for f in findings if f.status in PROBLEMS]
    link_up = {f.status for f in findings if f.check_id == "xgmi.link_up"}
    assert link_up == ({Status.SKIP} if model is GpuModel.MI250X else {Status.PASS})


def _set_power_cap(facts: NodeFacts, gpu: int, watts: float) -> None:
    """Set one GPU's power cap where amd-smi states it: ``static --limit``."""
    bdf = facts.gpus[gpu].identity.bdf
    static = facts.parsed("amdsmi.static")
    assert static is not None
    details = static.data.details
    [detail] = [d for d in details if d.bdf == bdf]
    detail.power_cap_w = watts


@pytest.mark.parametrize("model", list(GpuModel), ids=lambda m: m.value)
def test_each_models_limits_bite_at_their_own_values(model: GpuModel) -> None:
    """At the pack's value a GPU passes; just past it, that GPU alone is flagged with the pack's figure."""
    pack = load_packs()[model.value]
    pcie_gts, power_w = _var(pack, "pcie_gts"), _var(pack, "power_cap_w")
    # MI250X's amd-smi (ROCm 6.2) needs TransferBench to judge its links: the standard level.
    _, facts = _healthy_facts(model, ProbeSet.STANDARD if model is GpuModel.MI250X else ProbeSet.QUICK)
    metrics = facts.gpus[2].metrics
    assert metrics is not None and metrics.pcie is not None
    metrics.pcie.speed_gts = pcie_gts
    _set_power_cap(facts, 2, power_w)
    assert not [f.message for f in _judge(model, facts) if f.status in PROBLEMS]

    metrics.pcie.speed_gts = pcie_gts / 2
    _set_power_cap(facts, 2, power_w - 50)
    flagged = {(f.check_id, f.status, f.subject.gpu, f.evidence.expected) for f in _judge(model, facts)}
    flagged = {item for item in flagged if item[1] in PROBLEMS}
    assert flagged == {
        ("pcie.speed", Status.FAIL, 2, f"fail if < {pcie_gts}"),
        ("power.cap", Status.WARN, 2, f"warn if < {power_w}"),
    }


def test_a_vram_shortfall_reads_in_gib_on_both_sides() -> None:
    """An MI300X node in a pool declared MI325X: 192 GiB against the MI325X floor, both shown in GiB."""
    _, facts = _healthy_facts(GpuModel.MI300X)
    vram = [f for f in _judge(GpuModel.MI325X, facts) if f.check_id == "memory.vram_total"]
    assert len(vram) == 8 and {f.status for f in vram} == {Status.FAIL}
    assert vram[0].message == "VRAM total: 192.0 GiB (fail if < 253.4 GiB)"
    assert vram[0].evidence.expected == "fail if < 253.4 GiB"
