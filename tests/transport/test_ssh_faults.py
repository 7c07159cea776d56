"""SshTransport against real OpenSSH when things go wrong: every fault maps to one ErrorKind."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from console.transport import ErrorKind, SshTarget, SshTransport, TransportError
from tests.harness.sshd_fleet import SshdFleet
from tests.transport.conftest import KILL_GRACE_S, gone_within, processes_matching, settings_for, targets_for

SLACK_S = 1.5  # scheduling noise on a shared 2-core machine


async def _wait_for_process(fleet: SshdFleet, node: str, needle: str) -> None:
    deadline = time.monotonic() + 10
    while not await processes_matching(fleet, node, needle):
        assert time.monotonic() < deadline, f"{needle!r} never started on {node}"
        await asyncio.sleep(0.1)


async def test_stopped_node_is_refused_fast_then_reconnects(ssh: SshTransport, fleet: SshdFleet) -> None:
    logins = fleet.logins("node02")
    fleet.stop_node("node02")
    started = time.monotonic()
    with pytest.raises(TransportError) as refused:
        await ssh.run("node02", ["true"], timeout_s=10)
    assert refused.value.kind is ErrorKind.REFUSED
    assert time.monotonic() - started < 1.0
    assert fleet.node("node02").addr in refused.value.detail
    with pytest.raises(TransportError) as probe:
        await ssh.check_reachable("node02")
    assert probe.value.kind is ErrorKind.REFUSED
    fleet.start_node("node02")
    await ssh.check_reachable("node02")  # tries again at once: a new sweep of the node, not a queued command
    assert (await ssh.run("node02", ["hostname"], timeout_s=10)).stdout == b"node02\n"
    assert fleet.logins("node02") - logins == 1  # the check's connection is the one the command used


async def test_reachability_checks_leave_no_preauth_disconnects_in_the_sshd_log(
    ssh: SshTransport, fleet: SshdFleet
) -> None:
    # A bare TCP probe that hangs up is logged by sshd as "kex_exchange_identification: Connection
    # closed by remote host": what fail2ban's aggressive and ddos sshd filters count against a host.
    before = fleet.node("node01").log.read_text(errors="replace")
    for _ in range(3):  # a cold check, then warm ones: as a sweep and its reruns do
        await ssh.check_reachable("node01")
        assert (await ssh.run("node01", ["true"], timeout_s=10)).exit_status == 0
    added = fleet.node("node01").log.read_text(errors="replace")[len(before) :]
    assert added.count("Accepted publickey for ") == 1
    assert "kex_exchange_identification" not in added and "Connection closed by" not in added


async def test_frozen_node_times_out_in_the_handshake(fleet: SshdFleet) -> None:
    fleet.freeze_node("node03")
    async with SshTransport(targets_for(fleet), settings_for(fleet, login_timeout_s=1.0)) as transport:
        # The kernel still completes the TCP handshake: the reachability check waits for the login too.
        started = time.monotonic()
        with pytest.raises(TransportError) as frozen:
            await transport.check_reachable("node03")
        assert frozen.value.kind is ErrorKind.CONNECT_TIMEOUT
        assert 0.9 < time.monotonic() - started < 1.0 + SLACK_S
        # Inside the backoff window the same verdict comes back at once, without another 1 s wait.
        started = time.monotonic()
        with pytest.raises(TransportError) as again:
            await transport.run("node03", ["true"], timeout_s=10)
        assert again.value.kind is ErrorKind.CONNECT_TIMEOUT
        assert time.monotonic() - started < 0.2


async def test_queued_commands_share_one_connect_attempt(fleet: SshdFleet) -> None:
    fleet.freeze_node("node03")
    async with SshTransport(targets_for(fleet), settings_for(fleet, login_timeout_s=1.0)) as transport:
        started = time.monotonic()
        outcomes = await asyncio.gather(
            *(transport.run("node03", ["true"], timeout_s=10) for _ in range(6)), return_exceptions=True
        )
    assert all(isinstance(o, TransportError) and o.kind is ErrorKind.CONNECT_TIMEOUT for o in outcomes)
    assert time.monotonic() - started < 1.0 + SLACK_S  # one timeout for all six, not six in a row


async def test_revoked_key_is_an_auth_failure(ssh: SshTransport, fleet: SshdFleet) -> None:
    fleet.revoke_client_key("node04")
    with pytest.raises(TransportError) as denied:
        await ssh.run("node04", ["true"], timeout_s=10)
    assert denied.value.kind is ErrorKind.AUTH_FAILED
    assert f"{fleet.login_user}@{fleet.node('node04').addr}" in denied.value.detail


async def test_changed_host_key_names_node_and_both_fingerprints(ssh: SshTransport, fleet: SshdFleet) -> None:
    expected = fleet.host_key_fingerprint("node05")
    fleet.swap_host_key("node05")
    presented = fleet.host_key_fingerprint("node05")
    logins = fleet.logins("node05")
    with pytest.raises(TransportError) as changed:
        await ssh.run("node05", ["true"], timeout_s=10)
    error = changed.value
    assert error.kind is ErrorKind.HOST_KEY_CHANGED
    assert error.node == "node05"
    assert "node05" in error.detail and expected in error.detail and presented in error.detail
    assert error.detail.index(expected) < error.detail.index(presented)  # expected first, then presented
    assert "\n" not in str(error)
    assert fleet.logins("node05") == logins  # we never authenticated to the impostor


async def test_unknown_host_key_is_refused_without_accept_new(fleet: SshdFleet, tmp_path: Path) -> None:
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text("")
    async with SshTransport(targets_for(fleet), settings_for(fleet, known_hosts=str(known_hosts))) as transport:
        with pytest.raises(TransportError) as unknown:
            await transport.run("node01", ["true"], timeout_s=10)
        assert transport.accepted_host_keys == ()
    assert unknown.value.kind is ErrorKind.HOST_KEY_UNKNOWN
    assert fleet.host_key_fingerprint("node01") in unknown.value.detail
    assert known_hosts.read_text() == ""


async def test_accept_new_records_first_contact_but_never_a_changed_key(fleet: SshdFleet, tmp_path: Path) -> None:
    known_hosts = tmp_path / "ssh" / "known_hosts"  # the directory does not exist yet either
    settings = settings_for(fleet, known_hosts=str(known_hosts), accept_new=True)
    async with SshTransport(targets_for(fleet), settings) as transport:
        assert (await transport.run("node01", ["hostname"], timeout_s=10)).stdout == b"node01\n"
        assert (await transport.run("node01", ["true"], timeout_s=10)).ok
        accepted = transport.accepted_host_keys
    node = fleet.node("node01")
    assert [(a.node, a.known_hosts_entry, a.fingerprint) for a in accepted] == [
        ("node01", f"[{node.addr}]:{node.port}", fleet.host_key_fingerprint("node01"))
    ]
    assert known_hosts.read_text().startswith(f"[{node.addr}]:{node.port} ssh-ed25519 ")
    async with SshTransport(targets_for(fleet), settings_for(fleet, known_hosts=str(known_hosts))) as strict:
        assert (await strict.run("node01", ["true"], timeout_s=10)).ok  # the recorded key is trusted
    fleet.swap_host_key("node01")
    async with SshTransport(targets_for(fleet), settings) as transport:
        with pytest.raises(TransportError) as changed:
            await transport.run("node01", ["true"], timeout_s=10)
        assert transport.accepted_host_keys == ()
    assert changed.value.kind is ErrorKind.HOST_KEY_CHANGED


async def test_hanging_command_times_out_and_leaves_nothing_on_the_node(ssh: SshTransport, fleet: SshdFleet) -> None:
    command = ["sh", "-c", "echo before; sleep 3171 & sleep 3172; wait"]
    hang = asyncio.ensure_future(ssh.run("node06", command, timeout_s=2))
    await _wait_for_process(fleet, "node06", "sleep 3171")  # proves the check below can see it
    with pytest.raises(TransportError) as timed_out:
        await hang
    assert timed_out.value.kind is ErrorKind.TIMEOUT
    assert timed_out.value.partial_stdout == b"before\n"  # what it printed before hanging is kept
    assert "sleep 3171" in timed_out.value.detail
    await gone_within(SLACK_S * 2, lambda: processes_matching(fleet, "node06", "sleep 317"))


async def test_command_ignoring_sigterm_answers_at_once_and_is_killed_after_the_grace(
    ssh: SshTransport, fleet: SshdFleet
) -> None:
    started = time.monotonic()
    with pytest.raises(TransportError) as timed_out:
        await ssh.run("node06", ["sh", "-c", "trap '' TERM; sleep 3173"], timeout_s=1)
    elapsed = time.monotonic() - started
    assert timed_out.value.kind is ErrorKind.TIMEOUT
    assert elapsed < 1.0 + SLACK_S  # the caller has its answer at the timeout, not a grace later
    assert await processes_matching(fleet, "node06", "sleep 3173")  # the kill is still under way
    await gone_within(KILL_GRACE_S + SLACK_S * 2, lambda: processes_matching(fleet, "node06", "sleep 3173"))


async def test_kill_reaches_a_stubborn_probe_in_a_process_group_of_its_own(ssh: SshTransport, fleet: SshdFleet) -> None:
    """A bundle's probe runs under GNU timeout, in a process group of its own. Killing only the
    command's first group left such a probe that ignores SIGTERM running for ever (issue 16)."""
    script = "timeout -k 30 60 sh -c \"trap '' TERM; sleep 3179\"; echo never"
    task = asyncio.ensure_future(ssh.run("node06", ["sh", "-c", script], timeout_s=60))
    await _wait_for_process(fleet, "node06", "sleep 3179")
    task.cancel()  # Ctrl-C: the same kill path as a timeout, awaited
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await processes_matching(fleet, "node06", "sleep 3179") == []
    with pytest.raises(TransportError):  # and once more through the timeout path
        await ssh.run("node06", ["sh", "-c", script], timeout_s=1)
    await gone_within(KILL_GRACE_S + SLACK_S * 2, lambda: processes_matching(fleet, "node06", "sleep 3179"))


async def test_cancelled_command_is_killed_on_the_node(ssh: SshTransport, fleet: SshdFleet) -> None:
    task = asyncio.ensure_future(ssh.run("node06", ["sleep", "3174"], timeout_s=60))
    await _wait_for_process(fleet, "node06", "sleep 3174")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await processes_matching(fleet, "node06", "sleep 3174") == []
    assert (await ssh.run("node06", ["true"], timeout_s=10)).ok  # the connection survived


async def test_cancelled_while_the_channel_opens_still_kills_what_started(ssh: SshTransport, fleet: SshdFleet) -> None:
    assert (await ssh.run("node06", ["true"], timeout_s=10)).ok  # connected: cancels land in the channel open
    for ticks in range(6):
        task = asyncio.ensure_future(ssh.run("node06", ["sh", "-c", "sleep 3177 & sleep 3178"], timeout_s=60))
        for _ in range(ticks):
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert await processes_matching(fleet, "node06", "sleep 317") == []


async def test_connection_dropped_mid_command_is_disconnected(ssh: SshTransport, fleet: SshdFleet) -> None:
    task = asyncio.ensure_future(ssh.run("node02", ["sleep", "3175"], timeout_s=60))
    await _wait_for_process(fleet, "node02", "sleep 3175")
    fleet.stop_node("node02")
    with pytest.raises(TransportError) as dropped:
        await task
    assert dropped.value.kind is ErrorKind.DISCONNECTED
    fleet.start_node("node02")
    logins = fleet.logins("node02")
    assert (await ssh.run("node02", ["hostname"], timeout_s=10)).stdout == b"node02\n"  # reconnects by itself
    assert fleet.logins("node02") == logins + 1


async def test_silent_node_is_dropped_by_keepalive_and_stops_its_command_itself(fleet: SshdFleet) -> None:
    settings = settings_for(fleet, keepalive_interval_s=0.5, keepalive_count_max=2)
    async with SshTransport(targets_for(fleet), settings) as transport:
        task = asyncio.ensure_future(transport.run("node03", ["sleep", "3176"], timeout_s=3))
        await _wait_for_process(fleet, "node03", "sleep 3176")
        fleet.freeze_node("node03")  # TCP stays up, nothing answers: only keepalives notice
        started = time.monotonic()
        with pytest.raises(TransportError) as silent:
            await task
        assert silent.value.kind is ErrorKind.DISCONNECTED
        assert time.monotonic() - started < 2.0 + SLACK_S  # before the 3 s command timeout
    fleet.thaw_node("node03")
    # The console could not kill it; the node's own `timeout` does, shortly after 3 s.
    deadline = time.monotonic() + 3 + 1 + 5
    while await processes_matching(fleet, "node03", "sleep 3176"):
        assert time.monotonic() < deadline, "the node-side timeout did not stop the orphaned command"
        await asyncio.sleep(0.2)


async def test_name_that_does_not_resolve_is_unreachable(fleet: SshdFleet) -> None:
    targets = {"ghost": SshTarget("ghost", "no-such-node.invalid", 22022)}
    async with SshTransport(targets, settings_for(fleet)) as transport:
        with pytest.raises(TransportError) as ghost:
            await transport.run("ghost", ["true"], timeout_s=5)
    assert ghost.value.kind is ErrorKind.UNREACHABLE
    assert "no-such-node.invalid" in ghost.value.detail


async def test_jump_host_failure_is_reported_against_the_target(fleet: SshdFleet) -> None:
    fleet.stop_node("node01")
    targets = {"node02": SshTarget("node02", "node02", proxy_jump="node01")}
    async with SshTransport(targets, settings_for(fleet)) as transport:
        with pytest.raises(TransportError) as refused:
            await transport.run("node02", ["true"], timeout_s=5)
    assert (refused.value.node, refused.value.kind) == ("node02", ErrorKind.REFUSED)
    assert "via jump host node01" in refused.value.detail


async def test_jump_host_that_cannot_reach_the_target(fleet: SshdFleet) -> None:
    fleet.stop_node("node03")
    targets = {"node03": SshTarget("node03", "node03", proxy_jump="node01")}
    async with SshTransport(targets, settings_for(fleet)) as transport:
        with pytest.raises(TransportError) as refused:
            await transport.check_reachable("node03")
        assert refused.value.kind is ErrorKind.REFUSED
        with pytest.raises(TransportError) as via:
            await transport.run("node03", ["true"], timeout_s=5)
    assert via.value.kind is ErrorKind.REFUSED
