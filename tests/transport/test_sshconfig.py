"""ssh_config resolution: which host, port, user, keys and jump route each inventory target gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.transport import SshTarget
from console.transport.sshconfig import ConfigResolver, split_hop

CONFIG = """\
Host gpu*
  HostName 10.0.0.%h
  User ops
  Port 2222
  IdentityFile ~/.ssh/id_gpu
  ProxyJump bastion
Host gpu9
  ProxyJump none
Host direct*
  ProxyJump none
  HostKeyAlias shared-alias
Host bastion
  HostName 192.0.2.10
  User jumper
Host *
  IdentitiesOnly yes
"""


@pytest.fixture
def resolver(tmp_path: Path) -> ConfigResolver:
    path = tmp_path / "config"
    path.write_text(CONFIG)
    return ConfigResolver([str(path)])


def test_config_fills_what_the_target_leaves_open(resolver: ConfigResolver) -> None:
    endpoint = resolver.endpoint(SshTarget("n1", "gpu1"))
    assert (endpoint.label, endpoint.host, endpoint.port, endpoint.user) == ("n1", "10.0.0.gpu1", 2222, "ops")
    assert endpoint.identity_files == (str(Path("~/.ssh/id_gpu").expanduser()),)
    assert endpoint.identities_only
    assert endpoint.jump is not None
    assert (endpoint.jump.label, endpoint.jump.host, endpoint.jump.port, endpoint.jump.user) == (
        "bastion",
        "192.0.2.10",
        22,
        "jumper",
    )
    assert endpoint.address == "ops@10.0.0.gpu1:2222 via bastion"


def test_explicit_target_fields_win(resolver: ConfigResolver) -> None:
    target = SshTarget("n2", "gpu2", port=23, user="me", identity_files=("/keys/a",), proxy_jump="other:2200")
    endpoint = resolver.endpoint(target)
    assert (endpoint.port, endpoint.user, endpoint.identity_files) == (23, "me", ("/keys/a",))
    assert endpoint.jump is not None and (endpoint.jump.host, endpoint.jump.port) == ("other", 2200)


def test_first_matching_value_wins_like_openssh(resolver: ConfigResolver) -> None:
    # "Host gpu*" sets ProxyJump before "Host gpu9" could say none.
    assert resolver.endpoint(SshTarget("n9", "gpu9")).jump is not None
    direct = resolver.endpoint(SshTarget("d", "direct1"))
    assert direct.jump is None
    assert direct.host_key_alias == "shared-alias"


def test_targets_through_one_bastion_share_one_jump_endpoint(resolver: ConfigResolver) -> None:
    first = resolver.endpoint(SshTarget("a", "gpu1"))
    second = resolver.endpoint(SshTarget("b", "gpu2"))
    assert first.jump is second.jump  # one jump connection for both


def test_jump_chain_reaches_the_last_hop_through_the_earlier_ones(resolver: ConfigResolver) -> None:
    endpoint = resolver.endpoint(SshTarget("x", "plain", proxy_jump="alice@hop1:1022, hop2"))
    hop2 = endpoint.jump
    assert hop2 is not None and hop2.label == "hop2"
    hop1 = hop2.jump
    assert hop1 is not None and (hop1.user, hop1.host, hop1.port, hop1.jump) == ("alice", "hop1", 1022, None)


def test_jump_loop_in_config_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text("Host a\n  ProxyJump b\nHost b\n  ProxyJump a\n")
    with pytest.raises(ValueError, match="loop"):
        ConfigResolver([str(path)]).endpoint(SshTarget("n", "a"))


def test_unreadable_config_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text("Host *\n  Port notaport\n")
    with pytest.raises(ValueError, match=str(path)):
        ConfigResolver([str(path)]).endpoint(SshTarget("n", "h"))


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("bastion", (None, "bastion", None)),
        ("ops@bastion", ("ops", "bastion", None)),
        ("ops@bastion:2200", ("ops", "bastion", 2200)),
        ("[fe80::1]:2200", (None, "fe80::1", 2200)),
        ("a@b@c", ("a@b", "c", None)),
    ],
)
def test_split_hop(spec: str, parsed: tuple[str | None, str, int | None]) -> None:
    assert split_hop(spec) == parsed


def test_split_hop_needs_a_host() -> None:
    with pytest.raises(ValueError, match="no host"):
        split_hop("ops@")
