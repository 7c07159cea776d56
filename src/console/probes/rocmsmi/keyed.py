"""rocm-smi's per-GPU ``Key: value`` facts: ``GPU[n]\\t\\t: Key: value`` lines and ``--json`` card objects.

Besides plain pairs (some values sit behind ``\\t`` or ``\\t\\t``, e.g. ``Device Name: \\t\\tAMD Instinct
MI300X``), a ``GPU[n]`` body can be a message (``get_power_profiles, Not supported on the given
system``), the title of a supported-clock list (``Supported sclk frequencies on GPU0``) followed by
its levels (``0: 900Mhz *``, ``S: 131Mhz``; ``*`` marks the current level, ``S`` deep sleep), or
empty, which closes such a list.
"""

from __future__ import annotations

import re

from console.model.gpu import GpuMetrics, PcieLink
from console.model.rocm import ClockLevel, RocmSmiDevice
from console.probes.rocmsmi.fields import KEYS, assign, holder
from console.probes.values import na_reason, to_mhz

ClockList = tuple[RocmSmiDevice, str]
"""The supported-clock list being read: whose, and which clock domain."""

_CLOCK_KEY = re.compile(r"^(\w+) clock (?:level|speed)$")
_CLOCK_MHZ = re.compile(r"\(\s*([0-9]+(?:\.[0-9]+)?)\s*mhz\s*\)", re.IGNORECASE)
_PCIE_LEVEL = re.compile(r"([0-9]{1,6}(?:\.[0-9]+)?)\s*GT/s\s*x([0-9]{1,3})", re.IGNORECASE)
_FIRMWARE_KEY = re.compile(r"^(.+?) firmware version$", re.IGNORECASE)
_SUPPORTED_LIST = re.compile(r"^Supported (\S+) frequencies on GPU\d+$")
_LEVEL = re.compile(r"^([0-9]{1,3}|S)$")
_UNSUPPORTED_CALL = re.compile(r"^([\w .%()-]+?), Not supported on the given system")


def read_gpu_body(
    device: RocmSmiDevice, body: str, section: str, clocks: ClockList | None, warnings: list[str]
) -> ClockList | None:
    """Read the text after ``GPU[n]\\t\\t:``; returns the supported-clock list the next line continues."""
    if not body:
        return None
    listing = _SUPPORTED_LIST.match(body)
    if listing:
        device.supported_clocks.setdefault(listing.group(1), [])
        return device, listing.group(1)
    key, sep, value = body.partition(": ")
    key = key.strip().rstrip(":").strip()
    if not sep:
        _message(device, body, section, warnings)
    elif _LEVEL.match(key):
        # Level lines outside a supported-clock list (OD_SCLK tables) are not clock levels we keep.
        if clocks is not None and clocks[0] is device:
            device.supported_clocks[clocks[1]].append(_clock_level(key, value))
    else:
        read_pair(device, key, value)
    return clocks


def _message(device: RocmSmiDevice, body: str, section: str, warnings: list[str]) -> None:
    call = _UNSUPPORTED_CALL.match(body)
    if call:
        device.unsupported.append(call.group(1))
    elif body.endswith("Unsupported"):  # "Max Graphics Package Power Unsupported"
        device.unsupported.append(body)
    elif body.lower().startswith("not supported"):  # the section's whole call is unsupported
        device.unsupported.append(section or body)
    elif re.search(r"\b(Unable|Failed|error)\b", body, re.IGNORECASE):
        warnings.append(f"GPU[{device.index}]: {body}")


def read_pair(device: RocmSmiDevice, key: str, value: str) -> None:
    """One ``Key: value`` fact about a GPU; every pair is also kept verbatim in ``properties``."""
    value = value.strip()
    device.properties.setdefault(key, value)
    lower = key.lower()
    clock = _CLOCK_KEY.match(lower)
    firmware = _FIRMWARE_KEY.match(key)
    if lower in KEYS:
        assign(device, KEYS[lower], value)
    elif lower == "fan level":  # "0 (0%)"
        percent = re.search(r"\(([^)]*%)\)", value)
        if percent:
            assign(device, "fan_pct", percent.group(1))
    elif clock:
        _current_clock(device, clock.group(1), value)
    elif firmware and na_reason(value) is None:
        device.gpu.firmware.setdefault(firmware.group(1).upper(), value)


def _current_clock(device: RocmSmiDevice, domain: str, value: str) -> None:
    """``sclk clock level: S: (131Mhz)``, ``pcie clock level: 1 (32.0GT/s x16)``, JSON ``(2100Mhz)``."""
    if domain == "pcie":
        link = _PCIE_LEVEL.search(value)
        pcie = holder(device, "pcie")
        if link and isinstance(pcie, PcieLink):
            pcie.speed_gts = pcie.speed_gts or float(link.group(1))
            pcie.width = pcie.width or int(link.group(2))
        return
    mhz = _CLOCK_MHZ.search(value)
    target = {"sclk": "gfx_clock_mhz", "mclk": "mem_clock_mhz"}.get(domain)
    if mhz and target:
        assign(device, target, f"{mhz.group(1)} MHz")


def _clock_level(level: str, text: str) -> ClockLevel:
    current = text.rstrip().endswith("*")
    shown = text.rstrip(" *").strip()
    mhz = to_mhz(shown).value if "GT/s" not in shown else None
    return ClockLevel(level=level, mhz=mhz, text=shown, current=current)


def fill_clock_from_levels(device: RocmSmiDevice) -> None:
    """With only ``-s`` output, the starred sclk/mclk level is the current clock."""
    metrics = device.gpu.metrics
    for domain, attr in (("sclk", "gfx_clock_mhz"), ("mclk", "mem_clock_mhz")):
        current = [lvl.mhz for lvl in device.supported_clocks.get(domain, []) if lvl.current and lvl.mhz is not None]
        if current and (metrics is None or getattr(metrics, attr) is None):
            metrics = metrics or GpuMetrics()
            device.gpu.metrics = metrics
            setattr(metrics, attr, current[0])
