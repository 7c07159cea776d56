"""Exit codes of every instinct-console command, documented in ``--help``.

A scheduler prolog reads these: 0 means every node passed; anything else means do not start the job.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit status."""

    OK = 0
    FAILED = 1
    USAGE = 2
    UNKNOWN_EXCEEDED = 3
    DEADLINE = 4
    INTERRUPTED = 130


EXIT_CODE_HELP = """exit codes:
  0    no checked node failed: WARN findings (stack drift, soft limits) do not change it unless
       sweep --fail-on-warn (parse: parsed and ok)
  1    a node failed a check, or warned with --fail-on-warn (parse: parsed, tool reported failure)
  2    usage or configuration error (parse: not recognised or unreadable)
  3    nodes that could not be checked exceed the allowed fraction
  4    the sweep deadline was exceeded
  130  interrupted (Ctrl-C or SIGTERM)
  141  stdout was closed by its reader (--json | head), as for a tool killed by SIGPIPE"""
