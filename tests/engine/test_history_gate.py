"""``sweep --max-age``: gating from the history database. A node's last active check at the level (or
deeper) counts only when it is young enough; older, missing or followed by a worse sweep is never PASS."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.cli import main
from console.model.findings import Finding, Status, Subject, roll_up
from console.store import Store
from console.sweep.freshness import covers, judged_from_history, last_active_check

HOUR = 3600.0


def _record(store: Store, node: str, level: str, status: Status, age_s: float, *, now: float, cut: str = "") -> int:
    """A finished sweep of ``node`` at ``level`` that started ``age_s`` before ``now``, judging it ``status``
    (on a check that ``cut`` cut short, when given: the sweep ended at its deadline)."""
    sweep_id = store.start_sweep(level, "cluster.toml", node)
    said = "0 uncorrectable" if status is Status.PASS else f"{status.value.lower()} on GPU 3"
    finding = Finding(
        check_id="ecc.uncorrectable", family="ecc", status=status, subject=Subject(node=node), message=said
    )
    store.record_node(sweep_id, "p", roll_up(node, [finding]), {}, cut=cut)
    store.finish_sweep(sweep_id, "deadline" if cut else "done", {})
    store.conn.execute("UPDATE sweeps SET started_at = ? WHERE id = ?", (now - age_s, sweep_id))
    return sweep_id


@pytest.fixture
def cluster(tmp_path: Path) -> str:
    path = tmp_path / "cluster.toml"
    path.write_text('[[pools]]\nname = "p"\ngpu_model = "MI300X"\nnodes = "n[1-4]"\n')
    return str(path)


def test_levels_cover_the_lighter_ones_and_workloads_only_themselves() -> None:
    assert covers("full", "standard") and covers("standard", "quick") and covers("multinode", "standard")
    assert not covers("quick", "standard") and not covers("full", "framework") and covers("framework", "quick")
    assert covers("workload", "workload") and not covers("full", "workload") and not covers("later-level", "quick")


def test_max_age_takes_young_checks_and_names_the_age_of_stale_ones(
    tmp_path: Path, cluster: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    store = Store(db)
    now = time.time()
    _record(store, "n1", "standard", Status.PASS, 2 * HOUR, now=now)
    _record(store, "n2", "quick", Status.PASS, 0.1 * HOUR, now=now)  # too light for a standard gate
    _record(store, "n3", "full", Status.PASS, 3 * HOUR, now=now)
    later = _record(store, "n3", "quick", Status.FAIL, 0.2 * HOUR, now=now)  # after it: a quick sweep found a fault
    store.close()
    gate = ["sweep", "-i", cluster, "--store", str(db), "--probes", "standard", "--json", "-"]

    assert main([*gate, "--max-age", "1d"]) == 1  # n3 FAIL
    shown = json.loads(capsys.readouterr().out)
    by_node = {row["node"]: row for row in shown["nodes"]}
    assert shown["from_history"] is True and shown["exit_code"] == 1
    assert by_node["n1"]["status"] == "PASS" and by_node["n1"]["reason"].startswith("last active check 2 h ago")
    assert by_node["n2"] == {**by_node["n2"], "status": "UNKNOWN", "sweep_id": None}
    assert by_node["n2"]["reason"] == "no active check at standard or deeper in the history"
    assert by_node["n3"]["status"] == "FAIL" and f"(a later quick sweep {later})" in by_node["n3"]["reason"]
    assert by_node["n4"]["status"] == "UNKNOWN"

    assert main([*gate, "--max-age", "1h", "--nodes", "n1"]) == 3  # stale: UNKNOWN, never PASS
    [row] = json.loads(capsys.readouterr().out)["nodes"]
    assert (
        row["status"] == "UNKNOWN" and row["reason"] == "last active check 2 h ago (sweep 1, standard), older than 1 h"
    )

    # A quick gate: n2's check is young enough; the text summary says what each node rests on.
    assert main(["sweep", "-i", cluster, "--store", str(db), "--nodes", "n[1-2]", "--max-age", "30m"]) == 3
    out = capsys.readouterr().out
    assert "from history: 2 nodes at quick, checks at most 30 min old: PASS=1 UNKNOWN=1" in out
    assert "  UNKNOWN n1: last active check 2 h ago (sweep 1, standard), older than 30 min" in out
    assert "  PASS    n2: last active check 6 min ago (sweep 2, quick)" in out
    assert main(["sweep", "-i", cluster, "--store", str(db), "--nodes", "n2", "--max-age", "30m"]) == 0


def test_max_age_runs_nothing_and_refuses_what_would(
    tmp_path: Path, cluster: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "h.sqlite")
    assert main(["sweep", "-i", cluster, "--store", db, "--max-age", "1d"]) == 2  # no history: nothing to gate on
    assert "no history database" in capsys.readouterr().err and not Path(db).exists()
    Store(db).close()
    for extra in (["--via-slurm"], ["--every", "60"], ["--probes", "multinode"]):
        assert main(["sweep", "-i", cluster, "--store", db, "--max-age", "1d", *extra]) == 2, extra
    err = capsys.readouterr().err
    assert "--via-slurm does not apply" in err and "--probes multinode does not apply" in err
    # Extra check packs cannot change verdicts already stored: taking them silently would gate on other packs.
    packs = tmp_path / "stricter"
    packs.mkdir()
    assert main(["sweep", "-i", cluster, "--store", db, "--max-age", "1d", "--checks", str(packs)]) == 2
    assert "--checks does not apply" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:  # argparse's own usage error
        main(["sweep", "-i", cluster, "--store", db, "--max-age", "1w"])
    assert refused.value.code == 2 and "'1w': give seconds, or a number with s, m, h or d" in capsys.readouterr().err


LEVELS = ["quick", "standard", "full", "framework", "workload", "multinode"]
NODE_STATUSES = [Status.PASS, Status.WARN, Status.FAIL, Status.UNKNOWN]


@settings(max_examples=60, deadline=None)
@given(
    history=st.lists(
        st.tuples(st.sampled_from(LEVELS), st.sampled_from(NODE_STATUSES), st.floats(0, 10 * 24 * HOUR), st.booleans()),
        max_size=6,
    ),
    wanted=st.sampled_from(["quick", "standard", "full", "framework", "workload"]),
    max_age=st.floats(60, 5 * 24 * HOUR),
)
def test_never_false_pass_from_history(
    tmp_path_factory: pytest.TempPathFactory,
    history: list[tuple[str, Status, float, bool]],
    wanted: str,
    max_age: float,
) -> None:
    """PASS only when the newest covering check is young enough and PASS, and no sweep since was worse."""
    store = Store(tmp_path_factory.mktemp("nfp") / "h.sqlite")
    now = time.time()
    # Sweeps are recorded in the order they ran: oldest first (ids grow with time, as in the store).
    cut_ids = set()
    for level, status, age, cut in sorted(history, key=lambda h: -h[2]):
        sweep_id = _record(store, "n1", level, status, age, now=now, cut="deadline exceeded" if cut else "")
        if cut:
            cut_ids.add(sweep_id)
    judged = judged_from_history(store, "n1", wanted, max_age, now)
    check = last_active_check(store, "n1", wanted)
    store.close()
    assert check is None or check.sweep_id not in cut_ids, "a check cut short is no active check"
    if judged.status is Status.PASS:
        assert check is not None and check.status is Status.PASS and now - check.at <= max_age
        since = [h for h in history if h[2] < now - check.at]  # cut short or not
        assert all(status is Status.PASS for _, status, _, _ in since), (history, judged)
    if check is None or now - check.at > max_age:
        assert judged.status is Status.UNKNOWN


def test_a_check_cut_short_is_not_fresh_but_a_gate_still_reads_it(
    tmp_path: Path, cluster: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """After Ctrl-C on a standard sweep, ``watch`` called the node fresh ("swept nothing, 6 fresh") and
    ``watch --freshness`` named the cancelled sweep as its last active check."""
    db = tmp_path / "h.db"
    store = Store(db)
    now = time.time()
    whole = _record(store, "n1", "standard", Status.PASS, 2 * HOUR, now=now)
    cut = _record(store, "n1", "full", Status.UNKNOWN, 10.0, now=now, cut="sweep cancelled: 2 of 23 probes unfinished")
    for level in ("quick", "standard", None):
        check = last_active_check(store, "n1", level)
        assert check is not None and check.sweep_id == whole, level
    assert last_active_check(store, "n1", "full") is None, "the full check was cut short: none at full"
    gate = judged_from_history(store, "n1", "standard", 24 * HOUR, now)
    assert gate.status is Status.UNKNOWN and f"a later full sweep {cut}" in gate.reason, gate.reason
    store.close()
    assert main(["watch", "-i", cluster, "--store", str(db), "--freshness"]) == 0
    said = capsys.readouterr().out
    assert f"PASS, last active check 2 h ago (sweep {whole}, standard)" in said, said


def test_an_older_history_marks_the_checks_its_deadlines_and_cancels_left_undone(tmp_path: Path) -> None:
    """Before the ``cut`` column, such a node had one verdict: UNKNOWN "could not check: <what cut it>"."""
    path = tmp_path / "h.db"
    store = Store(path)
    ended = {}
    for outcome, reason in (("deadline", "deadline exceeded"), ("cancelled", "sweep cancelled"), ("done", "")):
        sweep_id = store.start_sweep("standard", "cluster.toml", "n1")
        finding = Finding(
            check_id="node.reachable",
            family="reachability",
            status=Status.UNKNOWN,
            subject=Subject(node="n1"),
            message=f"could not check: {reason or 'auth-failed: Permission denied'}",
        )
        store.record_node(sweep_id, "p", roll_up("n1", [finding]), {})
        store.finish_sweep(sweep_id, outcome, {})
        ended[sweep_id] = reason
    store.close()
    with sqlite3.connect(path) as conn:  # as a console of schema version 6 left it
        conn.execute("ALTER TABLE node_verdicts DROP COLUMN cut")
        conn.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    store = Store(path)
    cuts = {r["sweep_id"]: r["cut"] for r in store.node_history("n1")}
    assert cuts == ended
    check = last_active_check(store, "n1", "standard")
    assert check is not None and ended[check.sweep_id] == "", "an unreachable node was checked: it is no cut"
    store.close()


def test_a_check_dated_in_the_future_is_clock_skew_never_fresh(
    tmp_path: Path, cluster: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = Store(tmp_path / "h.sqlite")
    now = time.time()
    _record(store, "n1", "standard", Status.PASS, -2 * HOUR, now=now)  # the clock was stepped back since
    _record(store, "n2", "standard", Status.PASS, -30, now=now)  # within the skew: taken as now
    judged = judged_from_history(store, "n1", "standard", 24 * HOUR, now)
    assert judged.status is Status.UNKNOWN and judged.reason.startswith("clock skew: the last active check")
    assert judged_from_history(store, "n2", "standard", 24 * HOUR, now).status is Status.PASS
    check = last_active_check(store, "n1", "standard")
    assert check is not None and check.stale(now, 24 * HOUR) is not None  # what watch and the console ask
    # Days later by the stepped-back clock it is still not fresh: future-dated is never fresh.
    assert check.stale(now + HOUR, 24 * HOUR) is not None
    store.close()
    assert (
        main(["sweep", "-i", cluster, "--store", str(tmp_path / "h.sqlite"), "--nodes", "n1", "--max-age", "1d"]) == 3
    )
    assert "clock skew" in capsys.readouterr().out
