"""The action subcommands against the real Slurm lab: confirmation rules, dry runs, read-only, JSON, audit."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from console.cli import main
from tests.harness.slurm_lab import SlurmLab

TAG = "instinct-console:"


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "history.sqlite")


def test_drain_with_yes_acts_and_prints_the_command(lab: SlurmLab, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["drain", "gpu[001-002]", "--reason", "hbm errors", "--sweep", "3", "--yes", "--store", db])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "local$ scontrol update 'NodeName=gpu[001-002]' State=DRAIN" in out
    assert "drained gpu[001-002]" in out
    assert lab.reason("gpu002") == f"{TAG} hbm errors [sweep 3]"


def test_without_a_terminal_and_without_yes_nothing_happens(
    lab: SlurmLab, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert not sys.stdin.isatty()
    code = main(["drain", "gpu003", "--reason", "x", "--store", db])
    assert code == 2
    assert "add --yes" in capsys.readouterr().err
    assert lab.state("gpu003") == "idle"


def test_dry_run_shows_the_plan_and_changes_nothing(lab: SlurmLab, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["drain", "gpu004", "--reason", "x", "--dry-run", "--json", "--store", db])
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert code == 0
    assert plan["commands"] == [["scontrol", "update", "NodeName=gpu004", "State=DRAIN", f'Reason="{TAG} x"']]
    assert plan["where"] == "local" and plan["refused"] is None
    assert lab.state("gpu004") == "idle"


def test_read_only_refuses(lab: SlurmLab, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["drain", "gpu004", "--reason", "x", "--yes", "--read-only", "--store", db])
    assert code == 1
    assert "read-only" in capsys.readouterr().out
    assert lab.state("gpu004") == "idle"


def test_resume_of_someone_elses_drain_is_refused_with_exit_1(
    lab: SlurmLab, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    lab.run("scontrol", "update", "NodeName=gpu005", "State=DRAIN", "Reason=vendor RMA 4711")
    code = main(["resume", "gpu005", "--yes", "--store", db, "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 1
    assert "DRAINED by root: vendor RMA 4711" in payload["plan"]["refused"]
    assert payload["result"]["ok"] is False
    assert lab.state("gpu005") == "drained"


def test_cap_flag_drains_what_fits_and_names_the_rest(
    lab: SlurmLab, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["drain", "gpu[001-003]", "--reason", "x", "--yes", "--cap", "1", "--store", db])
    said = capsys.readouterr().out
    assert code == 1  # asked for three, one done: a script must not read it as done
    assert "2 of 3 nodes left out by the cap: gpu[002-003]" in said
    assert "gpu002: skip: cap: cap 1 set for pool cluster; 0 already out" in said
    assert (lab.state("gpu001"), lab.state("gpu002"), lab.state("gpu003")) == ("drained", "idle", "idle")
    # With the one out, nothing fits: refused as a whole, with the count.
    code = main(["drain", "gpu[002-003]", "--reason", "x", "--yes", "--cap", "1", "--store", db])
    assert code == 1
    assert "over the cap 1 set for pool cluster" in capsys.readouterr().out
    assert lab.state("gpu002") == "idle"


def test_audit_lists_actions_newest_first(lab: SlurmLab, db: str, capsys: pytest.CaptureFixture[str]) -> None:
    main(["drain", "gpu006", "--reason", "first", "--yes", "--store", db])
    main(["resume", "gpu006", "--yes", "--store", db])
    capsys.readouterr()
    assert main(["audit", "--json", "--store", db]) == 0
    entries = json.loads(capsys.readouterr().out)
    assert [e["action"] for e in entries] == ["resume", "drain"]
    assert entries[1]["targets"] == ["gpu006"] and entries[1]["inputs"]["reason"] == "first"
    assert entries[1]["commands"] == [f"local$ scontrol update NodeName=gpu006 State=DRAIN 'Reason=\"{TAG} first\"'"]
    assert entries[0]["outcome"] == "resumed gpu006" and entries[0]["user"]
    assert main(["audit", "--store", db]) == 0
    table = capsys.readouterr().out
    assert "resumed gpu006" in table and "drain" in table


def test_bad_hostlist_is_a_usage_error(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["drain", "gpu[001-", "--reason", "x", "--store", db]) == 2
    assert "bad hostlist" in capsys.readouterr().err


def _run_in_terminal(argv: list[str], env: dict[str, str], answer: bytes) -> tuple[int, str]:
    """Run the CLI with a pseudo-terminal as stdin/stdout, answer the prompt, return exit code and screen."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    screen = b""
    deadline = time.monotonic() + 30
    answered = False
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            screen += chunk
        if not answered and b"Proceed? [y/N]" in screen:
            os.write(master, answer)
            answered = True
        if proc.poll() is not None and not ready:
            break
    os.close(master)
    return proc.wait(10), screen.decode(errors="replace")


@pytest.mark.parametrize(("answer", "state"), [(b"y\n", "drained"), (b"\n", "idle")])
def test_a_terminal_is_asked_for_confirmation(lab: SlurmLab, db: str, answer: bytes, state: str) -> None:
    argv = [sys.executable, "-m", "console", "drain", "gpu002", "--reason", "asked", "--store", db]
    code, screen = _run_in_terminal(argv, {**lab.env, "COLUMNS": "200"}, answer)
    assert code == 0, screen
    assert "Proceed? [y/N]" in screen
    assert lab.state("gpu002") == state
