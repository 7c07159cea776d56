"""Switch and rack pairing with a slow uplink: a node whose own group has no known-good partner free is
confirmed across the uplink, and its verdict names the uplink, not its NIC (issue 21 follow-up).

Scenario: sim[001-003] in rack r01 on switch sw1 (healthy); sim004 and sim005 sit behind one slow uplink,
each alone in the pairing mode's group (rack or switch), together in the other label's group. With seed 0
the first pass pairs one of them across and leaves the other over, so each of their runs crosses the uplink.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from console.cli import main
from console.exitcodes import ExitCode
from console.model.multinode import MultinodeResult
from console.sim.launcher import start_sim_cluster
from console.sweep.events import MultinodeDone
from console.ui.pairs import PairBoard, verdict_lines
from console.ui.widgets.pair_view import stragglers_content

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "schemas" / "sweep-report.schema.json").read_text())

# mode -> (labels of sim004, labels of sim005, the label whose group has the slow uplink, its name)
LAYOUT = {
    # Switch pairing: each alone on its switch, one rack behind a slow uplink: the rack pass runs them
    # with each other and names the rack.
    "switch": ({"rack": "r02", "switch": "sw2"}, {"rack": "r02", "switch": "sw3"}, "rack", "r02"),
    # Rack pairing: each alone in its rack, one switch behind a slow uplink: no rack pass can run, the
    # uplink verdict names the switch.
    "rack": ({"rack": "r02", "switch": "sw2"}, {"rack": "r03", "switch": "sw2"}, "switch", "sw2"),
}


def _labels(labels: dict[str, str]) -> str:
    return "{ " + ", ".join(f'{k} = "{v}"' for k, v in labels.items()) + " }"


def _scenario(tmp_path: Path, mode: str) -> Path:
    four, five, _, uplink = LAYOUT[mode]
    groups = [("sim[001-003]", {"rack": "r01", "switch": "sw1"}), ("sim004", four), ("sim005", five)]
    text = 'name = "uplink"\nseed = 2\ntime_factor = 400\n\n'
    for names, labels in groups:
        text += f'[[nodes]]\nnames = "{names}"\nmodel = "MI300X"\npool = "mi300x"\nlabels = {_labels(labels)}\n\n'
    text += f'[[faults]]\nnodes = "sim[004-005]"\nkind = "uplink_slow"\nuplink = "{uplink}"\n'
    path = tmp_path / "uplink.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("mode", ["switch", "rack"])
def test_a_node_confirmed_across_a_slow_uplink_is_not_convicted_of_a_nic_fault(
    tmp_path: Path, mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with start_sim_cluster(scenario=_scenario(tmp_path, mode), time_factor=400) as sim:
        args = ["sweep", "-i", str(sim.inventory_path), "--store", str(tmp_path / "h.db"), "--probes", "multinode"]
        code = main([*args, "--pairing", mode, "--pairing-seed", "0", "--json", str(tmp_path / "r.json")])
    capsys.readouterr()
    report = json.loads((tmp_path / "r.json").read_text())
    jsonschema.validate(report, SCHEMA)
    multinode = report["multinode"]
    runs = multinode["runs"]
    _, _, label, uplink = LAYOUT[mode]
    # Every run of sim004 and sim005 crossed the uplink (their partners were all of sw1), and failed.
    behind = {"sim004", "sim005"}
    theirs = [r for r in runs if behind & set(r["nodes"]) and r["purpose"] != "rack"]
    assert theirs and all(set(r["nodes"]) - behind for r in theirs)
    assert all(r["status"] == "FAIL" for r in theirs if r["purpose"] != "isolation")
    # Not convicted of a NIC fault: the uplink is named, they read WARN with the reason, never PASS.
    assert multinode["culprits"] == []
    (named,) = multinode["racks"]
    assert (named["label"], named["rack"], sorted(named["nodes"])) == (label, uplink, ["sim004", "sim005"])
    assert named["found_by"].startswith(f"{mode} pairing")
    standing = {s["node"]: s for s in multinode["stragglers"]}
    for node in behind:
        assert standing[node]["status"] == "WARN", standing[node]
        assert f"behind the slow uplink of {label} {uplink}" in standing[node]["how"]
    verdicts = {n["node"]: n for n in report["nodes"]}
    assert {verdicts[n]["status"] for n in behind} == {"WARN"}
    if mode == "rack":
        # No run inside the switch: the verdict alone, and it says the NIC was not tested alone.
        assert "then the uplink verdict" in named["found_by"]
        assert "not convicted of a NIC fault" in standing["sim004"]["how"]
    else:
        assert "rack pass" in named["found_by"]
    # The console says the same: the straggler view names the group's uplink by its label, and the node's
    # detail gives the mode, the uplink with its reason, and what found it.
    result = MultinodeResult.model_validate(multinode)
    view = stragglers_content(PairBoard().apply(MultinodeDone(sweep_id=1, result=result))).plain
    assert f"{label.upper():<7}{uplink} uplink" in view
    lines = dict(verdict_lines(result, "sim005"))
    assert lines["pairing"] == f"{mode} (pairs within a {mode}), seed 0"
    assert lines[f"{label} uplink"] == f"{uplink}: {named['reason']}" and lines["found by"] == named["found_by"]
    assert lines["WARN"].startswith("behind the slow uplink")
    # The healthy rack stays healthy; WARN is no failure, so the sweep exits OK.
    assert all(standing[n]["status"] == "PASS" for n in ("sim001", "sim002", "sim003"))
    assert code == ExitCode.OK
