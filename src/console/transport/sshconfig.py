"""Where and as whom to log in to each node, after ssh_config: resolved once per host, never per connect.

asyncssh re-reads ssh_config (and known_hosts) on every ``connect(config=...)``, which makes a sweep
O(N^2). The transport resolves every target here once and then connects with ``config=None``.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from asyncssh.config import SSHClientConfig

from console.transport.settings import SshTarget

DEFAULT_PORT = 22
_MAX_JUMP_DEPTH = 8  # a ProxyJump loop in ssh_config must not recurse forever


@dataclass(frozen=True)
class Endpoint:
    """One SSH server as the transport connects to it. Equal endpoints share one jump connection."""

    label: str  # the name the operator uses: a node name or a ProxyJump hop as written
    host: str  # what to connect to (ssh_config HostName applied)
    port: int
    user: str
    identity_files: tuple[str, ...]  # () means the default keys (~/.ssh/id_*)
    identities_only: bool
    host_key_alias: str | None
    jump: Endpoint | None  # the hop this endpoint is reached through, if any

    @property
    def address(self) -> str:
        """``user@host:port``, plus the jump route: how error messages name the server."""
        where = f"{self.user}@{self.host}:{self.port}"
        return f"{where} via {self.jump.label}" if self.jump else where


class ConfigResolver:
    """Applies ssh_config files to targets and ProxyJump hops, caching one result per host."""

    def __init__(self, paths: Sequence[str] = ()) -> None:
        if paths:
            self._paths = [Path(p).expanduser() for p in paths]
        else:
            default = Path("~/.ssh/config").expanduser()
            self._paths = [default] if os.access(default, os.R_OK) else []
        self._local_user = getpass.getuser()
        self._hops: dict[str, Endpoint] = {}

    def endpoint(self, target: SshTarget) -> Endpoint:
        """The endpoint for one inventory target; explicit target fields win over ssh_config."""
        config = self._load(target.host, target.user, target.port if target.port != DEFAULT_PORT else None)
        jump_spec = target.proxy_jump if target.proxy_jump is not None else config.get("ProxyJump")
        return self._endpoint(
            target.name,
            target.host,
            config=config,
            identity_files=target.identity_files,
            jump_spec=cast(str | None, jump_spec),
            depth=0,
        )

    def _endpoint(
        self,
        label: str,
        host: str,
        *,
        config: SSHClientConfig,
        identity_files: tuple[str, ...],
        jump_spec: str | None,
        depth: int,
    ) -> Endpoint:
        files = identity_files or tuple(cast(list[str], config.get("IdentityFile", [])))
        return Endpoint(
            label=label,
            host=cast(str, config.get("Hostname", host)),
            port=int(cast(int, config.get("Port", DEFAULT_PORT))),
            user=cast(str, config.get("User") or self._local_user),
            identity_files=tuple(str(Path(f).expanduser()) for f in files),
            identities_only=bool(config.get("IdentitiesOnly", False)),
            host_key_alias=cast(str | None, config.get("HostKeyAlias")),
            jump=self._chain(jump_spec, depth) if jump_spec else None,
        )

    def _chain(self, spec: str, depth: int) -> Endpoint:
        """``a,b,c`` means: reach c through b, b through a (OpenSSH's order)."""
        hops = [hop.strip() for hop in spec.split(",") if hop.strip()]
        if not hops:
            raise ValueError(f"ProxyJump {spec!r} names no host")
        return self._hop(hops[-1], ",".join(hops[:-1]) or None, depth + 1)

    def _hop(self, spec: str, through: str | None, depth: int) -> Endpoint:
        key = f"{through}>{spec}" if through else spec
        if key in self._hops:
            return self._hops[key]
        if depth > _MAX_JUMP_DEPTH:
            raise ValueError(f"ProxyJump chain deeper than {_MAX_JUMP_DEPTH} hops at {spec!r}: a loop in ssh_config?")
        user, host, port = split_hop(spec)
        config = self._load(host, user, port)
        # A hop in an explicit chain goes through the hop before it; a single hop follows its own config.
        jump_spec = through if through is not None else cast(str | None, config.get("ProxyJump"))
        self._hops[key] = self._endpoint(spec, host, config=config, identity_files=(), jump_spec=jump_spec, depth=depth)
        return self._hops[key]

    def _load(self, host: str, user: str | None, port: int | None) -> SSHClientConfig:
        try:
            loaded = SSHClientConfig.load(
                None,
                self._paths,
                False,
                False,
                False,
                self._local_user,
                user if user is not None else (),
                host,
                port if port is not None else (),
            )
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot read ssh_config {[str(p) for p in self._paths]} for {host}: {exc}") from exc
        return cast(SSHClientConfig, loaded)


def split_hop(spec: str) -> tuple[str | None, str, int | None]:
    """``[user@]host[:port]`` (also ``[v6addr]:port``) as (user, host, port)."""
    user, _, rest = spec.rpartition("@")
    host, port = rest, None
    if rest.startswith("["):
        host, _, tail = rest[1:].partition("]")
        if tail.startswith(":"):
            port = int(tail[1:])
    elif rest.count(":") == 1:
        host, _, port_text = rest.partition(":")
        port = int(port_text)
    if not host:
        raise ValueError(f"ProxyJump hop {spec!r} names no host")
    return (user or None), host, port
