"""Host facts that make up a node's stack fingerprint: OS, kernel, ROCm release, amdgpu driver, NICs.

These are small, stable formats (os-release, ``modinfo``, ``dkms status``, ``ibv_devinfo``,
``rdma link``); each parser is pure and total like the tool parsers.
"""

from __future__ import annotations

import re
import shlex

from pydantic import Field

from console.model.base import Model
from console.probes.base import ParseError, clean_lines


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


def parse_os_release(text: str) -> OsRelease:
    """Parse ``KEY=value`` lines (values may be quoted)."""
    values: dict[str, str] = {}
    for line in clean_lines(text):
        key, sep, value = line.partition("=")
        if not sep or not re.fullmatch(r"[A-Z_][A-Z0-9_]*", key.strip()):
            continue
        try:
            parts = shlex.split(value)
        except ValueError:
            parts = [value.strip().strip('"')]
        values[key.strip()] = parts[0] if parts else ""
    if not values:
        raise ParseError("no KEY=value lines: not an os-release file")
    return OsRelease(id=values.get("ID"), version_id=values.get("VERSION_ID"), pretty_name=values.get("PRETTY_NAME"))


def parse_single_line(text: str, what: str) -> str:
    """The first non-empty line (``uname -r``, ``/opt/rocm/.info/version``, sysfs version files)."""
    for line in clean_lines(text):
        if line.strip():
            return line.strip()
    raise ParseError(f"empty output: expected the {what}")


_MODINFO_VERSION = re.compile(r"^version:\s+(\S+)")


def parse_modinfo_version(text: str) -> str:
    """The ``version:`` field of ``modinfo amdgpu`` (DKMS builds have one; in-tree drivers may not)."""
    lines = clean_lines(text)
    for line in lines:
        match = _MODINFO_VERSION.match(line.strip())
        if match:
            return match.group(1)
    if any(line.startswith(("filename:", "vermagic:")) for line in lines):
        raise ParseError("modinfo amdgpu has no version field (in-tree driver?)")
    raise ParseError("not modinfo output: no version or filename field")


class DkmsModule(Model):
    """One line of ``dkms status``."""

    module: str
    version: str
    kernel: str | None = None
    state: str


def parse_dkms_status(text: str) -> list[DkmsModule]:
    """``amdgpu/6.12.12-2147987.22.04, 5.15.0-164-generic, x86_64: installed`` (and the older comma form).

    Split on separators rather than matched with one regex: a long line must cost linear time.
    """
    modules = []
    for line in clean_lines(text):
        head, sep, state = line.strip().rpartition(":")
        words = state.split()
        if not sep or not words:
            continue
        parts = [p.strip() for p in head.split(",")]
        module, slash, version = parts[0].partition("/")
        if not slash:  # old form: "amdgpu, 6.12.12, 5.15.0-164-generic, x86_64"
            version, parts = (parts[1], parts[1:]) if len(parts) > 1 else ("", parts)
        if not re.fullmatch(r"[\w.-]+", module) or not version or any(c.isspace() for c in version):
            continue
        kernel = parts[1] if len(parts) > 1 and parts[1] != version else None
        modules.append(DkmsModule(module=module, version=version, kernel=kernel or None, state=words[0]))
    return modules


class NicPort(Model):
    """One RDMA port: device, port number, state and link layer."""

    device: str
    port: int
    state: str = Field(description="ACTIVE, DOWN, INIT, ... as the tool prints it (normalised upper case)")
    physical_state: str | None = None
    link_layer: str | None = None
    netdev: str | None = None

    @property
    def label(self) -> str:
        """``mlx5_0/1``."""
        return f"{self.device}/{self.port}"


_RDMA_LINK = re.compile(r"^link\s+(?P<dev>[\w.-]+)/(?P<port>\d{1,6})\s+state\s+(?P<state>\w+)(?P<rest>.*)$")


def parse_rdma_link(text: str) -> list[NicPort]:
    """``rdma link``: ``link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev ens1np0``."""
    ports = []
    for line in clean_lines(text):
        match = _RDMA_LINK.match(line.strip())
        if not match:
            continue
        rest = match.group("rest").split()
        attrs = dict(zip(rest[::2], rest[1::2], strict=False))
        ports.append(
            NicPort(
                device=match.group("dev"),
                port=int(match.group("port")),
                state=match.group("state").upper(),
                physical_state=attrs.get("physical_state"),
                netdev=attrs.get("netdev"),
            )
        )
    return ports


def parse_ibv_devinfo(text: str) -> list[NicPort]:
    """``ibv_devinfo``: ``hca_id: mlx5_0`` blocks with ``port: 1`` sub-blocks and ``state: PORT_ACTIVE (4)``."""
    ports: list[NicPort] = []
    device: str | None = None
    port: dict[str, str] | None = None

    def flush() -> None:
        if device is not None and port is not None and "port" in port:
            words = (port.get("state") or "").split()
            state = re.sub(r"^PORT_", "", words[0] if words else "UNKNOWN").upper()
            ports.append(
                NicPort(
                    device=device,
                    port=int(port["port"]),
                    state=state,
                    physical_state=(port.get("phys_state") or "").split(" ")[0] or None,
                    link_layer=port.get("link_layer"),
                )
            )

    for line in clean_lines(text):
        key, sep, value = line.strip().partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key == "hca_id":
            flush()
            device, port = value, None
        elif key == "port" and re.fullmatch(r"\d{1,6}", value):
            flush()
            port = {"port": value}
        elif port is not None and key in ("state", "phys_state", "link_layer"):
            port[key] = value
    flush()
    return ports
