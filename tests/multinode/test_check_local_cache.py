"""``check-local --from-cache``: a HealthCheckProgram or prolog answers at once from the report a
periodic check keeps, scoped to the job's GPUs; no usable report is UNKNOWN, never PASS."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from console.cli import main
from console.exitcodes import ExitCode
from console.sim.faults import Fault, FaultKind
from tests.multinode.localnodes import local_cluster, shim_dir

NAMES = ["gpu001", "gpu002"]


@pytest.fixture(scope="module")
def cached(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The inventory, and a directory with each node's report from one periodic check."""
    root = tmp_path_factory.mktemp("nodes")
    inventory = local_cluster(root, NAMES, [Fault(kind=FaultKind.ECC_UNCORRECTABLE, node="gpu002", gpu=3)])
    saved = os.environ["PATH"]
    try:
        for node in NAMES:
            os.environ["PATH"] = f"{shim_dir(root, node)}:{saved}"
            main(["check-local", "-i", str(inventory), "--node", node, "--json", str(root / f"{node}.json")])
    finally:
        os.environ["PATH"] = saved
    return inventory, root


def answer(cached: tuple[Path, Path], node: str, *args: str, report: Path | None = None) -> int:
    inventory, root = cached
    where = report or root / f"{node}.json"
    return main(["check-local", "-i", str(inventory), "--node", node, "--from-cache", str(where), *args])


def test_the_cached_verdict_answers_without_running_a_probe(
    cached: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no amd-smi here: a probe run now would be UNKNOWN
    capsys.readouterr()
    assert answer(cached, "gpu001") == ExitCode.OK
    assert capsys.readouterr().out.startswith("gpu001: PASS")
    assert answer(cached, "gpu002") == ExitCode.FAILED
    assert capsys.readouterr().out.startswith("gpu002: FAIL gpu3 Uncorrectable ECC errors")


def test_a_prolog_is_held_back_only_by_the_jobs_gpus(
    cached: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert answer(cached, "gpu002", "--gpus", "0,1") == ExitCode.OK  # GPU 3 is not the job's
    assert answer(cached, "gpu002", "--gpus", "2-4") == ExitCode.FAILED
    assert answer(cached, "gpu002", "--gpus", "") == ExitCode.FAILED  # no list: every GPU
    out = capsys.readouterr().out
    assert "gpu002: PASS" in out and "gpu002: FAIL gpu3" in out


def _rewritten(cached: tuple[Path, Path], tmp_path: Path, **changes: object) -> Path:
    report = json.loads((cached[1] / "gpu001.json").read_text())
    report.update(changes)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report))
    return path


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda c, t: t / "absent.json", "no cached report"),
        (lambda c, t: _rewritten(c, t, finished_at=time.time() - 7200), "older than 1800 s"),
        # A clock stepped back (or a node's clock ahead): dated in the future is no freshness, ever.
        (lambda c, t: _rewritten(c, t, finished_at=time.time() + 3600), "clock skew: cached report"),
        (lambda c, t: _rewritten(c, t, finished_at=float("nan")), "has no usable time (nan)"),
        (lambda c, t: _rewritten(c, t, node="gpu002"), "is of gpu002, not of gpu001"),
        (lambda c, t: _rewritten(c, t, format="instinct-console-check-local-1"), "of format"),
        (lambda c, t: _rewritten(c, t, outcome="deadline"), "its check ended deadline"),
        (
            lambda c, t: Path(t / "cut.json").write_text((c[1] / "gpu001.json").read_text()[:999]) and t / "cut.json",
            "cut or garbled",
        ),
    ],
)
def test_no_report_to_trust_is_unknown(
    cached: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path, make: object, reason: str
) -> None:
    assert callable(make)
    capsys.readouterr()
    assert answer(cached, "gpu001", report=make(cached, tmp_path)) == ExitCode.UNKNOWN_EXCEEDED
    out = capsys.readouterr().out
    assert out.startswith("gpu001: UNKNOWN") and reason in out


def test_max_age_takes_a_duration_as_sweep_does(
    cached: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    two_hours_old = _rewritten(cached, tmp_path, finished_at=time.time() - 7200)
    assert answer(cached, "gpu001", "--max-age", "3h", report=two_hours_old) == ExitCode.OK
    assert answer(cached, "gpu001", "--max-age", "30m", report=two_hours_old) == ExitCode.UNKNOWN_EXCEEDED
    out = capsys.readouterr().out
    assert "gpu001: PASS" in out and "older than 1800 s" in out


@pytest.mark.parametrize("gpus", ["0-5000", "3-1", "0-99999999999", "1,2,99999999999"])
def test_a_gpu_list_beyond_any_node_is_refused_at_once(gpus: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``--gpus 0-99999999999`` ran 31 s and took 3 GB building every index (issue 34): refused, bounded."""
    started = time.monotonic()
    with pytest.raises(SystemExit) as refused:
        main(["check-local", "--model", "mi300x", "--node", "n1", "--gpus", gpus, "--from-cache", "/nonexistent"])
    assert refused.value.code == ExitCode.USAGE and time.monotonic() - started < 2.0
    assert "--gpus" in capsys.readouterr().err
