"""Store durability and permissions, the published report schema, JUnit and Prometheus output, diffs."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from xml.etree import ElementTree as ET

import jsonschema
import pytest

from console.commands.summary import Detail, print_summary
from console.exitcodes import ExitCode
from console.inventory import from_hostfile, from_mapping
from console.model.findings import Evidence, Finding, Status, Subject, roll_up
from console.report import build_report, junit_xml, prometheus_textfile, report_json_schema
from console.store import Store
from console.store.diff import diff_sweeps
from console.sweep import SweepResult

ROOT = Path(__file__).resolve().parents[2]


def _finding(
    node: str, status: Status, check: str = "pcie.speed", gpu: int | None = 3, observed: float = 16
) -> Finding:
    subject = Subject(node=node, scope="gpu" if gpu is not None else "node", gpu=gpu)
    return Finding(
        check_id=check,
        family=check.split(".", maxsplit=1)[0],
        status=status,
        subject=subject,
        message=f"{check}: {observed}",
        evidence=Evidence(observed=observed, expected="fail if < 32", source="spec", source_kind="vendor-spec"),
    )


def test_store_is_owner_only_and_keeps_what_was_recorded(tmp_path: Path) -> None:
    path = tmp_path / "state" / "history.sqlite"
    store = Store(path)
    sweep = store.start_sweep("quick", "c.toml", "n[1-2]")
    verdict = roll_up("n1", [_finding("n1", Status.FAIL)])
    store.record_node(sweep, "p", verdict, {"rocm": "6.4.1"})
    run = store.add_probe_run(
        sweep,
        "n1",
        "amdsmi.metric",
        command="amd-smi metric --json",
        exit_status=0,
        started_at=0,
        duration_s=0.1,
        stdout=b'{"gpu_data": []}',
        stderr=b"",
        problem=None,
    )
    store.close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    again = Store(path)
    assert again.integrity_ok()
    assert [f.status for f in again.findings(sweep, "n1")] == [Status.FAIL]
    assert again.probe_output(run) == (b'{"gpu_data": []}', b"")
    assert again.status_counts(sweep)["FAIL"] == 1


def test_kill_9_loses_nothing_committed(tmp_path: Path) -> None:
    """A writer killed with SIGKILL mid-stream leaves every committed node verdict and a sound file."""
    db = tmp_path / "h.sqlite"
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(ROOT / "src")!r})
        from console.store import Store
        from console.model.findings import roll_up
        store = Store({str(db)!r})
        sweep = store.start_sweep("quick", "", "")
        for i in range(200):
            store.record_node(sweep, "p", roll_up(f"n{{i}}", []), {{}})
            print(i, flush=True)
            if i == 120:
                os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == -9
    last = int(proc.stdout.split()[-1])
    store = Store(db)
    assert store.integrity_ok()
    assert len(store.node_verdicts(1)) == last + 1


def test_report_validates_against_published_schema_and_junit_parses(tmp_path: Path) -> None:
    published = json.loads((ROOT / "schemas" / "sweep-report.schema.json").read_text())
    assert published == json.loads(json.dumps(report_json_schema())), "regenerate schemas/sweep-report.schema.json"
    inventory = from_hostfile("n1\nn2\nn3\n")
    verdicts = {
        "n1": roll_up("n1", [_finding("n1", Status.FAIL)]),
        "n2": roll_up("n2", [_finding("n2", Status.PASS, observed=32)]),
        "n3": roll_up("n3", [_finding("n3", Status.UNKNOWN, check="node.reachable", gpu=None)]),
    }
    report = build_report(
        inventory, verdicts, {}, sweep_id=7, level="quick", started_at=1.0, duration_s=2.0, outcome="done", exit_code=1
    )
    jsonschema.validate(json.loads(report.model_dump_json()), published)
    assert report.failed_nodes == "n1" and report.unknown_nodes == "n3"
    root = ET.fromstring(junit_xml(report, verdicts))
    assert root.get("failures") == "1" and root.get("errors") == "1" and root.get("tests") == "3"
    assert [s.get("name") for s in root.iter("testsuite")] == ["n1", "n2", "n3"]
    prom = prometheus_textfile(report)
    assert 'instinct_console_node_verdict{cluster="cluster",node="n1",pool="default",model="MI300X"} 2' in prom
    assert 'instinct_console_nodes{cluster="cluster",status="UNKNOWN"} 1' in prom
    assert 'instinct_console_sweep_complete{cluster="cluster",level="quick"} 1' in prom
    assert report.started == "1970-01-01T00:00:01Z" and report.cluster == "cluster"


def test_every_prometheus_series_names_its_cluster() -> None:
    """One Prometheus scrapes several clusters' admin hosts, and pool names repeat between clusters."""
    inventory = from_mapping(
        {"cluster": {"name": 'east "1"'}, "pools": [{"name": "p", "gpu_model": "MI300X", "nodes": "n1"}]}
    )
    report = build_report(
        inventory,
        {"n1": roll_up("n1", [_finding("n1", Status.PASS, observed=32)])},
        {},
        sweep_id=1,
        level="quick",
        started_at=1_796_000_000.0,
        duration_s=2.0,
        outcome="cancelled",
        exit_code=130,
    )
    series = [line for line in prometheus_textfile(report).splitlines() if not line.startswith("#")]
    assert series and all(line.count('cluster="east \\"1\\""') == 1 for line in series), series
    assert 'instinct_console_sweep_complete{cluster="east \\"1\\"",level="quick"} 0' in series
    assert report.started.endswith("Z")


def test_junit_carries_each_finding_with_its_message_and_evidence() -> None:
    inventory = from_hostfile("n1\nn2\n")
    warn = _finding("n1", Status.WARN, "power.cap", observed=700).model_copy(update={"message": "power cap 700 W"})
    skip = _finding("n1", Status.SKIP, "rvs.gst", gpu=None).model_copy(update={"message": "no RVS on this node"})
    verdicts = {
        "n1": roll_up(
            "n1",
            [_finding("n1", Status.FAIL), warn, skip, _finding("n1", Status.PASS, gpu=4)],
            {"thermal.hotspot": 8},
            {"thermal"},
        ),
        "n2": roll_up("n2", [_finding("n2", Status.UNKNOWN, check="node.reachable", gpu=None)]),
    }
    report = build_report(
        inventory, verdicts, {}, sweep_id=1, level="quick", started_at=1.0, duration_s=2.0, outcome="done", exit_code=1
    )
    root = ET.fromstring(junit_xml(report, verdicts))
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    n1, n2 = suites["n1"], suites["n2"]
    assert (n1.get("tests"), n1.get("failures"), n1.get("errors"), n1.get("skipped")) == ("5", "1", "0", "1")
    assert {p.get("name"): p.get("value") for p in n1.iter("property")}["verdict"] == "FAIL"
    cases = {c.get("name"): c for c in n1.iter("testcase")}
    assert set(cases) == {
        "pcie.speed gpu3",
        "power.cap gpu3",
        "rvs.gst",
        "pcie.speed gpu4",
        "thermal.hotspot (8 passed)",
    }
    failure = cases["pcie.speed gpu3"].find("failure")
    assert failure is not None and failure.get("message") == "pcie.speed: 16" and failure.get("type") == "FAIL"
    evidence = json.loads(failure.text or "")
    assert evidence["observed"] == 16 and evidence["expected"] == "fail if < 32" and evidence["source"] == "spec"
    out = cases["power.cap gpu3"].find("system-out")
    assert out is not None and out.text == "WARN: power cap 700 W" and cases["power.cap gpu3"].find("failure") is None
    skipped = cases["rvs.gst"].find("skipped")
    assert skipped is not None and skipped.get("message") == "no RVS on this node"
    assert list(cases["pcie.speed gpu4"]) == []  # a pass is a bare testcase
    assert list(cases["thermal.hotspot (8 passed)"]) == []  # and so are the passes kept as counts
    error = n2.find("testcase/error")
    assert error is not None and error.get("type") == "UNKNOWN" and n2.get("errors") == "1"
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == ("6", "1", "1", "1")


def _bandwidth(node: str, gbps: float) -> Finding:
    """A measured figure: TransferBench's slowest a2a pair, in the transferbench family as the packs have it."""
    return _finding(node, Status.PASS, "tb.a2a", None, gbps).model_copy(update={"family": "transferbench"})


def test_diff_names_stack_verdict_and_figure_changes(tmp_path: Path) -> None:
    store = Store(tmp_path / "h.sqlite")
    base = store.start_sweep("quick", "", "")
    store.record_node(base, "p", roll_up("n1", [_finding("n1", Status.PASS, observed=32)]), {"rocm": "6.4.1"})
    store.record_node(base, "p", roll_up("n2", [_bandwidth("n2", 46.5)]), {"rocm": "6.4.1"})
    store.record_node(base, "p", roll_up("n3", [_finding("n3", Status.PASS, observed=32)]), {"rocm": "6.4.1"})
    new = store.start_sweep("quick", "", "")
    store.record_node(new, "p", roll_up("n1", [_finding("n1", Status.FAIL, observed=16)]), {"rocm": "6.4.1"})
    store.record_node(new, "p", roll_up("n2", [_bandwidth("n2", 40.0)]), {"rocm": "6.4.1"})
    store.record_node(new, "p", roll_up("n3", [_finding("n3", Status.PASS, observed=32)]), {"rocm": "7.0.2"})
    diffs = {d.node: d for d in diff_sweeps(store, base, new)}
    assert diffs["n1"].verdict == ("PASS", "FAIL") and diffs["n1"].findings[0][1:3] == ("PASS", "FAIL")
    assert diffs["n2"].figures == [("tb.a2a n2", 46.5, 40.0)]
    assert diffs["n3"].stack == {"rocm": ("6.4.1", "7.0.2")}


def test_diff_sees_a_problem_come_and_go_where_the_passes_were_counted(tmp_path: Path) -> None:
    # Sweeps keep most PASS findings as counts per check (console.model.kept): a FAIL that went away,
    # or one that came where the check passed before, is still a change from or to PASS.
    store = Store(tmp_path / "h.sqlite")
    stack = {"rocm": "6.4.1"}
    base = store.start_sweep("quick", "", "")
    store.record_node(base, "p", roll_up("n1", [_finding("n1", Status.FAIL)]), stack)
    store.record_node(base, "p", roll_up("n2", [], {"pcie.speed": 8}, {"pcie"}), stack)
    new = store.start_sweep("quick", "", "")
    store.record_node(new, "p", roll_up("n1", [], {"pcie.speed": 8}, {"pcie"}), stack)
    store.record_node(new, "p", roll_up("n2", [_finding("n2", Status.FAIL)], {"pcie.speed": 7}, {"pcie"}), stack)
    diffs = {d.node: d for d in diff_sweeps(store, base, new)}
    assert diffs["n1"].verdict == ("FAIL", "PASS")
    assert [f[:3] for f in diffs["n1"].findings] == [("pcie.speed n1 gpu3", "FAIL", "PASS")]
    assert diffs["n2"].verdict == ("PASS", "FAIL")
    assert [f[:3] for f in diffs["n2"].findings] == [("pcie.speed n2 gpu3", "PASS", "FAIL")]


def test_diff_leaves_out_telemetry_unswept_nodes_and_the_stack_of_an_unreachable_one(tmp_path: Path) -> None:
    store = Store(tmp_path / "h.sqlite")
    stack = {"rocm": "6.4.1", "kernel": "6.8.0"}
    base = store.start_sweep("quick", "", "")
    for node in ("n1", "n2", "n3"):
        hot = _finding(node, Status.PASS, "thermal.hotspot", 0, 39)
        store.record_node(base, "p", roll_up(node, [hot, _finding(node, Status.PASS, observed=32)]), stack)
    new = store.start_sweep("quick", "", "")
    hotter = _finding("n1", Status.PASS, "thermal.hotspot", 0, 44)  # +13 %: telemetry, not a change
    store.record_node(new, "p", roll_up("n1", [hotter, _finding("n1", Status.PASS, observed=32)]), stack)
    lost = _finding("n2", Status.UNKNOWN, "node.reachable", None)
    store.record_node(new, "p", roll_up("n2", [lost]), {})  # unreachable: no stack to compare
    # n3 was not in the new sweep at all
    diffs = {d.node: d for d in diff_sweeps(store, base, new)}
    assert set(diffs) == {"n2"}
    assert diffs["n2"].verdict == ("PASS", "UNKNOWN") and diffs["n2"].stack == {}


def test_diff_compares_with_the_newest_full_sweep_not_a_drift_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from console.cli import main

    inventory = tmp_path / "c.toml"
    inventory.write_text('[[pools]]\nname = "p"\ngpu_model = "MI300X"\nnodes = "n[1-3]"\n')
    store_path = tmp_path / "h.sqlite"
    store = Store(store_path)
    stack = {"rocm": "6.4.1"}
    base = store.start_sweep("quick", "", "")
    for node in ("n1", "n2", "n3"):
        store.record_node(base, "p", roll_up(node, [_finding(node, Status.PASS, observed=32)]), stack)
    store.finish_sweep(base, "done", {})  # accept takes only a finished sweep
    full = store.start_sweep("quick", "", "")
    store.record_node(full, "p", roll_up("n1", [_finding("n1", Status.FAIL, observed=16)]), stack)
    for node in ("n2", "n3"):
        store.record_node(full, "p", roll_up(node, [_finding(node, Status.PASS, observed=32)]), stack)
    drift = store.start_sweep("quick:firmware,stack", "", "")
    store.record_node(drift, "p", roll_up("n3", [_finding("n3", Status.PASS, observed=32)]), {"rocm": "7.0.0"})
    store.close()
    assert main(["accept", "-i", str(inventory), "--store", str(store_path), "--sweep", str(base)]) == 0
    capsys.readouterr()
    assert main(["diff", "-i", str(inventory), "--store", str(store_path)]) == 1  # n1 regressed: a gate fails
    out = capsys.readouterr().out
    assert f"sweep {full} (quick) vs baseline {base} (quick): 1 regressed, 1 verdict change(s)" in out
    assert "n1: regressed verdict PASS -> FAIL" in out and "n3" not in out
    assert main(["diff", "-i", str(inventory), "--store", str(store_path), "--pool", "nosuch"]) == 2


def test_diff_compares_like_with_like_and_exits_0_without_regressions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A quick baseline against a full sweep listed every check the baseline never ran as (new) -> FAIL,
    counted unchanged PASS nodes as changed and always exited 0."""
    from console.cli import main

    inventory = tmp_path / "c.toml"
    inventory.write_text('[[pools]]\nname = "p"\ngpu_model = "MI300X"\nnodes = "n[1-2]"\n')
    store_path = tmp_path / "h.sqlite"
    store = Store(store_path)
    stack = {"rocm": "6.4.1"}
    base = store.start_sweep("quick", "", "")
    for node in ("n1", "n2"):
        store.record_node(base, "p", roll_up(node, [_finding(node, Status.PASS, observed=32)]), stack)
    store.finish_sweep(base, "done", {})
    full = store.start_sweep("full", "", "")
    for node in ("n1", "n2"):
        rvs = Finding(check_id="rvs.fail_count", family="rvs", status=Status.FAIL, subject=Subject(node=node),
                      message="a check the quick baseline never ran")  # fmt: skip
        store.record_node(full, "p", roll_up(node, [_finding(node, Status.PASS, observed=32), rvs]), stack)
    store.finish_sweep(full, "done", {})
    store.close()
    assert main(["accept", "-i", str(inventory), "--store", str(store_path), "--sweep", str(base)]) == 0
    capsys.readouterr()
    code = main(["diff", "-i", str(inventory), "--store", str(store_path), "--sweep", str(full), "--json"])
    report = json.loads(capsys.readouterr().out)
    # The stored verdicts went PASS -> FAIL for the full sweep's RVS, a check the baseline never ran: on the
    # checks both ran nothing changed, and RVS is shown beside them, not compared.
    nodes = report["p"]["nodes"]
    assert [(n["verdict"], n["findings"], n["regressed"]) for n in nodes] == [(["PASS", "PASS"], [], False)] * 2
    assert [len(n["uncompared"]) for n in nodes] == [1, 1] and report["p"]["regressed"] == []
    assert code == 0
    code = main(["diff", "-i", str(inventory), "--store", str(store_path), "--sweep", str(full)])
    out = capsys.readouterr().out
    assert "only the checks the quick baseline ran are compared" in out and "(new) -> FAIL" not in out
    assert "0 regressed, 0 verdict change(s)" in out and "n1: verdict PASS (unchanged)" in out
    assert "not in the baseline's checks: rvs.fail_count n1: FAIL" in out
    assert code == 0


@pytest.mark.parametrize("command", [["history"], ["audit"], ["diff", "-i", "INV"], ["accept", "-i", "INV"]])
def test_reading_commands_do_not_create_a_mistyped_history_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    from console.cli import main

    inventory = tmp_path / "c.toml"
    inventory.write_text('[[pools]]\nname = "p"\ngpu_model = "MI300X"\nnodes = "n1"\n')
    missing = tmp_path / "typo.sqlite"
    argv = [str(inventory) if word == "INV" else word for word in command]
    assert main([*argv, "--store", str(missing)]) == 2
    assert "no history database at" in capsys.readouterr().err and not missing.exists()


def test_history_and_audit_are_not_cut_at_80_columns_in_a_pipe(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """history cut its rows at Rich's 80-column default; audit folded pool names as a hostlist."""
    from console.cli import main

    store_path = tmp_path / "h.sqlite"
    store = Store(store_path)
    nodes = "gpu[0001-0999],mi355x-rack17-node[001-128],mi300x-rack02-node[001-064]"
    sweep = store.start_sweep("standard", "cluster.toml", nodes)
    store.finish_sweep(sweep, "done", {"counts": {"PASS": 1180, "WARN": 7, "FAIL": 3, "UNKNOWN": 1}})
    with store.audited("accept", ["mi300x-a", "mi355x-a"], inputs={"sweep": sweep}, user="op") as entry:
        entry.finish("accepted")
    store.close()
    assert main(["history", "--store", str(store_path)]) == 0
    out = capsys.readouterr().out
    assert nodes in out and "PASS=1180 WARN=7 FAIL=3 UNKNOWN=1" in out and "…" not in out
    assert main(["audit", "--store", str(store_path)]) == 0
    out = capsys.readouterr().out
    assert "mi300x-a, mi355x-a" in out and "mi[300,355]x-a" not in out


def test_diff_a_check_skipped_in_the_baseline_that_passes_now_is_no_regression(tmp_path: Path) -> None:
    """Against a first-sweep baseline (history checks SKIP: no history yet) every node "regressed"
    SKIP -> PASS and ``diff`` exited 1; the same after an upgrade that lets a check run (CPER on a newer
    amd-smi). A check that ran before and is skipped now is shown; a SKIP that turns FAIL regresses."""
    store = Store(tmp_path / "h.sqlite")
    stack = {"rocm": "6.4.1"}
    first = _finding("n1", Status.SKIP, "ecc.correctable_increase", None).model_copy(update={"family": "ecc"})
    base = store.start_sweep("quick", "", "")
    for node in ("n1", "n2", "n3"):
        skipped = first.model_copy(update={"subject": Subject(node=node, gpu=None)})
        store.record_node(base, "p", roll_up(node, [skipped, _finding(node, Status.PASS, observed=32)]), stack)
    ran = first.model_copy(update={"subject": Subject(node="n4", gpu=None), "status": Status.PASS})
    store.record_node(base, "p", roll_up("n4", [ran, _finding("n4", Status.PASS, observed=32)]), stack)
    new = store.start_sweep("quick", "", "")
    # n1: the check passes, counted; n2: kept whole; n3: it fails now; n4: it ran before, skipped now
    store.record_node(new, "p", roll_up("n1", [], {"ecc.correctable_increase": 1, "pcie.speed": 1}, {"ecc"}), stack)
    passed = first.model_copy(update={"subject": Subject(node="n2", gpu=None), "status": Status.PASS})
    store.record_node(new, "p", roll_up("n2", [passed, _finding("n2", Status.PASS, observed=32)]), stack)
    failed = first.model_copy(update={"subject": Subject(node="n3", gpu=None), "status": Status.FAIL})
    store.record_node(new, "p", roll_up("n3", [failed, _finding("n3", Status.PASS, observed=32)]), stack)
    skipped = first.model_copy(update={"subject": Subject(node="n4", gpu=None)})
    store.record_node(new, "p", roll_up("n4", [skipped, _finding("n4", Status.PASS, observed=32)]), stack)
    diffs = {d.node: d for d in diff_sweeps(store, base, new)}
    assert "n1" not in diffs and "n2" not in diffs  # nothing to act on: no change listed
    assert diffs["n3"].regressed and [f[1:3] for f in diffs["n3"].findings] == [("SKIP", "FAIL")]
    assert not diffs["n4"].regressed and [f[1:3] for f in diffs["n4"].findings] == [("PASS", "SKIP")]


def test_diff_leaves_out_stack_fields_only_one_of_two_levels_reads(tmp_path: Path) -> None:
    """A quick baseline against a full sweep listed RCCL's and TransferBench's versions as changed from
    nothing; only fields both sweeps read are compared then (a same-level sweep losing one still shows)."""
    store = Store(tmp_path / "h.sqlite")
    base = store.start_sweep("quick", "", "")
    store.record_node(base, "p", roll_up("n1", [_finding("n1", Status.PASS, observed=32)]), {"rocm": "6.4.1"})
    full = store.start_sweep("full", "", "")
    rvs = Finding(check_id="rvs.fail_count", family="rvs", status=Status.PASS, subject=Subject(node="n1"),
                  message="a check the quick baseline never ran")  # fmt: skip
    stack = {"rocm": "7.0.2", "rccl": "develop:448c4c7", "transferbench": "1.59.00"}
    store.record_node(full, "p", roll_up("n1", [_finding("n1", Status.PASS, observed=32), rvs]), stack)
    assert diff_sweeps(store, base, full)[0].stack == {"rocm": ("6.4.1", "7.0.2")}
    again = store.start_sweep("quick", "", "")
    store.record_node(again, "p", roll_up("n1", [_finding("n1", Status.PASS, observed=32)]), {"kernel": "6.8"})
    assert diff_sweeps(store, base, again)[0].stack == {"rocm": ("6.4.1", None), "kernel": (None, "6.8")}


def _summary(detail: Detail) -> list[str]:
    from rich.console import Console

    inventory = from_hostfile("n1\nn2\nn3\n")
    verdicts = {
        "n1": roll_up(
            "n1",
            [_finding("n1", Status.WARN, "power.cap"), _finding("n1", Status.FAIL), _finding("n1", Status.FAIL, gpu=5)],
        ),
        "n2": roll_up("n2", [_finding("n2", Status.PASS, observed=32)]),
        "n3": roll_up("n3", [_finding("n3", Status.UNKNOWN, check="node.reachable", gpu=None)]),
    }
    report = build_report(
        inventory, verdicts, {}, sweep_id=7, level="quick", started_at=1.0, duration_s=2.0, outcome="done", exit_code=1
    )
    counts = {s: sum(v.status is s for v in verdicts.values()) for s in Status}
    console = Console(record=True, width=200, color_system=None)
    result = SweepResult(sweep_id=7, outcome="done", verdicts=verdicts, duration_s=2.0, counts=counts)
    print_summary(console, report.nodes, result, ExitCode.FAILED, problems=["report not written: x"], detail=detail)
    return console.export_text().splitlines()


def test_the_headless_summary_is_a_line_per_node_by_default() -> None:
    """At 1,000 nodes a line per finding scrolls the exit code off the screen: one line per unhealthy node."""
    lines = _summary(Detail.NODES)
    n1 = [line for line in lines if " n1" in line]
    assert len(n1) == 1 and "FAIL" in n1[0] and "pcie.speed: 16" in n1[0] and "(+2 more)" in n1[0], lines
    assert not any(" n2" in line for line in lines), "a PASS node has no line"
    assert any(" n3" in line and "UNKNOWN" in line for line in lines)
    assert lines[-2:] == ["report not written: x", "exit 1 (failed)"]


def test_verbose_lists_every_finding_and_quiet_only_the_problems() -> None:
    verbose = _summary(Detail.FINDINGS)
    assert sum("pcie.speed: 16" in line for line in verbose) == 2 and any("power.cap" in line for line in verbose)
    first_fail = next(i for i, line in enumerate(verbose) if "pcie.speed" in line)
    assert first_fail < next(i for i, line in enumerate(verbose) if "power.cap" in line), "gravest first"
    assert _summary(Detail.QUIET) == ["report not written: x"]


def test_the_progress_bar_names_the_node_it_has_waited_on_longest() -> None:
    from io import StringIO

    from rich.console import Console

    from console.commands.sweep import _Progress
    from console.sweep.events import NodeDone, NodeSnapshot, ProbeStarted, SweepStarted

    progress = _Progress(Console(file=StringIO(), force_terminal=True, width=160))
    with progress:
        progress(SweepStarted(sweep_id=1, nodes=["a", "b"], probes=["amdsmi"], level="quick"))
        progress(ProbeStarted(sweep_id=1, node="a", probe="amdsmi"))
        progress(ProbeStarted(sweep_id=1, node="b", probe="amdsmi"))
        progress(ProbeStarted(sweep_id=1, node="a", probe="stack"))  # a later probe does not restart a's clock
        assert progress.slowest.render(None).plain.startswith("waiting on a ")
        verdict = roll_up("a", [_finding("a", Status.PASS, observed=32)])
        progress(NodeDone(sweep_id=1, pool="default", verdict=verdict, snapshot=NodeSnapshot()))
        assert progress.slowest.render(None).plain.startswith("waiting on b ")
