"""Why a node could not be reached or a command could not finish: the transport's only exception."""

from __future__ import annotations

from enum import StrEnum


class ErrorKind(StrEnum):
    """What went wrong, coarse enough for a node-state column and specific enough to act on."""

    UNREACHABLE = "unreachable"  # name does not resolve, no route, host down
    REFUSED = "refused"  # nothing listens on the SSH port
    CONNECT_TIMEOUT = "connect-timeout"  # TCP or the SSH handshake did not finish in time
    AUTH_FAILED = "auth-failed"  # the node rejected every key we offered
    HOST_KEY_CHANGED = "host-key-changed"  # the node presents a key other than the one known_hosts holds
    HOST_KEY_UNKNOWN = "host-key-unknown"  # known_hosts has no key for the node
    DISCONNECTED = "disconnected"  # the connection dropped, possibly mid-command
    CHANNEL_REFUSED = "channel-refused"  # the node refused another session (sshd MaxSessions)
    TIMEOUT = "timeout"  # the command outlived its timeout and was killed
    PROTOCOL = "protocol"  # anything else SSH reported (no common algorithm, bad packet, ...)


class TransportError(Exception):
    """A node could not run a command; ``detail`` is one line an operator can act on.

    ``partial_stdout`` is what a command that timed out (or lost its connection) had printed: a probe
    bundle keeps the sections of the probes that finished ahead of the one that hung.
    """

    def __init__(self, node: str, kind: ErrorKind, detail: str, partial_stdout: bytes = b"") -> None:
        self.node = node
        self.kind = kind
        self.detail = " ".join(detail.split())  # one line, whatever the underlying library said
        self.partial_stdout = partial_stdout
        super().__init__(f"{node}: {kind.value}: {self.detail}")

    def __reduce__(self) -> tuple[type[TransportError], tuple[str, ErrorKind, str, bytes]]:
        # The default pickling replays args=(message,), which this __init__ does not accept.
        return (type(self), (self.node, self.kind, self.detail, self.partial_stdout))
