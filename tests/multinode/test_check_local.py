"""``check-local`` for real on this host: the sim's shims stand in for the tools, LocalTransport runs them."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from console.cli import main
from console.exitcodes import ExitCode
from console.sim.faults import Fault, FaultKind
from console.sim.specs import DEFAULT_STACK, GpuModel, stack_preset
from console.sweep.bundle import split_bundle
from console.sweep.catalog import PROBES_BY_ID, probes_for
from console.sweep.node_report import LocalCheckReport
from console.sweep.via_slurm import bundle_text
from tests.multinode.localnodes import local_cluster, shim_dir

NAMES = ["gpu001", "gpu002"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("nodes")
    fault = Fault(kind=FaultKind.ECC_UNCORRECTABLE, node="gpu002", gpu=3)
    return root, local_cluster(root, NAMES, [fault])


def on_node(root: Path, node: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make this process look like ``node``: its shims first on PATH, and Slurm's name for it."""
    monkeypatch.setenv("PATH", f"{shim_dir(root, node)}:{os.environ['PATH']}")
    monkeypatch.setenv("SLURMD_NODENAME", node)


def check_local(cluster: tuple[Path, Path], node: str, monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    root, inventory = cluster
    on_node(root, node, monkeypatch)
    return main(["check-local", "-i", str(inventory), *args])


def test_healthy_node_passes_with_a_compact_report(
    cluster: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = check_local(cluster, "gpu001", monkeypatch, "--json", "-")
    out, err = capsys.readouterr()
    assert code == ExitCode.OK
    assert out.count("\n") == 1 and out.isascii()  # one line, as srun --label carries it
    report = LocalCheckReport.model_validate(json.loads(out))
    assert (report.node, report.pool, report.gpu_model, report.level) == ("gpu001", "p", "MI300X", "quick")
    assert report.status.value == "PASS" and err.startswith("gpu001: PASS")
    assert "PASS" in err.splitlines()[1] and f"{len(probes_for('quick'))} probes" in err  # the counts line
    assert report.raw is None  # a PASS sends no raw outputs unless asked
    assert {p.probe for p in report.probes} == {p.id for p in probes_for("quick")}
    assert all(p.exit_status == 0 and p.size > 0 and len(p.sha256) == 64 for p in report.probes)
    # PASS findings are counts, but for the figures the history compares (correctable ECC, per GPU).
    assert sum(report.passed.values()) > 200 and report.passed["ecc.uncorrectable"] == 8
    assert {f.check_id for f in report.findings if f.status.value == "PASS"} >= {"ecc.correctable"}
    assert sum(f.check_id == "ecc.correctable" for f in report.findings) == 8
    assert not any(f.check_id == "ecc.correctable_increase" for f in report.findings)  # the console's to judge
    assert len(out) < 20_000  # against ~170 KB when every raw output came along
    kernel = report.stack["kernel"]
    assert kernel == stack_preset(DEFAULT_STACK[GpuModel.MI300X]).kernel


def test_raw_on_demand_is_what_the_node_saw(
    cluster: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert check_local(cluster, "gpu001", monkeypatch, "--raw", "--json", "-") == ExitCode.OK
    report = LocalCheckReport.model_validate_json(capsys.readouterr().out)
    assert report.raw is not None and {r.probe for r in report.raw} == {p.id for p in probes_for("quick")}
    kernel = next(run for run in report.raw if run.probe == "host.kernel")
    assert kernel.output.strip() == stack_preset(DEFAULT_STACK[GpuModel.MI300X]).kernel
    # The digest matches the outputs, and what the console replays is exactly what the node saw.
    digests = {p.probe: p.sha256 for p in report.probes}
    assert all(hashlib.sha256(r.output.encode()).hexdigest() == digests[r.probe] for r in report.raw)
    sections = split_bundle(bundle_text(report), list(PROBES_BY_ID.values()))
    assert {p: s.output.decode() for p, s in sections.items()} == {r.probe: r.output for r in report.raw}


def test_failing_node_exits_1_names_the_gpu_and_sends_its_outputs(
    cluster: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = check_local(cluster, "gpu002", monkeypatch, "--json", str(tmp_path / "r.json"))
    out, _ = capsys.readouterr()
    assert code == ExitCode.FAILED
    assert out.startswith("gpu002: FAIL gpu3 Uncorrectable ECC errors")
    assert "source: ROCm/gpu-operator" in out  # the evidence's source, under the finding
    report = LocalCheckReport.model_validate_json((tmp_path / "r.json").read_text())
    assert report.families["ecc"].value == "FAIL"
    failed = [f for f in report.findings if f.status.value == "FAIL" and f.check_id == "ecc.uncorrectable"]
    assert [(f.subject.gpu, f.evidence.observed, f.evidence.expected) for f in failed] == [(3, 2.0, "fail if > 0")]
    assert report.raw is not None  # not PASS: the console judges it again from these and keeps them


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--node", "gpu009"], "node 'gpu009' is not in"),
        (["--probes", "multinode"], "invalid choice"),
    ],
)
def test_usage_errors_exit_2(
    cluster: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    try:
        code = check_local(cluster, "gpu001", monkeypatch, *args)
    except SystemExit as exc:  # argparse rejects bad choices itself
        code = int(exc.code or 0)
    assert code == ExitCode.USAGE
    assert message in capsys.readouterr().err


def test_model_without_inventory_and_missing_both(
    cluster: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    on_node(cluster[0], "gpu001", monkeypatch)
    assert main(["check-local", "--node", "gpu001"]) == ExitCode.USAGE
    assert "give -i FILE" in capsys.readouterr().err
    assert main(["check-local", "--model", "mi300x", "--gpu-count", "8"]) == ExitCode.OK  # node from Slurm
    assert capsys.readouterr().out.startswith("gpu001: PASS")
