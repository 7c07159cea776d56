"""A Slurm drain reason full of terminal escapes is shown, never obeyed, by drain, resume and audit (issue 34).

Another operator (or a script) drained a node with a reason holding OSC, CSI, DCS, C1 controls and bidi
overrides; in tmux ``drain``, ``resume`` and ``audit`` cleared the screen and set the pane title. The
console prints through one console (``console.commands.terminal``) that makes every string inert.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from console.cli import main
from tests.escapes import CORPUS, live_in_text, live_sequences
from tests.harness.slurm_lab import SlurmLab

# scontrol takes a reason as one argv word; ESC and the C1 characters are bytes it keeps as given.
REASON = "ops " + "".join(v for k, v in CORPUS.items() if k != "surrogate-escaped-byte")


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "history.sqlite")


def _foreign_drain(lab: SlurmLab, node: str) -> None:
    lab.run("scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={REASON}")
    assert "\x1b]0;PWNED" in lab.reason(node), "the lab keeps the reason's escapes"


def test_drain_resume_and_audit_show_a_foreign_reason_inert(
    lab: SlurmLab, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _foreign_drain(lab, "gpu005")
    said = {}
    main(["drain", "gpu005", "--reason", "ecc", "--yes", "--store", db])
    said["drain"] = capsys.readouterr()
    assert main(["resume", "gpu005", "--yes", "--store", db]) == 1
    said["resume"] = capsys.readouterr()
    assert main(["audit", "--store", db]) == 0
    said["audit"] = capsys.readouterr()
    for command, out in said.items():
        assert live_in_text(out.out + out.err) == [], f"{command} printed terminal controls raw"
    assert "\\x1b]0;PWNED" in said["resume"].out  # shown, as an escape, not obeyed
    assert lab.state("gpu005") == "drained"


def test_an_operators_own_reason_and_json_output_stay_inert(
    lab: SlurmLab, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as refused:  # bytes that are not UTF-8: refused, not a crash in the store
        main(["drain", "gpu004", "--reason", "not utf-8 \udc9b2J", "--yes", "--store", db])
    assert refused.value.code == 2
    assert main(["drain", "gpu004", "--reason", "mine " + REASON, "--yes", "--store", db]) == 0
    assert main(["audit", "--store", db]) == 0
    assert main(["audit", "--json", "--store", db]) == 0
    out = capsys.readouterr()
    assert live_in_text(out.out + out.err) == []
    assert json.loads(out.out[out.out.index("[\n") :])[0]["inputs"]["reason"].startswith("mine ")


def test_on_a_terminal_with_colours_the_reason_stays_inert(lab: SlurmLab, db: str) -> None:
    """As tmux saw it: the real process, colours on, the raw bytes it wrote."""
    _foreign_drain(lab, "gpu006")
    env = {**lab.env, "FORCE_COLOR": "1", "COLUMNS": "200", "PYTHONIOENCODING": "utf-8:surrogateescape"}
    for argv in (["resume", "gpu006", "--yes"], ["audit"]):
        done = subprocess.run(
            [sys.executable, "-m", "console", *argv, "--store", db],
            capture_output=True,
            env={**os.environ, **env},
            timeout=60,
            check=False,
        )
        assert live_sequences(done.stdout + done.stderr, allow_sgr=True) == [], argv
        assert b"\x1b]" not in done.stdout and b"\x1b[2J" not in done.stdout
