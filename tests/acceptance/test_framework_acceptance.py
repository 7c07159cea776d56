"""The framework probe as the built-in workload ``framework``: accepted from a ``sweep --probes framework``
on the simulator with torch in its stack; a slow GEMM after a ROCm change regresses it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.cli import main
from console.sim.faults import Fault, FaultKind
from console.sim.launcher import start_sim_cluster
from console.sim.scenario import write_live_faults

SCENARIO = """time_factor = 400
[[nodes]]
names = "sim[001-002]"
model = "MI300X"
pool = "mi300x"
"""


def test_the_framework_is_accepted_then_regresses_on_a_slow_gemm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO)
    with start_sim_cluster(scenario=scenario) as sim:
        where = ["-i", str(sim.inventory_path), "--store", str(tmp_path / "h.sqlite")]
        assert main(["sweep", *where, "--probes", "framework"]) == 0
        assert main(["accept", *where, "--workload", "framework", "--reason", "torch for ROCm 6.4"]) == 0
        capsys.readouterr()
        assert main(["acceptance", *where, "--json"]) == 0
        [state] = json.loads(capsys.readouterr().out)["states"]
        assert state["workload"] == "framework" and state["state"] == "accepted"
        assert state["accepted"]["stack"]["torch"], "the framework is accepted on a torch version"
        assert any(name.startswith("gemm") or "tflops" in name for name in state["accepted"]["figures"])
        # An older ROCm on one node, whose GEMM is also slow: the rerun FAILs, so the pool regressed.
        write_live_faults(
            sim.state_dir,
            [
                Fault(node="sim002", kind=FaultKind.ROCM_DRIFT, params={"rocm": "6.2.2"}),
                Fault(node="sim002", kind=FaultKind.TORCH_GEMM_SLOW, gpu=0, params={"factor": 0.3}),
            ],
        )
        sim.wait_for_generation(2)
        assert main(["sweep", *where, "--probes", "framework"]) == 1
        capsys.readouterr()
        assert main(["acceptance", *where, "--json"]) == 1
        [state] = json.loads(capsys.readouterr().out)["states"]
    assert state["state"] == "regressed"
    assert state["changes"]["rocm"]["current"] == "mixed: 6.2.2 | 6.4.1"
