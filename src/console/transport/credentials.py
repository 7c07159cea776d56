"""Client keys, read from disk once per file for the life of the transport.

Without this, asyncssh loads ``~/.ssh/id_*`` again on every connect.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import asyncssh
from asyncssh.public_key import load_default_keypairs

log = logging.getLogger(__name__)


class Credentials:
    """Key pairs per identity file, and the public halves that limit which agent keys are offered."""

    def __init__(self) -> None:
        self._pairs: dict[str, list[asyncssh.SSHKeyPair]] = {}
        self._public: dict[str, list[bytes]] = {}
        self._default: list[asyncssh.SSHKeyPair] | None = None

    def keypairs(self, files: Sequence[str]) -> list[asyncssh.SSHKeyPair]:
        """Usable key pairs from ``files``; the default ``~/.ssh/id_*`` keys when ``files`` is empty.

        Like ssh, a missing or unreadable file is skipped with a warning, and an encrypted one is
        left to the agent.
        """
        if not files:
            if self._default is None:
                self._default = list(load_default_keypairs())
            return self._default
        return [pair for path in files for pair in self._load(path)]

    def public_keys(self, files: Sequence[str]) -> list[bytes]:
        """Public key blobs of ``files`` (from ``<file>.pub`` if the private half is encrypted)."""
        for path in files:
            if path not in self._public:
                self._public[path] = [pair.public_data for pair in self._load(path)] or self._read_public(path)
        return [blob for path in files for blob in self._public[path]]

    def _load(self, path: str) -> list[asyncssh.SSHKeyPair]:
        if path not in self._pairs:
            try:
                self._pairs[path] = list(asyncssh.load_keypairs(path, ignore_encrypted=True))
            except (OSError, asyncssh.KeyImportError) as exc:
                log.warning("identity file %s not used: %s", path, exc)
                self._pairs[path] = []
        return self._pairs[path]

    @staticmethod
    def _read_public(path: str) -> list[bytes]:
        try:
            return [asyncssh.read_public_key(f"{path}.pub").public_data]
        except (OSError, asyncssh.KeyImportError):
            return []
