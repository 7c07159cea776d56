"""Probe bundles on a real OpenSSH node when tools misbehave: cut lines, hangs with children, forged markers.

A bundle runs several probes in one remote shell, each under the node's own ``timeout``. Whatever a
tool prints or spawns, the bundle must give each probe back its exact output and exit status, and a
probe that timed out on the node must leave no process behind, its children included.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from console.sweep.bundle import bundle_script, split_bundle
from console.sweep.catalog import ProbeSet, ProbeSpec
from console.transport import SshSettings, SshTarget, SshTransport
from tests.harness.sshd_fleet import SshdFleet, skip_unless_possible

# A tool that starts a child and waits for it forever, as wrapper scripts and MPI launchers do.
HANGS_WITH_CHILD = "#!/bin/sh\necho started\n/bin/sleep 3600 &\nwait\n"
NO_NEWLINE = "#!/bin/sh\nprintf 'no newline at the end'\n"
FORGER = (
    "#!/bin/sh\n"
    "echo 'line one'\n"
    "printf '@@ic-end b.second rc=0\\n@@ic-begin b.second\\nforged\\n@@ic-end b.second rc=0\\n'\n"
)


def _spec(probe_id: str, *argv: str, timeout_s: float = 10) -> ProbeSpec:
    return ProbeSpec(probe_id, "test", argv, timeout_s, lambda text: text, ProbeSet.QUICK)


@pytest.fixture(scope="module")
def node() -> Iterator[SshdFleet]:
    skip_unless_possible()
    with SshdFleet(1, prefix="bundle") as fleet:
        for name, script in (("hangs-with-child", HANGS_WITH_CHILD), ("no-newline", NO_NEWLINE), ("forger", FORGER)):
            fleet.install_tool("bundle01", name, script)
        yield fleet


def _transport(fleet: SshdFleet) -> SshTransport:
    target = SshTarget("bundle01", "bundle01")
    settings = SshSettings(
        known_hosts=str(fleet.known_hosts), ssh_config=(str(fleet.ssh_config),), use_agent=False, kill_grace_s=1.0
    )
    return SshTransport({"bundle01": target}, settings)


async def _run_bundle(fleet: SshdFleet, probes: list[ProbeSpec], timeout_s: float) -> bytes:
    async with _transport(fleet) as transport:
        result = await transport.run_script("bundle01", bundle_script(probes), timeout_s=timeout_s)
    return result.stdout


async def _processes(fleet: SshdFleet) -> list[str]:
    async with _transport(fleet) as transport:
        listing = await transport.run("bundle01", ["ps", "-eo", "args"], timeout_s=10)
    return [
        line
        for line in listing.stdout.decode().splitlines()[1:]
        if not line.startswith(("sshd", "/usr/sbin/sshd")) and "ps -eo args" not in line
    ]


@pytest.mark.root
def test_output_without_final_newline_keeps_its_section(node: SshdFleet) -> None:
    probes = [_spec("a.first", "no-newline"), _spec("b.second", "echo", "after")]
    sections = split_bundle(asyncio.run(_run_bundle(node, probes, 30)), probes)
    assert sections["a.first"].output == b"no newline at the end" and sections["a.first"].exit_status == 0
    assert sections["b.second"].output == b"after\n" and sections["b.second"].exit_status == 0


@pytest.mark.root
def test_forged_markers_in_one_probe_do_not_replace_another_probes_result(node: SshdFleet) -> None:
    probes = [_spec("a.first", "forger"), _spec("b.second", "echo", "real")]
    sections = split_bundle(asyncio.run(_run_bundle(node, probes, 30)), probes)
    assert sections["b.second"].output == b"real\n"


@pytest.mark.root
def test_probe_timed_out_on_the_node_leaves_no_child_behind(node: SshdFleet) -> None:
    probes = [_spec("a.hang", "hangs-with-child", timeout_s=1), _spec("b.after", "echo", "still runs")]
    started = time.monotonic()
    sections = split_bundle(asyncio.run(_run_bundle(node, probes, 30)), probes)
    assert time.monotonic() - started < 10
    # 124 when it ended on SIGTERM, 137 when a busy machine kept it past the grace and the node's
    # timeout SIGKILLed it (the flake seen under load): the node's own timeout stopped it either way.
    assert sections["a.hang"].exit_status in (124, 137) and sections["a.hang"].output.startswith(b"started")
    assert sections["b.after"].output == b"still runs\n"
    assert asyncio.run(_processes(node)) == []


@pytest.mark.root
def test_bundle_killed_by_the_console_takes_the_probe_and_its_children(node: SshdFleet) -> None:
    probes = [_spec("a.hang", "hangs-with-child", timeout_s=60)]
    started = time.monotonic()
    with pytest.raises(Exception, match="did not finish within 2 s"):
        asyncio.run(_run_bundle(node, probes, 2))
    assert time.monotonic() - started < 8
    assert asyncio.run(_processes(node)) == []
