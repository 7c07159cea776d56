"""Every thermal throttle counter amd-smi prints is read by ``throttle.thermal``.

The parser names amd-smi's ``prochot_*`` counters PHOT_TVIOL (as ``amd-smi monitor --violation`` does), while
the check looked for PROCHOT: a GPU throttled by PROCHOT alone read 0 % and PASS. Taken from the simulator's
MI300X answer to the sweep's own metric command, with one counter raised on one GPU.
"""

from __future__ import annotations

import json

import pytest

from console.checks import ProbeOutcome, build_facts, evaluate_node, load_packs
from console.inventory.model import Node, StackPin
from console.model.findings import Status
from console.sim.commands import context_for, run_program
from console.sim.models import ClusterSpec, NodeSpec
from console.sim.specs import GpuModel, stack_preset
from console.sweep.catalog import ProbeSet, probes_for


def _thermal(counter: str, percent: float) -> dict[int | None, Status]:
    """``throttle.thermal`` per GPU, with ``counter``'s activity on GPU 3 at ``percent``."""
    spec = NodeSpec(name="n1", gpu_model=GpuModel.MI300X, pool="p", stack=stack_preset("6.4.1"))
    cluster = ClusterSpec(name="c", seed=7, nodes=[spec], faults=[])
    probe = next(p for p in probes_for(ProbeSet.QUICK) if p.id == "amdsmi.metric")
    document = json.loads(run_program(context_for(cluster, spec.name), list(probe.argv)).stdout)
    gpus = document["gpu_data"] if isinstance(document, dict) else document
    throttle = gpus[3]["throttle"]
    assert f"{counter}_violation_activity" in throttle, sorted(throttle)
    throttle[f"{counter}_violation_activity"] = {"value": percent, "unit": "%"}
    parse = getattr(probe.parse, "fresh", probe.parse)
    outcomes = {probe.id: ProbeOutcome(probe.id, parse(json.dumps(document)), None, 1)}
    node = Node(name="n1", pool="p", gpu_model="MI300X", gpu_count=8, address="127.0.0.1")
    findings = evaluate_node(load_packs()["MI300X"], build_facts(node, StackPin(), outcomes))
    return {f.subject.gpu: f.status for f in findings if f.check_id == "throttle.thermal"}


@pytest.mark.parametrize("counter", ["prochot", "socket_thermal"])
def test_a_gpu_throttled_by_one_thermal_counter_is_not_pass(counter: str) -> None:
    statuses = _thermal(counter, 40.0)
    assert statuses[3] is Status.FAIL  # > 5 % of the window
    assert all(status is Status.PASS for gpu, status in statuses.items() if gpu != 3)
