"""The test fleet itself, checked with the stock OpenSSH client, so transport tests rest on solid ground."""

from __future__ import annotations

import subprocess
import time

import pytest

from tests.harness.sshd_fleet import SshdFleet


def _ssh(fleet: SshdFleet, node: str, command: str, *options: str) -> subprocess.CompletedProcess[str]:
    argv = ["ssh", "-F", str(fleet.ssh_config), *options, node, command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)


def test_nodes_have_their_own_name_address_path_and_key(fleet: SshdFleet) -> None:
    first, second = fleet.nodes[:2]
    assert first.addr.startswith("127.1.") and first.addr != second.addr and first.port == 22022
    assert fleet.host_key_fingerprint(first) != fleet.host_key_fingerprint(second)
    done = _ssh(fleet, first.name, 'hostname; id -un; echo "$PATH"; ps -eo comm= | sort -u | tr "\\n" " "')
    name, user, path, processes = done.stdout.splitlines()
    assert (name, user) == (first.name, fleet.login_user)
    assert path.split(":")[0] == str(first.bin_dir)
    assert "sshd" in processes and "bash" not in processes  # ps sees only this node's namespace


def test_faults_look_real_to_the_openssh_client(fleet: SshdFleet) -> None:
    fleet.revoke_client_key("node01")
    assert "Permission denied" in _ssh(fleet, "node01", "true").stderr
    fleet.stop_node("node02")
    assert "Connection refused" in _ssh(fleet, "node02", "true").stderr
    fleet.freeze_node("node03")
    assert "timed out" in _ssh(fleet, "node03", "true", "-o", "ConnectTimeout=1").stderr
    fleet.swap_host_key("node04")
    assert "REMOTE HOST IDENTIFICATION HAS CHANGED" in _ssh(fleet, "node04", "true").stderr
    fleet.reset()
    assert [_ssh(fleet, n, "hostname").stdout for n in ("node01", "node02", "node03", "node04")] == [
        "node01\n",
        "node02\n",
        "node03\n",
        "node04\n",
    ]


def test_logins_count_connections(fleet: SshdFleet) -> None:
    before = fleet.logins("node05")
    _ssh(fleet, "node05", "true")
    _ssh(fleet, "node05", "true")
    assert fleet.logins("node05") - before == 2


def test_stopping_a_fleet_kills_hung_sessions_and_leaves_nothing() -> None:
    fleet = SshdFleet(2, prefix="leak").start()
    try:
        hung = subprocess.Popen(
            ["ssh", "-F", str(fleet.ssh_config), "leak01", "sleep 3600 & exec sleep 3601"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while len(fleet.processes("leak01")) < 5:  # listener, privsep pair, the shell's two sleeps
            assert time.monotonic() < deadline, fleet.processes("leak01")
            time.sleep(0.05)
        assert fleet.leftover_processes()  # the check can see live processes
    finally:
        fleet.stop()
    assert fleet.leftover_processes() == []
    assert hung.wait(10) == 255  # the client saw its connection die
    assert not fleet.base.exists()


def test_an_unstarted_fleet_has_no_paths() -> None:
    fleet = SshdFleet(1)
    with pytest.raises(RuntimeError, match="not started"):
        _ = fleet.ssh_config
