"""The command lines the console's transport sends, built exactly as the shared design specifies."""

from __future__ import annotations

import shlex


def console_wrapper(argv: list[str], timeout_s: float = 30) -> str:
    """One probe: report the process group on stderr, then run ``argv`` under ``timeout``."""
    script = f'echo "@@ic-pgid $$" >&2; exec timeout -k 5 {timeout_s:g} "$@"'
    return f"sh -c {shlex.quote(script)} sh {shlex.join(argv)}"


def console_bundle(probes: list[tuple[str, list[str]]], timeout_s: float = 30) -> str:
    """Several probes in one channel: begin marker, the probe under timeout, end marker with its status."""
    lines = [
        f'echo "@@ic-begin {pid}"; timeout -k 5 {timeout_s:g} {shlex.join(argv)}; echo "@@ic-end {pid} rc=$?"'
        for pid, argv in probes
    ]
    return "sh -c " + shlex.quote("\n".join(lines))
