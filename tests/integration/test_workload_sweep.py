"""``sweep --probes workload`` over real SSH against the simulator: a declared workload runs on each node
of its pool after the quick probes, and its figures, exit status and hangs are judged into the node's verdict."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from console.cli import main
from console.inventory import load_inventory
from console.model.workload import WorkloadSpec
from console.sim.launcher import start_sim_cluster
from console.sweep.workloads import leftovers, placements

SCENARIO = """time_factor = 400
[[nodes]]
names = "sim[001-004]"
model = "MI300X"
pool = "mi300x"
[[faults]]
nodes = "sim002"
kind = "rccl_low_busbw"
factor = 0.5
[[faults]]
nodes = "sim003"
kind = "rccl_hang"
"""
# A site workload the simulator can answer: an 8 GB all-reduce, judged on its average bus bandwidth.
WORKLOAD = """
[[workloads]]
name = "rccl-smoke"
pools = ["mi300x"]
timeout_s = 5
command = ["all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "8", "-c", "1"]

[workloads.results.regex]
busbw = '# Avg bus bandwidth\\s*:\\s*(\\S+)'

[[workloads.criteria]]
figure = "busbw"
fail_if = "< 80"
source = "accepted run on this pool: 110 GB/s average; fail at -27 %"
"""


def test_a_workload_sweep_judges_each_node_by_its_run(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO)
    with start_sim_cluster(scenario=scenario) as sim:
        cluster = tmp_path / "cluster.toml"
        cluster.write_text(sim.inventory_path.read_text() + WORKLOAD)
        report, junit = tmp_path / "r.json", tmp_path / "r.xml"
        args = ["sweep", "-i", str(cluster), "--probes", "workload", "--store", str(tmp_path / "h.sqlite")]
        code = main([*args, "--json", str(report), "--junit", str(junit)])
    nodes = {n["node"]: n for n in json.loads(report.read_text())["nodes"]}
    assert code == 1
    assert {name: n["status"] for name, n in nodes.items()} == {
        "sim001": "PASS",
        "sim002": "FAIL",
        "sim003": "UNKNOWN",
        "sim004": "PASS",
    }
    [slow] = [f for f in nodes["sim002"]["findings"] if f["family"] == "workload"]
    assert slow["check_id"] == "workload.rccl-smoke.busbw" and "(fail if < 80)" in slow["message"]
    [hung] = [f for f in nodes["sim003"]["findings"] if f["family"] == "workload"]
    assert hung["message"] == "rccl-smoke: did not finish within 5 s"
    suites = {s.get("name"): s for s in ET.parse(junit).getroot().iter("testsuite")}
    passed = [c.get("name") for c in suites["sim001"].iter("testcase") if str(c.get("name")).startswith("workload.")]
    assert sorted(str(name).split()[0] for name in passed) == ["workload.rccl-smoke.busbw", "workload.rccl-smoke.exit"]


def test_a_workload_sweep_needs_workloads_and_ssh(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = tmp_path / "c.toml"
    cluster.write_text('[[pools]]\nname = "a"\nnodes = "n1"\ngpu_model = "MI300X"\n')
    assert main(["sweep", "-i", str(cluster), "--probes", "workload"]) == 2
    assert "declares no [[workloads]]" in capsys.readouterr().err
    cluster.write_text(cluster.read_text() + WORKLOAD.replace('pools = ["mi300x"]', 'pools = ["a"]'))
    assert main(["sweep", "-i", str(cluster), "--probes", "workload", "--via-slurm"]) == 2
    assert "--via-slurm gathers the node probes only" in capsys.readouterr().err


def test_n_node_workloads_are_placed_in_whole_groups_of_a_pool(tmp_path: Path) -> None:
    cluster = tmp_path / "c.toml"
    cluster.write_text(
        '[[pools]]\nname = "a"\nnodes = "n[1-5]"\ngpu_model = "MI300X"\n'
        '[[pools]]\nname = "b"\nnodes = "m[1-2]"\ngpu_model = "MI355X"\n'
        + WORKLOAD.replace('pools = ["mi300x"]', "nodes = 2")
    )
    inventory = load_inventory(cluster)
    spec: WorkloadSpec = inventory.workloads["rccl-smoke"]
    groups = [[n.name for n in group] for _, group in placements([spec], inventory.nodes)]
    assert groups == [["n1", "n2"], ["n3", "n4"], ["m1", "m2"]]
    left = leftovers([spec], inventory.nodes)
    assert list(left) == ["n5"] and left["n5"][0].status.value == "UNKNOWN"
    assert "needs 2 nodes of pool a" in left["n5"][0].message
