"""Workload acceptance on the simulator, over real SSH: accept the vLLM example on stack A; a driver
change makes it due; the rerun is accepted again; an older ROCm line slows it and the rerun regresses,
with the figures and the stack change side by side; CI gates on ``acceptance`` exit codes."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from console.cli import main
from console.sim.faults import Fault, FaultKind
from console.sim.launcher import start_sim_cluster
from console.sim.scenario import write_live_faults
from console.store import Store
from tests.documented import workload_blocks

SCENARIO = """time_factor = 400
[[nodes]]
names = "sim[001-002]"
model = "MI300X"
pool = "mi300x-a"
"""
VLLM = "vllm-llama3-8b-serving"


def _vllm_example() -> str:
    [block] = [b for b in workload_blocks() if f'name = "{VLLM}"' in b]
    return block


def _states(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, dict[str, object]]]:
    capsys.readouterr()
    code = main(["acceptance", *args, "--workload", VLLM, "--json"])
    states = json.loads(capsys.readouterr().out)["states"]
    return code, {s["pool"]: s for s in states}


def test_accepted_due_accepted_again_regressed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO)
    store_path = tmp_path / "h.sqlite"
    with start_sim_cluster(scenario=scenario) as sim:
        cluster = tmp_path / "cluster.toml"
        cluster.write_text(sim.inventory_path.read_text() + "\n" + _vllm_example())
        where = ["-i", str(cluster), "--store", str(store_path)]

        def sweep(probes: str) -> int:
            return main(["sweep", *where, "--probes", probes])

        def drift(generation: int, *faults: tuple[FaultKind, dict[str, str]]) -> None:
            nodes = ("sim001", "sim002")
            write_live_faults(sim.state_dir, [Fault(node=n, kind=k, params=p) for k, p in faults for n in nodes])
            sim.wait_for_generation(generation)

        assert sweep("workload") == 0
        code, states = _states(capsys, *where)
        assert code == 0 and states["mi300x-a"]["state"] == "not-accepted"
        assert main(["acceptance", *where, "--workload", VLLM, "--require-accepted"]) == 1
        # The first acceptance is an operator's, with the reason for it.
        assert main(["accept", *where, "--workload", VLLM, "--reason", "validation of stack A"]) == 0
        code, states = _states(capsys, *where)
        accepted = states["mi300x-a"]["accepted"]
        assert code == 0 and states["mi300x-a"]["state"] == "accepted"
        assert isinstance(accepted, dict) and accepted["reason"] == "validation of stack A"
        stack_a = accepted["stack"]
        assert isinstance(stack_a, dict) and stack_a["rocm"] and stack_a["amdgpu_driver"]
        assert set(accepted["figures"]) >= {"request_throughput"}  # type: ignore[arg-type]

        # Stack B: a new amdgpu driver on both nodes. A quick sweep reads it: the workload is due.
        driver = (FaultKind.DRIVER_DRIFT, {"amdgpu": "6.14.4"})
        drift(2, driver)
        assert sweep("quick") == 0
        code, states = _states(capsys, *where)
        assert code == 0 and states["mi300x-a"]["state"] == "due"
        assert states["mi300x-a"]["changes"] == {
            "amdgpu_driver": {"accepted": stack_a["amdgpu_driver"], "current": "6.14.4"}
        }
        assert main(["acceptance", *where, "--workload", VLLM, "--require-accepted"]) == 1
        # The rerun passes on B: accepted again, and B is the accepted stack.
        assert sweep("workload") == 0
        code, states = _states(capsys, *where)
        assert code == 0 and states["mi300x-a"]["state"] == "accepted-again"
        assert states["mi300x-a"]["accepted"]["stack"]["amdgpu_driver"] == "6.14.4"  # type: ignore[index]

        # Stack C: an older ROCm line, which slows vLLM on the simulator: the rerun regresses.
        rocm = (FaultKind.ROCM_DRIFT, {"rocm": "6.2.2"})
        drift(3, driver, rocm)
        assert sweep("workload") == 1
        junit = tmp_path / "acceptance.xml"
        code, states = _states(capsys, *where, "--junit", str(junit))
        regressed = states["mi300x-a"]
        assert code == 1 and regressed["state"] == "regressed"
        assert regressed["changes"] == {"rocm": {"accepted": stack_a["rocm"], "current": "6.2.2"}}
        before = regressed["accepted"]["figures"]["request_throughput"]  # type: ignore[index]
        after = regressed["regressed"]["figures"]["request_throughput"]  # type: ignore[index]
        assert after < 0.9 * before, "figures side by side: the rerun is slower than the accepted run"
        # Its trend: every kept run on the pool (stack A, B, then C), the newest one down.
        trend = regressed["trend"]
        assert [r["status"] for r in trend["runs"]] == ["PASS", "PASS", "FAIL"]  # type: ignore[index]
        throughput = trend["figures"]["request_throughput"]  # type: ignore[index]
        assert throughput["direction"] == "down" and throughput["values"][-1] == after
        assert regressed["running"] is None and regressed["settled_state"] == "regressed"
        [failure] = ET.parse(junit).getroot().iter("failure")
        since = regressed["failing_since"]
        assert failure.get("message") == f"{VLLM} on mi300x-a: regressed failing since run #{since}"
        assert "rocm" in str(failure.text)

        # The way back. Read-only refuses it (audited); the dry run pins the last accepted stack (B) and
        # holds nothing: both nodes are off it, and the console installs no packages.
        back = ["rollback", *where, "--pool", "mi300x-a", "--reason", "vLLM regressed on ROCm 6.2"]
        assert main([*back, "--read-only", "--apply", "--yes"]) == 1
        capsys.readouterr()
        assert main([*back, "--json"]) == 0
        plan = json.loads(capsys.readouterr().out)["plan"]
        assert plan["refused"] is None and plan["commands"] == []
        assert plan["decisions"]["sim001"].startswith("skip: off its pin (rocm 6.2.2, pin 6.4.1")
        assert any(n.startswith(f"back to the stack {VLLM} was accepted-again on") for n in plan["notes"])
        assert any(n.startswith("then rerun the workloads due on mi300x-a (vllm") for n in plan["notes"])
        assert main([*back, "--apply", "--yes"]) == 0
        # The site puts ROCm 6.4.1 back: the dry run now holds the pinned packages on both nodes.
        drift(4, driver)
        assert sweep("quick") == 0
        capsys.readouterr()
        assert main([*back, "--json"]) == 0
        plan = json.loads(capsys.readouterr().out)["plan"]
        assert [c[:2] for c in plan["commands"]] == [["apt-mark", "hold"]] * 2
        code, states = _states(capsys, *where, "--require-accepted")
        assert code == 0 and states["mi300x-a"]["state"] == "accepted-again"

        # A new image in the cluster file makes it due; rolling back sets the pool's image back, and the
        # next run uses the accepted one.
        accepted_image = states["mi300x-a"]["current_stack"]["image"]  # type: ignore[index]
        cluster.write_text(cluster.read_text().replace(str(accepted_image), "rocm/vllm:0.9.9-rocm6.4.1"))
        code, states = _states(capsys, *where)
        assert states["mi300x-a"]["state"] == "due" and set(states["mi300x-a"]["changes"]) == {"image"}  # type: ignore[arg-type]
        # Both nodes are on the accepted stack now, so the holds run too: the simulator has no apt-mark.
        assert main([*back, "--apply", "--yes"]) == 1
        code, states = _states(capsys, *where)
        assert states["mi300x-a"]["state"] == "accepted-again"
        assert states["mi300x-a"]["current_stack"]["image"] == accepted_image  # type: ignore[index]
        assert sweep("workload") == 0

    store = Store(store_path)
    try:
        outcomes = [r.outcome for r in store.acceptance_history(VLLM, "mi300x-a")]
        pin = store.pin("mi300x-a")
        rows = store.conn.execute("SELECT action, inputs, outcome FROM audit ORDER BY id").fetchall()
        [last_run] = store.conn.execute(
            "SELECT command FROM probe_runs WHERE probe = ? ORDER BY id DESC LIMIT 1", (f"workload.{VLLM}",)
        ).fetchall()
        audit = [json.loads(r["inputs"]) for r in rows if r["action"] == "accept"]
        rollbacks = [r["outcome"] for r in rows if r["action"] == "rollback"]
    finally:
        store.close()
    # The last: the rerun after the rollback, on the accepted stack (B), says the way back worked.
    assert outcomes == ["accepted", "accepted-again", "regressed", "accepted-again"], "every record, in order"
    assert [a.get("outcome", "accepted") for a in audit] == outcomes, "the audit log tells the same story"
    assert (pin["rocm"], pin["amdgpu_driver"]) == ("6.4.1", "6.14.4"), "pinned back to the last accepted stack"
    assert rollbacks[0].startswith("refused: read-only") and rollbacks[1].startswith("pool mi300x-a pinned back")
    assert f"images of {VLLM} set back; holds failed: " in rollbacks[2] and "apt-mark" in rollbacks[2]
    assert "rocm/vllm@sha256:" in last_run["command"] and "0.9.9" not in last_run["command"]


# The pool's framework container on stack A, and stack B's image, whose torch build is slower on the simulator.
IMAGE_A = "docker.io/rocm/pytorch@sha256:" + "a1" * 32
IMAGE_B = "docker.io/rocm/pytorch@sha256:" + "b2" * 32


def _with_framework_container(inventory: str, pool: str, image: str) -> str:
    """The simulator's cluster file with ``[pools.framework]`` in ``pool``'s table (before its pin)."""
    at = inventory.index("[pools.pin]", inventory.index(f'name = "{pool}"'))
    table = f'[pools.framework]\ncontainer = {{ runtime = "podman", image = "{image}" }}\n\n'
    return inventory[:at] + table + inventory[at:]


def test_the_framework_container_regresses_on_a_new_image_and_rollback_sets_the_accepted_one_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO)
    store_path = tmp_path / "h.sqlite"
    with start_sim_cluster(scenario=scenario) as sim:
        cluster = tmp_path / "cluster.toml"
        cluster.write_text(_with_framework_container(sim.inventory_path.read_text(), "mi300x-a", IMAGE_A))
        where = ["-i", str(cluster), "--store", str(store_path)]

        def framework(*args: str) -> dict[str, object]:
            capsys.readouterr()
            assert main(["acceptance", *where, "--workload", "framework", "--json", *args]) in (0, 1)
            [state] = json.loads(capsys.readouterr().out)["states"]
            return dict(state)

        def sweep(*args: str) -> int:
            return main(["sweep", *where, "--probes", "framework", *args])

        assert sweep() == 0
        assert main(["accept", *where, "--workload", "framework", "--reason", "torch in image A"]) == 0
        accepted = framework()
        assert accepted["state"] == "accepted" and accepted["accepted"]["stack"]["image"] == IMAGE_A  # type: ignore[index]

        # Stack B: the pool's framework image in the cluster file, whose torch GEMM is slower on GPU 0.
        cluster.write_text(cluster.read_text().replace(IMAGE_A, IMAGE_B))
        slow = {"factor": 0.3, "image": IMAGE_B}
        write_live_faults(
            sim.state_dir,
            [Fault(node=n, kind=FaultKind.TORCH_GEMM_SLOW, gpu=0, params=slow) for n in ("sim001", "sim002")],
        )
        sim.wait_for_generation(2)
        due = framework()
        assert due["state"] == "due" and due["changes"] == {"image": {"accepted": IMAGE_A, "current": IMAGE_B}}
        assert sweep() == 1
        regressed = framework()
        assert regressed["state"] == "regressed" and regressed["regressed"]["stack"]["image"] == IMAGE_B  # type: ignore[index]

        # The way back: the dry run says which image the framework goes back to, then it is done for real.
        back = ["rollback", *where, "--pool", "mi300x-a", "--workload", "framework", "--reason", "slow GEMM in B"]
        capsys.readouterr()
        assert main([*back, "--json"]) == 0
        plan = json.loads(capsys.readouterr().out)["plan"]
        assert f"image of framework: {IMAGE_B} -> {IMAGE_A}" in plan["notes"]
        assert any(n.endswith("(framework): sweep --probes framework") for n in plan["notes"])
        # Both nodes are on the pinned packages, so the holds run too: the simulator has no apt-mark.
        assert main([*back, "--apply", "--yes"]) == 1
        assert framework()["current_stack"]["image"] == IMAGE_A  # type: ignore[index]
        # The rerun, in process then in an engine worker process: both run image A, and it is accepted again.
        assert sweep("--workers", "0") == 0
        assert framework()["state"] == "accepted-again"
        assert sweep("--workers", "1") == 0
        assert framework()["state"] == "accepted-again"

    store = Store(store_path)
    try:
        outcomes = [r.outcome for r in store.acceptance_history("framework", "mi300x-a")]
        rows = store.conn.execute("SELECT action, inputs, outcome FROM audit ORDER BY id").fetchall()
        commands = [
            r["command"]
            for r in store.conn.execute(
                "SELECT command FROM probe_runs WHERE probe = 'framework.torch' AND node = 'sim001' ORDER BY id"
            )
        ]
    finally:
        store.close()
    assert outcomes == ["accepted", "regressed", "accepted-again"], "the rerun after the rollback is accepted again"
    told = [(r["action"], json.loads(r["inputs"]).get("outcome", "")) for r in rows if r["action"] != "hostkey"]
    assert told == [("accept", ""), ("accept", "regressed"), ("rollback", ""), ("accept", "accepted-again")]
    [rolled] = [r["outcome"] for r in rows if r["action"] == "rollback"]
    assert "images of framework set back" in rolled
    assert [IMAGE_A in c for c in commands] == [True, False, True, True], "A, then B, then A in and out of process"
