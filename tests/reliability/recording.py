"""Real sshd nodes that record every command line the console sends, before any shell parses it.

Each node's sshd has ``ForceCommand`` set to a recorder: sshd hands it the client's command line in
``SSH_ORIGINAL_COMMAND``; the recorder appends that text verbatim (NUL-terminated) to the node's
``sshd-commands.log`` and only then runs it with ``/bin/sh -c``, as sshd would have. A test reads back
exactly what reached the node's shell, byte for byte.

``classify`` names what a recorded line is: one of the console's own command shapes, or ``unknown``.
"""

from __future__ import annotations

import re
import shlex

from tests.harness.sshd_fleet import FleetNode, SshdFleet

RECORDER = """#!/bin/sh
printf '%s\\0' "$SSH_ORIGINAL_COMMAND" >> "$IC_NODE_DIR/sshd-commands.log"
exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"
"""
_TIMEOUTS = r"timeout -k \S+ \S+ "
# A probe line, its argv captured; a probe with a fallback runs it after `2>/dev/null ||`.
_KILL = re.compile(r"pkill -(TERM|KILL) -s \d+ \|\| kill -\1 -\d+|pgrep -s \d+ >/dev/null \|\| kill -0 -\d+")
_PROBE_LINE = re.compile(_TIMEOUTS + r"(.*?)(?: 2>/dev/null \|\| " + _TIMEOUTS + r".*?)? 2>&1;")
# A probe's cleanup, before and after it, its output discarded (``ProbeSpec.cleanup``).
_CLEANUP_LINE = re.compile(_TIMEOUTS + r"([^;]*?) >/dev/null 2>&1;")


class RecordingFleet(SshdFleet):
    """An SshdFleet whose nodes log every command line they are asked to run."""

    def _sshd_config(self, node: FleetNode, extra: str) -> str:
        recorder = self.base / "record-command"
        if not recorder.exists():
            recorder.write_text(RECORDER)
            recorder.chmod(0o755)
        return super()._sshd_config(node, extra) + f"ForceCommand {recorder}\n"

    def commands(self, node: FleetNode | str) -> list[str]:
        """Command lines the node received, oldest first."""
        log = self._resolve(node).dir / "sshd-commands.log"
        return [c for c in log.read_bytes().decode("utf-8", "surrogateescape").split("\0") if c] if log.exists() else []

    def forget_commands(self) -> None:
        for node in self.nodes:
            (node.dir / "sshd-commands.log").unlink(missing_ok=True)


def classify(command: str) -> tuple[str, list[tuple[str, ...]]]:
    """What a recorded command line is, and the probe argvs it runs.

    ``("bundle", argvs)``: the console's wrapper running a probe bundle; ``("kill", [])``: the console
    killing (or looking for what is left of) a timed-out command's session; ``("run", [argv])``: the
    wrapper running one plain argv;
    ``("unknown", [])``: anything else.
    """
    words = shlex.split(command)
    # exec sh -c '<announce pgid; exec [timeout ...] "$@">' sh [timeout -k <grace> <T>] <argv...>
    if words[:3] == ["exec", "sh", "-c"] and "@@ic-pgid" in words[3] and words[4:5] == ["sh"]:
        argv = words[9:] if words[5:7] == ["timeout", "-k"] else words[5:]
        if argv[:2] == ["sh", "-c"] and len(argv) == 3 and "@@ic-begin" in argv[2]:
            probes = _CLEANUP_LINE.sub("", argv[2])
            return "bundle", [tuple(shlex.split(m.group(1))) for m in _PROBE_LINE.finditer(probes)]
        return "run", [tuple(argv)]
    if words[:2] == ["sh", "-c"] and len(words) == 3 and _KILL.fullmatch(words[2]):
        return "kill", []
    return "unknown", []
