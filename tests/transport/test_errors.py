"""The error type and the settings guard: small, but every caller depends on them."""

from __future__ import annotations

import pickle

import pytest

from console.transport import ErrorKind, SshSettings, TransportError


def test_transport_error_is_one_line_and_survives_pickling() -> None:
    error = TransportError("gpu3", ErrorKind.AUTH_FAILED, "rejected\n  every key\r\n offered")
    assert error.detail == "rejected every key offered"
    assert str(error) == "gpu3: auth-failed: rejected every key offered"
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.node, copy.kind, copy.detail) == ("gpu3", ErrorKind.AUTH_FAILED, error.detail)


@pytest.mark.parametrize(
    "bad",
    [{"max_channels_per_node": 0}, {"max_handshakes": 0}, {"connect_timeout_s": -1.0}, {"kill_grace_s": -0.5}],
)
def test_settings_reject_impossible_values(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        SshSettings(**bad)  # type: ignore[arg-type]


def test_default_settings_follow_the_brief() -> None:
    settings = SshSettings()
    assert settings.max_channels_per_node < 10  # under sshd's default MaxSessions, with room for a kill
    assert (settings.known_hosts, settings.accept_new, settings.use_agent) == (None, False, True)
