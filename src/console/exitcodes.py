"""Exit codes of every instinct-console command, documented in ``--help``.

A scheduler prolog reads these: 0 means every node passed; anything else means do not start the job.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum

from console.model.findings import Status


class ExitCode(IntEnum):
    """Process exit status."""

    OK = 0
    FAILED = 1
    USAGE = 2
    UNKNOWN_EXCEEDED = 3
    DEADLINE = 4
    STORE_FAILED = 5
    OUTPUT_FAILED = 6
    BREAKER_TRIPPED = 7  # watch: its circuit breaker is tripped, automation paused (console.actions.breaker)
    HANGUP = 129
    INTERRUPTED = 130


def exit_code_for(
    statuses: Iterable[Status], outcome: str = "done", *, allow_unknown: float = 0.0, fail_on_warn: bool = False
) -> ExitCode:
    """The documented exit code of a sweep (or a check built on one) whose nodes ended in ``statuses``.

    ``outcome`` is the sweep's: ``deadline`` and ``cancelled`` win over any verdict. ``allow_unknown``
    is the fraction of nodes that may be UNKNOWN before the exit says so.
    """
    if outcome == "deadline":
        return ExitCode.DEADLINE
    if outcome == "cancelled":
        return ExitCode.INTERRUPTED
    statuses = list(statuses)
    if Status.FAIL in statuses or (fail_on_warn and Status.WARN in statuses):
        return ExitCode.FAILED
    unknown = statuses.count(Status.UNKNOWN)
    if statuses and unknown / len(statuses) > allow_unknown:
        return ExitCode.UNKNOWN_EXCEEDED
    return ExitCode.OK


EXIT_CODE_HELP = """exit codes:
  0    no checked node failed: WARN findings (stack drift, soft limits) do not change it unless
       --fail-on-warn
  1    a node failed a check, or warned with --fail-on-warn
  2    usage or configuration error
  3    nodes that could not be checked exceed the allowed fraction
  4    the sweep deadline was exceeded
  6    a report file could not be written (disk full, read-only, I/O error): the verdicts were printed
       and the other reports written; no partial file is left
  129  the terminal was closed (SIGHUP): the sweep was cancelled, its reports written and recorded
  130  interrupted (Ctrl-C or SIGTERM)
  141  stdout was closed by its reader (| head), as for a tool killed by SIGPIPE"""

# Only the commands that write the history database while they sweep (sweep, demo --headless).
STORE_EXIT_LINE = (
    "  5    the sweep finished and its reports were written, but the history database failed (locked, disk\n"
    "       full, corrupt, deleted, read-only): what was not stored is printed; wins over 0, 1, 3 and 4\n"
)
SWEEP_EXIT_CODE_HELP = EXIT_CODE_HELP.replace("  6    a report", STORE_EXIT_LINE + "  6    a report", 1)
