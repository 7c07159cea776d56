"""Inputs the command line refuses before doing anything: exit 2 and one line on stderr naming the input.

Run as an operator runs them (a process, its stderr and exit status as a shell or a prolog sees them),
so a Python traceback cannot hide behind a caught ``SystemExit``. Output to a reader that went away
(``| head -1``) ends quietly, as a tool killed by SIGPIPE does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from console.store import Store

NODES = ("n1", "n2", "n3", "n4")


def _run(argv: list[str], cwd: Path, stdout: int = subprocess.DEVNULL) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_STATE_HOME": str(cwd / "state"), "XDG_CONFIG_HOME": str(cwd / "config")}
    return subprocess.run(
        [sys.executable, "-m", "console", *argv],
        cwd=cwd, env=env, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    """Four nodes whose SSH port refuses at once: a command that wrongly went on to sweep ends quickly."""
    hosts = "".join(f'[hosts.{name}]\naddress = "127.0.0.1"\nport = 1\n' for name in NODES)
    (tmp_path / "cluster.toml").write_text(
        f'[[pools]]\nname = "p"\ngpu_model = "MI300X"\nnodes = "{",".join(NODES)}"\n{hosts}'
    )
    (tmp_path / "notes.txt").write_text("not a database\n")
    return tmp_path


def _refused(argv: list[str], cwd: Path, *named: str) -> str:
    """Run ``argv``; it must exit 2 with one line on stderr holding every string in ``named``."""
    done = _run(argv, cwd)
    line = done.stderr.strip()
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "\n" not in line, done.stderr
    for text in named:
        assert text in line, line
    return line


SWEEP = ["sweep", "-i", "cluster.toml", "--store", "h.db"]


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        ([*SWEEP, "--every", "0"], ["--every", "0"]),
        ([*SWEEP, "--every", "-5"], ["--every", "-5"]),
        ([*SWEEP, "--every", "60", "--count", "0"], ["--count", "0"]),
        ([*SWEEP, "--probe-timeout", "0"], ["--probe-timeout", "0"]),
        ([*SWEEP, "--deadline", "-1"], ["--deadline", "-1"]),
        ([*SWEEP, "--deadline", "nan"], ["--deadline", "nan"]),
        (["check-local", "--model", "mi300x", "--node", "n1", "--deadline", "0"], ["--deadline", "0"]),
        (["check-local", "--model", "mi300x", "--node", "n1", "--max-age", "0m"], ["--max-age", "0m"]),
        (["check-local", "--node", "n1", "--from-cache", "n1.json"], ["-i FILE", "--from-cache", "pool"]),
        (["tui", "-i", "cluster.toml", "--probe-timeout", "-2"], ["--probe-timeout", "-2"]),
        (["drain", "n1", "--reason", "x", "--dry-run", "--store", "h.db", "--cap", "-3"], ["--cap", "-3"]),
        (["drain", "n1", "--reason", "x", "--dry-run", "--store", "h.db", "--cap-fraction", "2"], ["--cap-fraction"]),
        (["drain", "n1", "--reason", "x", "--dry-run", "--store", "h.db", "--cap-fraction", "0"], ["--cap-fraction"]),
    ],
)
def test_out_of_range_options_are_usage_errors(cluster: Path, argv: list[str], named: list[str]) -> None:
    _refused(argv, cluster, *named)


@pytest.mark.parametrize("allowance", ["5", "-0.5"])
def test_allow_unknown_beyond_the_selection_says_how_many_nodes_it_has(cluster: Path, allowance: str) -> None:
    line = _refused([*SWEEP, "--allow-unknown", allowance], cluster, f"--allow-unknown {allowance}")
    assert "4 selected nodes" in line and "0.25 lets one of them" in line
    line = _refused([*SWEEP, "--nodes", "n[1-3]", "--allow-unknown", allowance], cluster, "3 selected nodes")
    assert "0.334 lets one of them" in line  # rounded up: 0.333 would not let 1 of 3 through


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        ([*SWEEP[:3], "--store", "notes.txt"], ["notes.txt", "not an SQLite database"]),
        (["history", "--store", "notes.txt"], ["notes.txt", "not an SQLite database"]),
        (["audit", "--store", "notes.txt", "--json"], ["notes.txt", "not an SQLite database"]),
        (
            [*SWEEP[:3], "--store", "notes.txt/history.sqlite"],
            ["notes.txt/history.sqlite", "cannot create or open", "File exists: notes.txt"],
        ),
    ],
)
def test_a_store_that_is_no_database_or_cannot_be_made_is_a_usage_error(
    cluster: Path, argv: list[str], named: list[str]
) -> None:
    _refused(argv, cluster, *named)


@pytest.mark.parametrize(
    ("condition", "field"),
    [
        ('fail_if = "> abc"', "fail_if"),
        ('fail_if = "> nan"', "fail_if"),
        ('warn_if = "< inf"', "warn_if"),
        ('fail_if = "== -inf"', "fail_if"),
        ('fail_if = ">= true"', "fail_if"),
    ],
)
def test_a_threshold_that_is_no_finite_number_is_refused_with_pack_check_and_field(
    cluster: Path, condition: str, field: str
) -> None:
    checks = cluster / "checks"
    checks.mkdir()
    (checks / "site.toml").write_text(
        '[pack]\nmodel = "MI300X"\n[[checks]]\nid = "site.gpus"\ntitle = "t"\nfamily = "inventory"\n'
        f'metric = "node.gpu_count"\n{condition}\nsource = "site runbook"\nsource_kind = "estimate"\n'
    )
    _refused([*SWEEP, "--checks", "checks"], cluster, "site.toml", "id=site.gpus", field)


def test_a_variable_that_is_no_finite_number_is_refused_with_pack_and_name(cluster: Path) -> None:
    checks = cluster / "checks"
    checks.mkdir()
    (checks / "site.toml").write_text('[pack]\nmodel = "MI300X"\n[pack.vars]\npower_cap_w = nan\n')
    _refused([*SWEEP, "--checks", "checks"], cluster, "site.toml", "pack.vars", "power_cap_w")


FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "amd-smi" / "metric-power-json-rocm610-list.json"


@pytest.mark.parametrize(
    "command",
    [
        ["parse", "--json", str(FIXTURE)],
        ["history", "--json", "--store", "h.db"],
        ["history", "--store", "h.db"],  # text through Rich, whose own answer to a closed pipe is exit 1
        ["parse", str(FIXTURE)],
    ],
)
def test_output_to_a_reader_that_went_away_ends_quietly(tmp_path: Path, command: list[str]) -> None:
    Store(tmp_path / "h.db").close()
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the command writes anything: `| head -0`
    try:
        done = _run(command, tmp_path, stdout=write)
    finally:
        os.close(write)
    assert done.stderr == ""
    assert done.returncode == 128 + signal.SIGPIPE
