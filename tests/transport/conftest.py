"""Fixtures for transport tests: one real sshd fleet per session, reset after every test."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from console.transport import SshSettings, SshTarget, SshTransport
from tests.harness.sshd_fleet import SshdFleet, skip_unless_possible

FLEET_SIZE = 6
KILL_GRACE_S = 1.0


@pytest.fixture(scope="session")
def sshd_fleet() -> Iterator[SshdFleet]:
    """Six real sshd nodes (node01..node06); stopping them at the end asserts no process leaked."""
    skip_unless_possible()
    with SshdFleet(FLEET_SIZE) as fleet:
        yield fleet


@pytest.fixture
def fleet(sshd_fleet: SshdFleet) -> Iterator[SshdFleet]:
    """The session fleet, with every fault a test injected undone afterwards."""
    yield sshd_fleet
    sshd_fleet.reset()


def settings_for(fleet: SshdFleet, **overrides: object) -> SshSettings:
    """Settings that trust the fleet's known_hosts and read its ssh_config, with test-sized timeouts."""
    base = SshSettings(
        known_hosts=str(fleet.known_hosts),
        ssh_config=(str(fleet.ssh_config),),
        connect_timeout_s=2.0,
        login_timeout_s=5.0,  # generous: other test suites may load both cores
        kill_grace_s=KILL_GRACE_S,
        stagger_s=0.05,
        use_agent=False,
    )
    return replace(base, **overrides)  # type: ignore[arg-type]


def targets_for(fleet: SshdFleet, **fields: object) -> dict[str, SshTarget]:
    """Every fleet node as an inventory target named like the node, resolved through ssh_config."""
    return {n.name: SshTarget(n.name, n.name, **fields) for n in fleet.nodes}  # type: ignore[arg-type]


@pytest.fixture
async def ssh(fleet: SshdFleet) -> AsyncIterator[SshTransport]:
    """A transport to every fleet node with the default test settings."""
    async with SshTransport(targets_for(fleet), settings_for(fleet)) as transport:
        yield transport


def local_processes_matching(needle: str, descended_from: int | None = None) -> list[str]:
    """Command lines of live (non-zombie) processes on this host containing ``needle``.

    Zombies do not count: where PID 1 does not reap, an orphan's zombie lingers but runs nothing.
    ``descended_from`` keeps only that process's descendants: another test run on the same host (a
    second checkout's suite) starts the same programs, and they are not this test's leftovers.
    """
    found = []
    parents: dict[int, int] = {}
    matches: list[tuple[int, str]] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state, ppid = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
        except (OSError, IndexError, ValueError):
            continue
        parents[int(entry.name)] = int(ppid)
        if needle in cmdline and state != "Z":
            matches.append((int(entry.name), cmdline))
    for pid, cmdline in matches:
        if descended_from is None or _descends(pid, descended_from, parents):
            found.append(cmdline)
    return found


def _descends(pid: int, ancestor: int, parents: dict[int, int]) -> bool:
    seen: set[int] = set()
    while pid not in seen and pid > 1:
        seen.add(pid)
        pid = parents.get(pid, 0)
        if pid == ancestor:
            return True
    return False


def engine_workers_left() -> list[str]:
    """Live engine worker processes (``console.service.workers``) started from this checkout's interpreter.

    Other checkouts' test runs share the host and start workers of their own, and so does a second pytest-xdist
    worker of this one: only this test process's descendants are its leaks.
    """
    from console.service.workers import WORKER_MODULE

    return local_processes_matching(f"{sys.executable} -m {WORKER_MODULE}", os.getpid())


async def processes_matching(fleet: SshdFleet, node: str, needle: str) -> list[str]:
    """Command lines on ``node`` containing ``needle``, seen by ``ps`` over a separate, new connection."""
    async with SshTransport({node: SshTarget(node, node)}, settings_for(fleet)) as observer:
        listing = await observer.run(node, ["ps", "-eo", "args"], timeout_s=10)
    return [line for line in listing.stdout.decode().splitlines() if needle in line and "ps -eo" not in line]


async def gone_within(seconds: float, still_there: Callable[[], Awaitable[list[str]]]) -> float:
    """Wait until ``still_there()`` finds nothing; how long that took (fails past ``seconds``)."""
    started = time.monotonic()
    while found := await still_there():
        assert time.monotonic() - started < seconds, f"still running after {seconds} s: {found}"
        await asyncio.sleep(0.1)
    return time.monotonic() - started


async def local_matching(needle: str) -> list[str]:
    """``local_processes_matching`` for ``gone_within``."""
    return local_processes_matching(needle)
