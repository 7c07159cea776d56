"""``check-local`` collecting through the amdsmi library where it can (``console.probes.amdsmi.library``).

The engine runs a node's probes as bundle scripts (``console.sweep.bundle``). On the node, the probes
the library answers are taken out of each script and answered in this process: their section is the
document ``amd-smi ... --json`` would print, with exit status 0, or the library's error with status 1
(so the probe is judged UNKNOWN, as a failed command is). The rest of the script runs as before. The
engine, the splitter, the parsers and the packs see the same sections either way.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import replace

from console.probes.amdsmi.library import AmdSmiLibrary, LibraryCallError, open_library
from console.probes.ids import ProbeId
from console.transport import CommandResult, OutputSink, Transport

# Probe -> the amd-smi subcommand whose document the library writes for it.
LIBRARY_PROBES: dict[str, str] = {
    ProbeId.AMDSMI_FIRMWARE: "firmware",
    ProbeId.AMDSMI_BAD_PAGES: "bad-pages",
}
COMMAND = "amd-smi command"
LIBRARY = "amdsmi library"
# One probe's part of a bundle script: its begin marker to the end of its end-marker line.
_PROBE_PART = re.compile(r'[^\n]*echo "@@ic-begin ([A-Za-z0-9_.-]+)"[^\n]*\n@@ic-end \1 rc=\$\?"[^\n]*\n?')


class LibraryTransport(Transport):
    """This host's transport, with the probes of ``LIBRARY_PROBES`` answered by the library in-process."""

    def __init__(self, inner: Transport, library: AmdSmiLibrary) -> None:
        self.inner = inner
        self.library = library
        self.answered: list[str] = []

    async def run(
        self,
        node: str,
        argv: Sequence[str],
        *,
        timeout_s: float,
        stdin: bytes | None = None,
        sink: OutputSink | None = None,
    ) -> CommandResult:
        """Pass through (the engine runs bundles with ``run_script``)."""
        return await self.inner.run(node, argv, timeout_s=timeout_s, stdin=stdin, sink=sink)

    async def run_script(
        self, node: str, script: str, *, timeout_s: float, sink: OutputSink | None = None
    ) -> CommandResult:
        """Answer the library's probes here and run what is left of ``script`` on the host."""
        answered: list[bytes] = []

        def take(match: re.Match[str]) -> str:
            probe = match.group(1)
            subcommand = LIBRARY_PROBES.get(probe)
            if subcommand is None:
                return match.group(0)
            answered.append(self._section(probe, subcommand))
            self.answered.append(probe)
            return ""

        started, clock = time.time(), time.monotonic()
        rest = _PROBE_PART.sub(take, script)
        head = b"".join(answered)
        if sink is not None:
            # The sink holds the whole output: what the host's part prints comes after these sections.
            sink.feed(head)
        if not rest.strip():
            stdout = sink.value() if sink is not None else head
            return CommandResult(node, "amdsmi library", 0, stdout, b"", started, time.monotonic() - clock)
        result = await self.inner.run_script(node, rest, timeout_s=timeout_s, sink=sink)
        return result if sink is not None else replace(result, stdout=head + result.stdout)

    def _section(self, probe: str, subcommand: str) -> bytes:
        try:
            output, status = self.library.document(subcommand), 0
        except LibraryCallError as exc:
            output, status = f"amdsmi library: {exc}", 1
        return f"@@ic-begin {probe}\n{output}\n@@ic-end {probe} rc={status}\n".encode()

    async def check_reachable(self, node: str, timeout_s: float = 3.0) -> None:
        """The node is this host."""
        await self.inner.check_reachable(node, timeout_s)

    async def close(self) -> None:
        """Shut the library down and close the host's transport."""
        self.library.close()
        await self.inner.close()


def collecting_transport(inner: Transport, *, use_library: bool = True) -> tuple[Transport, str]:
    """``inner`` with the library answering what it can when it imports and initialises, and which path
    collects (said in the report): the library, or the command with the library's reason."""
    if not use_library:
        return inner, f"{COMMAND} (library not asked for)"
    library = open_library()
    if isinstance(library, str):
        return inner, f"{COMMAND} ({library})"
    return LibraryTransport(inner, library), f"{LIBRARY} for {', '.join(sorted(set(LIBRARY_PROBES.values())))}"
