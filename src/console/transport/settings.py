"""How to reach nodes (one ``SshTarget`` per node) and how hard to push them (``SshSettings``)."""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class SshTarget:
    """One node as the inventory names it.

    ``host``, ``user``, ``identity_files`` and ``proxy_jump`` left at their defaults are filled from
    ssh_config (``Host`` blocks match ``host``, as they match what one types after ``ssh``); a port
    other than 22 wins over the config's ``Port``.
    """

    name: str
    host: str
    port: int = 22
    user: str | None = None
    identity_files: tuple[str, ...] = ()
    proxy_jump: str | None = None


@dataclass(frozen=True)
class SshSettings:
    """Connection policy shared by every node of one transport.

    known_hosts: file of trusted host keys; None means ``~/.ssh/known_hosts``. Checking is strict.
    accept_new: record the key of a node known_hosts has no entry for (logged and kept in
        ``SshTransport.accepted_host_keys``) instead of refusing it; a *changed* key is always refused.
    connect_timeout_s: TCP connect. login_timeout_s: SSH handshake plus authentication.
    keepalive_*: notice a silent network while a command runs (5 s x 3 = dropped after ~15 s).
    max_handshakes / max_commands: global caps, separate so a connect storm cannot starve probes.
    max_channels_per_node: concurrent sessions per connection; stay under sshd's MaxSessions (10),
        leaving room for the kill channel of a timed-out command.
    stagger_s: a burst of max_handshakes first connects is spread over this long.
    kill_grace_s: after SIGTERM to a timed-out command's session, wait this long for SIGKILL.
    max_output_bytes: stdout a command may leave in memory when its caller gives no output sink of its
        own; the rest is counted (``CommandResult.dropped_bytes``), not kept.
    ssh_config: client config files read once per host; () reads ``~/.ssh/config`` if it exists.
    use_agent: offer the keys of the agent at ``SSH_AUTH_SOCK`` too.
    """

    known_hosts: str | None = None
    accept_new: bool = False
    connect_timeout_s: float = 10.0
    login_timeout_s: float = 20.0
    keepalive_interval_s: float = 5.0
    keepalive_count_max: int = 3
    max_handshakes: int = 64
    max_commands: int = 256
    max_channels_per_node: int = 8
    stagger_s: float = 0.5
    kill_grace_s: float = 5.0
    max_output_bytes: int = 16 << 20
    ssh_config: tuple[str, ...] = ()
    use_agent: bool = True

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
                raise ValueError(f"SshSettings.{field.name} must not be negative, got {value}")
        for name in ("max_handshakes", "max_commands", "max_channels_per_node"):
            if getattr(self, name) < 1:
                raise ValueError(f"SshSettings.{name} must be at least 1")
