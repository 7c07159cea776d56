"""Parser for ``rocminfo``: ROCk module state, HSA system attributes and the HSA agents (CPUs, then GPUs).

Layout: a status line (``ROCk module is loaded``), then banner-framed ``HSA System Attributes`` and
``HSA Agents`` blocks. Each agent opens with ``*******`` / ``Agent N`` / ``*******`` and holds
``Label: value`` lines whose labels are padded to 25 columns, so labels that are longer run straight
into the value (``WatchPts on Addr. Ranges:1``, ``Packet Processor uCode:: 138``). Nested blocks
(``Cache Info``, ``Pool Info`` / ``Pool N``, ``ISA Info`` / ``ISA N``) are told apart by their
openers rather than by indentation, which pasted copies often lose.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from console.model.gpu import GpuIdentity, GpuMetrics, GpuRecord, StackVersions
from console.model.rocm import HsaAgent, HsaAgentBase, HsaGpuAgent, HsaMemoryPool, RocminfoReport
from console.probes.base import Detection, ParsedOutput, ParseError, clean_lines
from console.probes.ids import Tool
from console.probes.values import normalise_bdf, to_bytes

KIND = "agents"

# "ROCk module is loaded" (older) or "ROCk module version 6.8.5 is loaded" (amdgpu driver version).
_ROCK_LINE = re.compile(r"^ROCk module (?:version (\S+) )?(is NOT loaded|is loaded)")
# Lines rocminfo (or the HSA runtime under it) prints when it cannot enumerate agents.
_FAILURE_LINE = re.compile(
    r"^(HSA Error\b|hsa api call failure\b|Call returned HSA_STATUS_ERROR|Unable to open /dev/kfd\b)|HSA_STATUS_ERROR_"
)
_KEY_VALUE = re.compile(r"^(\s*)([A-Za-z][^:]*?)\s*:+\s*(.*)$")
_AGENT = re.compile(r"^\s*Agent\s+([0-9]{1,9})\s*$")
_SUBBLOCK = re.compile(r"^\s*(Pool|ISA)\s+\d+\s*$")
# Decimal part of "29857(0x74a1)"; the cap keeps int() away from absurd lengths.
_LEADING_INT = re.compile(r"^\s*([0-9]{1,30})")
_COUNT_WITH_UNIT = re.compile(r"^\s*([0-9]{1,30})\s*(?:\(0x[0-9a-fA-F]+\))?\s*([A-Za-z]*)\s*$")
_CACHE_LEVEL = re.compile(r"^L\d+$")
_DONE = "*** Done ***"


def detect(text: str) -> Detection | None:
    """rocminfo by its ``ROCk module`` status line or its ``HSA System Attributes`` / ``HSA Agents`` banners."""
    if re.search(r"^\s*ROCk module (is|version)", text, re.MULTILINE):
        return Detection(Tool.ROCMINFO, KIND, 0.95)
    if re.search(r"^\s*HSA (System Attributes|Agents)\s*$", text, re.MULTILINE):
        return Detection(Tool.ROCMINFO, KIND, 0.9)
    return None


@dataclass
class _RawAgent:
    """Key/value lines of one agent, grouped the way rocminfo nests them."""

    number: int
    keys: dict[str, str] = field(default_factory=dict)
    caches: dict[str, str] = field(default_factory=dict)
    pools: list[dict[str, str]] = field(default_factory=list)
    isas: list[str] = field(default_factory=list)


@dataclass
class _Scan:
    """What one pass over the lines found."""

    rock_loaded: bool | None = None
    driver_version: str | None = None
    system: dict[str, str] = field(default_factory=dict)
    agents: list[_RawAgent] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    saw_banner: bool = False
    done: bool = False


def parse(text: str, kind: str | None = None) -> ParsedOutput:
    """Parse rocminfo output into system attributes and CPU/GPU agents.

    A ``ROCk module is NOT loaded`` line, HSA error lines or a missing ``*** Done ***`` footer give
    ``ok=False`` with the tool's lines in ``errors``.
    """
    if kind not in (None, KIND):
        raise ParseError(f"unknown rocminfo kind {kind!r}; expected {KIND!r}", tool=Tool.ROCMINFO)
    scan = _scan(clean_lines(text, strip_prefixes=True))
    if scan.rock_loaded is None and not scan.saw_banner and not scan.agents and not scan.errors:
        raise ParseError(
            "expected rocminfo output: a 'ROCk module is loaded' line or 'HSA System Attributes'/'HSA Agents' blocks",
            tool=Tool.ROCMINFO,
        )
    if not scan.errors and not scan.done:
        scan.errors.append("output ends before '*** Done ***': rocminfo did not finish")
    report = _build_report(scan)
    if scan.done and not report.gpus:
        scan.warnings.append("rocminfo lists no GPU agents")
    return ParsedOutput(
        tool=Tool.ROCMINFO,
        kind=KIND,
        ok=not scan.errors,
        errors=scan.errors,
        warnings=scan.warnings,
        summary=_summary(report),
        tool_version=report.runtime_version,
        data=report,
    )


def _scan(lines: list[str]) -> _Scan:
    scan = _Scan()
    section: str | None = None  # "system" or "agents"
    block = "agent"  # inside an agent: agent, cache, pool or isa
    agent: _RawAgent | None = None
    for line in lines:
        stripped = line.strip()
        if not stripped or set(stripped) <= {"=", "*"}:
            continue
        rock = _ROCK_LINE.match(stripped)
        if rock:
            scan.rock_loaded = rock.group(2) == "is loaded"
            scan.driver_version = rock.group(1)
            if not scan.rock_loaded:
                scan.errors.append(stripped)
            continue
        if _FAILURE_LINE.search(stripped):
            scan.errors.append(stripped)
            continue
        if stripped == _DONE:
            scan.done = True
            continue
        if stripped in ("HSA System Attributes", "HSA Agents"):
            scan.saw_banner = True
            section = "system" if stripped == "HSA System Attributes" else "agents"
            continue
        number = _AGENT.match(line)
        if number:
            section, block = "agents", "agent"
            agent = _RawAgent(int(number.group(1)))
            scan.agents.append(agent)
            continue
        if agent is not None and _SUBBLOCK.match(line):
            if block == "pool" and stripped.startswith("Pool"):
                agent.pools.append({})
            continue
        match = _KEY_VALUE.match(line)
        if match is None:
            continue  # per-dimension lines ("x  1024(0x400)") and other noise
        indent, key, value = len(match.group(1)), match.group(2).strip(), match.group(3).strip()
        if section == "system":
            scan.system.setdefault(key, value)
        elif agent is not None:
            block = _file_agent_line(agent, block, key, value, indent)
        elif "ERROR" in stripped:
            scan.warnings.append(stripped)  # e.g. libkmod noise before the status line
    return scan


def _file_agent_line(agent: _RawAgent, block: str, key: str, value: str, indent: int) -> str:
    """Store one key/value line of an agent; returns the block the next line belongs to."""
    if key == "Cache Info":
        return "cache"
    if key == "Pool Info":
        return "pool"
    if key == "ISA Info":
        return "isa"
    # rocminfo indents agent-level labels by exactly two spaces; when indentation survived, trust it.
    if 0 < indent <= 2 or (block == "cache" and not _CACHE_LEVEL.match(key)):
        block = "agent"
    if block == "cache":
        agent.caches.setdefault(key, value)
    elif block == "pool":
        if not agent.pools:
            agent.pools.append({})
        agent.pools[-1].setdefault(key, value)
    elif block == "isa":
        if key == "Name" and value:
            agent.isas.append(value)
    else:
        agent.keys.setdefault(key, value)  # empty values too: "Marketing Name:" left blank is a finding
    return block


def _build_report(scan: _Scan) -> RocminfoReport:
    runtime = scan.system.get("Runtime Version") or None
    report = RocminfoReport(
        rock_module_loaded=scan.rock_loaded,
        runtime_version=runtime,
        runtime_ext_version=scan.system.get("Runtime Ext Version") or None,
        system=scan.system,
        versions=StackVersions(hsa_runtime=runtime, amdgpu_driver=scan.driver_version),
    )
    for raw in scan.agents:
        device_type = raw.keys.get("Device Type") or _guess_device_type(raw)
        if device_type == "GPU":
            report.gpus.append(_gpu_agent(raw))
        elif device_type == "CPU":
            report.cpus.append(_host_agent(raw, device_type))
        else:
            report.others.append(_host_agent(raw, device_type))
    return report


def _guess_device_type(raw: _RawAgent) -> str | None:
    # A truncated agent may lack "Device Type"; its name or UUID still says what it is.
    if raw.keys.get("Name", "").startswith("gfx") or raw.keys.get("Uuid", "").startswith("GPU-"):
        return "GPU"
    if raw.keys.get("Uuid", "").startswith("CPU-"):
        return "CPU"
    return None


def _common(raw: _RawAgent, device_type: str | None) -> dict[str, object]:
    """Fields of ``HsaAgentBase`` shared by CPU and GPU agents."""
    caches = {level: size for level, text in raw.caches.items() if (size := _size_bytes(text)) is not None}
    return {
        "agent": raw.number,
        "vendor_name": raw.keys.get("Vendor Name") or None,
        "device_type": device_type,
        "max_clock_mhz": _as_float(raw.keys.get("Max Clock Freq. (MHz)")),
        "cache_bytes": caches,
        "pools": [_pool(p) for p in raw.pools if p],
        "isas": raw.isas,
        "properties": raw.keys,
    }


def _host_agent(raw: _RawAgent, device_type: str | None) -> HsaAgent:
    agent = HsaAgent.model_validate(
        {
            **_common(raw, device_type),
            "name": raw.keys.get("Name") or None,
            "marketing_name": raw.keys.get("Marketing Name") or None,
            "node": _count(raw.keys.get("Node")),
            "compute_units": _count(raw.keys.get("Compute Unit")),
        }
    )
    _mark_missing(agent, {"node": "Node", "compute_units": "Compute Unit"}, raw)
    return agent


def _gpu_agent(raw: _RawAgent) -> HsaGpuAgent:
    keys = raw.keys
    identity = GpuIdentity(
        kfd_node=_count(keys.get("Node")),
        market_name=keys.get("Marketing Name") or None,
        gfx_target=_gfx_target(keys.get("Name")),
        compute_units=_count(keys.get("Compute Unit")),
        bdf=_bdf(keys.get("BDFID")),
    )
    chip = _count(keys.get("Chip ID"))
    if chip:
        identity.device_id = f"0x{chip:04x}"
    uuid = keys.get("Uuid", "")
    if uuid and not uuid.endswith("-XX"):
        identity.uuid = uuid
    elif uuid:
        identity.mark_unavailable("uuid", f"{uuid} (no unique id)")
    for name, label in {
        "market_name": "Marketing Name",
        "kfd_node": "Node",
        "compute_units": "Compute Unit",
        "bdf": "BDFID",
        "gfx_target": "Name",
        "device_id": "Chip ID",
    }.items():
        if getattr(identity, name) is None:
            identity.mark_unavailable(name, f"'{label}' {'empty' if label in keys else 'absent'} in rocminfo")
    vram = _vram_bytes(raw.pools)
    return HsaGpuAgent.model_validate(
        {
            **_common(raw, "GPU"),
            "gpu": GpuRecord(identity=identity, metrics=GpuMetrics(vram_total_bytes=vram) if vram else None),
            "simds_per_cu": _count(keys.get("SIMDs per CU")),
            "shader_engines": _count(keys.get("Shader Engines")),
            "wavefront_size": _count(keys.get("Wavefront Size")),
        }
    )


def _mark_missing(agent: HsaAgentBase, fields: dict[str, str], raw: _RawAgent) -> None:
    for name, label in fields.items():
        if getattr(agent, name) is None:
            agent.mark_unavailable(name, f"'{label}' {'unreadable' if label in raw.keys else 'absent'} in rocminfo")


def _pool(raw: dict[str, str]) -> HsaMemoryPool:
    segment, _, flags = raw.get("Segment", "").partition(";")
    flag_text = flags.split(":", 1)[1] if ":" in flags else flags
    return HsaMemoryPool(
        segment=segment.strip() or None,
        flags=[f.strip() for f in flag_text.split(",") if f.strip()],
        size_bytes=_size_bytes(raw.get("Size")),
        allocatable=_as_bool(raw.get("Allocatable")),
        accessible_by_all=_as_bool(raw.get("Accessible by all")),
    )


def _vram_bytes(pools: list[dict[str, str]]) -> int | None:
    """Device memory: the GPU's coarse-grained GLOBAL pool (fine-grained pools alias the same memory)."""
    for pool in map(_pool, pools):
        if pool.segment == "GLOBAL" and "COARSE GRAINED" in pool.flags and pool.size_bytes:
            return pool.size_bytes
    return None


def _count(text: str | None) -> int | None:
    """Leading decimal of ``29857(0x74a1)``-style values."""
    match = _LEADING_INT.match(text or "")
    return int(match.group(1)) if match else None


def _size_bytes(text: str | None) -> int | None:
    match = _COUNT_WITH_UNIT.match(text or "")
    if match is None:
        return None
    q = to_bytes(f"{match.group(1)} {match.group(2) or 'B'}")
    return None if q.value is None else int(q.value)


def _as_float(text: str | None) -> float | None:
    try:
        value = float(text or "")
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _as_bool(text: str | None) -> bool | None:
    return {"TRUE": True, "FALSE": False}.get((text or "").upper())


def _bdf(text: str | None) -> str | None:
    value = _count(text)
    # BDFID 0 is what CPU agents print; a GPU at bus 0 device 0 does not exist.
    return normalise_bdf(value) if value else None


def _gfx_target(name: str | None) -> str | None:
    match = re.fullmatch(r"gfx[0-9a-fA-F]+", (name or "").strip())
    return match.group(0).lower() if match else None


def _summary(report: RocminfoReport) -> dict[str, object]:
    identities = [agent.gpu.identity for agent in report.gpus]
    return {
        "gpu_count": len(report.gpus),
        "cpu_count": len(report.cpus),
        "gfx_targets": sorted({i.gfx_target for i in identities if i.gfx_target}),
        "market_names": sorted({i.market_name for i in identities if i.market_name}),
        "compute_units": sorted({i.compute_units for i in identities if i.compute_units is not None}),
        "bdfs": [i.bdf for i in identities if i.bdf],
        "runtime_version": report.runtime_version,
        "rock_module_loaded": report.rock_module_loaded,
    }
