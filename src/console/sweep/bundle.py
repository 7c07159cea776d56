"""Probe bundles: several probes in one remote command, one SSH channel, split back per probe.

A channel open and a process start cost more than most probes; sending a node's quick probes as a
few bundles instead of one channel each is what makes a 1,000-node sweep fast. Each probe keeps its
own on-node timeout, its exit status and its own stdout+stderr section, byte for byte:

    echo "@@ic-begin <id>"; timeout --foreground -k 5 <T> timeout -k 5 <T> <argv> 2>&1; echo "
    @@ic-end <id> rc=$?"

The end marker always starts a line of its own (the newline inside its quotes), so an output without
a final newline keeps its section and its status; the splitter removes exactly that newline.

Two ``timeout``s, because each does half the job. The outer one (``--foreground``) stays in the
bundle's process group: when the console gives up and kills that group on the node, it passes the
signal on. The inner one puts the probe in a process group of its own and, when it times out or is
signalled, kills that whole group: a tool's children (MPI ranks, a wrapper's worker) die with it
instead of living on and holding the channel open.

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
KILL_GRACE_S = 5
# Tools that ask the GPU driver, and so can block on a wedged GPU (the rest of a bundle reads files).
GPU_TOOLS = frozenset({"amd-smi", "rocm-smi", "rocminfo"})


@dataclass(frozen=True)
class Section:
    """One probe's share of a bundle's output."""

    probe: str
    output: bytes
    exit_status: int | None


def bundle_script(probes: Sequence[ProbeSpec]) -> str:
    """The shell script running ``probes`` one after another, each under its own timeout."""
    lines = []
    for spec in probes:
        if not _ID.match(spec.id):
            raise ValueError(f"probe id {spec.id!r} is not a plain word")
        limit = f"-k {KILL_GRACE_S} {spec.timeout_s:g}"
        run = f"timeout --foreground {limit} timeout {limit} {shlex.join(spec.argv)}"
        lines.append(f'echo "@@ic-begin {spec.id}"; {run} 2>&1; echo "\n@@ic-end {spec.id} rc=$?"')
    return "\n".join(lines) + "\n"


def bundle_timeout(probes: Sequence[ProbeSpec]) -> float:
    """How long the console waits for a bundle: its longest probe's timeout plus the kill grace.

    Not the sum: a node whose first probe hangs must not hold the sweep for every later probe's
    timeout too. Probes still queued when the bundle is given up report "no result".
    """
    longest = max((spec.timeout_s for spec in probes), default=0.0)
    return longest + KILL_GRACE_S + 5


def split_bundle(stdout: bytes, probes: Sequence[ProbeSpec]) -> dict[str, Section]:
    """Cut a bundle's output into sections; a probe without an end marker has exit status None.

    Text between sections (noise from the login shell, motd) is dropped. A probe that never
    started is absent from the result. Sections are read in order: markers a probe prints inside
    its own output cannot replace the section of a probe that really ran after it.
    """
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
        if probe.decode() in wanted:
            sections[probe.decode()] = Section(probe.decode(), output, status)
    return sections


def group_probes(probes: Sequence[ProbeSpec], channels: int) -> list[list[ProbeSpec]]:
    """Bundles for one node: each long test (RCCL, TransferBench, RVS) alone, the quick probes spread
    over at most ``channels`` bundles balancing their timeouts; in each, the probes that cannot hang first.

    A long test that hangs must not hold the quick probes queued behind it in the same bundle.
    """
    channels = max(1, channels)
    alone = [[spec] for spec in probes if spec.judge_partial]
    quick = [spec for spec in probes if not spec.judge_partial]
    groups: list[list[ProbeSpec]] = [[] for _ in range(min(channels, len(quick)))]
    loads = [0.0] * len(groups)
    for spec in sorted(quick, key=lambda p: -p.timeout_s):
        target = loads.index(min(loads))
        groups[target].append(spec)
        loads[target] += spec.timeout_s
    # Within a bundle, what cannot hang first: a GPU tool waiting on a wedged GPU then holds only the
    # probes queued behind it, and the node's OS, kernel and stack facts still come back.
    return [sorted(g, key=lambda p: (p.argv[0] in GPU_TOOLS, p.timeout_s)) for g in groups if g] + alone
