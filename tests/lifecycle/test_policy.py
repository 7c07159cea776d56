"""Per-pool lifecycle policy: a pool's ``[pools.lifecycle]`` over the fleet's ``[lifecycle]`` over the defaults,
validated with the pool's field named, and shown by ``cases --policy`` with where each value comes from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.actions.watch import by_policy
from console.cli import main
from console.inventory import InventoryError, from_mapping, load_inventory

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
