"""``sweep --probes workload`` over real SSH against the simulator: a declared workload runs on each node
of its pool after the quick probes, and its figures, exit status and hangs are judged into the node's verdict."""

from __future__ import annotations

import json
import sqlite3
import xml.etree.ElementTree as ET
from contextlib import closing
from itertools import pairwise
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


# A pair workload the simulator answers through srun (tests/integration/test_never_false_pass.py).
PAIR_WORKLOAD = """
[[workloads]]
name = "pair-train"
pools = ["mi300x"]
nodes = 2
timeout_s = 8
command = ["python3", "/shared/smoke/train.py", "--steps", "100", "--report-prefix", "RESULT "]
[workloads.results]
json_prefix = "RESULT "
[[workloads.criteria]]
figure = "tokens_per_s"
fail_if = "< 40000"
source = "the simulator's MI300X pair: 51234 tok/s"
"""
HEALTHY = """time_factor = 400
[[nodes]]
names = "sim[001-003]"
model = "MI300X"
pool = "mi300x"
"""


def _workload_runs(store_path: Path) -> list[tuple[str, float, float]]:
    """(node, start, end) of each workload run the sweep kept, by start."""
    with closing(sqlite3.connect(store_path)) as conn:
        rows = conn.execute(
            "SELECT node, started_at, duration_s FROM probe_runs WHERE probe LIKE 'workload.%' ORDER BY started_at"
        ).fetchall()
    return [(node, start, start + duration) for node, start, duration in rows]


def test_a_workload_sweep_holds_no_more_of_a_pool_at_once_than_the_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--cap 1: every node still runs the workload, one after the other (a run starts only once the one
    before has ended); a pair cannot fit under a cap of 1 and is not run, UNKNOWN, until --force."""
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(HEALTHY)
    with start_sim_cluster(scenario=scenario) as sim:
        cluster = tmp_path / "cluster.toml"
        cluster.write_text(sim.inventory_path.read_text() + WORKLOAD)
        store = tmp_path / "h.sqlite"
        report = tmp_path / "r.json"
        args = ["sweep", "-i", str(cluster), "--probes", "workload", "--store", str(store), "--json", str(report)]
        assert main([*args, "--cap", "1"]) == 0
        assert "cap: pool mi300x: at most 1 nodes run it at once (cap 1 set for pool mi300x)" in capsys.readouterr().err
        runs = _workload_runs(store)
        assert sorted(node for node, _, _ in runs) == ["sim001", "sim002", "sim003"]
        # time.time() starts and monotonic durations: allow their drift, far under any run's length.
        assert all(later[1] >= earlier[2] - 0.01 for earlier, later in pairwise(runs)), runs

        cluster.write_text(sim.inventory_path.read_text() + PAIR_WORKLOAD)
        pair_store = tmp_path / "pair.sqlite"
        args = ["sweep", "-i", str(cluster), "--probes", "workload", "--store", str(pair_store), "--json", str(report)]
        assert main([*args, "--cap", "1", "--nodes", "sim[001-002]"]) == 3
        [node] = [n for n in json.loads(report.read_text())["nodes"] if n["node"] == "sim001"]
        [refused] = [f for f in node["findings"] if f["family"] == "workload"]
        assert refused["status"] == "UNKNOWN" and "blast-radius cap allows 1 now" in refused["message"]
        assert _workload_runs(pair_store) == [], "nothing ran"
        assert main([*args, "--cap", "1", "--nodes", "sim[001-002]", "--force"]) == 0
        assert [node for node, _, _ in _workload_runs(pair_store)] == ["sim001"]
