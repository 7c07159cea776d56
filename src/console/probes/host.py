"""Host facts that make up a node's stack fingerprint: OS, kernel, ROCm release, amdgpu driver, NICs.

These are small, stable formats (os-release, ``modinfo``, ``dkms status``, ``ibv_devinfo``,
``rdma link``); each parser is pure and total like the tool parsers, and a line it does not understand
is an error (``ParseError`` naming the line), never silently dropped: a garbled ``rdma link`` must not
read as fewer healthy ports, nor a garbled release file as a release.
"""

from __future__ import annotations

import re
import shlex

from console.model.host import DkmsModule, NicPort, OsRelease
from console.probes.base import ParseError, clean_lines


def complete(text: str, what: str) -> None:
    """ParseError unless ``text`` ends with its newline: every line-oriented tool and file the console
    reads ends so, and an answer without one was cut off mid-line (a killed tool, a full pipe)."""
    if text and not text.endswith("\n"):
        tail = text.rsplit("\n", 1)[-1]
        raise ParseError(f"{what} ends mid-line (cut off?): {_shown(tail)}", text)


def parse_os_release(text: str) -> OsRelease:
    """Parse ``KEY=value`` lines (values may be quoted); blank and ``#`` lines are allowed, others are errors."""
    complete(text, "os-release")
    values: dict[str, str] = {}
    for line in clean_lines(text):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not re.fullmatch(r"[A-Z_][A-Z0-9_]*", key.strip()):
            raise ParseError(f"not an os-release line: {_shown(line)}", text)
        try:
            parts = shlex.split(value)
        except ValueError:
            parts = [value.strip().strip('"')]
        values[key.strip()] = parts[0] if parts else ""
    if not values:
        raise ParseError("no KEY=value lines: not an os-release file")
    return OsRelease(id=values.get("ID"), version_id=values.get("VERSION_ID"), pretty_name=values.get("PRETTY_NAME"))


_UPTIME = re.compile(r"(\d+(?:\.\d+)?) (\d+(?:\.\d+)?)")


def parse_uptime(text: str) -> float:
    """Seconds since boot from ``/proc/uptime`` (``<up> <idle>``, both in seconds with two decimals)."""
    complete(text, "/proc/uptime")
    lines = [line.strip() for line in clean_lines(text) if line.strip()]
    match = _UPTIME.fullmatch(lines[0]) if len(lines) == 1 else None
    if match is None:
        shown = _shown(lines[0]) if lines else "nothing"
        raise ParseError(
            f"not /proc/uptime: {shown}" + (f" (and {len(lines) - 1} more lines)" if len(lines) > 1 else ""), text
        )
    return float(match.group(1))


# What a one-line version answer must look like, by what it is: digits first, then the characters
# releases use. A ROCm release read as ``6.\ufffd`` or a kernel as ``Segmentation fault`` is not one.
_ONE_LINE_FORMS = {
    "kernel release": re.compile(r"\d+\.\d+[\w.+~-]*"),
    "ROCm release": re.compile(r"\d+\.\d+(?:\.\d+)?(?:-\w+)?"),
}
_ANY_WORD = re.compile(r"\S+")


def parse_single_line(text: str, what: str, *, whole_line: bool = True) -> str:
    """The one non-empty line of ``uname -r``, ``/opt/rocm/.info/version`` or a sysfs version file.

    It must have the form of ``what`` (a release: digits and dots first); a second line is an error too,
    and so is a line without its newline when ``whole_line`` (a command's output always has it).
    """
    if whole_line:
        complete(text, what)
    lines = [line.strip() for line in clean_lines(text) if line.strip()]
    if not lines:
        raise ParseError(f"empty output: expected the {what}", text)
    form = _ONE_LINE_FORMS.get(what, _ANY_WORD)
    if len(lines) > 1 or not form.fullmatch(lines[0]):
        raise ParseError(
            f"not a {what}: {_shown(lines[0])}" + (f" (and {len(lines) - 1} more lines)" if len(lines) > 1 else ""),
            text,
        )
    return lines[0]


def _shown(line: str) -> str:
    """A line as an error shows it: bounded, control characters visible."""
    return repr(line[:80])


_MODINFO_VERSION = re.compile(r"^version:\s+(\S+)")


def parse_modinfo_version(text: str) -> str:
    """The ``version:`` field of ``modinfo amdgpu`` (DKMS builds have one; in-tree drivers may not)."""
    complete(text, "modinfo output")
    lines = clean_lines(text)
    for line in lines:
        match = _MODINFO_VERSION.match(line.strip())
        if match:
            return match.group(1)
    if any(line.startswith(("filename:", "vermagic:")) for line in lines):
        raise ParseError("modinfo amdgpu has no version field (in-tree driver?)")
    raise ParseError("not modinfo output: no version or filename field")


def parse_dkms_status(text: str) -> list[DkmsModule]:
    """``amdgpu/6.12.12-2147987.22.04, 5.15.0-164-generic, x86_64: installed`` (and the older comma form).

    Split on separators rather than matched with one regex: a long line must cost linear time.
    """
    complete(text, "dkms status")
    modules = []
    for line in clean_lines(text):
        if not line.strip():
            continue
        head, sep, state = line.strip().rpartition(":")
        words = state.split()
        if not sep or not words:
            raise ParseError(f"not a dkms status line: {_shown(line)}", text)
        parts = [p.strip() for p in head.split(",")]
        module, slash, version = parts[0].partition("/")
        if not slash:  # old form: "amdgpu, 6.12.12, 5.15.0-164-generic, x86_64"
            version, parts = (parts[1], parts[1:]) if len(parts) > 1 else ("", parts)
        if not re.fullmatch(r"[\w.-]+", module) or not version or any(c.isspace() for c in version):
            raise ParseError(f"not a dkms status line: {_shown(line)}", text)
        kernel = parts[1] if len(parts) > 1 and parts[1] != version else None
        modules.append(DkmsModule(module=module, version=version, kernel=kernel or None, state=words[0]))
    return modules


_RDMA_LINK = re.compile(r"^link\s+(?P<dev>[\w.-]+)/(?P<port>\d{1,6})\s+state\s+(?P<state>\w+)(?P<rest>.*)$")


def parse_rdma_link(text: str) -> list[NicPort]:
    """``rdma link``: ``link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev ens1np0``.

    No output is no ports (what a node without RDMA devices prints); the NIC count check judges it.
    """
    complete(text, "rdma link")
    ports: list[NicPort] = []
    for line in clean_lines(text):
        if not line.strip():
            continue
        match = _RDMA_LINK.match(line.strip())
        if not match:
            raise ParseError(f"not an rdma link line: {_shown(line)}", text)
        rest = match.group("rest").split()
        attrs = dict(zip(rest[::2], rest[1::2], strict=False))
        _once(ports, match.group("dev"), int(match.group("port")), "rdma link", text)
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
    complete(text, "ibv_devinfo")
    ports: list[NicPort] = []
    device: str | None = None
    port: dict[str, str] | None = None

    def flush() -> None:
        if device is not None and port is not None and "port" in port:
            _once(ports, device, int(port["port"]), "ibv_devinfo", text)
            words = (port.get("state") or "").split()
            state = re.sub(r"^PORT_", "", words[0] if words else "UNKNOWN").upper()
            ports.append(
                NicPort(
                    device=device,
                    port=int(port["port"]),
                    state=state,
                    physical_state=(port.get("phys_state") or "").split(" ")[0] or None,
                    link_layer=port.get("link_layer"),
                    rate_gbps=_rate(port.get("active_width"), port.get("active_speed")),
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
        elif port is not None and key in ("state", "phys_state", "link_layer", "active_width", "active_speed"):
            port[key] = value
    flush()
    return ports


def _once(ports: list[NicPort], device: str, number: int, tool: str, text: str) -> None:
    """ParseError when ``tool`` already listed this port: one port read twice is not two ports (the NIC
    count would hide a port gone missing) and two readings of it may disagree."""
    if any(port.device == device and port.port == number for port in ports):
        raise ParseError(f"{tool} lists {device}/{number} twice", text)


_WIDTH = re.compile(r"^(\d+)X\b")
_SPEED = re.compile(r"^(\d+(?:\.\d+)?) Gbps\b")


def _rate(width: str | None, speed: str | None) -> float | None:
    """``4X (2)`` x ``100.0 Gbps (128)`` -> 400.0 Gb/s; None when either is missing or unreadable."""
    lanes = _WIDTH.match(width or "")
    per_lane = _SPEED.match(speed or "")
    return int(lanes.group(1)) * float(per_lane.group(1)) if lanes and per_lane else None
