"""What a probe's exit status and output say before parsing: nothing to judge, and why."""

from __future__ import annotations

import pytest

from console.checks.facts import UNSUPPORTED, ProbeOutcome
from console.sweep.catalog import PROBES_BY_ID
from console.sweep.engine import exit_problem, probe_problem

XGMI_STATUS = PROBES_BY_ID["amdsmi.xgmi_status"]


@pytest.mark.parametrize(
    ("status", "output", "expected"),
    [
        (0, b"[]", None),
        (2, b"usage: amd-smi xgmi [-h] ...\namd-smi xgmi: error: unrecognized arguments: -l\n", UNSUPPORTED),
        (2, b"amd-smi: error: argument command: invalid choice: 'xgmi' (choose from 'list', 'static')\n", UNSUPPORTED),
        # The tool ran and said it failed: read with its output (a recognised complaint is judged).
        (2, b"Error code: -2 AMDSMI_STATUS_NOT_SUPPORTED\n", None),
        (1, b"[{...}]\nsomething broke\n\n", None),
        (127, b"sh: 1: amd-smi: not found\n", "amd-smi: command not found on the node"),
        (124, b"", "timed out on the node after 30 s"),
        (137, b"", "killed on the node (SIGKILL): it ignored SIGTERM at its 30 s timeout, or ran out of memory"),
        (139, b'{"half": ', "amd-smi was killed by SIGSEGV on the node"),
        (None, b"partial", "no result: the connection or the bundle ended before the probe finished"),
    ],
)
def test_probe_problem(status: int | None, output: bytes, expected: str | None) -> None:
    problem = probe_problem(status, output, XGMI_STATUS)
    if expected is UNSUPPORTED:
        assert problem is not None and problem.startswith(UNSUPPORTED)
        assert "error:" in problem and "\n" not in problem  # the tool's own line, not its usage text
        assert ProbeOutcome("amdsmi.xgmi_status", None, problem).unsupported
    else:
        assert problem == expected
        assert not ProbeOutcome("amdsmi.xgmi_status", None, problem).unsupported


def test_a_cut_output_is_never_judged_whatever_its_status() -> None:
    problem = probe_problem(0, b"x" * (1 << 20), XGMI_STATUS, dropped_bytes=(200 << 20) - (1 << 20))
    assert problem == "output cut: 200.0 MiB printed, the console keeps 1.0 MiB of one probe's output"


def test_an_unrecognised_failure_is_the_tools_own_last_line() -> None:
    assert (
        exit_problem(XGMI_STATUS, 1, b"[{...}]\nsomething broke\n\n") == "amd-smi exited with status 1: something broke"
    )
    assert exit_problem(XGMI_STATUS, 3, b"") == "amd-smi exited with status 3: no output"
