"""Every way the console prints, fed every sequence of the escape corpus: nothing comes out alive (issue 34).

The CLI prints through one console (lines, tables, prompts), errors through one line, logs through one
formatter, crashes through one traceback hook, the TUI through ``safe``; all of them ask ``console.inert``
which characters a terminal acts on.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.table import Table

from console.cli import main
from console.commands.arguments import UsageError, usage_error_line
from console.commands.terminal import plain_console
from console.inert import log_to_stderr, printable
from console.ui.text import safe, safe_block
from tests.escapes import CORPUS, live_in_text

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_the_command_console_prints_every_string_inert(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    hostile = f"gpu001 {CORPUS[name]} end"
    out = plain_console()
    out.print(f"[bold]node[/] {hostile}")  # a caller that forgot to escape
    out.print(hostile, markup=False)
    table = Table("node", "reason", title=hostile)
    table.add_row(hostile, hostile)
    out.print(table)
    plain_console(stderr=True).print(hostile)
    said = capsys.readouterr()
    assert live_in_text(said.out + said.err) == [], name
    assert said.out.count("gpu001") == 5 and "end" in said.out  # shown, not dropped


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_errors_logs_and_the_tui_say_every_string_inert(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Kept from pytest's own log capture: it holds the raw record, and a surrogate in it cannot cross
    # pytest-xdist's channel to the controller (INTERNALERROR, the whole run lost).
    monkeypatch.setattr(logging.getLogger("console"), "propagate", False)
    hostile = f"x{CORPUS[name]}y"
    assert live_in_text(usage_error_line("instinct-console drain", UsageError(hostile))) == []
    assert live_in_text(printable(hostile, keep_newlines=True)) == []
    assert live_in_text(safe(hostile)) == [] and live_in_text(safe_block(hostile)) == []
    log_to_stderr()
    logging.getLogger("console.transport.ssh").warning("node said %s", hostile)
    assert live_in_text(capsys.readouterr().err) == []


def test_a_usage_error_echoing_the_command_line_is_inert(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["sweep", "--probes", "".join(CORPUS.values())])
    assert live_in_text(capsys.readouterr().err) == []


def test_a_crash_traceback_is_inert() -> None:
    """An unexpected exception's message can quote a node; the CLI's traceback hook shows it escaped."""
    code = (
        "import sys\n"
        "from console import cli\n"
        "sys.argv = ['instinct-console', '--version']\n"
        "try:\n"
        "    cli.main(['--version'])\n"
        "except SystemExit:\n"
        "    pass\n"
        f"raise RuntimeError({''.join(CORPUS.values())!r})\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, cwd=ROOT, timeout=60, check=False, env=_utf8_env()
    )
    err = done.stderr.decode("utf-8", errors="surrogateescape")
    assert "RuntimeError" in err and live_in_text(err) == []


def _utf8_env() -> dict[str, str]:
    return {**os.environ, "PYTHONIOENCODING": "utf-8:surrogateescape"}
