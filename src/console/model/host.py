"""What a node's host tells about itself: its OS, the amdgpu DKMS modules and its RDMA ports.

Read by ``console.probes.host`` from os-release, ``dkms status``, ``rdma link`` and ``ibv_devinfo``.
"""

from __future__ import annotations

from pydantic import Field

from console.model.base import Model


class OsRelease(Model):
    """``/etc/os-release`` fields that identify the distribution."""

    id: str | None = None
    version_id: str | None = None
    pretty_name: str | None = None

    def label(self) -> str | None:
        """``ubuntu 22.04`` style label, or None when unknown."""
        if self.id and self.version_id:
            return f"{self.id} {self.version_id}"
        return self.pretty_name or self.id


class DkmsModule(Model):
    """One line of ``dkms status``."""

    module: str
    version: str
    kernel: str | None = None
    state: str


class NicPort(Model):
    """One RDMA port: device, port number, state and link layer."""

    device: str
    port: int
    state: str = Field(description="ACTIVE, DOWN, INIT, ... as the tool prints it (normalised upper case)")
    physical_state: str | None = None
    link_layer: str | None = None
    netdev: str | None = None
    rate_gbps: float | None = Field(None, description="active width x lane speed (ibv_devinfo -v)")

    @property
    def label(self) -> str:
        """``mlx5_0/1``."""
        return f"{self.device}/{self.port}"
