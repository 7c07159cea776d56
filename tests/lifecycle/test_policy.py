"""Per-pool lifecycle policy: a pool's ``[pools.lifecycle]`` over the fleet's ``[lifecycle]`` over the defaults,
validated with the pool's field named, and shown by ``cases --policy`` with where each value comes from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.cli import main
from console.inventory import InventoryError, from_mapping, load_inventory
from console.remediation.cases import acknowledge_repair, open_case, record_revalidation
from console.sim.faults import Fault, FaultKind
from console.sim.launcher import start_sim_cluster
from console.sim.scenario import write_live_faults
from console.store import Store
from console.sweep.revalidation import by_policy

CLUSTER = """name = "demo"
[lifecycle]
max_strikes = 4
breaker_fleet_count = 10

[[pools]]
name = "big"
gpu_model = "MI300X"
nodes = "a[01-10]"
[pools.lifecycle]
passes_required = 3
breaker_pool_fraction = 0.3
level = "full"

[[pools]]
name = "small"
gpu_model = "MI355X"
nodes = "b[1-4]"
"""


def _pool(**lifecycle: object) -> dict[str, object]:
    return {"pools": [{"name": "p", "gpu_model": "MI300X", "nodes": "n[1-2]", "lifecycle": lifecycle}]}


def test_a_pool_value_wins_over_the_fleet_and_the_rest_follows_it(tmp_path: Path) -> None:
    path = tmp_path / "cluster.toml"
    path.write_text(CLUSTER)
    inventory = load_inventory(path)
    big, small = inventory.policy("big"), inventory.policy("small")
    assert (big.passes_required, big.max_strikes, big.breaker_pool_fraction, big.level) == (3, 4, 0.3, "full")
    assert (small.passes_required, small.max_strikes, small.breaker_pool_fraction, small.level) == (
        2,
        4,
        0.2,
        "standard",
    )
    assert inventory.policy_of("a03") == big and inventory.policy_of("b2") == small
    assert inventory.policy_of("elsewhere") == inventory.lifecycle
    origins = inventory.lifecycle.origins(inventory.pools["big"].lifecycle, "big")
    assert origins["passes_required"] == "pool big" and origins["max_strikes"] == "[lifecycle]"
    assert origins["window_h"] == "default" and origins["breaker_fleet_count"] == "[lifecycle]"
    # watch and revalidate sweep each policy's nodes apart (a pool may revalidate at its own level).
    groups = by_policy(["a01", "b1", "a02"], inventory.policy_of)
    assert [(p.level, names) for p, names in groups] == [("full", ["a01", "a02"]), ("standard", ["b1"])]


@pytest.mark.parametrize(
    ("lifecycle", "said"),
    [
        (
            {"passes_required": 0},
            "field pools[0].lifecycle.passes_required: Input should be greater than or equal to 1",
        ),
        ({"breaker_pool_fraction": 1.5}, "field pools[0].lifecycle.breaker_pool_fraction: Input should be less than"),
        ({"window_h": "a week"}, "field pools[0].lifecycle.window_h: Input should be a valid number"),
        ({"strikes": 3}, "field pools[0].lifecycle.strikes: Extra inputs are not permitted"),
        (
            {"breaker_fleet_count": 3},
            "breaker_fleet_count is a limit of the whole fleet: set it in [lifecycle], not in a pool",
        ),
    ],
)
def test_a_bad_pool_value_names_the_pool_and_the_field(lifecycle: dict[str, object], said: str) -> None:
    with pytest.raises(InventoryError) as caught:
        from_mapping(_pool(**lifecycle), "cluster.toml")
    assert said in str(caught.value) and str(caught.value).startswith("cluster.toml: field pools[0].lifecycle")


def test_cases_policy_shows_each_value_and_where_it_comes_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cluster.toml"
    path.write_text(CLUSTER)
    assert main(["cases", "--policy", "-i", str(path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["big"]["passes_required"] == {"value": 3, "from": "pool big"}
    assert shown["small"]["passes_required"] == {"value": 2, "from": "default"}
    assert shown["small"]["max_strikes"] == {"value": 4, "from": "[lifecycle]"}
    assert main(["cases", "--policy", "-i", str(path)]) == 0
    rows = [line.split("│")[1:5] for line in capsys.readouterr().out.splitlines() if line.startswith("│")]
    rows = [[cell.strip() for cell in row] for row in rows]
    assert ["big", "passes_required", "3", "pool big"] in rows
    assert ["big", "breaker_pool_fraction", "0.3", "pool big"] in rows
    assert ["small", "max_strikes", "4", "[lifecycle]"] in rows
    # The fleet's own limits are one pair, shown once.
    assert [r for r in rows if r[1] == "breaker_fleet_count"] == [
        ["(fleet)", "breaker_fleet_count", "10", "[lifecycle]"]
    ]
    # Without a cluster file: the defaults, all of them.
    assert main(["cases", "--policy", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["(fleet)"]["max_strikes"] == {"value": 3, "from": "default"}


def test_watch_returns_a_node_after_its_pools_passes_not_the_fleets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text('time_factor = 400\n[[nodes]]\nnames = "sim[001-003]"\n')
    db = str(tmp_path / "h.sqlite")
    with start_sim_cluster(scenario=scenario) as sim:
        # The fleet asks for three passes; the sim's one pool for one (a pool table extends the last [[pools]]).
        inv = tmp_path / "cluster.toml"
        inv.write_text(
            sim.inventory_path.read_text()
            + '\n[lifecycle]\npasses_required = 3\n\n[pools.lifecycle]\npasses_required = 1\nlevel = "quick"\n'
        )
        [pool] = load_inventory(inv).pools
        write_live_faults(sim.state_dir, [Fault(kind=FaultKind.CPER_RECORD, node="sim002", gpu=3, params={"afid": 30})])
        sim.wait_for_generation(2)
        watch = ["watch", "-i", str(inv), "--store", db, "--every", "3600", "--rounds", "1", "--auto"]
        assert main(watch) == 0
        assert "done: drain sim002 (sweep" in capsys.readouterr().out

        write_live_faults(sim.state_dir, [])
        sim.wait_for_generation(3)
        assert main(["repaired", "sim002", "-i", str(inv), "--store", db, "--reason", "replaced OAM 3", "--yes"]) == 0
        capsys.readouterr()
        assert main(watch) == 0
        line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("round 1:"))
        assert "revalidate sim002: pass" in line and "resume sim002: " in line, line  # one pass: its pool's rule

        assert main(["cases", "--policy", "-i", str(inv), "--json"]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert shown[pool]["passes_required"] == {"value": 1, "from": f"pool {pool}"}
        assert shown[pool]["level"] == {"value": "quick", "from": f"pool {pool}"}
    store = Store(db)
    [closed] = store.cases("sim002")
    steps = [(s.step, s.stage.value) for s in store.case_steps(closed.id)]
    store.close()
    assert steps[-2:] == [("pass", "revalidating"), ("return", "returned")]
    assert sum(1 for step, _ in steps if step == "pass") == 1


def test_the_remediation_view_counts_each_node_against_its_pools_policy(tmp_path: Path) -> None:
    """The console's H view reads passes, strikes and the next step under the node's pool's policy."""
    from console.actions.remediation import remediation_view
    from console.model.findings import Remedy
    from console.ui.remediation import head_content, row_cells

    path = tmp_path / "cluster.toml"
    path.write_text(CLUSTER)
    inventory = load_inventory(path)
    store = Store(tmp_path / "h.sqlite")
    try:
        for node in ("a01", "b1"):
            open_case(store, node, user="ops", action=Remedy.REBOOT, sweep_id=None, findings=[], audit_id=None)
            acknowledge_repair(store, node, user="ops", note="rebooted", audit_id=None)
            policy = inventory.policy_of(node)
            record_revalidation(
                store, node, passed=True, sweep_id=None, action=None, user="ops", policy=policy, note=""
            )
        view = remediation_view(store, inventory, now=0.0)
        cells = {row.node: [str(c) for c in row_cells(row, view, 0.0)] for row in view.rows}
        assert cells["a01"][8] == "1/3" and cells["b1"][8] == "1/2"  # passes against the pool's passes_required
        assert cells["a01"][7] == "0/4" and cells["b1"][7] == "0/4"  # strikes against max_strikes ([lifecycle])
        head = head_content(view, 0.0, "").plain
        assert "policy of big: 3 passes at full to return, 4 strikes within 168 h escalate" in head
        assert "policy of small: 2 passes at standard to return" in head
    finally:
        store.close()
