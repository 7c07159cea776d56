"""The shell text the console sends to a node: quoted argv, a node-side timeout, and group kills.

Every command runs as::

    exec sh -c 'echo "@@ic-pgid $$" >&2; exec "$@"' sh timeout -k <grace> <T> <argv, each shlex-quoted>

so nothing reaches the remote shell unquoted, the node enforces the timeout itself even if the
console vanishes, and the console learns the process group it may kill: ``timeout`` runs in the
shell's process (``exec``) and leads its own process group, so its pid is the group id.
The leading ``exec`` replaces the login shell too (dash would otherwise fork, and turn a death by
signal into status 128+N and a "Terminated" line), so exit statuses match a local run exactly.
The node's timeout fires ``NODE_TIMEOUT_MARGIN_S`` after the console's: the console's own kill
(which reports TIMEOUT) normally wins, and the node's is the backstop for a lost connection.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

PGID_MARKER = b"@@ic-pgid "
NODE_TIMEOUT_MARGIN_S = 1.0
_MARKER_LINE = re.compile(rb"@@ic-pgid (\d+)\r?\n")
_POLL_S = 0.1


def checked_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` as a list, or ValueError if it cannot be an exec argument vector."""
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
    """A duration as ``timeout``/``sleep`` accept it: plain decimal, no exponent, no trailing zeros."""
    if value < 0:
        raise ValueError(f"duration must not be negative, got {value}")
    return f"{value:.3f}".rstrip("0").rstrip(".")


def node_timeout_argv(argv: Sequence[str], timeout_s: float, kill_grace_s: float) -> list[str]:
    """``timeout -k <grace> <T> argv...``: the node kills the command even if the console cannot."""
    return ["timeout", "-k", seconds(kill_grace_s), seconds(timeout_s + NODE_TIMEOUT_MARGIN_S), *checked_argv(argv)]


def remote_command(argv: Sequence[str], timeout_s: float, kill_grace_s: float) -> str:
    """The command line for the node's login shell: reports its process group, then execs the timeout."""
    script = f'echo "{PGID_MARKER.decode()}$$" >&2; exec "$@"'
    return "exec " + shlex.join(["sh", "-c", script, "sh", *node_timeout_argv(argv, timeout_s, kill_grace_s)])


def announced_pgid(line: bytes) -> int | None:
    """The process group if ``line`` is the wrapper's announcement, else None.

    The whole line must match: output of the login shell (before) or the command (after) that
    merely contains the marker text is left alone.
    """
    found = _MARKER_LINE.fullmatch(line)
    return int(found.group(1)) if found else None


def kill_group_script(pgid: int, kill_grace_s: float) -> str:
    """Shell text for the node: SIGTERM the group, wait up to the grace for it to go, then SIGKILL.

    It returns as soon as the group is gone, so a command that honours SIGTERM costs no grace time.
    No ``--`` before the negative pid: dash's builtin ``kill`` rejects it, and ``-<signal> -<pgid>``
    means the same to dash, bash and zsh.
    """
    if pgid <= 1:
        raise ValueError(f"refusing to signal process group {pgid}")
    polls = max(1, round(kill_grace_s / _POLL_S))
    return (
        f"kill -TERM -{pgid} 2>/dev/null || exit 0; n=0; "
        f"while kill -0 -{pgid} 2>/dev/null; do "
        f"if [ $n -ge {polls} ]; then kill -KILL -{pgid} 2>/dev/null; exit 0; fi; "
        f"sleep {seconds(_POLL_S)}; n=$((n+1)); done"
    )
