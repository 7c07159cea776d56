"""The shell text the console sends to a node: quoted argv, a node-side timeout, and group kills.

Every command runs as::

    exec sh -c 'echo "@@ic-pgid $$" >&2; exec timeout -k <grace> <T> "$@"' sh <argv, each shlex-quoted>

so nothing reaches the remote shell unquoted, the node enforces the timeout itself even if the
console vanishes, and the console learns the session it may kill: each ``exec`` keeps the same
process, the session leader sshd started (sshd calls ``setsid`` for every channel), so ``$$`` is the
session id and the process group of ``timeout``. The leading ``exec`` matters: dash would otherwise
fork, and turn a death by signal into status 128+N plus a "Terminated" line, unlike the same command
run locally.

The console kills the whole *session*, not only that process group: a command may start process
groups of its own (GNU ``timeout`` does, for each probe of a bundle), and those stay in the session.
Killing only the first group left a probe that ignores SIGTERM running for ever, re-parented to
PID 1. Only a process that calls ``setsid`` itself leaves the session; no probe the console runs does.

``<T>`` is the console's timeout plus ``NODE_TIMEOUT_MARGIN_S``: the console's own kill (which
reports TIMEOUT) normally comes first, and the node's is the backstop for a lost connection.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

PGID_MARKER = "@@ic-pgid"
NODE_TIMEOUT_MARGIN_S = 1.0
_MARKER_LINE = re.compile(re.escape(PGID_MARKER).encode() + rb" (\d+)\r?\n")


def checked_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` as a list, or TypeError/ValueError if it cannot be an exec argument vector."""
    if isinstance(argv, str | bytes):
        raise TypeError("argv must be a sequence of arguments, not one string")
    args = list(argv)
    if not args:
        raise ValueError("argv is empty")
    for arg in args:
        if not isinstance(arg, str):
            raise TypeError(f"argv items must be str, got {type(arg).__name__}")
        if "\0" in arg:
            raise ValueError("argv items cannot contain NUL bytes")
    return args


def seconds(value: float) -> str:
    """A duration as ``timeout`` accepts it: plain decimal, no exponent, no trailing zeros."""
    if value < 0:
        raise ValueError(f"duration must not be negative, got {value}")
    return f"{value:.3f}".rstrip("0").rstrip(".")


def _timeout_words(timeout_s: float, kill_grace_s: float) -> list[str]:
    return ["timeout", "-k", seconds(kill_grace_s), seconds(timeout_s + NODE_TIMEOUT_MARGIN_S)]


def node_timeout_argv(argv: Sequence[str], timeout_s: float, kill_grace_s: float) -> list[str]:
    """``timeout -k <grace> <T> argv...`` for a local run: the command ends even if the console dies."""
    return [*_timeout_words(timeout_s, kill_grace_s), *checked_argv(argv)]


def remote_command(argv: Sequence[str], timeout_s: float, kill_grace_s: float) -> str:
    """The command line for the node's login shell: announce the process group, then exec the timeout."""
    script = f'echo "{PGID_MARKER} $$" >&2; exec {" ".join(_timeout_words(timeout_s, kill_grace_s))} "$@"'
    return "exec " + shlex.join(["sh", "-c", script, "sh", *checked_argv(argv)])


def announced_pgid(line: bytes) -> int | None:
    """The process group if ``line`` is the wrapper's announcement, else None.

    The whole line must match: output of the login shell (before) or the command (after) that
    merely contains the marker text is left alone.
    """
    found = _MARKER_LINE.fullmatch(line)
    return int(found.group(1)) if found else None


def signal_group_command(pgid: int, signal_name: str) -> str:
    """``kill -<SIG> -<pgid>``: signal a whole process group on the node (``0`` probes whether it lives).

    No ``--`` before the negative pid: dash's builtin ``kill`` rejects it, and ``-SIG -pgid`` means
    the same to dash, bash and zsh.
    """
    _check_target(pgid, signal_name)
    return f"kill -{signal_name} -{pgid}"


def signal_session_command(sid: int, signal_name: str) -> str:
    """Signal every process of session ``sid`` on the node; ``0`` asks whether any still runs.

    ``pkill``/``pgrep -s`` (procps, on every distribution the console targets) reach the process
    groups a command made inside its session; where they are missing, the session leader's own
    group is the best the shell can do. The exit status is 0 when some process was found.
    """
    _check_target(sid, signal_name)
    if signal_name == "0":
        return f"pgrep -s {sid} >/dev/null || kill -0 -{sid}"
    return f"pkill -{signal_name} -s {sid} || kill -{signal_name} -{sid}"


def _check_target(target: int, signal_name: str) -> None:
    if target <= 1:
        raise ValueError(f"refusing to signal process group or session {target}")
    if not signal_name.isalnum():
        raise ValueError(f"not a signal name: {signal_name!r}")
