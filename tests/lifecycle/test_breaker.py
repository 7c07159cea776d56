"""The breaker's limits: a fraction (at least one node) and a count, per pool and for the fleet."""

from __future__ import annotations

from console.actions.breaker import breach
from console.inventory.model import LifecyclePolicy

POOLS = {"a": [f"a{i:02}" for i in range(10)], "b": [f"b{i:02}" for i in range(40)]}


def test_a_pool_may_lose_its_fraction_and_not_one_node_more() -> None:
    policy = LifecyclePolicy()  # 20 % of a pool, 10 % of the fleet
    assert breach(policy, POOLS, ["a00", "a01"]) is None
    assert breach(policy, POOLS, ["a00", "a01", "a02"]) == (
        "pool a: 3 nodes held out (a[00-02]), over its limit 2 (20% of 10; [lifecycle] breaker_pool_fraction,"
        " breaker_pool_count)"
    )


def test_a_small_pool_may_always_lose_one_node() -> None:
    pools = {"tiny": ["t1", "t2", "t3"]}
    assert breach(LifecyclePolicy(), pools, ["t1"]) is None
    assert breach(LifecyclePolicy(), pools, ["t1", "t2"]) == (
        "pool tiny: 2 nodes held out (t[1-2]), over its limit 1 (20% of 3; [lifecycle] breaker_pool_fraction,"
        " breaker_pool_count)"
    )


def test_the_count_caps_the_fraction_of_a_large_pool() -> None:
    policy = LifecyclePolicy(breaker_pool_count=3, breaker_fleet_fraction=1.0, breaker_fleet_count=100)
    held = [f"b{i:02}" for i in range(4)]  # 4 of 40 is within 20 %, over the count of 3
    assert breach(policy, POOLS, held) == (
        "pool b: 4 nodes held out (b[00-03]), over its limit 3 (at most 3; [lifecycle] breaker_pool_fraction,"
        " breaker_pool_count)"
    )


def test_the_fleet_trips_when_no_pool_does() -> None:
    policy = LifecyclePolicy()  # fleet: 10 % of 50 = 5
    held = ["a00", "a01", "b00", "b01", "b02", "b03"]
    said = breach(policy, POOLS, held) or ""
    assert said.startswith("fleet: 6 nodes held out (") and "over its limit 5 (10% of 50; [lifecycle]" in said
    assert breach(policy, POOLS, held[:-1]) is None


def test_nodes_outside_the_pools_do_not_count() -> None:
    assert breach(LifecyclePolicy(), {"tiny": ["t1", "t2"]}, ["t1", "elsewhere", "other"]) is None


def test_a_pool_of_its_own_policy_has_its_own_limit() -> None:
    fleet = LifecyclePolicy(breaker_fleet_fraction=1.0, breaker_fleet_count=100)
    mine = {"a": fleet.model_copy(update={"breaker_pool_fraction": 0.5})}  # a may lose 5 of its 10
    assert breach(fleet, POOLS, ["a00", "a01", "a02"], mine) is None
    assert breach(fleet, POOLS, [f"a0{i}" for i in range(6)], mine) == (
        "pool a: 6 nodes held out (a[00-05]), over its limit 5 (50% of 10; pool a's lifecycle over [lifecycle]"
        " breaker_pool_fraction, breaker_pool_count)"
    )
    # b has no table of its own: the fleet's 20 % (8 of 40) holds there.
    assert breach(fleet, POOLS, [f"b{i:02}" for i in range(9)], mine) is not None
