"""Probe bundles: several probes in one remote command, one SSH channel, split back per probe.

A channel open and a process start cost more than most probes; sending a node's quick probes as a
few bundles instead of one channel each is what makes a 1,000-node sweep fast. Each probe keeps its
own on-node timeout, its exit status and its own stdout+stderr section:

    echo "@@ic-begin <id>"; timeout --foreground -k 5 <T> <argv> 2>&1; echo "@@ic-end <id> rc=$?"

``--foreground`` keeps each probe in the bundle's process group (a plain ``timeout`` would make its
own group), so when the console gives up on a bundle and kills that group on the node, the probe
running inside dies with it.

Everything spliced into the script is quoted with ``shlex``; probe ids are checked to be plain words.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from console.sweep.catalog import ProbeSpec

_ID = re.compile(r"^[A-Za-z0-9_.-]+$")
_BEGIN = re.compile(rb"^@@ic-begin (\S+)$")
_END = re.compile(rb"^@@ic-end (\S+) rc=(\d+)$")
KILL_GRACE_S = 5


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
        command = shlex.join(spec.argv)
        lines.append(
            f'echo "@@ic-begin {spec.id}"; timeout --foreground -k {KILL_GRACE_S} {spec.timeout_s:g} {command} 2>&1;'
            f' echo "@@ic-end {spec.id} rc=$?"'
        )
    return "\n".join(lines) + "\n"


def bundle_timeout(probes: Sequence[ProbeSpec]) -> float:
    """How long the console waits for a bundle: its longest probe's timeout plus the kill grace.

    Not the sum: a node whose first probe hangs must not hold the sweep for every later probe's
    timeout too. Probes still queued when the bundle is given up report "no result".
    """
    return max((spec.timeout_s for spec in probes), default=0.0) + KILL_GRACE_S + 5


def split_bundle(stdout: bytes, probes: Sequence[ProbeSpec]) -> dict[str, Section]:
    """Cut a bundle's output into sections; a probe without an end marker has exit status None.

    Text between sections (noise from the login shell, motd) is dropped. A probe that never
    started is absent from the result.
    """
    wanted = {p.id for p in probes}
    sections: dict[str, Section] = {}
    current: str | None = None
    buf: list[bytes] = []
    for line in stdout.split(b"\n"):
        begin = _BEGIN.match(line.rstrip(b"\r"))
        if begin:
            if current is not None:
                sections[current] = Section(current, b"\n".join(buf), None)
            probe = begin.group(1).decode()
            current, buf = (probe, []) if probe in wanted else (None, [])
            continue
        end = _END.match(line.rstrip(b"\r"))
        if end and current is not None and end.group(1).decode() == current:
            sections[current] = Section(current, b"\n".join(buf), int(end.group(2)))
            current, buf = None, []
            continue
        if current is not None:
            buf.append(line)
    if current is not None:
        sections[current] = Section(current, b"\n".join(buf), None)
    return sections


def group_probes(probes: Sequence[ProbeSpec], channels: int) -> list[list[ProbeSpec]]:
    """Spread probes over at most ``channels`` bundles, balancing their timeouts (long probes alone)."""
    channels = max(1, channels)
    groups: list[list[ProbeSpec]] = [[] for _ in range(min(channels, len(probes)))]
    loads = [0.0] * len(groups)
    for spec in sorted(probes, key=lambda p: -p.timeout_s):
        target = loads.index(min(loads))
        groups[target].append(spec)
        loads[target] += spec.timeout_s
    return [g for g in groups if g]
