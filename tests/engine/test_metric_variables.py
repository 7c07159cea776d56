"""A metric is ``(facts, variables)``: the pack's variables are passed to it, never written into the facts.

The facts are one simulated MI300X whose amd-smi xgmi tables leave GPU 3 out (amd-smi list names it), so
whether every GPU pair has a direct link (the pack's ``xgmi_fully_connected``) decides what is unread.
"""

from __future__ import annotations

import copy
from dataclasses import fields

from console.checks import METRICS, NodeFacts, build_facts, evaluate_node, load_packs
from console.inventory.model import Node, StackPin
from console.sim.faults import Fault, FaultKind
from console.sim.models import ClusterSpec, NodeSpec
from console.sim.specs import GpuModel, stack_preset
from tests.engine.simulated import simulated_outcomes


def _facts() -> NodeFacts:
    spec = NodeSpec(name="n1", gpu_model=GpuModel.MI300X, pool="p", stack=stack_preset("6.4.1"))
    fault = Fault(kind=FaultKind.XGMI_GPU_UNLISTED, node="n1", gpu=3)
    cluster = ClusterSpec(name="c", seed=7, nodes=[spec], faults=[fault])
    outcomes = simulated_outcomes(cluster, spec.name, ("amdsmi.xgmi", "amdsmi.xgmi_status", "amdsmi.list"))
    node = Node(name="n1", pool="p", gpu_model="MI300X", gpu_count=8, address="127.0.0.1")
    return build_facts(node, StackPin(), outcomes)


def test_a_metric_reads_the_variables_it_is_given() -> None:
    facts = _facts()
    everywhere = METRICS["link.xgmi_up"](facts, {"xgmi_fully_connected": True})
    by_ports = METRICS["link.xgmi_up"](facts, {"xgmi_fully_connected": False})
    # Fully connected: each of GPU 3's 14 links is a link unread. Otherwise which peers it has a port to is
    # not known: its links are unread as a whole, one observation.
    assert sorted((o.subject.gpu, o.subject.peer) for o in everywhere if o.value is None) == sorted(
        [(3, peer) for peer in range(8) if peer != 3] + [(peer, 3) for peer in range(8) if peer != 3]
    )
    assert [(o.subject.gpu, o.subject.peer) for o in by_ports if o.value is None] == [(3, None)]
    assert METRICS["link.xgmi_up"](facts, {}) == everywhere  # the setting's default: fully connected


def test_judging_a_node_leaves_its_facts_as_they_were() -> None:
    facts = _facts()
    before = {f.name: copy.deepcopy(getattr(facts, f.name)) for f in fields(facts) if f.name != "_subjects"}
    evaluate_node(load_packs()["MI300X"], facts)
    after = {f.name: getattr(facts, f.name) for f in fields(facts) if f.name != "_subjects"}
    assert after == before
