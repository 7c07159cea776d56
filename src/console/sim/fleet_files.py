"""Files a running simulator hands to the console: the inventory TOML and the known_hosts file.

The inventory follows ``console.inventory``'s cluster-file format (``[ssh]``, ``[slurm]``, one
``[[pools]]`` per pool with its stack pin, one ``[hosts.<node>]`` per node with its endpoint), so the
console reaches the simulated nodes exactly as it would reach real ones.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from console.inventory.hostlist import fold

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")

Endpoint = tuple[str, int]


@dataclass(frozen=True)
class PoolPlan:
    """One pool of the simulated cluster as the inventory describes it."""

    name: str
    gpu_model: str
    gpu_count: int
    nodes: list[str]
    labels: dict[str, str] = field(default_factory=dict)
    pin: dict[str, str] = field(default_factory=dict)
    nic_rate_gbps: int | None = None  # the fabric's speed, when a scenario gives one
    # A scenario's node groups may share a pool and differ in labels (two racks of one pool): per node.
    node_labels: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class SshSettings:
    """The ``[ssh]`` table: how the console logs in to every simulated node."""

    user: str
    port: int
    identity_file: Path
    known_hosts: Path
    connect_timeout_s: int = 5
    max_channels_per_node: int = 8


def _string(value: str) -> str:
    # A JSON string is a valid TOML basic string (same escapes, \uXXXX included).
    return json.dumps(value)


def _key(name: str) -> str:
    return name if _BARE_KEY.fullmatch(name) else _string(name)


def _inline_table(values: Mapping[str, str]) -> str:
    if not values:
        return "{}"
    return "{ " + ", ".join(f"{_key(k)} = {_string(v)}" for k, v in values.items()) + " }"


def inventory_toml(
    name: str,
    ssh: SshSettings,
    controller: str,
    pools: list[PoolPlan],
    endpoints: Mapping[str, Endpoint],
) -> str:
    """The cluster file for the simulated nodes (absolute paths, one host entry per node)."""
    lines = [
        f"# Written by `instinct-console sim serve`: {sum(len(p.nodes) for p in pools)} simulated nodes.",
        f"name = {_string(name)}",
        "",
        "[ssh]",
        f"user = {_string(ssh.user)}",
        f"port = {ssh.port}",
        f"identity_file = {_string(str(ssh.identity_file.resolve()))}",
        f"known_hosts = {_string(str(ssh.known_hosts.resolve()))}",
        f"connect_timeout_s = {ssh.connect_timeout_s}",
        f"max_channels_per_node = {ssh.max_channels_per_node}",
        "",
        "[slurm]",
        "# The simulator renders sinfo/scontrol on every node from cluster-wide state; ask the first one.",
        f"controller = {_string(controller)}",
    ]
    for pool in pools:
        lines += [
            "",
            "[[pools]]",
            f"name = {_string(pool.name)}",
            f"gpu_model = {_string(pool.gpu_model)}",
            f"gpu_count = {pool.gpu_count}",
            f"nodes = {_string(fold(pool.nodes))}",
            f"labels = {_inline_table(pool.labels)}",
            *([f"nic_rate_gbps = {pool.nic_rate_gbps}"] if pool.nic_rate_gbps else []),
            "",
            "[pools.pin]",
            *(f"{_key(k)} = {_string(v)}" for k, v in pool.pin.items()),
        ]
    own_labels = {node: labels for pool in pools for node, labels in pool.node_labels.items()}
    for node, (address, port) in endpoints.items():
        lines += ["", f"[hosts.{_key(node)}]", f"address = {_string(address)}", f"port = {port}"]
        if node in own_labels:
            lines.append(f"labels = {_inline_table(own_labels[node])}")
    return "\n".join(lines) + "\n"
