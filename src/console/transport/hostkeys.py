"""Strict host-key checking with answers an operator can act on, and an audit trail for first contact.

asyncssh only says "host key is not trusted". The transport wants to know whether known_hosts had
*another* key for the node (changed: stop, someone must look) or *none* (unknown: verify, or let
``accept_new`` record it), and both fingerprints. asyncssh asks the client object about every key
known_hosts does not vouch for; :class:`HostKeyCheck` answers that question and remembers why.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncssh

from console.transport.errors import ErrorKind, TransportError

log = logging.getLogger(__name__)

# asyncssh's known_hosts match result: host keys, CA keys, revoked keys, then four X.509 trust lists.
MatchResult = tuple[list[Any], ...]


@dataclass(frozen=True)
class AcceptedHostKey:
    """A first-contact host key the transport wrote to known_hosts because ``accept_new`` was set."""

    node: str
    known_hosts_entry: str  # the host pattern written, e.g. ``[10.0.0.7]:22022``
    key_type: str
    fingerprint: str
    known_hosts: str
    accepted_at: float


def host_pattern(host: str, port: int | None) -> str:
    """How known_hosts writes a host: bare for port 22, ``[host]:port`` otherwise."""
    return host if port in (None, 22) else f"[{host}]:{port}"


class KnownHosts:
    """A known_hosts file read once, looked up per (host, address, port) with a cache.

    Hashed entries (``HashKnownHosts yes``) cost an HMAC per entry per lookup, so the cache matters.
    Keys accepted during this run are appended to the file and trusted at once.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = asyncssh.read_known_hosts(str(path)) if path.exists() else asyncssh.SSHKnownHosts()
        self._cache: dict[tuple[str, str, int | None], MatchResult] = {}
        self._accepted: dict[str, list[asyncssh.SSHKey]] = {}

    def match(self, host: str, addr: str, port: int | None) -> MatchResult:
        """asyncssh's ``known_hosts`` callable: the trust lists for this server."""
        key = (host, addr, port)
        if key not in self._cache:
            self._cache[key] = tuple(list(found) for found in self._db.match(host, addr, port))
        host_keys, *rest = self._cache[key]
        return (host_keys + self._accepted.get(host_pattern(host, port), []), *rest)

    def trusted_keys(self, host: str, addr: str, port: int | None) -> list[asyncssh.SSHKey]:
        """Plain host keys known_hosts holds for this server (certificate authorities aside)."""
        return self.match(host, addr, port)[0]

    def append(self, host: str, port: int | None, key: asyncssh.SSHKey) -> str:
        """Write ``key`` for ``host``/``port`` at the end of the file and trust it from now on."""
        pattern = host_pattern(host, port)
        key_type, key_data = key.export_public_key("openssh").decode().split()[:2]
        line = f"{pattern} {key_type} {key_data}\n"
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Never through a link: run as root, a known_hosts planted as a symlink would have us append
        # to whatever file it names. ELOOP reaches the caller, which refuses the key and says why.
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        with os.fdopen(os.open(self.path, flags, 0o600), "a+b") as handle:
            size = handle.tell()  # append mode starts at the end
            if size:
                handle.seek(size - 1)
                if handle.read(1) != b"\n":
                    line = "\n" + line  # the last line has no newline: do not glue ours onto it
            handle.write(line.encode("ascii"))
        self._accepted.setdefault(pattern, []).append(key)
        return pattern


def fingerprint(key: asyncssh.SSHKey) -> str:
    """``SHA256:...`` as ``ssh-keygen -l`` prints it."""
    return key.get_fingerprint("sha256")


class HostKeyCheck:
    """One connection attempt's verdict on the server's host key."""

    def __init__(self, node: str, known_hosts: KnownHosts, accept_new: bool) -> None:
        self.node = node
        self._known_hosts = known_hosts
        self._accept_new = accept_new
        self.presented: asyncssh.SSHKey | None = None
        self.expected: list[asyncssh.SSHKey] = []
        self.accepted: AcceptedHostKey | None = None
        self.unrecorded: str | None = None  # why --accept-new could not write the key, when it could not

    def untrusted_key(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        """asyncssh found no known_hosts entry vouching for ``key``: trust it only on accept-new first contact."""
        self.presented = key
        known_port = None if port == 22 else port
        # A line listing both the name and the address matches twice; report each key once.
        self.expected = list(dict.fromkeys(self._known_hosts.trusted_keys(host, addr, known_port)))
        if self.expected or not self._accept_new:
            return False
        try:
            pattern = self._known_hosts.append(host, known_port, key)
        except OSError as exc:
            # Unrecorded means untrusted: a key accepted but not written would be asked about again
            # by ssh, and trusting it silently would leave no trace of what was accepted.
            self.unrecorded = _why_unwritable(self._known_hosts.path, exc)
            return False
        self.accepted = AcceptedHostKey(
            node=self.node,
            known_hosts_entry=pattern,
            key_type=key.get_algorithm(),
            fingerprint=fingerprint(key),
            known_hosts=str(self._known_hosts.path),
            accepted_at=time.time(),
        )
        log.warning(
            "accepted new host key for %s (%s %s %s) into %s",
            self.node,
            pattern,
            self.accepted.key_type,
            self.accepted.fingerprint,
            self.accepted.known_hosts,
        )
        return True

    def error(self, where: str, reason: str) -> TransportError:
        """The operator-facing error for a host key asyncssh refused."""
        path = self._known_hosts.path
        if self.presented is None:  # refused before asking us: revoked key or a bad certificate
            return TransportError(self.node, ErrorKind.HOST_KEY_CHANGED, f"host key of {where} refused: {reason}")
        shown = f"{self.presented.get_algorithm()} {fingerprint(self.presented)}"
        if self.expected:
            wanted = ", ".join(f"{k.get_algorithm()} {fingerprint(k)}" for k in self.expected)
            return TransportError(
                self.node,
                ErrorKind.HOST_KEY_CHANGED,
                f"HOST KEY CHANGED for {self.node} ({where}): known_hosts {path} expects {wanted}, "
                f"the server presented {shown}; if the node was reinstalled, verify the new key and "
                f"replace its line in known_hosts, otherwise suspect an impostor",
            )
        if self.unrecorded is not None:
            return TransportError(
                self.node,
                ErrorKind.HOST_KEY_UNKNOWN,
                f"no known_hosts entry for {self.node} ({where}) in {path}; the server presented {shown}; "
                f"--accept-new did not trust it because it could not be recorded: {self.unrecorded}",
            )
        return TransportError(
            self.node,
            ErrorKind.HOST_KEY_UNKNOWN,
            f"no known_hosts entry for {self.node} ({where}) in {path}; the server presented {shown}; "
            f"verify it and add it to known_hosts, or run with --accept-new to trust and record it",
        )


def _why_unwritable(path: Path, exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return (
            f"{path} is a symbolic link, which the console never writes through; "
            "point ssh.known_hosts at the file itself"
        )
    return f"{path}: {exc.strerror or exc}"
