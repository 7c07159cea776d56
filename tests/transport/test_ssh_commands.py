"""SshTransport against real OpenSSH: output, quoting, stdin, connection reuse and channel limits."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from console.transport import CommandResult, ErrorKind, SshTarget, SshTransport, TransportError
from tests.harness.sshd_fleet import SshdFleet
from tests.transport.conftest import settings_for, targets_for

HOSTILE_ARGS = [
    "; rm -rf /",
    "$(id)",
    "`id`",
    "it's",
    'say "hi"',
    "line one\nline two",
    "$HOME ${PATH}",
    "*",
    "",
    "  padded  ",
    "back\\slash",
    "tab\there",
    "-n",
    "ünïcødé ✓",
    "a && b || c | d > e < f",
]


async def test_run_returns_stdout_stderr_and_exit_status_without_the_pgid_line(ssh: SshTransport) -> None:
    result = await ssh.run("node01", ["sh", "-c", "echo out; echo err >&2; exit 3"], timeout_s=10)
    assert isinstance(result, CommandResult)
    assert (result.node, result.exit_status, result.stdout, result.stderr) == ("node01", 3, b"out\n", b"err\n")
    assert not result.ok
    assert result.command == "sh -c 'echo out; echo err >&2; exit 3'"
    assert 0 < result.duration_s < 10
    assert abs(result.started_at - time.time()) < 60


async def test_each_node_answers_as_itself_with_its_own_tools(ssh: SshTransport, fleet: SshdFleet) -> None:
    fleet.install_tool("node02", "amd-smi", '#!/bin/sh\necho "fake amd-smi on $IC_NODE: $*"\n')
    names = await asyncio.gather(*(ssh.run(n.name, ["hostname"], timeout_s=10) for n in fleet.nodes))
    assert [r.stdout.decode().strip() for r in names] == [n.name for n in fleet.nodes]
    tool = await ssh.run("node02", ["amd-smi", "static", "--json"], timeout_s=10)
    assert tool.stdout == b"fake amd-smi on node02: static --json\n"
    missing = await ssh.run("node03", ["amd-smi"], timeout_s=10)
    assert missing.exit_status == 127
    assert b"amd-smi" in missing.stderr


async def test_hostile_arguments_arrive_literally_and_run_nothing(ssh: SshTransport, fleet: SshdFleet) -> None:
    canary = fleet.node("node01").dir / "pwned"
    args = [*HOSTILE_ARGS, f"; touch {canary}", f"$(touch {canary})", f"'; touch {canary}; '"]
    result = await ssh.run("node01", ["printf", "%s\\0", *args], timeout_s=10)
    assert result.exit_status == 0
    assert result.stdout.split(b"\0")[:-1] == [a.encode() for a in args]
    assert not canary.exists()


async def test_stdin_is_delivered_byte_exact_and_closed(ssh: SshTransport) -> None:
    payload = bytes(range(256)) * 4096  # 1 MiB with NULs and high bytes: exercises flow control
    echoed = await ssh.run("node01", ["cat"], timeout_s=20, stdin=payload)
    assert echoed.stdout == payload
    no_input = await ssh.run("node01", ["cat"], timeout_s=10)  # EOF at once, not a hang
    assert (no_input.exit_status, no_input.stdout) == (0, b"")


async def test_run_script_runs_shell_text_under_sh(ssh: SshTransport) -> None:
    result = await ssh.run_script("node01", "for i in 1 2 3; do printf '%s-' \"$i\"; done | tr - +", timeout_s=10)
    assert (result.exit_status, result.stdout) == (0, b"1+2+3+")
    assert result.command.startswith("sh -c ")


async def test_one_connection_per_node_serves_every_command(ssh: SshTransport, fleet: SshdFleet) -> None:
    before = fleet.logins("node04")
    for _ in range(10):
        assert (await ssh.run("node04", ["true"], timeout_s=10)).ok
    results = await asyncio.gather(*(ssh.run("node04", ["echo", str(i)], timeout_s=10) for i in range(20)))
    assert [r.stdout for r in results] == [f"{i}\n".encode() for i in range(20)]
    await ssh.run_script("node04", "true", timeout_s=10)
    assert fleet.logins("node04") - before == 1


async def test_thirty_parallel_commands_stay_under_max_sessions(ssh: SshTransport, fleet: SshdFleet) -> None:
    log = fleet.node("node05").dir / "concurrency.log"
    script = f'echo "+ $(date +%s.%N)" >> {log}; sleep 0.3; echo "- $(date +%s.%N)" >> {log}'
    results = await asyncio.gather(*(ssh.run_script("node05", script, timeout_s=20) for _ in range(30)))
    assert all(r.ok for r in results)
    events = sorted(
        (float(t), 1 if sign == "+" else -1) for sign, t in (line.split() for line in log.read_text().splitlines())
    )
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    assert len(events) == 60
    assert 2 <= peak <= 8  # parallel, but never more than max_channels_per_node (sshd allows 10)


async def test_more_channels_than_max_sessions_are_refused(fleet: SshdFleet) -> None:
    """The negative control for the cap: without it, sshd's MaxSessions 10 refuses the surplus."""
    settings = settings_for(fleet, max_channels_per_node=14)
    async with SshTransport(targets_for(fleet), settings) as uncapped:
        outcomes = await asyncio.gather(
            *(uncapped.run("node06", ["sleep", "2"], timeout_s=20) for _ in range(14)), return_exceptions=True
        )
    refused = [o for o in outcomes if isinstance(o, TransportError)]
    assert refused and all(o.kind is ErrorKind.CHANNEL_REFUSED for o in refused)
    assert sum(isinstance(o, CommandResult) for o in outcomes) <= 10


async def test_explicit_target_without_ssh_config(fleet: SshdFleet, tmp_path: Path) -> None:
    empty_config = tmp_path / "empty_config"
    empty_config.write_text("")
    node = fleet.node("node03")
    target = SshTarget("gpu-a", node.addr, node.port, user=fleet.login_user, identity_files=(str(fleet.client_key),))
    async with SshTransport({"gpu-a": target}, settings_for(fleet, ssh_config=(str(empty_config),))) as transport:
        result = await transport.run("gpu-a", ["hostname"], timeout_s=10)
    assert (result.node, result.stdout) == ("gpu-a", b"node03\n")


async def test_proxy_jump_opens_one_jump_connection_for_all_targets(fleet: SshdFleet) -> None:
    jump_logins = fleet.logins("node01")
    targets = targets_for(fleet, proxy_jump="node01")
    del targets["node01"]
    # One handshake slot: opening the jump inside it would deadlock.
    async with SshTransport(targets, settings_for(fleet, max_handshakes=1)) as transport:
        names = await asyncio.gather(*(transport.run(n, ["hostname"], timeout_s=10) for n in ("node02", "node03")))
        await transport.check_reachable("node04")
    assert [r.stdout for r in names] == [b"node02\n", b"node03\n"]
    assert fleet.logins("node01") - jump_logins == 1


async def test_unknown_node_and_malformed_argv_are_programming_errors(ssh: SshTransport) -> None:
    with pytest.raises(KeyError, match="gpu999"):
        await ssh.run("gpu999", ["true"], timeout_s=5)
    with pytest.raises(ValueError, match="empty"):
        await ssh.run("node01", [], timeout_s=5)
    with pytest.raises(TypeError):
        await ssh.run("node01", "echo hi", timeout_s=5)
    with pytest.raises(ValueError, match="NUL"):
        await ssh.run("node01", ["echo", "a\0b"], timeout_s=5)
    with pytest.raises(ValueError, match="positive"):
        await ssh.run("node01", ["true"], timeout_s=0)


async def test_closed_transport_refuses_work(fleet: SshdFleet) -> None:
    transport = SshTransport(targets_for(fleet), settings_for(fleet))
    assert (await transport.run("node01", ["true"], timeout_s=10)).ok
    await transport.close()
    with pytest.raises(RuntimeError, match="closed"):
        await transport.run("node01", ["true"], timeout_s=10)
