"""``check-local`` collecting through the amdsmi library where it can (``console.probes.amdsmi.library``).

The engine runs a node's probes as bundle scripts (``console.sweep.bundle``). On the node, the probes
the library answers are taken out of each script and answered in this process: their section is the
document ``amd-smi ... --json`` would print, with exit status 0, or the library's error with status 1
(so the probe is judged UNKNOWN, as a failed command is). The rest of the script runs as before. The
engine, the splitter, the parsers and the packs see the same sections either way.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from dataclasses import replace

from console.probes.amdsmi.library import AmdSmiLibrary, LibraryCallError, open_library
from console.probes.amdsmi.library_documents import document
from console.probes.ids import ProbeId
from console.sweep.catalog import PROBES_BY_ID
from console.transport import CommandResult, OutputSink, Transport, WrappedTransport

# Probe -> the amd-smi subcommand whose document the library writes for it.
# Not the library's: ``version`` (the tool's own version line) and the CPER listing, which needs root and
# writes record files (it runs under ``sudo -n``).
LIBRARY_PROBES: dict[str, str] = {
    ProbeId.AMDSMI_FIRMWARE: "firmware",
    ProbeId.AMDSMI_BAD_PAGES: "bad-pages",
    ProbeId.AMDSMI_LIST: "list",
    ProbeId.AMDSMI_STATIC: "static",
    ProbeId.AMDSMI_METRIC: "metric",
    ProbeId.AMDSMI_XGMI: "xgmi",
    ProbeId.AMDSMI_XGMI_STATUS: "xgmi -l",
}
COMMAND = "amd-smi command"
LIBRARY = "amdsmi library"
# One probe's part of a bundle script: its begin marker to the end of its end-marker line.
_PROBE_PART = re.compile(r'[^\n]*echo "@@ic-begin ([A-Za-z0-9_.-]+)"[^\n]*\n@@ic-end \1 rc=\$\?"[^\n]*\n?')


class LibraryTransport(WrappedTransport):
    """This host's transport, with the probes of ``LIBRARY_PROBES`` answered by the library in-process."""

    def __init__(self, inner: Transport, library: AmdSmiLibrary, *, timeout_s: float | None = None) -> None:
        super().__init__(inner)
        self.library = library
        self.timeout_s = timeout_s  # None: each probe's own timeout from the catalogue
        self.answered: list[str] = []
        self.hung: str | None = None  # why the library is asked no more

    async def run_script(
        self, node: str, script: str, *, timeout_s: float, sink: OutputSink | None = None
    ) -> CommandResult:
        """Answer the library's probes here and run what is left of ``script`` on the host."""
        asked: list[str] = []

        def take(match: re.Match[str]) -> str:
            if match.group(1) not in LIBRARY_PROBES:
                return match.group(0)
            asked.append(match.group(1))
            return ""

        started, clock = time.time(), time.monotonic()
        rest = _PROBE_PART.sub(take, script)
        head = b"".join([await self._answer(probe) for probe in asked])
        self.answered += asked
        if sink is not None:
            # The sink holds the whole output: what the host's part prints comes after these sections.
            sink.feed(head)
        if not rest.strip():
            stdout = sink.value() if sink is not None else head
            return CommandResult(node, "amdsmi library", 0, stdout, b"", started, time.monotonic() - clock)
        result = await self.inner.run_script(node, rest, timeout_s=timeout_s, sink=sink)
        return result if sink is not None else replace(result, stdout=head + result.stdout)

    async def _answer(self, probe: str) -> bytes:
        """The probe's section: the library's document (status 0), its error (1) or a hang (124, as ``timeout``).

        A library call can block on a wedged GPU as ``amd-smi`` can, and cannot be killed: it runs in a
        daemon thread the check does not wait for past the probe's timeout, and once one has hung the
        library is not asked again (the next call would queue behind it).
        """
        timeout_s = self.timeout_s if self.timeout_s is not None else PROBES_BY_ID[probe].timeout_s
        if self.hung is not None:
            return _section(probe, f"amdsmi library: not asked, {self.hung}", 1)
        loop = asyncio.get_running_loop()
        done: asyncio.Future[tuple[str, int]] = loop.create_future()

        def work() -> None:
            try:
                answer = (document(self.library, LIBRARY_PROBES[probe]), 0)
            except LibraryCallError as exc:
                answer = (f"amdsmi library: {exc}", 1)
            loop.call_soon_threadsafe(_settle, done, answer)

        threading.Thread(target=work, name=f"amdsmi-{probe}", daemon=True).start()
        try:
            output, status = await asyncio.wait_for(asyncio.shield(done), timeout_s)
        except TimeoutError:
            self.hung = f"an earlier call did not answer within {timeout_s:g} s ({probe})"
            return _section(probe, f"amdsmi library: no answer within {timeout_s:g} s", 124)
        return _section(probe, output, status)

    async def close(self) -> None:
        """Shut the library down (unless a call still hangs in it) and close the host's transport."""
        if self.hung is None:
            self.library.close()
        await self.inner.close()


def _settle(done: asyncio.Future[tuple[str, int]], answer: tuple[str, int]) -> None:
    if not done.done():  # given up on (the probe's timeout) before the call came back
        done.set_result(answer)


def _section(probe: str, output: str, status: int) -> bytes:
    return f"@@ic-begin {probe}\n{output}\n@@ic-end {probe} rc={status}\n".encode()


def collecting_transport(inner: Transport, *, use_library: bool = True) -> tuple[Transport, str]:
    """``inner`` with the library answering what it can when it imports and initialises, and which path
    collects (said in the report): the library, or the command with the library's reason."""
    if not use_library:
        return inner, f"{COMMAND} (library not asked for)"
    library = open_library()
    if isinstance(library, str):
        return inner, f"{COMMAND} ({library})"
    return LibraryTransport(inner, library), f"{LIBRARY} for {', '.join(sorted(set(LIBRARY_PROBES.values())))}"
