"""known_hosts handling without a server: lookups, first-contact appends, and the operator's messages."""

from __future__ import annotations

from pathlib import Path

import asyncssh
import pytest

from console.transport import ErrorKind
from console.transport.hostkeys import HostKeyCheck, KnownHosts, fingerprint, host_pattern


def _key() -> asyncssh.SSHKey:
    return asyncssh.generate_private_key("ssh-ed25519").convert_to_public()


def _line(pattern: str, key: asyncssh.SSHKey) -> str:
    return f"{pattern} {key.export_public_key().decode().strip()}\n"


@pytest.mark.parametrize(("port", "pattern"), [(None, "gpu1"), (22, "gpu1"), (22022, "[gpu1]:22022")])
def test_host_pattern_brackets_only_non_default_ports(port: int | None, pattern: str) -> None:
    assert host_pattern("gpu1", port) == pattern


def test_lookup_matches_name_or_address_and_port(tmp_path: Path) -> None:
    key = _key()
    path = tmp_path / "known_hosts"
    path.write_text(_line("[gpu1]:2222,[10.0.0.1]:2222", key))
    known = KnownHosts(path)
    assert known.trusted_keys("gpu1", "", 2222) == [key]
    assert known.trusted_keys("other", "10.0.0.1", 2222) == [key]
    assert known.trusted_keys("gpu1", "", None) == []
    assert known.trusted_keys("gpu2", "10.0.0.2", 2222) == []


def test_missing_file_trusts_nothing(tmp_path: Path) -> None:
    assert KnownHosts(tmp_path / "absent").trusted_keys("gpu1", "10.0.0.1", None) == []


def test_append_keeps_the_previous_last_line_intact(tmp_path: Path) -> None:
    old, new = _key(), _key()
    path = tmp_path / "known_hosts"
    path.write_text(_line("gpu0", old).rstrip("\n"))  # a file whose last line lacks its newline
    known = KnownHosts(path)
    assert known.append("gpu1", 2222, new) == "[gpu1]:2222"
    assert known.trusted_keys("gpu1", "", 2222) == [new]  # trusted at once, no re-read
    reread = KnownHosts(path)
    assert reread.trusted_keys("gpu0", "", None) == [old]
    assert reread.trusted_keys("gpu1", "", 2222) == [new]


def test_unknown_key_is_refused_or_accepted_and_recorded(tmp_path: Path) -> None:
    key = _key()
    strict = HostKeyCheck("gpu7", KnownHosts(tmp_path / "kh"), accept_new=False)
    assert not strict.untrusted_key("10.0.0.7", "10.0.0.7", 22, key)
    error = strict.error("ops@10.0.0.7:22", "Host key is not trusted")
    assert error.kind is ErrorKind.HOST_KEY_UNKNOWN
    assert fingerprint(key) in error.detail and "gpu7" in error.detail
    assert not (tmp_path / "kh").exists()

    lenient = HostKeyCheck("gpu7", KnownHosts(tmp_path / "kh"), accept_new=True)
    assert lenient.untrusted_key("10.0.0.7", "10.0.0.7", 22, key)
    assert lenient.accepted is not None
    assert (lenient.accepted.node, lenient.accepted.known_hosts_entry) == ("gpu7", "10.0.0.7")
    assert lenient.accepted.fingerprint == fingerprint(key)
    assert (tmp_path / "kh").read_text() == _line("10.0.0.7", key)


def test_changed_key_is_never_accepted(tmp_path: Path) -> None:
    old, new = _key(), _key()
    path = tmp_path / "kh"
    path.write_text(_line("10.0.0.7", old))
    check = HostKeyCheck("gpu7", KnownHosts(path), accept_new=True)
    assert not check.untrusted_key("10.0.0.7", "10.0.0.7", 22, new)
    error = check.error("ops@10.0.0.7:22", "Host key is not trusted")
    assert error.kind is ErrorKind.HOST_KEY_CHANGED
    assert error.detail.index(fingerprint(old)) < error.detail.index(fingerprint(new))
    assert path.read_text() == _line("10.0.0.7", old)


def test_accept_new_never_writes_through_a_symlinked_known_hosts(tmp_path: Path) -> None:
    """As root, a known_hosts planted as a link would have the console append to the file it names."""
    victim = tmp_path / "victim"
    precious = _line("gpu0", _key())
    victim.write_text(precious)
    link = tmp_path / "kh"
    link.symlink_to(victim)
    key = _key()
    check = HostKeyCheck("gpu7", KnownHosts(link), accept_new=True)
    assert not check.untrusted_key("10.0.0.7", "10.0.0.7", 22, key)
    assert check.accepted is None and victim.read_text() == precious
    error = check.error("ops@10.0.0.7:22", "Host key is not trusted")
    assert error.kind is ErrorKind.HOST_KEY_UNKNOWN
    assert "symbolic link" in error.detail and fingerprint(key) in error.detail


def test_a_recorded_key_file_is_private_to_its_owner(tmp_path: Path) -> None:
    check = HostKeyCheck("gpu7", KnownHosts(tmp_path / "kh"), accept_new=True)
    assert check.untrusted_key("10.0.0.7", "10.0.0.7", 22, _key())
    assert (tmp_path / "kh").stat().st_mode & 0o077 == 0
