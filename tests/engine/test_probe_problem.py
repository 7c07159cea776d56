"""What a probe's exit status and output say before parsing: nothing to judge, and why."""

from __future__ import annotations

import pytest

from console.checks.facts import UNSUPPORTED, ProbeOutcome
from console.sweep.catalog import PROBES_BY_ID
from console.sweep.engine import probe_problem

XGMI_STATUS = PROBES_BY_ID["amdsmi.xgmi_status"]


@pytest.mark.parametrize(
    ("status", "output", "expected"),
    [
        (0, b"[]", None),
        (2, b"usage: amd-smi xgmi [-h] ...\namd-smi xgmi: error: unrecognized arguments: -l\n", UNSUPPORTED),
        (2, b"amd-smi: error: argument command: invalid choice: 'xgmi' (choose from 'list', 'static')\n", UNSUPPORTED),
        (2, b"Error code: -2 AMDSMI_STATUS_NOT_SUPPORTED\n", None),  # the tool ran: its complaint is judged
        (127, b"sh: 1: amd-smi: not found\n", "amd-smi: command not found on the node"),
        (124, b"", "timed out on the node after 30 s"),
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
