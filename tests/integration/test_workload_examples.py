"""The two documented example workloads (docs/workloads.md), run by ``sweep --probes workload`` on the
simulator: healthy nodes accept both; a node moved to an older ROCm line regresses the vLLM benchmark and
slows its two-node training job; a throttled GPU slows its job too; a GPU computing NaN fails the loss of
both nodes of its job."""

from __future__ import annotations

import json
from pathlib import Path

from console.cli import main
from console.sim.launcher import start_sim_cluster
from tests.documented import workload_examples

SCENARIO = """time_factor = 400
[[nodes]]
names = "sim[001-008]"
model = "MI300X"
pool = "mi300x-a"
[[faults]]
nodes = "sim004"
kind = "rocm_drift"
rocm = "6.2.2"
[[faults]]
nodes = "sim006"
kind = "thermal_throttle"
gpu = 3
[[faults]]
nodes = "sim008"
kind = "torch_gemm_nan"
gpu = 1
"""


def test_the_documented_examples_on_the_simulator(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO)
    examples = workload_examples()
    with start_sim_cluster(scenario=scenario) as sim:
        cluster = tmp_path / "cluster.toml"
        cluster.write_text(sim.inventory_path.read_text() + "\n" + examples)
        report = tmp_path / "r.json"
        code = main(["sweep", "-i", str(cluster), "--probes", "workload", "--store", str(tmp_path / "h.sqlite"),
                     "--json", str(report)])  # fmt: skip
    assert code == 1
    found = {
        n["node"]: sorted(
            (f["check_id"].removeprefix("workload."), f["status"]) for f in n["findings"] if f["family"] == "workload"
        )
        for n in json.loads(report.read_text())["nodes"]
    }
    # The training job runs on the pairs (sim001, sim002), (sim003, sim004), ...; vLLM on each node.
    assert found["sim001"] == found["sim002"] == [], "accepted: both workloads pass on healthy nodes"
    # A job goes at its slowest node's pace: each of its two tasks (one per node) reports it, and FAILs.
    slow_job = [("llama-pretrain-smoke.tokens_per_s", "FAIL")] * 2
    assert found["sim003"] == slow_job
    assert found["sim004"] == [*slow_job, ("vllm-llama3-8b-serving.request_throughput", "FAIL")], "older ROCm"
    assert found["sim005"] == slow_job
    assert found["sim006"] == [*slow_job, ("vllm-llama3-8b-serving.request_throughput", "WARN")], "throttled GPU"
    nan = [("llama-pretrain-smoke.loss.step_100", "FAIL")] * 2
    assert found["sim007"] == nan and found["sim008"] == nan, "a NaN on one rank reaches the whole job"
