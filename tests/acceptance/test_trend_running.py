"""``acceptance`` tells a run in progress (from the workload phase's audit entry, while its process runs)
and each workload's trend over every kept run, in its table and its JSON."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from console.actions.acceptance import TrendRun, acceptance_state, figure_trends
from console.cli import main
from console.inventory import load_inventory
from console.model.findings import Evidence, Finding, Status, Subject, roll_up
from console.store import Store
from console.store.owner import ProcessOwner
from console.sweep.workload_runs import ACTION

CLUSTER = """
[[pools]]
name = "a"
nodes = "n[1-2]"
gpu_model = "MI300X"
[[workloads]]
name = "smoke"
timeout_s = 5
command = ["smoke"]
[workloads.results]
json_prefix = "RESULT"
[[workloads.criteria]]
figure = "tokens_per_s"
fail_if = "< 40000"
source = "test"
"""
STACK = {"rocm": "6.4.1", "amdgpu_driver": "6.12.12"}


def _run(store: Store, figures: list[float], status: Status = Status.PASS, stack: dict[str, str] = STACK) -> int:
    """A finished workload sweep whose two nodes printed ``figures`` (node n1 the first, n2 the second)."""
    sweep = store.start_sweep("workload", "c.toml", "n[1-2]")
    for node, figure in zip(("n1", "n2"), figures, strict=True):
        store.add_probe_run(
            sweep, node, "workload.smoke", command="smoke", exit_status=0, started_at=1.0, duration_s=1.0,
            stdout=b"", stderr=b"", problem=None,
        )  # fmt: skip
        found = [
            Finding(
                check_id="workload.smoke.tokens_per_s", family="workload", status=status, subject=Subject(node=node),
                message="smoke", evidence=Evidence(observed=figure),
            )
        ]  # fmt: skip
        store.record_node(sweep, "a", roll_up(node, found), stack)
    store.finish_sweep(sweep, "done", {})
    return sweep


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(CLUSTER)
    return path


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store(tmp_path / "h.sqlite")
    yield opened
    opened.close()


def test_the_trend_reads_every_kept_run_oldest_first(cluster: Path, store: Store) -> None:
    inventory = load_inventory(cluster)
    first = _run(store, [51000, 51400])
    _run(store, [50800, 51000])
    last = _run(store, [44000, 44200], Status.WARN)
    state = acceptance_state(store, inventory, "smoke", "a")
    assert [t.sweep_id for t in state.trend] == [first, first + 1, last]
    assert [t.figures["tokens_per_s"] for t in state.trend] == [51200, 50900, 44100]
    assert state.trend[-1].status is Status.WARN
    trend = state.figure_trends()["tokens_per_s"]
    assert trend.values == [51200, 50900, 44100] and trend.direction == "down" and trend.arrow == "↓"


def test_a_direction_needs_two_runs_and_a_move_past_the_noise() -> None:
    def runs(*values: float) -> list[TrendRun]:
        return [TrendRun(i, float(i), Status.PASS, {"x": v}) for i, v in enumerate(values)]

    assert figure_trends(runs(10.0))["x"].direction == ""
    assert figure_trends(runs(10.0, 10.1))["x"].direction == "flat"  # 1 %: run-to-run noise
    assert figure_trends(runs(10.0, 10.0, 10.5))["x"].direction == "up"
    assert figure_trends(runs(10.0, float("nan")))["x"].direction == "", "a NaN has no direction"
    assert figure_trends(runs()) == {}


def test_acceptance_shows_a_run_in_progress_and_its_trend(
    cluster: Path, store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    history = store.path
    first = _run(store, [51000, 51400])
    store.record_acceptance(
        "smoke", "a", "accepted", stack=STACK, figures={"tokens_per_s": 51200}, sweep_id=first, user="ops",
        reason="stack A",
    )  # fmt: skip
    _run(store, [44000, 44200], Status.FAIL, {**STACK, "rocm": "6.2.2"})
    store.record_acceptance(
        "smoke", "a", "regressed", stack={**STACK, "rocm": "6.2.2"}, figures={"tokens_per_s": 44100},
        sweep_id=first + 1, user="ops",
    )  # fmt: skip
    # The workload phase's entry, written ahead by this (live) process: a rerun is going on n1 and n2.
    inputs = {"workload": "smoke", "pool": "a", "sweep": 9, "started_at": 1_700_000_000.0}
    store.audit_intent(ACTION, ["n1", "n2"], inputs=inputs, commands=[], user="ops")
    args = ["acceptance", "-i", str(cluster), "--store", str(history), "--workload", "smoke"]
    assert main([*args, "--json"]) == 1, "a run in progress judges nothing yet: the gate reads it regressed"
    [state] = json.loads(capsys.readouterr().out)["states"]
    assert state["state"] == "running" and state["settled_state"] == "regressed"
    running = state["running"]
    assert running["nodes"] == ["n1", "n2"] and running["started_at"] == 1_700_000_000.0 and running["sweep_id"] == 9
    assert running["owner"].startswith("in progress")
    assert [r["figures"]["tokens_per_s"] for r in state["trend"]["runs"]] == [51200, 44100]
    assert [r["status"] for r in state["trend"]["runs"]] == ["PASS", "FAIL"]
    assert state["trend"]["figures"] == {"tokens_per_s": {"values": [51200, 44100], "direction": "down"}}
    assert main(args) == 1
    table = capsys.readouterr().out
    assert "running since" in table and "n[1-2]" in table and "(was regressed)" in table
    assert "tokens_per_s 51200 44100 ↓" in table


def test_an_entry_whose_console_stopped_is_not_running(cluster: Path, store: Store) -> None:
    inventory = load_inventory(cluster)
    inputs = {"workload": "smoke", "pool": "a", "sweep": 1, "started_at": 1.0}
    entry = store.audit_intent(ACTION, ["n1"], inputs=inputs, commands=[], user="ops")
    assert acceptance_state(store, inventory, "smoke", "a").state == "running"
    # The owner recorded is a process of this host that is gone: its console stopped mid-run.
    gone = replace(ProcessOwner.current(), pid=999_999_999).to_text()
    store.conn.execute("UPDATE audit SET owner = ? WHERE id = ?", (gone, entry))
    assert acceptance_state(store, inventory, "smoke", "a").state == "not-accepted"
    store.conn.execute("UPDATE audit SET owner = NULL WHERE id = ?", (entry,))
    assert acceptance_state(store, inventory, "smoke", "a").running is None
    store.audit_result(entry, "smoke on pool a: PASS on n1")
    assert acceptance_state(store, inventory, "smoke", "a").running is None
