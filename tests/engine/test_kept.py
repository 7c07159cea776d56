"""PASS findings counted per check lose nothing: the same statuses, and the same findings that are not PASS.

Every sweep counts its PASS findings (``NodeVerdict.passed``) and keeps whole only those something reads
again (``console.model.kept``). Here each simulated node, faulted ones included, is judged both ways.
"""

from __future__ import annotations

from collections import Counter

from console.checks import ProbeOutcome, build_facts, evaluate_node, load_packs
from console.inventory.model import Node, StackPin
from console.model.findings import Scope, Status, roll_up
from console.model.kept import kept_whole
from console.probes import ParseError
from console.sim.commands import context_for, run_program
from console.sim.models import example_cluster
from console.sim.specs import GpuModel
from console.sweep.catalog import ProbeSet, probes_for


def test_counting_pass_findings_keeps_every_status_and_every_problem() -> None:
    cluster = example_cluster(nodes_per_model=dict.fromkeys(GpuModel, 2), with_faults=True)
    packs, probes = load_packs(), probes_for(ProbeSet.QUICK)
    counted_somewhere = kept_somewhere = 0
    for spec in cluster.nodes:
        model = spec.gpu_model.value
        node = Node(
            name=spec.name, pool=spec.pool, gpu_model=model, gpu_count=spec.spec.gpus_per_node, address="127.0.0.1"
        )
        outcomes = {}
        for probe in probes:
            reply = run_program(context_for(cluster, spec.name), list(probe.argv))
            try:
                outcomes[probe.id] = ProbeOutcome(probe.id, probe.parse(reply.stdout), None, 1)
            except ParseError as error:  # a faulted node's output
                outcomes[probe.id] = ProbeOutcome(probe.id, None, str(error), 1)
        whole = evaluate_node(packs[model], build_facts(node, StackPin(), outcomes))
        passed = Counter[str]()
        kept = evaluate_node(packs[model], build_facts(node, StackPin(), outcomes), counted=passed)
        problems = [f for f in whole if f.status is not Status.PASS]
        assert [f for f in kept if f.status is not Status.PASS] == problems, spec.name
        kept_pass = [f for f in kept if f.status is Status.PASS]
        assert Counter(f.check_id for f in whole if f.status is Status.PASS) == passed + Counter(
            f.check_id for f in kept_pass
        ), spec.name
        for finding in kept_pass:
            assert finding in whole
        families = {c.id: c.family for c in packs[model].checks}
        verdict = roll_up(node.name, kept, dict(passed), {families[c] for c in passed})
        assert (verdict.status, verdict.families) == (
            roll_up(node.name, whole).status,
            roll_up(node.name, whole).families,
        )
        assert verdict.total == len(whole)
        counted_somewhere += passed.total()
        kept_somewhere += len(kept_pass)
    assert counted_somewhere > 10 * kept_somewhere > 0


def test_what_is_kept_whole() -> None:
    assert kept_whole("ecc.correctable", "ecc", 0, Scope.GPU, remarked=False)  # the history compares it
    assert not kept_whole("pcie.replay", "pcie", 0, Scope.GPU, remarked=False)  # a counter at 0
    assert kept_whole("pcie.replay", "pcie", 3.0, Scope.GPU, remarked=False)  # one that moved: diff shows it
    assert kept_whole("rccl.busbw", "rccl", 310.0, Scope.NODE, remarked=False)
    assert not kept_whole("tb.a2a_link", "transferbench", 48.0, Scope.LINK, remarked=False)
    assert kept_whole("framework.bf16_tflops", "framework", 600.0, Scope.GPU, remarked=False)  # acceptance
    assert kept_whole("ras.cper_fatal", "ras", 0, Scope.GPU, remarked=True)  # "1 ignored: older than 72 h"
    assert not kept_whole("thermal.hotspot", "thermal", 45.0, Scope.GPU, remarked=False)
