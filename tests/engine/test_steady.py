"""The slow-changing probe cache's rules, on its own clock: what waits for the stamp and what runs."""

from __future__ import annotations

from console.checks import ProbeOutcome
from console.sweep.catalog import MODULE_STAMP, STACK_STAMP, ProbeSet, probes_for
from console.sweep.steady import SteadyCache, stamp_of

QUICK = probes_for(ProbeSet.QUICK)
SLOW = {p.id for p in QUICK if p.slow_changing}


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def _usable() -> dict[str, ProbeOutcome]:
    return {p.id: ProbeOutcome(p.id, parsed=object()) for p in QUICK}


def test_first_pass_runs_everything_and_later_ones_defer_only_the_slow_probes() -> None:
    clock = Clock()
    cache = SteadyCache(60, clock)
    assert cache.plan("n1", QUICK, {}).deferred == []
    cache.ran("n1", "boot-a\n", clock())
    plan = cache.plan("n1", QUICK, _usable())
    assert {p.id for p in plan.deferred} == SLOW
    assert {STACK_STAMP, MODULE_STAMP} <= {p.id for p in plan.now}
    assert {"amdsmi.version", "amdsmi.firmware", "host.os", "host.kernel", "host.rocm"} == SLOW
    assert cache.unchanged("n1", "boot-a\n") and not cache.unchanged("n1", "boot-b\n")
    assert not cache.unchanged("n1", None)
    assert cache.plan("n2", QUICK, _usable()).deferred == []  # per node


def test_failed_outcomes_age_refresh_and_a_missing_stamp_probe_run_everything() -> None:
    clock = Clock()
    cache = SteadyCache(60, clock)
    cache.ran("n1", "boot-a\n", clock())
    kept = _usable()
    kept["amdsmi.firmware"] = ProbeOutcome("amdsmi.firmware", problem="timed out on the node after 30 s")
    assert "amdsmi.firmware" not in {p.id for p in cache.plan("n1", QUICK, kept).deferred}
    assert cache.plan("n1", QUICK, _usable(), refresh=True).deferred == []
    assert cache.plan("n1", [p for p in QUICK if p.id != MODULE_STAMP], _usable()).deferred == []
    clock.t += 61
    assert cache.plan("n1", QUICK, _usable()).deferred == []
    cache.ran("n1", None, clock())  # stamp unreadable: nothing to compare with next time
    assert cache.plan("n1", QUICK, _usable()).deferred == []


def test_the_stamp_needs_every_stamp_probe_answered() -> None:
    boot = ProbeOutcome(STACK_STAMP, parsed="id\n")
    module = ProbeOutcome(MODULE_STAMP, parsed="/sys/module/amdgpu 4711\n")
    assert stamp_of({STACK_STAMP: boot, MODULE_STAMP: module}) == "id\n\x00/sys/module/amdgpu 4711\n"
    assert stamp_of({STACK_STAMP: boot}) is None
    failed = ProbeOutcome(MODULE_STAMP, parsed="x", problem="stat: command not found on the node")
    assert stamp_of({STACK_STAMP: boot, MODULE_STAMP: failed}) is None
