"""Acceptance records and states without a cluster: the schema upgrade, what counts as a stack change,
and the runs that cannot be accepted."""

from __future__ import annotations

import json
import math
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from console.actions.acceptance import (
    accept_workload,
    acceptance_state,
    acceptance_states,
    merge_stacks,
    record_outcomes,
    run_refusal,
    stack_changes,
)
from console.cli import main
from console.inventory import load_inventory
from console.model.findings import Evidence, Finding, Status, Subject, roll_up
from console.store import Store
from console.store.upgrade import SCHEMA_VERSION
from console.ui.acceptance import acceptance_content

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
"""
STACK = {"rocm": "6.4.1", "amdgpu_driver": "6.12.12", "firmware.PM": "85.110.0", "amdsmi": "25.4.2"}


def _sweep(store: Store, status: Status, stack: dict[str, str], figure: float) -> int:
    sweep = store.start_sweep("workload", "c.toml", "n[1-2]")
    for node in ("n1", "n2"):
        found = [
            Finding(
                check_id="workload.smoke.tokens_per_s", family="workload", status=status, subject=Subject(node=node),
                message="smoke", evidence=Evidence(observed=figure),
            )
        ]  # fmt: skip
        store.record_node(sweep, "a", roll_up(node, found), stack)
    store.finish_sweep(sweep, "done", {})
    return sweep


def test_a_version_3_history_gains_the_acceptance_records(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    Store(path).close()
    with sqlite3.connect(path) as conn:  # as a console of schema version 3 left it
        conn.execute("DROP TABLE acceptances")
        conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    store = Store(path)
    try:
        record = store.record_acceptance("smoke", "a", "accepted", stack={}, figures={}, sweep_id=None, user="u")
        assert [r.id for r in store.acceptance_history("smoke", "a")] == [record]
        version = store.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        assert version == str(SCHEMA_VERSION)  # the current one (later versions add more)
    finally:
        store.close()


def test_only_a_field_read_on_both_sides_and_different_is_a_change() -> None:
    merged = merge_stacks([STACK, {**STACK, "rocm": "6.2.2"}])
    assert merged == {"amdgpu_driver": "6.12.12", "firmware.PM": "85.110.0", "rocm": "mixed: 6.2.2 | 6.4.1"}
    assert stack_changes({"rocm": "6.4.1", "torch": "2.6.0"}, merged) == {"rocm": ("6.4.1", "mixed: 6.2.2 | 6.4.1")}
    assert stack_changes({"torch": "2.6.0"}, {"rocm": "6.4.1"}) == {}, "torch not read now: unknown, not changed"


def test_a_failed_or_unjudged_run_is_not_accepted_and_writes_nothing(tmp_path: Path) -> None:
    cluster = tmp_path / "c.toml"
    cluster.write_text(CLUSTER)
    inventory = load_inventory(cluster)
    store = Store(tmp_path / "h.db")
    try:
        for status in (Status.FAIL, Status.UNKNOWN):
            sweep = _sweep(store, status, STACK, 10.0)
            result = accept_workload(store, inventory, "smoke", ["a"], sweep, reason="r")
            assert not result.ok and f"smoke is {status.value} on pool a" in result.outcome
        assert store.acceptance_history() == [] and store.audit_log() == []
        good = _sweep(store, Status.PASS, STACK, 12.0)
        assert accept_workload(store, inventory, "smoke", ["a"], good, reason="r").ok
        state = acceptance_state(store, inventory, "smoke", "a")
        assert state.state == "accepted" and state.accepted is not None
        assert state.accepted.figures == {"tokens_per_s": 12.0}
        assert state.accepted.stack == {k: v for k, v in STACK.items() if k != "amdsmi"}
    finally:
        store.close()


def test_a_rerun_on_a_new_stack_is_accepted_again_regressed_or_left_due(tmp_path: Path) -> None:
    cluster = tmp_path / "c.toml"
    cluster.write_text(CLUSTER)
    inventory = load_inventory(cluster)
    store = Store(tmp_path / "h.db")
    try:
        assert accept_workload(store, inventory, "smoke", ["a"], _sweep(store, Status.PASS, STACK, 12.0), reason="A").ok
        stack_b = {**STACK, "rocm": "6.4.2"}
        # Not judged (cut output, a timeout): no outcome, it stays due.
        assert record_outcomes(store, inventory, _sweep(store, Status.UNKNOWN, stack_b, 0.0), user="ci") == []
        assert acceptance_state(store, inventory, "smoke", "a").state == "due"
        [regressed] = record_outcomes(store, inventory, _sweep(store, Status.FAIL, stack_b, 7.0), user="ci")
        assert (regressed.outcome, regressed.figures, regressed.reason) == (
            "regressed",
            {"tokens_per_s": 7.0},
            "rerun after a stack change: rocm 6.4.1 -> 6.4.2; beyond tolerance of the accepted figures (record #1):"
            " tokens_per_s 12 -> 7 (x0.583, tolerance 5 %)",
        )
        state = acceptance_state(store, inventory, "smoke", "a")
        assert state.state == "regressed" and state.accepted is not None
        assert state.accepted.figures["tokens_per_s"] == 12, "the accepted figures beside the regressed ones"
        [again] = record_outcomes(store, inventory, _sweep(store, Status.PASS, stack_b, 12.5), user="ci")
        assert again.outcome == "accepted-again"
        assert acceptance_state(store, inventory, "smoke", "a").state == "accepted-again"
        # On the accepted stack a rerun records nothing new.
        assert record_outcomes(store, inventory, _sweep(store, Status.PASS, stack_b, 12.4), user="ci") == []
    finally:
        store.close()


def _sweep_with(store: Store, stack: dict[str, str], own: dict[str, Finding], figure: float = 12.0) -> int:
    """A passing run of smoke on n1 and n2, with ``own`` findings of each node's own checks (a quick probe's)."""
    sweep = store.start_sweep("workload", "c.toml", "n[1-2]")
    for node in ("n1", "n2"):
        found = [
            Finding(
                check_id="workload.smoke.tokens_per_s", family="workload", status=Status.PASS,
                subject=Subject(node=node), message="smoke", evidence=Evidence(observed=figure),
            ),
            *([own[node]] if node in own else []),
        ]  # fmt: skip
        store.record_node(sweep, "a", roll_up(node, found), stack)
    store.finish_sweep(sweep, "done", {})
    return sweep


def _fatal_cper(node: str) -> Finding:
    return Finding(
        check_id="cper.fatal", family="cper", status=Status.FAIL, subject=Subject(node=node, gpu=2),
        message="CPER: fatal record on GPU 2 (AFID 30)",
    )  # fmt: skip


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "console", *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_a_rerun_on_a_node_the_sweep_failed_is_blocked_not_accepted_again(tmp_path: Path) -> None:
    """A new operator saw ``accepted-again`` recorded from a sweep in which a node the workload ran on FAILed
    its own probes (a fatal CPER record): PASS means healthy, so that run accepts nothing."""
    cluster = tmp_path / "c.toml"
    cluster.write_text(CLUSTER)
    inventory = load_inventory(cluster)
    store = Store(tmp_path / "h.db")
    try:
        assert accept_workload(store, inventory, "smoke", ["a"], _sweep(store, Status.PASS, STACK, 12.0), reason="A").ok
        stack_b = {**STACK, "rocm": "6.4.2"}
        sweep = _sweep_with(store, stack_b, {"n2": _fatal_cper("n2")})
        [blocked] = record_outcomes(store, inventory, sweep, user="ci")
        assert blocked.outcome == "blocked"
        assert blocked.reason == (
            "rerun after a stack change: rocm 6.4.1 -> 6.4.2; not judged: a node it ran on was not healthy in"
            f" sweep {sweep}: n2 FAIL: CPER: fatal record on GPU 2 (AFID 30)"
        )
        state = acceptance_state(store, inventory, "smoke", "a")
        assert state.state == "blocked" and state.blocked == blocked and state.regressed is None
        assert state.accepted is not None and state.accepted.stack["rocm"] == "6.4.1", "B is not accepted"
        # The operator cannot accept it by hand either, and is told which node and why.
        refused = accept_workload(store, inventory, "smoke", ["a"], sweep, reason="looks fine")
        assert not refused.ok and "n2 FAIL: CPER: fatal record on GPU 2" in refused.outcome
        assert "--sweep N" in refused.outcome
        # An UNKNOWN node (its probes timed out) is not healthy either.
        timed_out = Finding(
            check_id="amdsmi.metric", family="amdsmi", status=Status.UNKNOWN, subject=Subject(node="n1"),
            message="amd-smi metric timed out",
        )  # fmt: skip
        unknown = accept_workload(
            store, inventory, "smoke", ["a"], _sweep_with(store, stack_b, {"n1": timed_out}), reason="r"
        )
        assert not unknown.ok and "n1 UNKNOWN: amd-smi metric timed out" in unknown.outcome
        # The gate fails on it (without --require-accepted), and JSON and JUnit say which node.
        junit = tmp_path / "acceptance.xml"
        gate = _cli("acceptance", "--store", str(store.path), "-i", str(cluster), "--json", "--junit", str(junit))
        assert gate.returncode == 1, gate.stderr
        [shown] = [s for s in json.loads(gate.stdout)["states"] if s["workload"] == "smoke"]
        assert shown["state"] == "blocked" and "n2 FAIL" in shown["blocked"]["reason"]
        assert 'message="smoke on a: blocked"' in junit.read_text() and "n2 FAIL: CPER" in junit.read_text()
        table = _cli("acceptance", "--store", str(store.path), "-i", str(cluster))
        assert table.returncode == 1 and "blocked" in table.stdout and "n2 FAIL" in table.stdout
        # Repaired and rerun on healthy nodes: accepted again.
        [again] = record_outcomes(store, inventory, _sweep_with(store, stack_b, {}), user="ci")
        assert again.outcome == "accepted-again"
    finally:
        store.close()


PAIRS = CLUSTER.replace('nodes = "n[1-2]"', 'nodes = "n[1-3]"').replace("timeout_s = 5", "timeout_s = 5\nnodes = 2")


def test_a_run_that_left_a_node_of_the_pool_out_reads_unknown_and_the_refusal_says_why(tmp_path: Path) -> None:
    """A trial: a 2-node workload swept on an odd number of a pool's nodes left one unrun. The view's row read
    PASS for that sweep and offered to accept it; accept then refused with only 'UNKNOWN'. Now the row's
    run reads UNKNOWN and the one refusal (the plan's and accept's) names the node, why, and what to do."""
    cluster = tmp_path / "c.toml"
    cluster.write_text(PAIRS)
    inventory = load_inventory(cluster)
    store = Store(tmp_path / "h.db")
    try:
        sweep = store.start_sweep("workload", "c.toml", "n[1-3]")
        for node in ("n1", "n2"):
            store.add_probe_run(
                sweep, node, "workload.smoke", command="smoke", exit_status=0, started_at=1.0, duration_s=1.0,
                stdout=b"", stderr=b"", problem=None,
            )  # fmt: skip
            passed = Finding(
                check_id="workload.smoke.tokens_per_s", family="workload", status=Status.PASS,
                subject=Subject(node=node), message="smoke", evidence=Evidence(observed=12.0),
            )  # fmt: skip
            store.record_node(sweep, "a", roll_up(node, [passed]), STACK)
        left = Finding(
            check_id="workload.smoke.run", family="workload", status=Status.UNKNOWN, subject=Subject(node="n3"),
            message="smoke: not run: it needs 2 nodes of pool a and fewer were left",
        )  # fmt: skip
        store.record_node(sweep, "a", roll_up("n3", [left]), STACK)
        store.finish_sweep(sweep, "done", {})
        state = acceptance_state(store, inventory, "smoke", "a")
        assert [(t.sweep_id, t.status) for t in state.trend] == [(sweep, Status.UNKNOWN)], "not PASS: n3 was left out"
        refusal = run_refusal(store, inventory, "smoke", "a", sweep)
        assert refusal == (
            f"smoke is UNKNOWN on pool a in sweep {sweep}: n3: smoke: not run: it needs 2 nodes of pool a and fewer"
            " were left (smoke runs on groups of 2 nodes: sweep whole groups of the pool, or accept another sweep"
            " with --sweep N)"
        )
        result = accept_workload(store, inventory, "smoke", ["a"], sweep, reason="r")
        assert not result.ok and result.outcome == refusal
    finally:
        store.close()


THREE = CLUSTER.replace('nodes = "n[1-2]"', 'nodes = "n[1-3]"')


def _sweep_on(store: Store, stacks: dict[str, dict[str, str]], status: Status | None) -> int:
    """A sweep of the nodes of ``stacks``, each on its own stack; with ``status``, the workload ran there."""
    sweep = store.start_sweep("workload" if status else "quick", "c.toml", ",".join(stacks))
    for node, stack in stacks.items():
        found = [
            Finding(
                check_id="workload.smoke.tokens_per_s", family="workload", status=status, subject=Subject(node=node),
                message="smoke", evidence=Evidence(observed=12.0),
            )
        ] if status else []  # fmt: skip
        store.record_node(sweep, "a", roll_up(node, found), stack)
    store.finish_sweep(sweep, "done", {})
    return sweep


def test_the_nodes_that_ran_it_are_recorded_and_a_node_on_a_stack_none_of_them_had_is_due(tmp_path: Path) -> None:
    cluster = tmp_path / "c.toml"
    cluster.write_text(THREE)
    inventory = load_inventory(cluster)
    a_x = {**STACK, "rocm": "6.4.1", "amdgpu_driver": "6.12.12"}
    b_y = {**STACK, "rocm": "6.4.2", "amdgpu_driver": "6.14.4"}
    a_y = {**STACK, "rocm": "6.4.1", "amdgpu_driver": "6.14.4"}  # a combination no node ran it on
    store = Store(tmp_path / "h.db")
    try:
        sweep = _sweep_on(store, {"n1": a_x, "n2": b_y}, Status.PASS)
        assert accept_workload(store, inventory, "smoke", ["a"], sweep, reason="two stacks").ok
        state = acceptance_state(store, inventory, "smoke", "a")
        assert state.state == "accepted" and state.accepted is not None
        ran = state.as_json()["accepted"]["nodes"]  # type: ignore[index]
        assert sorted(ran) == ["n1", "n2"] and ran["n2"]["rocm"] == "6.4.2", "acceptance --json names them"
        # n3 joins on rocm 6.4.1 with driver 6.14.4: the pool's merged stack reads the same ("mixed" on both
        # fields), but no node that ran it had that stack: due, naming n3 and how it differs.
        _sweep_on(store, {"n3": a_y}, None)
        state = acceptance_state(store, inventory, "smoke", "a")
        assert state.state == "due" and state.changes == {}
        assert state.uncovered == {"n3": {"amdgpu_driver": ("6.12.12", "6.14.4")}}
        assert state.as_json()["uncovered"] == {"n3": {"amdgpu_driver": {"accepted": "6.12.12", "current": "6.14.4"}}}
        # The rerun on n3 passes: one run of the two its stack needs, so it stays due; the second accepts it
        # again, the record names n3, and every node is covered.
        assert record_outcomes(store, inventory, _sweep_on(store, {"n3": a_y}, Status.PASS), user="ci") == []
        assert acceptance_state(store, inventory, "smoke", "a").state == "due"
        [again] = record_outcomes(store, inventory, _sweep_on(store, {"n3": a_y}, Status.PASS), user="ci")
        assert again.outcome == "accepted-again" and list(again.nodes) == ["n3"]
        assert again.reason == "rerun after a stack change: n3 amdgpu_driver 6.12.12 -> 6.14.4"
        state = acceptance_state(store, inventory, "smoke", "a")
        assert state.state == "accepted-again" and state.uncovered == {}
        # n1 moves to the stack n2 ran it on: still covered, though the pool's merged stack changed.
        _sweep_on(store, {"n1": b_y}, None)
        state = acceptance_state(store, inventory, "smoke", "a")
        assert state.state == "accepted-again" and state.uncovered == {}
    finally:
        store.close()


def _figure(node: str, name: str, status: Status, observed: object) -> Finding:
    return Finding(
        check_id=f"workload.smoke.{name}", family="workload", status=status, subject=Subject(node=node),
        message=f"smoke: {name} is {observed}", evidence=Evidence(observed=observed),
    )  # fmt: skip


def _no_constant(token: str) -> object:
    raise AssertionError(f"{token} is not JSON")


def test_a_regressed_runs_nan_is_in_its_figures_as_text_in_the_json_and_the_view(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = tmp_path / "c.toml"
    cluster.write_text(CLUSTER)
    inventory = load_inventory(cluster)
    store = Store(tmp_path / "h.db")
    try:
        assert accept_workload(store, inventory, "smoke", ["a"], _sweep(store, Status.PASS, STACK, 12.0), reason="A").ok
        # On the new stack n1's loss is NaN at step 100 (its finding keeps "nan": the judge's observed text).
        sweep = store.start_sweep("workload", "c.toml", "n[1-2]")
        readings = {
            "n1": [
                _figure("n1", "tokens_per_s", Status.PASS, 11.0),
                _figure("n1", "loss.step_100", Status.FAIL, "nan"),
            ],
            "n2": [_figure("n2", "tokens_per_s", Status.PASS, 13.0), _figure("n2", "loss.step_100", Status.PASS, 2.5)],
        }
        for node, found in readings.items():
            store.record_node(sweep, "a", roll_up(node, found), {**STACK, "rocm": "6.4.2"})
        # The run's output, which is what puts the sweep in the workload's trend.
        run = {"command": "smoke", "exit_status": 1, "started_at": 1.0, "duration_s": 1.0, "stdout": b"", "stderr": b""}
        store.add_probe_run(sweep, "n1", "workload.smoke", problem="smoke: loss.step_100 is nan", **run)
        store.finish_sweep(sweep, "done", {})
        [regressed] = record_outcomes(store, inventory, sweep, user="ci")
        assert regressed.outcome == "regressed"
        # A NaN on one node makes the pool's figure NaN, kept beside the other figures, read back as a NaN.
        assert math.isnan(regressed.figures["loss.step_100"]) and regressed.figures["tokens_per_s"] == 12.0
        [state] = [s for s in acceptance_states(store, inventory) if s.workload == "smoke"]
        assert state.regressed is not None and math.isnan(state.regressed.figures["loss.step_100"])
        view = acceptance_content([state]).plain
    finally:
        store.close()
    assert "regressed loss.step_100=nan tokens_per_s=12" in view
    assert "trend     loss.step_100 nan" in view
    where = ["acceptance", "-i", str(cluster), "--store", str(tmp_path / "h.db"), "--workload", "smoke"]
    capsys.readouterr()
    assert main([*where, "--json"]) == 1
    # Strict JSON: no bare NaN token, the NaN as the text "nan".
    [shown] = json.loads(capsys.readouterr().out, parse_constant=_no_constant)["states"]
    assert shown["regressed"]["figures"] == {"loss.step_100": "nan", "tokens_per_s": 12.0}
    assert shown["trend"]["figures"]["loss.step_100"]["values"] == ["nan"]
    assert shown["trend"]["runs"][-1]["figures"]["loss.step_100"] == "nan"
    monkeypatch.setenv("COLUMNS", "400")
    assert main(where) == 1
    assert "regressed: loss.step_100=nan tokens_per_s=12" in capsys.readouterr().out
