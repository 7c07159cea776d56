"""Nodes judged on the node (``check-local``'s compact report) merged by the console, against the same
nodes judged here from their raw outputs.

Real ``check-local`` runs on this host answer for each node through the simulator's shims; their
output lines are labelled as ``srun --label`` labels them and handed to ``SlurmJob.collect``
(the Slurm lab test in ``test_via_slurm`` runs the same through a real ``srun``).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from console.checks import load_packs
from console.cli import main
from console.exitcodes import ExitCode, exit_code_for
from console.inventory import load_inventory
from console.model.findings import Finding, NodeVerdict, Status
from console.service.assembly import EngineSpec, build_engine
from console.sim.faults import Fault, FaultKind
from console.store import Store
from console.store.diff import diff_sweeps
from console.store.pins import effective_pins
from console.sweep.checker_slurm import SlurmChecker
from console.sweep.via_slurm import SlurmJob, SlurmJobSettings, _pins_given, srun_argv
from console.transport import LocalTransport
from tests.multinode.localnodes import local_cluster, shim_dir

NAMES = ["gpu001", "gpu002", "gpu003"]
FAULTS = [
    Fault(kind=FaultKind.ECC_UNCORRECTABLE, node="gpu002", gpu=3),
    Fault(kind=FaultKind.ECC_CORRECTABLE_STORM, node="gpu003", gpu=1),
]


def node_line(root: Path, inventory: Path, node: str, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """What ``check-local --json -`` prints on ``node`` (its shims first on PATH, Slurm's name for it)."""
    saved = {k: os.environ.get(k) for k in ("PATH", "SLURMD_NODENAME")}
    os.environ["PATH"] = f"{shim_dir(root, node)}:{saved['PATH']}"
    os.environ["SLURMD_NODENAME"] = node
    try:
        capsys.readouterr()
        main(["check-local", "-i", str(inventory), *args, "--json", "-"])
        return capsys.readouterr().out.strip()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def without_raw(line: str) -> str:
    """A ``--raw`` report line as check-local prints it without ``--raw``: a PASS sends no raw outputs."""
    report = json.loads(line)
    if report["status"] == "PASS":
        report["raw"] = None
    return json.dumps(report, separators=(",", ":"))


def srun_stdout(lines: list[str], width: int = 1024) -> str:
    """The tasks' lines as ``srun --label`` prints them: chunks of ``width`` characters, each labelled."""
    out = []
    for task, text in enumerate(lines):
        out += [f"{task}: {text[i : i + width]}" for i in range(0, len(text), width)]
    return "\n".join(out) + "\n"


def sweep(
    inventory_path: Path, store: Store, stdout: str, stderr: str = "", level: str = "quick"
) -> dict[str, NodeVerdict]:
    """One sweep of every node of the inventory at ``level`` from what the job's tasks printed."""
    inventory = load_inventory(inventory_path)
    job = SlurmJob(inventory, LocalTransport("local"), "local", SlurmJobSettings())
    job.collect(stdout, stderr, inventory.nodes)
    engine = build_engine(EngineSpec(inventory, load_packs(), store.path), store, SlurmChecker(job))

    async def run() -> dict[str, NodeVerdict]:
        try:
            return (await engine.run(level=level)).verdicts
        finally:
            await engine.close()

    return asyncio.run(run())


@dataclass
class Nodes:
    """The simulated nodes, and each one's report lines (check-local takes a second or two: run once)."""

    root: Path
    inventory: Path
    lines: dict[tuple[str, str], str] = field(default_factory=dict)

    def reports(self, capsys: pytest.CaptureFixture[str], mode: str) -> list[str]:
        """Every node's ``compact`` or ``raw`` (``--raw``) report line, in task order."""
        for node in NAMES:
            if (node, "raw") not in self.lines:
                # One run per node: the compact line is the same report without the raw outputs, so the
                # two ways of judging it see exactly the same outputs.
                line = node_line(self.root, self.inventory, node, capsys, "--raw")
                self.lines[node, "raw"], self.lines[node, "compact"] = line, without_raw(line)
        return [self.lines[node, mode] for node in NAMES]


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Nodes:
    root = tmp_path_factory.mktemp("nodes")
    return Nodes(root, local_cluster(root, NAMES, FAULTS))


def comparable(finding: Finding) -> tuple[object, ...]:
    """A finding without the store id of its raw output (the compact path stores none for a PASS node)."""
    evidence = finding.evidence.model_dump(exclude={"probe_run_id"})
    return (finding.check_id, finding.status, finding.subject.label(), finding.message, json.dumps(evidence))


def pass_counts(verdict: NodeVerdict) -> Counter[str]:
    counts = Counter(f.check_id for f in verdict.findings if f.status is Status.PASS)
    counts.update(verdict.passed)
    return counts


def test_node_judged_verdicts_are_those_judged_here(
    nodes: Nodes, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    central_store, merged_store = Store(tmp_path / "central.db"), Store(tmp_path / "merged.db")
    central = sweep(nodes.inventory, central_store, srun_stdout(nodes.reports(capsys, "raw")))
    merged = sweep(nodes.inventory, merged_store, srun_stdout(nodes.reports(capsys, "compact")))
    assert {n: v.status for n, v in merged.items()} == {
        "gpu001": Status.PASS,
        "gpu002": Status.FAIL,
        "gpu003": Status.WARN,
    }
    for node in NAMES:
        a, b = central[node], merged[node]
        assert (a.status, a.families, a.reason) == (b.status, b.families, b.reason), node
        assert sorted(map(comparable, (f for f in a.findings if f.status is not Status.PASS))) == sorted(
            map(comparable, (f for f in b.findings if f.status is not Status.PASS))
        ), node
        assert pass_counts(a) == pass_counts(b), node
    # The PASS node kept its PASS findings as counts (but the ECC figures the history compares), and no
    # raw output was stored for it; the others were judged here again from their outputs, and stored.
    healthy = merged["gpu001"]
    assert sum(healthy.passed.values()) > 200
    kept = {f.check_id: f.status for f in healthy.findings}
    assert kept.pop("ecc.correctable") is Status.PASS  # the figures the history compares next time
    assert kept.pop("ecc.correctable_increase") is Status.SKIP  # judged here: no earlier sweep yet
    assert set(kept) <= {"pcie.replay", "pcie.l0_to_recovery"}  # counters that are not 0
    assert merged_store.latest_probe_run("gpu001", "amdsmi.metric") is None
    assert merged_store.latest_probe_run("gpu002", "amdsmi.metric") is not None
    central_id, merged_id = central_store.latest_sweep_id(), merged_store.latest_sweep_id()
    assert central_id is not None and merged_id is not None
    assert central_store.finding_totals(central_id) == merged_store.finding_totals(merged_id)
    assert central_store.status_counts(central_id) == merged_store.status_counts(merged_id)
    assert central_store.check_ids(central_id) == merged_store.check_ids(merged_id)
    assert merged_store.passed_counts(merged_id, "gpu001") == healthy.passed
    assert exit_code_for(list(v.status for v in merged.values()), "done") == ExitCode.FAILED


def test_a_change_since_the_last_sweep_is_judged_here_from_the_figures_kept(
    nodes: Nodes,
    capsys: pytest.CaptureFixture[str],
    tmp_path_factory: pytest.TempPathFactory,
    tmp_path: Path,
) -> None:
    # Then: 50 more correctable errors on gpu001's GPU 5, under the count's own WARN line (100): the node
    # passes its own checks, and only the history (here) sees the change.
    later = tmp_path_factory.mktemp("later")
    storm = Fault(kind=FaultKind.ECC_CORRECTABLE_STORM, node="gpu001", gpu=5, params={"count": 50})
    inventory = local_cluster(later, NAMES, [*FAULTS, storm])
    line = node_line(later, inventory, "gpu001", capsys, "--raw")
    now = {"c": without_raw(line), "r": line}
    assert json.loads(now["c"])["status"] == "PASS" and json.loads(now["c"])["raw"] is None
    first = {"compact": nodes.reports(capsys, "compact"), "raw": nodes.reports(capsys, "raw")}
    verdicts = {}
    for mode, line in (("compact", now["c"]), ("raw", now["r"])):
        store = Store(tmp_path / f"{mode}.db")
        sweep(nodes.inventory, store, srun_stdout(first[mode]))
        verdicts[mode] = sweep(nodes.inventory, store, srun_stdout([line, *first[mode][1:]]))["gpu001"]
        if mode == "compact":
            ids = [s["id"] for s in store.sweeps()]
            changed = {d.node: d for d in diff_sweeps(store, ids[1], ids[0])}
            assert changed["gpu001"].verdict == ("PASS", "WARN")
            assert [(k, a, b) for k, a, b in changed["gpu001"].figures] == [("ecc.correctable gpu001 gpu5", 0.0, 50.0)]
    merged, central = verdicts["compact"], verdicts["raw"]
    assert merged.status is Status.WARN and merged.reason.startswith("gpu5 Correctable ECC errors since the last sweep")
    assert (merged.status, merged.reason, merged.families) == (central.status, central.reason, central.families)
    changes = [comparable(f) for f in merged.findings if f.check_id == "ecc.correctable_increase"]
    assert changes == [
        comparable(f) for f in central.findings if f.check_id == "ecc.correctable_increase" and f.status is Status.WARN
    ]
    assert merged.passed["ecc.correctable_increase"] == 7 and pass_counts(merged) == pass_counts(central)


def _edit(line: str, **changes: object) -> str:
    report = json.loads(line)
    report.update(changes)
    return json.dumps(report, separators=(",", ":"))


def _dropped_passed(line: str, check: str) -> str:
    report = json.loads(line)
    del report["passed"][check]
    return json.dumps(report, separators=(",", ":"))


@pytest.mark.parametrize(
    ("spoil", "reason"),
    [
        (lambda line: line[: len(line) // 2], "cut or garbled"),
        (lambda line: line.replace('"status":"PASS"', '"status":"PASSED"', 1), "does not read as one: status"),
        (lambda line: line.replace("{", "\x00{", 1), "cut or garbled"),
        (
            lambda line: _edit(line, format="instinct-console-check-local-9"),
            "of format 'instinct-console-check-local-9'",
        ),
        (lambda line: _edit(line, judged_with="0" * 16), "other check packs, pins or expectations"),
        (lambda line: _dropped_passed(line, "ecc.uncorrectable"), "PASS without judging ecc.uncorrectable"),
        (
            lambda line: _edit(line, probes=json.loads(line)["probes"][1:]),
            "the report's probes are not those asked for",
        ),
        (lambda line: _edit(line, level="full"), "judged at level full, not at the level asked for"),
        (
            lambda line: line.replace('"node":"gpu001"', '"node":"gpu002"').replace(
                '"node":"gpu002"', '"node":"gpu001"', 1
            ),
            "findings about another node",
        ),
    ],
)
def test_a_report_that_cannot_be_vouched_for_is_unknown(
    nodes: Nodes,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    spoil: object,
    reason: str,
) -> None:
    healthy, *others = nodes.reports(capsys, "compact")
    assert callable(spoil)
    verdicts = sweep(nodes.inventory, Store(tmp_path / "h.db"), srun_stdout([spoil(healthy), *others]))
    assert verdicts["gpu001"].status is Status.UNKNOWN
    assert reason in verdicts["gpu001"].reason
    assert verdicts["gpu002"].status is Status.FAIL  # the others are judged all the same


def test_a_failure_claimed_by_a_pass_report_is_not_taken_as_pass(
    nodes: Nodes, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    healthy, *others = nodes.reports(capsys, "compact")
    report = json.loads(healthy)
    report["findings"][0]["status"] = "FAIL"  # the findings say FAIL, the verdict still says PASS
    verdicts = sweep(nodes.inventory, Store(tmp_path / "h.db"), srun_stdout([json.dumps(report), *others]))
    assert verdicts["gpu001"].status is Status.UNKNOWN
    assert "its verdict PASS does not follow from its findings (FAIL)" in verdicts["gpu001"].reason


def test_a_node_that_never_reports_is_not_checked(
    nodes: Nodes, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _, *others = nodes.reports(capsys, "compact")
    stderr = "srun: error: gpu001: task 0: Killed\n"
    verdicts = sweep(nodes.inventory, Store(tmp_path / "h.db"), srun_stdout(["", *others]), stderr)
    assert verdicts["gpu001"].status is Status.UNKNOWN
    assert verdicts["gpu001"].reason == "could not check: unreachable: no report from the Slurm job: " + stderr.strip()
    assert [f.check_id for f in verdicts["gpu001"].findings] == ["node.reachable"]


def test_the_consoles_stored_pin_goes_to_the_nodes(
    nodes: Nodes, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    plain = nodes.reports(capsys, "compact")
    rocm = json.loads(plain[0])["stack"]["rocm"]
    store = Store(tmp_path / "h.db")
    store.set_pin("p", {"rocm": rocm}, "gpu001", "test")  # pin --from-node: the console's, not the file's
    inventory = load_inventory(nodes.inventory)
    # Judged against the cluster file's pin (none) the node's PASS is not what this console would say.
    verdicts = sweep(nodes.inventory, store, srun_stdout(plain))
    assert verdicts["gpu001"].status is Status.UNKNOWN and "other check packs, pins" in verdicts["gpu001"].reason
    # The job tells the nodes the console's pins; then the node judges the pin itself.
    argv = srun_argv(
        inventory.nodes,
        str(nodes.inventory),
        "quick",
        SlurmJobSettings(),
        _pins_given(inventory, effective_pins(inventory, store)),
    )
    pins = argv[argv.index("--pins") + 1]
    assert json.loads(pins) == {"p": {"rocm": rocm}}
    line = node_line(nodes.root, nodes.inventory, "gpu001", capsys, "--pins", pins)
    verdicts = sweep(nodes.inventory, store, srun_stdout([line, *plain[1:]]))
    assert verdicts["gpu001"].status is Status.PASS and verdicts["gpu001"].passed["stack.rocm"] == 1
