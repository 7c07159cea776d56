"""Building the transport an inventory asks for: SSH targets per node, or the local host."""

from __future__ import annotations

import os

from console.inventory.model import Inventory
from console.transport import LocalTransport, SshSettings, SshTarget, SshTransport, Transport


def _expand(path: str | None) -> str | None:
    return os.path.expanduser(path) if path else None


def ssh_targets(inventory: Inventory) -> dict[str, SshTarget]:
    """One SSH target per node: address, port and user from the inventory, the rest from ~/.ssh/config."""
    identity = _expand(inventory.ssh.identity_file)
    return {
        node.name: SshTarget(
            name=node.name,
            host=node.address,
            port=node.port or 22,
            user=node.user,
            identity_files=(identity,) if identity else (),
            proxy_jump=inventory.ssh.proxy_jump,
        )
        for node in inventory.nodes
    }


def controller_target(inventory: Inventory) -> SshTarget | None:
    """The SSH target of ``[slurm] controller`` when it is no node of the inventory (a head or login node
    outside every pool: reached with the cluster's SSH defaults); None when unset or one of the nodes."""
    controller = inventory.slurm.controller
    if not controller or controller in {n.name for n in inventory.nodes}:
        return None
    ssh = inventory.ssh
    identity = _expand(ssh.identity_file)
    return SshTarget(
        name=controller,
        host=controller,
        port=ssh.port or 22,
        user=ssh.user,
        identity_files=(identity,) if identity else (),
        proxy_jump=ssh.proxy_jump,
    )


def transport_for(inventory: Inventory, *, accept_new: bool = False, local: bool = False) -> Transport:
    """SSH transport for the inventory's nodes and its Slurm controller (N-node workloads start their srun
    there), or a local one (running on the node itself)."""
    if local:
        return LocalTransport()
    ssh = inventory.ssh
    settings = SshSettings(
        known_hosts=_expand(ssh.known_hosts),
        accept_new=accept_new,
        connect_timeout_s=ssh.connect_timeout_s,
        max_handshakes=ssh.max_handshakes,
        max_commands=ssh.max_commands,
        max_channels_per_node=ssh.max_channels_per_node,
        kill_grace_s=ssh.kill_grace_s,
    )
    targets = ssh_targets(inventory)
    if (controller := controller_target(inventory)) is not None:
        targets[controller.name] = controller
    return SshTransport(targets, settings)
