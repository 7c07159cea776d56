"""The trial's finding on the simulator, over real SSH: a workload rerun after a stack change, in a sweep
where one node it ran on FAILs its own quick probes (a fatal CPER record), was recorded ``accepted-again``.
PASS means healthy: that rerun is ``blocked`` (naming the node and why), the gate fails, and the stack
is accepted again only by a rerun on healthy nodes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.cli import main
from console.sim.faults import Fault, FaultKind
from console.sim.launcher import start_sim_cluster
from console.sim.scenario import write_live_faults
from tests.acceptance.test_acceptance_story import SCENARIO, VLLM, _vllm_example


def test_a_rerun_on_a_node_with_a_fatal_cper_record_is_blocked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO)
    with start_sim_cluster(scenario=scenario) as sim:
        cluster = tmp_path / "cluster.toml"
        cluster.write_text(sim.inventory_path.read_text() + "\n" + _vllm_example())
        where = ["-i", str(cluster), "--store", str(tmp_path / "h.sqlite")]
        assert main(["sweep", *where, "--probes", "workload"]) == 0
        assert main(["accept", *where, "--workload", VLLM, "--reason", "stack A"]) == 0
        driver = [Fault(node=n, kind=FaultKind.DRIVER_DRIFT, params={"amdgpu": "6.14.4"}) for n in ("sim001", "sim002")]
        fatal = Fault(node="sim002", kind=FaultKind.CPER_RECORD, gpu=1, params={"afid": 30})
        write_live_faults(sim.state_dir, [*driver, fatal])
        sim.wait_for_generation(2)
        capsys.readouterr()
        # The workload itself still passes on both nodes; sim002's own quick probes FAIL in the same sweep.
        assert main(["sweep", *where, "--probes", "workload"]) == 1
        out = capsys.readouterr().out
        assert f"acceptance: {VLLM} blocked on pool mi300x-a" in out, out
        assert "accepted-again" not in out, out
        code = main(["acceptance", *where, "--workload", VLLM, "--json"])
        [state] = json.loads(capsys.readouterr().out)["states"]
        assert code == 1 and state["state"] == "blocked", state
        assert "not judged: a node it ran on was not healthy in sweep 2: sim002 FAIL: " in state["blocked"]["reason"]
        assert state["accepted"]["reason"] == "stack A", "the driver change is not accepted"
        # accept --workload refuses that sweep's run, and says which node and why (exit 2, nothing written).
        assert main(["accept", *where, "--workload", VLLM, "--sweep", "2", "--reason", "looks fine"]) == 2
        assert "sim002 FAIL: " in capsys.readouterr().err
        # Repaired: the rerun on healthy nodes accepts the new stack.
        write_live_faults(sim.state_dir, driver)
        sim.wait_for_generation(3)
        assert main(["sweep", *where, "--probes", "workload"]) == 0
        assert f"acceptance: {VLLM} accepted-again on pool mi300x-a" in capsys.readouterr().out
