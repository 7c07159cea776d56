"""``revalidate --level multinode``: the repaired node's own checks, then one pair run with a known-good
node of its pool, on the simulator over real SSH (issue 19 item 3).

One MI300X pool of three nodes. A first sweep, accepted as the baseline, has every node PASS; sim002 then
gets a case and its repair is acknowledged. Healthy, it passes with sim001 as its partner (named in the
plan first); with a slow NIC it takes a strike; with a partner that fails its own checks now, or no node
left known-good, it is not judged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from console.cli import main
from console.model.findings import Remedy
from console.remediation.cases import acknowledge_repair, open_case
from console.sim.faults import Fault, FaultKind
from console.sim.launcher import SimCluster, start_sim_cluster
from console.sim.scenario import write_live_faults
from console.store import Store

SCENARIO = """
name = "revalmn"
seed = 3
time_factor = 400

[[nodes]]
names = "sim[001-003]"
model = "MI300X"
pool = "mi300x"
labels = { rack = "r01", switch = "sw1" }
"""


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[SimCluster]:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    with start_sim_cluster(scenario=scenario, time_factor=400) as cluster:
        yield cluster


def _revalidate(inv: Path, db: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["revalidate", "sim002", "-i", str(inv), "--store", str(db), "--level", "multinode", *extra])
    return code, capsys.readouterr().out


def _outcome(out: str) -> str:
    """sim002's outcome from ``revalidate --json``: its standard output is the JSON alone."""
    return str(json.loads(out)["sim002"]["outcome"])


def _repaired(db: Path) -> None:
    with closing(Store(db)) as store:
        if store.case("sim002") is None:
            open_case(store, "sim002", user="ops", action=Remedy.REBOOT, sweep_id=1, findings=[], audit_id=None)
        acknowledge_repair(store, "sim002", user="ops", note="rebooted", audit_id=None)


def test_a_multinode_revalidation_pairs_the_node_with_a_known_good_one(
    sim: SimCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inv, db = tmp_path / "cluster.toml", tmp_path / "h.sqlite"
    # Three passes to return and five strikes to escalate: the case stays open through the test.
    inv.write_text(sim.inventory_path.read_text() + "\n[lifecycle]\npasses_required = 3\nmax_strikes = 5\n")
    assert main(["sweep", "-i", str(inv), "--store", str(db)]) == 0
    assert main(["accept", "-i", str(inv), "--store", str(db), "--reason", "fleet baseline"]) == 0
    _repaired(db)

    # The plan names the partner, where it is known-good from, and that its GPUs are taken.
    code, out = _revalidate(inv, db, capsys, "--dry-run")
    assert code == 0, out
    flat = " ".join(out.split())
    assert "standard sweep, then one pair run with sim001 (PASS in pool mi300x's accepted baseline, sweep 1)" in flat, (
        out
    )
    assert "sim001's GPUs are taken for the run" in flat, out

    # Healthy: its own checks and the pair run pass; the pair run is stored as the node's finding.
    code, out = _revalidate(inv, db, capsys, "--yes", "--json")
    outcome = _outcome(out)
    assert code == 0 and outcome.startswith("pass"), out
    with closing(Store(db)) as store:
        sweep_id = store.latest_sweep_id()
        assert sweep_id is not None
        rows = store.conn.execute(
            "SELECT node, status FROM findings WHERE sweep_id = ? AND check_id = 'rccl.multinode'", (sweep_id,)
        ).fetchall()
        assert {(r["node"], r["status"]) for r in rows} >= {("sim002", "PASS")}, [tuple(r) for r in rows]
        assert {r["node"] for r in store.node_verdicts(sweep_id)} == {"sim001", "sim002"}

    # A slow NIC on the repaired node: a strike, never a pass.
    write_live_faults(sim.state_dir, [Fault(kind=FaultKind.NIC_SLOW, node="sim002")])
    sim.wait_for_generation(2)
    code, out = _revalidate(inv, db, capsys, "--yes", "--json")
    outcome = _outcome(out)
    assert code != 0 and outcome.startswith("strike"), out

    # The partner fails its own checks now (sim001's NIC): it vouches for nothing, sim002 is not judged.
    write_live_faults(sim.state_dir, [Fault(kind=FaultKind.NIC_SLOW, node="sim001")])
    sim.wait_for_generation(3)
    _repaired(db)
    code, out = _revalidate(inv, db, capsys, "--yes", "--json")
    outcome = _outcome(out)
    assert code != 0 and outcome.startswith("not judged"), out
    assert "no known-good partner: sim001 was FAIL in its own checks now" in outcome, out

    # No known-good partner left (sim001 drained by the console, sim003 with a case of its own): not judged.
    write_live_faults(sim.state_dir, [])
    sim.wait_for_generation(4)
    with closing(Store(db)) as store:
        store.record_drains(["sim001"], "console: FAIL", user="ops", sweep_id=None, audit_id=None)
        open_case(store, "sim003", user="ops", action=Remedy.REBOOT, sweep_id=None, findings=[], audit_id=None)
    code, out = _revalidate(inv, db, capsys, "--dry-run")
    assert "no pair run: no known-good partner in pool mi300x: not judged (UNKNOWN)" in " ".join(out.split()), out
    code, out = _revalidate(inv, db, capsys, "--yes", "--json")
    outcome = _outcome(out)
    assert code != 0 and outcome.startswith("not judged") and "no known-good partner" in outcome, out
