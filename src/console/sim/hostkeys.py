"""SSH keys of the simulated cluster: one ed25519 host key per node, cached, and the client key.

Host keys persist in one JSON file in the state directory so a restarted simulator keeps its
identities (a known_hosts from an earlier run stays valid). Generating a key costs about 70 us,
so a 1,024-node cluster gets its keys in well under a second even on the first start.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

import asyncssh

HOST_KEYS_FILE = "host_keys.json"
CLIENT_KEY_FILE = "client_ed25519"
# A node with the host_key_changed fault presents the key stored under this suffix instead of its own.
ROTATED_SUFFIX = "#rotated"


class HostKeyStore:
    """Per-node ed25519 host keys, generated on first use and cached in ``state_dir``."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / HOST_KEYS_FILE
        self._pem: dict[str, str] = {}
        if self.path.exists():
            self._pem = json.loads(self.path.read_text(encoding="utf-8"))
        self._keys: dict[str, asyncssh.SSHKey] = {}

    def _key(self, label: str) -> asyncssh.SSHKey:
        key = self._keys.get(label)
        if key is None:
            pem = self._pem.get(label)
            if pem is None:
                key = asyncssh.generate_private_key("ssh-ed25519", comment=f"sim-host-{label}")
                self._pem[label] = key.export_private_key().decode("ascii")
            else:
                key = asyncssh.import_private_key(pem)
            self._keys[label] = key
        return key

    def host_key(self, node: str) -> asyncssh.SSHKey:
        """The key ``node`` is known by (what known_hosts lists)."""
        return self._key(node)

    def rotated_key(self, node: str) -> asyncssh.SSHKey:
        """A second key for ``node``, as after a reinstall: the host_key_changed fault serves it."""
        return self._key(node + ROTATED_SUFFIX)

    def load(self, nodes: Iterable[str], rotated: Iterable[str] = ()) -> None:
        """Make sure the keys of ``nodes`` (and rotated keys of ``rotated``) exist, then save the cache."""
        for node in nodes:
            self.host_key(node)
        for node in rotated:
            self.rotated_key(node)
        self.save()

    def save(self) -> None:
        """Write the cache atomically."""
        tmp = self.path.with_suffix(".tmp")
        write_secret(tmp, json.dumps(self._pem).encode("ascii"))
        tmp.replace(self.path)


def write_secret(path: Path, data: bytes) -> None:
    """Write private key material, readable by the owner only from the first byte on."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def known_hosts_line(address: str, port: int, key: asyncssh.SSHKey, alias: str | None = None) -> str:
    """One known_hosts line; OpenSSH writes port 22 as a bare host and any other port as ``[host]:port``."""
    hosts = [address] if alias is None else [address, alias]
    patterns = hosts if port == 22 else [f"[{host}]:{port}" for host in hosts]
    algorithm, blob = key.export_public_key().decode("ascii").split()[:2]
    return f"{','.join(patterns)} {algorithm} {blob}"


def client_key(state_dir: Path) -> tuple[Path, asyncssh.SSHKey]:
    """The operator's key for the simulated nodes: ``state_dir/client_ed25519`` (+ ``.pub``), made once."""
    path = state_dir / CLIENT_KEY_FILE
    if path.exists():
        return path, asyncssh.read_private_key(path)
    key = asyncssh.generate_private_key("ssh-ed25519", comment="instinct-console-sim-client")
    write_secret(path, key.export_private_key())
    key.write_public_key(path.with_suffix(".pub"))
    return path, key
