"""Scenario files, and a running fleet changed between sweeps: inject, repair, edit, and what was injected."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest

from console.checks import load_packs
from console.inventory import load_inventory
from console.model.findings import Status
from console.sim.faults import FaultKind
from console.sim.launcher import SimCluster, start_sim_cluster
from console.sim.scenario import ScenarioError, load_scenario
from console.sim.serve import ServeOptions, plan_cluster
from console.sweep import SweepEngine
from console.transport.connect import transport_for

DOCS = Path(__file__).resolve().parents[2] / "docs" / "scenarios"


def _options(scenario: Path) -> ServeOptions:
    return ServeOptions(state_dir=Path("/nonexistent"), scenario=scenario)


def test_the_documented_examples_load_and_plan() -> None:
    drill = plan_cluster(_options(DOCS / "triage-drill.toml"))
    assert [n.name for n in drill.cluster.nodes] == [f"sim{i:03d}" for i in range(1, 13)]
    assert [(p.name, p.gpu_model, len(p.nodes)) for p in drill.pools] == [
        ("mi300x-a", "MI300X", 8),
        ("mi355x-a", "MI355X", 4),
    ]
    by_node = {f.node: f for f in drill.cluster.faults}
    assert by_node["sim004"].kind is FaultKind.IGNORES_SIGTERM and by_node["sim004"].params == {"args": "list"}
    assert (by_node["sim002"].gpu, by_node["sim002"].peer) == (2, 5)
    old = plan_cluster(_options(DOCS / "old-amd-smi.toml"))
    assert {n.stack.rocm for n in old.cluster.nodes} == {"6.2.2"}
    assert old.pools[0].nic_rate_gbps == 400


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ('[[nodes]]\nnames = "n[1-2]"\n[[nodes]]\nnames = "n2"\n', "n2 is in two [[nodes]] groups"),
        ('[[nodes]]\nnames = "n1"\n[[faults]]\nnodes = "n9"\nkind = "gpu_missing"\ngpu = 1\n', "names n9"),
        ('[[nodes]]\nnames = "n1"\n[[faults]]\nnodes = "n1"\nkind = "meltdown"\n', "faults.0.kind"),
        ('[[nodes]]\nnames = "n1"\n[[faults]]\nnodes = "n1"\nkind = "gpu_missing"\n', "needs a gpu"),
        ('[[nodes]]\nnames = "n1"\nmodel = "MI999"\n', "nodes.0.model"),
        ("nodes = [", "not TOML"),
    ],
)
def test_a_scenario_that_cannot_be_served_is_refused_in_one_line(tmp_path: Path, text: str, complaint: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ScenarioError, match=r"bad\.toml") as refused:
        load_scenario(path)
    assert complaint in str(refused.value) and "\n" not in str(refused.value)
    served = subprocess.run(
        [sys.executable, "-m", "console", "sim", "serve", "--scenario", str(path), "--state-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert served.returncode == 2 and complaint in served.stderr and "Traceback" not in served.stderr


async def _sweep(sim: SimCluster, node: str) -> tuple[Status, str]:
    inventory = load_inventory(sim.inventory_path)
    engine = SweepEngine(inventory, transport_for(inventory), load_packs(), steady_max_age_s=0)
    try:
        verdict = (await engine.run([inventory.node(node)])).verdicts[node]
    finally:
        await engine.close()
    return verdict.status, verdict.reason


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "console", *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_faults_injected_and_repaired_between_sweeps_show_in_the_next_sweep(tmp_path: Path) -> None:
    scenario = tmp_path / "fleet.toml"
    scenario.write_text('time_factor = 400\n[[nodes]]\nnames = "sim[001-002]"\n')
    with start_sim_cluster(scenario=scenario) as sim:
        state = str(sim.state_dir)
        assert sim.injected() == (1, [])
        assert asyncio.run(_sweep(sim, "sim002"))[0] is Status.PASS
        # A storm: correctable ECC on both nodes, from the command line.
        added = _cli(
            "sim", "inject", "sim[001-002]", "--kind", "ecc_correctable_storm", "--gpu", "4", "--state-dir", state
        )
        assert added.returncode == 0, added.stderr
        assert added.stdout == (  # said, not silent: what went on which node
            "injected ecc_correctable_storm on sim001 GPU 4\ninjected ecc_correctable_storm on sim002 GPU 4\n"
        )
        assert {(f.node, f.kind, f.gpu) for f in sim.wait_for_generation(2)} == {
            ("sim001", FaultKind.ECC_CORRECTABLE_STORM, 4),
            ("sim002", FaultKind.ECC_CORRECTABLE_STORM, 4),
        }
        status, reason = asyncio.run(_sweep(sim, "sim002"))
        assert status is Status.WARN and "gpu4" in reason and "Correctable ECC" in reason
        # Repaired on one node; the other keeps it.
        assert _cli("sim", "repair", "sim002", "--state-dir", state).returncode == 0
        assert [f.node for f in sim.wait_for_generation(3)] == ["sim001"]
        assert asyncio.run(_sweep(sim, "sim002"))[0] is Status.PASS
        # Editing the scenario file itself is applied too (the live overlay stays on top).
        scenario.write_text(
            'time_factor = 400\n[[nodes]]\nnames = "sim[001-002]"\n'
            '[[faults]]\nnodes = "sim002"\nkind = "ignores_sigterm"\nargs = "firmware"\n'
        )
        assert {(f.node, f.kind) for f in sim.wait_for_generation(4)} == {
            ("sim002", FaultKind.IGNORES_SIGTERM),
            ("sim001", FaultKind.ECC_CORRECTABLE_STORM),
        }
        assert "faults" in _cli("sim", "faults", "--state-dir", state).stdout
        # A repair cannot remove a scenario's fault, and says so rather than nothing.
        kept = _cli("sim", "repair", "sim002", "--state-dir", state)
        assert kept.returncode == 0 and kept.stdout.startswith("removed 0 live faults\n")
        assert "still served: ignores_sigterm on sim002" in kept.stdout
        assert f"from the scenario file {scenario.resolve()}; edit it" in kept.stdout
        unknown = _cli("sim", "inject", "sim009", "--kind", "gpu_missing", "--gpu", "1", "--state-dir", state)
        assert unknown.returncode == 2 and "sim009" in unknown.stderr
        # A GPU fault's slot is --gpu, not a parameter: the refusal says so and names the fault.
        slotless = _cli("sim", "inject", "sim001", "--kind", "cper_flood", "--param", "gpu=3", "--state-dir", state)
        assert slotless.returncode == 2 and slotless.stderr == (
            "instinct-console sim inject: cper_flood is a gpu fault: give its GPU slot with --gpu N"
            " (--param gpu=... is a fault parameter, not the slot)\n"
        )
        peerless = _cli("sim", "inject", "sim001", "--kind", "xgmi_link_down", "--gpu", "1", "--state-dir", state)
        assert peerless.returncode == 2 and "xgmi_link_down is a link fault" in peerless.stderr
        assert "--peer N" in peerless.stderr


def test_a_repair_names_the_faults_option_a_fault_came_from_when_there_is_no_scenario() -> None:
    """`sim serve` with its default `--faults demo`: no scenario file to edit, so the repair says which
    option planned the fault it cannot remove, and how to serve without it."""
    with start_sim_cluster(2, faults="demo", seed=3, time_factor=400) as sim:
        _, planned = sim.injected()
        node = planned[0].node
        kept = _cli("sim", "repair", node, "--state-dir", str(sim.state_dir))
    assert kept.returncode == 0 and kept.stdout.startswith("removed 0 live faults\n"), kept.stderr
    assert f"still served: {planned[0].describe()}" in kept.stdout
    assert "from sim serve --faults demo (seed 3), not from sim inject" in kept.stdout
    assert "--faults none" in kept.stdout and "come from the scenario file" not in kept.stdout


def test_the_scenario_names_the_cluster_unless_the_option_is_given(tmp_path: Path) -> None:
    scenario = tmp_path / "trial.toml"
    scenario.write_text('name = "trial"\n[[nodes]]\nnames = "sim001"\n')
    assert plan_cluster(_options(scenario)).cluster.name == "trial"
    explicit = ServeOptions(state_dir=Path("/nonexistent"), scenario=scenario, name="lab")
    assert plan_cluster(explicit).cluster.name == "lab"


def test_a_broken_edit_keeps_the_last_good_state_and_says_so(tmp_path: Path) -> None:
    scenario = tmp_path / "fleet.toml"
    scenario.write_text('name = "trial"\ntime_factor = 400\n[[nodes]]\nnames = "sim001"\n')
    with start_sim_cluster(scenario=scenario) as sim:
        # The inventory `sim serve` writes carries the scenario's name (an operator's walk-through found "sim").
        assert load_inventory(sim.inventory_path).name == "trial"
        scenario.write_text("[[nodes]\n")
        deadline = time.monotonic() + 10
        while "not applied" not in sim.log_path.read_text():
            assert time.monotonic() < deadline, "the simulator never said the edit was refused"
            time.sleep(0.05)
        assert "fleet.toml: not TOML" in sim.log_path.read_text()
        assert sim.injected() == (1, [])
        assert asyncio.run(_sweep(sim, "sim001"))[0] is Status.PASS


def test_the_demo_opens_on_a_scenario_file() -> None:
    done = _cli("demo", "--headless", "--probes", "quick", "--scenario", str(DOCS / "triage-drill.toml"))
    out = done.stdout
    assert done.returncode == 1, done.stderr[-2000:]
    for node, words in {
        "sim002": "XGMI link: down",
        "sim003": "Uncorrectable ECC",
        "sim004": "amdsmi.list",  # the compact summary names the probe; --verbose the command
        "sim005": "RDMA port rate: 200 Gb/s",
        "sim011": "refused",
    }.items():
        block = out.split(node, 1)[1].split("\n  ", 1)[0] if node in out else ""
        assert node in out and words in out.split(node, 1)[1][:4000], (node, block)
