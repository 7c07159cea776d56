"""``instinct-console sweep`` with the cluster-level flags: --probes multinode, --every/--count, --via-slurm."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from console.cli import main
from console.exitcodes import ExitCode
from console.sim.faults import FaultKind
from console.sim.specs import GpuModel
from console.store import Store
from tests.harness import slurm_lab
from tests.multinode.localnodes import local_cluster, per_node_launcher
from tests.multinode.simcluster import start_cluster

ROOT = Path(__file__).resolve().parents[2]


def test_multinode_sweep_reports_pairs_and_fails_the_culprit(tmp_path: Path) -> None:
    with start_cluster(4, GpuModel.MI300X, FaultKind.RCCL_LOW_BUSBW) as sim:
        (fault,) = sim.cluster().faults
        args = ["sweep", "-i", str(sim.inventory_path), "--probes", "multinode", "--store", str(tmp_path / "h.db")]
        code = main([*args, "--json", str(tmp_path / "r.json"), "--exclude-out", str(tmp_path / "bad")])
    report = json.loads((tmp_path / "r.json").read_text())
    jsonschema.validate(report, json.loads((ROOT / "schemas" / "sweep-report.schema.json").read_text()))
    assert code == ExitCode.FAILED and report["exit_code"] == 1
    assert (tmp_path / "bad").read_text().strip() == fault.node
    multinode = report["multinode"]
    assert [c["node"] for c in multinode["culprits"]] == [fault.node]
    # Its network-only run is not slow, and its own single-node run (standard level) is: inside the node.
    assert multinode["culprits"][0]["layer"] == "intra-node"
    evidence = multinode["culprits"][0]["layer_evidence"]
    assert "its network is fine" in evidence and "RCCL all_reduce in-place busbw" in evidence
    assert multinode["pools"][0]["reference"] == "sim001"
    assert {tuple(r["nodes"]) for r in multinode["runs"] if r["purpose"] == "group"} == {
        ("sim001", f"sim00{i}") for i in (2, 3, 4)
    }
    node = next(n for n in report["nodes"] if n["node"] == fault.node)
    pair = [f for f in node["findings"] if f["check_id"] == "rccl.multinode"]
    assert pair and pair[0]["status"] == "FAIL" and pair[0]["evidence"]["unit"] == "GB/s"
    assert report["counts"]["FAIL"] == 1 and report["counts"]["PASS"] == 3


def test_random_pairing_runs_nodes_with_each_other_and_the_second_pass_clears_the_partner(tmp_path: Path) -> None:
    with start_cluster(6, GpuModel.MI300X, FaultKind.RCCL_LOW_BUSBW) as sim:
        (fault,) = sim.cluster().faults
        args = ["sweep", "-i", str(sim.inventory_path), "--probes", "multinode", "--store", str(tmp_path / "h.db")]
        code = main([*args, "--pairing", "random", "--pairing-seed", "5", "--json", str(tmp_path / "r.json")])
    report = json.loads((tmp_path / "r.json").read_text())
    jsonschema.validate(report, json.loads((ROOT / "schemas" / "sweep-report.schema.json").read_text()))
    multinode = report["multinode"]
    assert code == ExitCode.FAILED and (multinode["pairing"], multinode["seed"]) == ("random", 5)
    first = [r for r in multinode["runs"] if r["purpose"] == "pair"]
    assert len(first) == 3 and sorted(n for r in first for n in r["nodes"]) == [f"sim00{i}" for i in range(1, 7)]
    (broken,) = [r for r in first if fault.node in r["nodes"]]
    partner = next(n for n in broken["nodes"] if n != fault.node)
    second = {r["nodes"][1]: r for r in multinode["runs"] if r["purpose"] == "confirm"}
    assert sorted(second) == sorted(broken["nodes"])  # both nodes of the failed pair, each with a good node
    assert second[partner]["status"] == "PASS" and second[fault.node]["status"] == "FAIL"
    assert [c["node"] for c in multinode["culprits"]] == [fault.node]
    assert {s["node"]: s["status"] for s in multinode["stragglers"]}[partner] == "PASS"
    assert report["counts"]["FAIL"] == 1 and report["counts"]["PASS"] == 5


def test_every_and_count_record_each_sweep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with start_cluster(2, GpuModel.MI355X) as sim:
        args = ["sweep", "-i", str(sim.inventory_path), "--store", str(tmp_path / "h.db")]
        code = main([*args, "--every", "0.5", "--count", "2", "--prom", str(tmp_path / "m.prom")])
    assert code == ExitCode.OK
    out = capsys.readouterr().out
    assert out.count(": 2 nodes in ") == 2
    store = Store(tmp_path / "h.db")
    try:
        sweeps = store.sweeps()
        assert len(sweeps) == 2 and {row["status"] for row in sweeps} == {"done"}
        assert sweeps[0]["started_at"] - sweeps[1]["started_at"] >= 0.45
    finally:
        store.close()
    assert 'status="PASS"} 2' in (tmp_path / "m.prom").read_text()


def test_count_without_every_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inventory = tmp_path / "inv.toml"
    inventory.write_text('[[pools]]\nname = "p"\ngpu_model = "MI300X"\nnodes = "gpu001"\n')
    assert main(["sweep", "-i", str(inventory), "--count", "2", "--store", str(tmp_path / "h.db")]) == ExitCode.USAGE
    assert "--count needs --every" in capsys.readouterr().err


def test_via_slurm_sweep_on_a_real_slurm_lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with slurm_lab.SlurmLab(2) as lab:
        inventory = local_cluster(tmp_path, list(lab.nodes))
        monkeypatch.setenv("SLURM_CONF", lab.env["SLURM_CONF"])
        argv = [
            "sweep", "-i", str(inventory), "--via-slurm", "--slurm-command", str(per_node_launcher(tmp_path)),
            "--store", str(tmp_path / "h.db"), "--json", str(tmp_path / "r.json"),
        ]  # fmt: skip
        code = main(argv)
        report = json.loads((tmp_path / "r.json").read_text())
        store = Store(tmp_path / "h.db")
        try:
            # The nodes judged themselves and sent their verdicts: PASS findings as counts, no raw outputs.
            first = store.latest_sweep_id()
            assert first is not None and store.latest_probe_run(lab.nodes[1], "amdsmi.metric") is None
            assert sum(store.passed_counts(first, lab.nodes[1]).values()) > 200
            # --slurm-raw: every node sends its outputs too, judged and kept here.
            assert main([*argv, "--slurm-raw"]) == ExitCode.OK
            assert store.latest_probe_run(lab.nodes[1], "amdsmi.metric") is not None
            assert store.finding_totals(first) == store.finding_totals(first + 1)
        finally:
            store.close()
    assert code == ExitCode.OK, report
    assert [(n["node"], n["status"]) for n in report["nodes"]] == [(name, "PASS") for name in lab.nodes]
