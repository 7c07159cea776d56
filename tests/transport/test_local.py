"""LocalTransport: the same contract on the node itself, checked against the SSH transport for parity."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator

import pytest

from console.transport import CommandResult, ErrorKind, LocalTransport, SshTransport, Transport, TransportError
from tests.transport.conftest import KILL_GRACE_S, gone_within, local_matching, local_processes_matching
from tests.transport.test_ssh_commands import HOSTILE_ARGS

# These tests assert that no "sleep 417*" of theirs is left on this host, and any of them would see another's:
# under xdist they run on one worker, the one that holds the session sshd fleet the rest of the module uses.
pytestmark = pytest.mark.xdist_group("sshd_fleet")

SLACK_S = 1.5
PARITY_CASES: list[tuple[list[str], bytes | None]] = [
    (["printf", "%s\\0", *HOSTILE_ARGS], None),
    (["sh", "-c", "echo out; echo err >&2; exit 7"], None),
    (["sh", "-c", "kill -TERM $$"], None),  # death by signal: minus the signal number on both
    (["cat"], b"\0binary\xff\n" * 1000),
    (["cat"], None),
    (["sh", "-c", 'printf "%s|" "$@"', "sh", "$(id)", "a b"], None),
    (["false"], None),
]


@pytest.fixture
async def local() -> AsyncIterator[LocalTransport]:
    async with LocalTransport("here", kill_grace_s=KILL_GRACE_S) as transport:
        yield transport


async def test_local_transport_satisfies_the_protocol(local: LocalTransport) -> None:
    transport: Transport = local
    result = await transport.run("here", ["sh", "-c", "echo hi; exit 2"], timeout_s=5)
    assert isinstance(result, CommandResult)
    assert (result.node, result.exit_status, result.stdout, result.stderr) == ("here", 2, b"hi\n", b"")
    await transport.check_reachable("here")
    script = await transport.run_script("here", "echo $((6 * 7))", timeout_s=5)
    assert script.stdout == b"42\n"


async def test_local_transport_refuses_other_nodes(local: LocalTransport) -> None:
    with pytest.raises(ValueError, match="gpu017"):
        await local.run("gpu017", ["true"], timeout_s=5)
    with pytest.raises(ValueError, match="gpu017"):
        await local.check_reachable("gpu017")
    assert LocalTransport().node == os.uname().nodename


async def test_local_missing_command_is_exit_127(local: LocalTransport) -> None:
    result = await local.run("here", ["no-such-tool-xyz"], timeout_s=5)
    assert result.exit_status == 127
    assert b"no-such-tool-xyz" in result.stderr


async def test_local_timeout_kills_the_whole_process_group(local: LocalTransport) -> None:
    started = time.monotonic()
    with pytest.raises(TransportError) as timed_out:
        await local.run("here", ["sh", "-c", "echo before; sleep 4171 & sleep 4172; wait"], timeout_s=1)
    assert timed_out.value.kind is ErrorKind.TIMEOUT
    assert timed_out.value.partial_stdout == b"before\n"  # what it printed before hanging is kept
    assert time.monotonic() - started < 1.0 + SLACK_S
    await gone_within(SLACK_S, lambda: local_matching("sleep 417"))  # SIGTERM ends them at once


async def test_local_sigterm_ignoring_command_answers_at_once_and_is_killed_after_the_grace(
    local: LocalTransport,
) -> None:
    started = time.monotonic()
    with pytest.raises(TransportError) as timed_out:
        await local.run("here", ["sh", "-c", "trap '' TERM; sleep 4173"], timeout_s=0.5)
    assert timed_out.value.kind is ErrorKind.TIMEOUT
    assert time.monotonic() - started < 0.5 + SLACK_S  # the caller is not held for the grace
    assert local_processes_matching("sleep 4173")  # the kill goes on in the background...
    await gone_within(KILL_GRACE_S + SLACK_S, lambda: local_matching("sleep 4173"))  # ...SIGKILL at the grace


async def test_local_kill_reaches_a_stubborn_probe_in_a_process_group_of_its_own(local: LocalTransport) -> None:
    """What a bundle runs: the probe under GNU timeout, which moves it to a group of its own. Killing
    only the command's first process group left such a probe running for ever (issue 16)."""
    script = "timeout -k 30 60 sh -c \"trap '' TERM; sleep 4178\"; echo never"
    with pytest.raises(TransportError):
        await local.run("here", ["sh", "-c", script], timeout_s=0.5)
    await gone_within(KILL_GRACE_S + SLACK_S, lambda: local_matching("sleep 4178"))


async def test_local_close_ends_the_grace_at_once() -> None:
    transport = LocalTransport("here", kill_grace_s=30)
    with pytest.raises(TransportError):
        await transport.run("here", ["sh", "-c", "trap '' TERM; sleep 4179"], timeout_s=0.3)
    started = time.monotonic()
    await transport.close()  # a sweep that ends does not wait 30 s of grace: SIGKILL now
    assert time.monotonic() - started < SLACK_S
    await gone_within(SLACK_S, lambda: local_matching("sleep 4179"))


async def test_local_cancellation_kills_and_propagates(local: LocalTransport) -> None:
    task = asyncio.ensure_future(local.run("here", ["sh", "-c", "sleep 4174 & sleep 4175"], timeout_s=60))
    deadline = time.monotonic() + 5
    while not local_processes_matching("sleep 4174"):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert local_processes_matching("sleep 417") == []


@pytest.mark.timeout(60)
async def test_local_cancellation_at_any_point_of_the_spawn_leaves_nothing(local: LocalTransport) -> None:
    """Cancelled while asyncio is still wiring the pipes, the child already runs: it must die too."""
    for ticks in range(8):
        task = asyncio.ensure_future(local.run("here", ["sh", "-c", "sleep 4176 & sleep 4177"], timeout_s=60))
        for _ in range(ticks):
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert local_processes_matching("sleep 417") == [], f"left behind when cancelled after {ticks} loop ticks"


@pytest.mark.parametrize(("argv", "stdin"), PARITY_CASES, ids=lambda case: str(case)[:30])
async def test_local_and_ssh_transports_agree(
    argv: list[str], stdin: bytes | None, local: LocalTransport, ssh: SshTransport
) -> None:
    here = await local.run("here", argv, timeout_s=10, stdin=stdin)
    there = await ssh.run("node01", argv, timeout_s=10, stdin=stdin)
    assert (here.exit_status, here.stdout, here.stderr) == (there.exit_status, there.stdout, there.stderr)
    assert here.command == there.command


async def test_local_and_ssh_agree_on_missing_commands(local: LocalTransport, ssh: SshTransport) -> None:
    here = await local.run("here", ["no-such-tool-xyz"], timeout_s=5)
    there = await ssh.run("node01", ["no-such-tool-xyz"], timeout_s=5)
    assert here.exit_status == there.exit_status == 127
    assert b"No such file or directory" in here.stderr and b"No such file or directory" in there.stderr
