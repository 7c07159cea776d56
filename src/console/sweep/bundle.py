"""Probe bundles: several probes in one remote command, one SSH channel, split back per probe.

A channel open and a process start cost more than most probes; sending a node's quick probes as a
few bundles instead of one channel each is what makes a 1,000-node sweep fast. Each probe keeps its
own on-node timeout, its exit status and its own stdout+stderr section, byte for byte:

    echo "@@ic-begin <id>"; timeout -k <G> <T> <argv> 2>&1; echo "
    @@ic-end <id> rc=$?"

The end marker always starts a line of its own (the newline inside its quotes), so an output without
a final newline keeps its section and its status; the splitter removes exactly that newline.

``timeout`` puts the probe in a process group of its own and, at ``T`` (or when it is signalled),
signals that whole group: a tool's children (MPI ranks, a wrapper's worker) go with it. A probe that
ignores SIGTERM gets SIGKILL ``G`` later: ``G`` is a twentieth of ``T`` (0.5 to 5 s), so a hung probe
costs its timeout plus at most 5 %, and the console's own wait for the bundle (``bundle_timeout``,
+10 %) ends after the node's kill, not before it. When the console gives up on a bundle itself, it
kills the whole SSH session on the node (``console.transport``), which holds these groups too.

What a bundle prints is read through ``BundleOutput``: each probe's section is kept up to a limit
and the rest only counted, so a probe that prints 200 MB costs the console its limit, not 200 MB.

Everything spliced into the script is quoted with ``shlex``; probe ids are checked to be plain words.
The script stays within the shell subset the simulated nodes understand (``console.sim.shell``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from console.sweep.catalog import ProbeSpec

_ID = re.compile(r"^[A-Za-z0-9_.-]+$")
_BEGIN = re.compile(rb"^@@ic-begin (\S+)\n", re.MULTILINE)
KILL_GRACE_S = 5  # the most a probe that ignores SIGTERM outlives its timeout on the node
KILL_GRACE_SHARE = 0.05
# A probe's cleanup (removing the files it wrote) gets this long, then SIGKILL a second later.
CLEANUP_TIMEOUT_S = 5
# The console waits for a bundle this much longer than its longest probe's timeout: the node's own
# kill (at most +5 %) comes first, and what the probes printed comes back with their exit status.
BUNDLE_TIMEOUT_FACTOR = 1.1
DEFAULT_MAX_PROBE_OUTPUT = 16 << 20
# Text outside every section (a login banner, motd) kept at most: it is never judged.
_NOISE_LIMIT = 64 << 10
# Tools that ask the GPU driver, and so can block on a wedged GPU (the rest of a bundle reads files).
GPU_TOOLS = frozenset({"amd-smi", "rocm-smi", "rocminfo"})


@dataclass(frozen=True)
class Section:
    """One probe's share of a bundle's output."""

    probe: str
    output: bytes
    exit_status: int | None
    dropped_bytes: int = 0  # output past the limit, not kept: the section is cut


def node_grace_s(timeout_s: float) -> float:
    """How long a probe that ignores SIGTERM gets before the node's ``timeout`` SIGKILLs it."""
    return min(float(KILL_GRACE_S), max(0.5, timeout_s * KILL_GRACE_SHARE))


def bundle_script(probes: Sequence[ProbeSpec]) -> str:
    """The shell script running ``probes`` one after another, each under its own timeout."""
    lines = []
    for spec in probes:
        if not _ID.match(spec.id):
            raise ValueError(f"probe id {spec.id!r} is not a plain word")
        run = f"timeout -k {node_grace_s(spec.timeout_s):g} {spec.timeout_s:g} {shlex.join(spec.argv)}"
        line = f'echo "@@ic-begin {spec.id}"; {run} 2>&1; echo "\n@@ic-end {spec.id} rc=$?"'
        if spec.cleanup:
            # Before (what a run the console had to kill left) and after, whatever the probe's end.
            clean = f"timeout -k 1 {CLEANUP_TIMEOUT_S:g} {shlex.join(spec.cleanup)} >/dev/null 2>&1"
            line = f"{clean}; {line}; {clean}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def bundle_timeout(probes: Sequence[ProbeSpec]) -> float:
    """How long the console waits for a bundle: its longest probe's timeout plus 10 %.

    Not the sum: a node whose first probe hangs must not hold the sweep for every later probe's
    timeout too. Probes still queued when the bundle is given up report "no result".
    """
    longest = max((spec.timeout_s for spec in probes), default=0.0)
    cleanups = 2 * (CLEANUP_TIMEOUT_S + 1) if any(spec.cleanup for spec in probes) else 0
    return longest * BUNDLE_TIMEOUT_FACTOR + cleanups


def split_bundle(
    stdout: bytes, probes: Sequence[ProbeSpec], dropped: dict[str, int] | None = None
) -> dict[str, Section]:
    """Cut a bundle's output into sections; a probe without an end marker has exit status None.

    Text between sections (noise from the login shell, motd) is dropped. A probe that never
    started is absent from the result. Sections are read in order: markers a probe prints inside
    its own output cannot replace the section of a probe that really ran after it. ``dropped``
    (from ``BundleOutput``) says how much of each probe's output was not kept.
    """
    dropped = dropped or {}
    wanted = {p.id for p in probes}
    sections: dict[str, Section] = {}
    pos = 0
    while (begin := _BEGIN.search(stdout, pos)) is not None:
        probe, start = begin.group(1), begin.end()
        end = re.compile(rb"\n@@ic-end " + re.escape(probe) + rb" rc=(\d+)(?:\n|$)").search(stdout, start)
        if end is not None:
            output, status, pos = stdout[start : end.start()], int(end.group(1)), end.end()
        else:  # cut short: the output runs to the next section, if any
            following = _BEGIN.search(stdout, start)
            stop = following.start() if following else len(stdout)
            output, status, pos = stdout[start:stop].removesuffix(b"\n" if following else b""), None, stop
        if (name := probe.decode()) in wanted:
            sections[name] = Section(name, output, status, dropped.get(name, 0))
    return sections


class BundleOutput:
    """A bundle's stdout as it arrives, each probe's section kept up to ``limit`` bytes.

    What a section prints past its limit is counted (``dropped``), not kept; the markers around it
    still are, so the splitter finds every section and its exit status. Markers are found with
    ``bytes.find`` on each chunk (plus a short carry for a marker split between chunks), so a
    200 MB output costs a few hundred C-speed scans, not a Python loop over its lines.
    """

    def __init__(self, limit: int = DEFAULT_MAX_PROBE_OUTPUT) -> None:
        if limit <= 0:
            raise ValueError(f"a probe output limit must be positive, got {limit}")
        self.limit = limit
        self.dropped: dict[str, int] = {}
        self._kept = bytearray()
        self._carry = b""  # the unread end of the last chunk: a marker may continue in the next
        self._probe: bytes | None = None  # inside this probe's section
        self._section = 0  # bytes kept of the current section
        self._noise = 0
        self.received = 0  # bytes fed in all: none means the node never answered at all

    @property
    def dropped_bytes(self) -> int:
        """Bytes of every section past the limit."""
        return sum(self.dropped.values())

    def value(self) -> bytes:
        """The bundle's output as kept: every marker, each section up to the limit."""
        return bytes(self._kept) + self._carry

    def feed(self, chunk: bytes) -> None:
        """Take the next piece of the bundle's output."""
        self.received += len(chunk)
        data = self._carry + chunk
        self._carry = b""
        pos = 0
        while pos < len(data):
            pos = self._inside(data, pos) if self._probe is not None else self._outside(data, pos)
            if pos < 0:  # the rest may hold the start of a marker: wait for more
                break

    def _outside(self, data: bytes, pos: int) -> int:
        """Between sections: look for the next begin marker at a line start."""
        begin = data.find(b"@@ic-begin ", pos)
        while begin > 0 and data[begin - 1] != 0x0A:
            begin = data.find(b"@@ic-begin ", begin + 1)
        if begin < 0:
            tail = max(pos, len(data) - len(b"@@ic-begin "))
            self._keep_noise(data[pos:tail])
            self._carry = data[tail:]
            return -1
        self._keep_noise(data[pos:begin])
        newline = data.find(b"\n", begin)
        if newline < 0:
            self._carry = data[begin:] if len(data) - begin < 4096 else b""
            return -1
        line = data[begin : newline + 1]
        self._kept += line
        self._probe, self._section = line[len(b"@@ic-begin ") : -1], 0
        return newline + 1

    def _inside(self, data: bytes, pos: int) -> int:
        """In a section: keep its output up to the limit until its own end marker."""
        assert self._probe is not None
        marker = b"\n@@ic-end " + self._probe + b" rc="
        end = data.find(marker, pos)
        if end < 0:
            tail = max(pos, len(data) - len(marker))
            self._keep_section(data[pos:tail])
            self._carry = data[tail:]
            return -1
        newline = data.find(b"\n", end + len(marker))
        if newline < 0:
            self._keep_section(data[pos:end])
            self._carry = data[end:]
            return -1
        self._keep_section(data[pos:end])
        self._kept += data[end : newline + 1]
        self._probe = None
        return newline + 1

    def _keep_section(self, content: bytes) -> None:
        room = self.limit - self._section
        kept = content[: max(room, 0)]
        self._kept += kept
        self._section += len(kept)
        if len(content) > len(kept):
            name = (self._probe or b"").decode(errors="replace")
            self.dropped[name] = self.dropped.get(name, 0) + len(content) - len(kept)

    def _keep_noise(self, text: bytes) -> None:
        room = _NOISE_LIMIT - self._noise
        if room > 0:
            self._kept += text[:room]
            self._noise += min(room, len(text))


def group_probes(probes: Sequence[ProbeSpec], channels: int) -> list[list[ProbeSpec]]:
    """Bundles for one node: each long test (RCCL, TransferBench, RVS, torch) alone, the quick probes spread
    over at most ``channels`` bundles balancing their timeouts; in each, the probes that cannot hang first.

    A long test that hangs must not hold the quick probes queued behind it in the same bundle.
    """
    channels = max(1, channels)
    alone = [[spec] for spec in probes if spec.judge_partial or spec.alone]
    quick = [spec for spec in probes if not (spec.judge_partial or spec.alone)]
    groups: list[list[ProbeSpec]] = [[] for _ in range(min(channels, len(quick)))]
    loads = [0.0] * len(groups)
    for spec in sorted(quick, key=lambda p: -p.timeout_s):
        target = loads.index(min(loads))
        groups[target].append(spec)
        loads[target] += spec.timeout_s
    # Within a bundle, what cannot hang first: a GPU tool waiting on a wedged GPU then holds only the
    # probes queued behind it, and the node's OS, kernel and stack facts still come back.
    return [sorted(g, key=lambda p: (p.program in GPU_TOOLS, p.timeout_s)) for g in groups if g] + alone
