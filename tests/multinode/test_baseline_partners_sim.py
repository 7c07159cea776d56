"""The multinode level on the simulator, headless, over real SSH: a second-pass partner borrowed from the
accepted baseline, pairing by switch labels, and the report saying which run convicted or cleared whom.

Scenario: two racks of three MI300X nodes, each rack on its own leaf switch; sim002 has a slow NIC.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from console.cli import main
from console.exitcodes import ExitCode
from console.sim.launcher import start_sim_cluster
from console.store import Store

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "schemas" / "sweep-report.schema.json").read_text())


def _scenario(tmp_path: Path, faults: str) -> Path:
    groups = "".join(
        f'[[nodes]]\nnames = "{names}"\nmodel = "MI300X"\npool = "mi300x"\n'
        f'labels = {{ rack = "{rack}", switch = "{switch}" }}\n\n'
        for names, rack, switch in (("sim[001-003]", "r01", "sw1"), ("sim[004-006]", "r02", "sw2"))
    )
    path = tmp_path / "fabric.toml"
    path.write_text(f'name = "fabric"\nseed = 2\ntime_factor = 400\n\n{groups}{faults}', encoding="utf-8")
    return path


SLOW_NIC = '[[faults]]\nnodes = "sim002"\nkind = "nic_slow"\n'


def _report(path: Path) -> dict:  # type: ignore[type-arg]
    report = json.loads(path.read_text())
    jsonschema.validate(report, SCHEMA)
    return report  # type: ignore[no-any-return]


@pytest.mark.parametrize("pairing", ["switch", "reference"])
def test_a_two_node_sweep_borrows_its_second_pass_partner_from_the_accepted_baseline(
    tmp_path: Path, pairing: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "h.db")
    with start_sim_cluster(scenario=_scenario(tmp_path, SLOW_NIC), time_factor=400) as sim:
        inv = str(sim.inventory_path)
        assert main(["sweep", "-i", inv, "--store", db]) == ExitCode.FAILED  # sim002's NIC fails its own check
        # Accepted knowing sim002 fails: the operator's deliberate --allow-failing (refused without).
        assert main(["accept", "-i", inv, "--store", db, "--reason", "fleet baseline"]) == ExitCode.USAGE
        assert main(["accept", "-i", inv, "--store", db, "--reason", "fleet baseline", "--allow-failing"]) == 0
        args = ["sweep", "-i", inv, "--store", db, "--nodes", "sim[001-002]", "--probes", "multinode"]
        code = main([*args, "--pairing", pairing, "--json", str(tmp_path / "r.json")])
    capsys.readouterr()
    assert code == ExitCode.FAILED
    report = _report(tmp_path / "r.json")
    multinode = report["multinode"]
    assert multinode["label"] == ("switch" if pairing == "switch" else None)
    (pool,) = multinode["pools"]
    # The baseline is sweep 1; its PASS nodes not swept now may partner. Only sim003 was needed: the
    # borrowed partner of a node of switch sw1 is taken from sw1 when one is there.
    assert pool["baseline_sweep"] == 1 and pool["borrowed"] == ["sim003"]
    runs = multinode["runs"]
    assert {r["topology"] for r in runs} == {"rack r01; switch sw1"}
    borrowed = [r for r in runs if r["partner_from"] == "baseline sweep #1"]
    assert borrowed and all(r["nodes"][0] == "sim003" and r["purpose"] == "confirm" for r in borrowed)
    (culprit,) = multinode["culprits"]
    assert culprit["node"] == "sim002"
    assert "second-pass partner sim003 (known-good from baseline sweep #1)" in culprit["reason"]
    mode = "switch pairing (pairs within a switch)" if pairing == "switch" else "reference pairing (each node"
    assert culprit["found_by"].startswith(mode)
    assert "with sim003 (known-good from baseline sweep #1; rack r01; switch sw1): FAIL" in culprit["found_by"]
    # Every node's standing says which runs convicted or cleared it.
    standing = {s["node"]: s for s in multinode["stragglers"]}
    assert standing["sim002"]["how"].startswith("convicted by #1 ")
    assert standing["sim002"]["decided_by"] == culprit["runs"] and len(culprit["runs"]) == 2
    if pairing == "switch":
        # Its pair failed; its second pass with sim003 (from the baseline) cleared it.
        assert standing["sim001"]["status"] == "PASS" and standing["sim001"]["how"].startswith("cleared by ")
        assert all(runs[seq - 1]["status"] == "PASS" for seq in standing["sim001"]["decided_by"])
        assert "known-good from baseline sweep #1" in standing["sim001"]["how"]
    else:
        # The reference's one run was with sim002, which failed with sim003 (from the baseline) too.
        assert pool["reference"] == "sim001" and standing["sim001"]["status"] == "PASS"
        assert standing["sim001"]["decided_by"] == [] and "its only runs were with sim002" in standing["sim001"]["how"]
    # The borrowed node is a partner, not a node of this sweep: no verdict, no standing.
    assert "sim003" not in standing and {n["node"] for n in report["nodes"]} == {"sim001", "sim002"}


def test_without_a_baseline_the_two_node_sweep_cannot_confirm_and_says_so(tmp_path: Path) -> None:
    with start_sim_cluster(scenario=_scenario(tmp_path, SLOW_NIC), time_factor=400) as sim:
        args = ["sweep", "-i", str(sim.inventory_path), "--store", str(tmp_path / "h.db"), "--nodes", "sim[001-002]"]
        code = main([*args, "--probes", "multinode", "--pairing", "switch", "--json", str(tmp_path / "r.json")])
    assert code == ExitCode.FAILED
    multinode = _report(tmp_path / "r.json")["multinode"]
    assert multinode["pools"][0]["borrowed"] == [] and multinode["culprits"] == []
    assert {s["node"]: s["status"] for s in multinode["stragglers"]} == {"sim001": "UNKNOWN", "sim002": "UNKNOWN"}


def test_a_slow_nic_and_a_slow_rack_uplink_are_each_named_with_the_mode_and_runs_that_found_them(
    tmp_path: Path,
) -> None:
    uplink = '[[faults]]\nnodes = "sim[004-006]"\nkind = "uplink_slow"\nuplink = "r02"\n'
    with start_sim_cluster(scenario=_scenario(tmp_path, SLOW_NIC + uplink), time_factor=400) as sim:
        args = ["sweep", "-i", str(sim.inventory_path), "--store", str(tmp_path / "h.db"), "--probes", "multinode"]
        code = main([*args, "--json", str(tmp_path / "r.json")])
    assert code == ExitCode.FAILED
    multinode = _report(tmp_path / "r.json")["multinode"]
    (nic,) = multinode["culprits"]
    (rack,) = multinode["racks"]
    assert nic["node"] == "sim002" and nic["found_by"].startswith("reference pairing")
    assert rack["rack"] == "r02" and rack["found_by"].startswith("reference pairing")
    assert "rack pass" in rack["found_by"]
    runs = multinode["runs"]
    # Runs say where their nodes sit: the uplink's convicting runs all cross from rack r01 to r02.
    crossing = [runs[seq - 1] for seq in rack["runs"] if runs[seq - 1]["status"] == "FAIL"]
    assert crossing and all(r["topology"] == "rack r01 and r02; switch sw1 and sw2" for r in crossing)
    standing = {s["node"]: s for s in multinode["stragglers"]}
    assert standing["sim002"]["how"].startswith("convicted by ")
    assert all(standing[n]["status"] == "WARN" and standing[n]["how"] for n in rack["nodes"])
    store = Store(tmp_path / "h.db")
    try:
        assert store.baseline("mi300x") is None  # nothing accepted: no node was borrowed
    finally:
        store.close()
    assert multinode["pools"][0]["borrowed"] == []
