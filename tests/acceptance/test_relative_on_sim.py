"""Issue 37's stories on the simulator, over real SSH: a framework image 12 % slower than the accepted one,
though above every floor, regresses against the accepted figures and rollback targets the faster image;
a training run whose loss goes NaN from step 40 names step 40, with its task and node."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from console.cli import main
from console.sim.faults import Fault, FaultKind
from console.sim.launcher import start_sim_cluster
from console.sim.render.workloads import NAN_FROM_STEP
from console.sim.scenario import write_live_faults
from tests.acceptance.test_acceptance_story import IMAGE_A, IMAGE_B, SCENARIO, _with_framework_container
from tests.documented import workload_blocks

NODES = ("sim001", "sim002")
TRAIN = "llama-pretrain-smoke"
# The lines the simulated train.py prints at each step (console.sim.render.workloads.train).
STEPS = """
[workloads.results.steps]
pattern = '^step\\s+(?P<step>\\d+) \\| loss (?P<loss>\\S+) \\| tokens/s (?P<tokens_per_s>\\S+)'
"""


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    capsys.readouterr()
    code = main(list(argv))
    return code, json.loads(capsys.readouterr().out)


def test_a_12_percent_slower_image_regresses_against_the_accepted_figures_and_rollback_targets_the_faster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO)
    with start_sim_cluster(scenario=scenario) as sim:
        cluster = tmp_path / "cluster.toml"
        cluster.write_text(_with_framework_container(sim.inventory_path.read_text(), "mi300x-a", IMAGE_A))
        where = ["-i", str(cluster), "--store", str(tmp_path / "h.sqlite")]
        assert main(["sweep", *where, "--probes", "framework"]) == 0
        assert main(["accept", *where, "--workload", "framework", "--reason", "torch in image A"]) == 0
        # Image B: every GPU's GEMM 12 % slower in it, far above the floors (0.80 of the target).
        cluster.write_text(cluster.read_text().replace(IMAGE_A, IMAGE_B))
        slower = {"factor": 0.88, "image": IMAGE_B}
        faults = [Fault(node=n, kind=FaultKind.TORCH_GEMM_SLOW, gpu=g, params=slower) for n in NODES for g in range(8)]
        write_live_faults(sim.state_dir, faults)
        sim.wait_for_generation(2)
        main(["sweep", *where, "--probes", "framework"])
        code, shown = _json(capsys, "acceptance", *where, "--workload", "framework", "--json")
        rollback = ["rollback", *where, "--pool", "mi300x-a", "--workload", "framework", "--reason", "slower B"]
        _, plan = _json(capsys, *rollback, "--json")
    [state] = shown["states"]
    assert code == 1 and state["state"] == "regressed" and state["failing_since"] is not None
    reason = state["regressed"]["reason"]
    assert f"image {IMAGE_A} -> {IMAGE_B}" in reason, "the stack diff"
    [bf16] = [c for c in state["newest"]["compared"] if c["figure"] == "bf16_tflops"]
    assert bf16["beyond"] and 0.85 < bf16["ratio"] < 0.91, bf16
    assert f"bf16_tflops {bf16['reference']:g} -> {bf16['value']:g}" in reason, "both figures"
    assert state["reference"]["stack"]["image"] == IMAGE_A
    assert f"image of framework: {IMAGE_B} -> {IMAGE_A}" in plan["plan"]["notes"], "back to the faster image"


def test_a_nan_from_step_40_names_step_40_with_its_task_and_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO)
    [train] = [b for b in workload_blocks() if f'name = "{TRAIN}"' in b]
    with start_sim_cluster(scenario=scenario) as sim:
        cluster = tmp_path / "cluster.toml"
        cluster.write_text(sim.inventory_path.read_text() + "\n" + train + STEPS)
        write_live_faults(sim.state_dir, [Fault(node="sim002", kind=FaultKind.TORCH_GEMM_NAN, gpu=1)])
        sim.wait_for_generation(2)
        report = tmp_path / "r.json"
        where = ["-i", str(cluster), "--store", str(tmp_path / "h.sqlite")]
        assert main(["sweep", *where, "--probes", "workload", "--force", "--json", str(report)]) == 1
    [sim001] = [n for n in json.loads(report.read_text())["nodes"] if n["node"] == "sim001"]
    steps = sorted(f["message"] for f in sim001["findings"] if f["check_id"] == f"workload.{TRAIN}.steps")
    # Each finding ends with where srun ran ("[srun on sim001, ...]").
    assert [m.partition(" [srun on ")[0] for m in steps] == [
        f"{TRAIN}: task {task} on {node}: first bad step {NAN_FROM_STEP}: loss is nan"
        for task, node in enumerate(NODES)
    ]
