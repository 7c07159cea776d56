"""Named metrics the check packs refer to: each reads ``NodeFacts`` and yields observations.

An observation names its subject (node, GPU, link or NIC port), the value, and when the value is
None, why (the tool's own ``N/A`` reason or the missing probe). Metrics never judge; checks do.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from console.checks.cper import bad_page_doubt, severity_class, tally, truncation_doubt
from console.checks.facts import NodeFacts, static_power_caps
from console.model.amdsmi import CperRecord
from console.model.findings import Remedy, Scope, Subject
from console.model.gpu import GpuRecord, LinkStatus, XgmiLink
from console.probes.base import ParsedOutput
from console.probes.ids import ProbeId
from console.probes.values import said_no_value


@dataclass(frozen=True)
class Observation:
    """One reading of a metric on one subject."""

    subject: Subject
    value: float | str | bool | None
    missing: str | None = None
    probe: str | None = None
    key: str | None = None  # e.g. the firmware block name, for per-block pins
    detail: str | None = None
    always_detail: bool = False  # said in a PASS message too (CPER records a check ignored)
    action: Remedy | None = None  # what this subject calls for, when it is not the check's (a CPER record's AFID)
    action_source: str | None = None
    # The tool printed something for this value that was not read (garbled, NaN, a word of no known meaning),
    # or left the subject out while reporting it for the others: UNKNOWN whatever the check's ``on_missing``,
    # which stands only for a value the tool does not report here at all (docs/verdicts.md).
    unread: bool = False


class Unread(str):
    """The reason a value is missing when it is a reading lost, not one the tool does not give (``unread``)."""

    __slots__ = ()


class Absent(str):
    """The reason a value is missing when the output printed nothing for it at all (no key, no section, not
    even ``N/A``): a pasted output judged alone (``console.checks.single``) did not show it, so a check of it
    does not apply there; in a sweep it is missing like any value the tool did not report."""

    __slots__ = ()


Metric = Callable[[NodeFacts], list[Observation]]
METRICS: dict[str, Metric] = {}


def metric(name: str) -> Callable[[Metric], Metric]:
    """Register a metric under ``name`` (the name packs use)."""

    def register(func: Metric) -> Metric:
        METRICS[name] = func
        return func

    return register


def _node(facts: NodeFacts) -> Subject:
    return facts.subject()


def _gpu_subject(facts: NodeFacts, gpu: GpuRecord) -> Subject:
    return facts.subject(Scope.GPU, gpu=gpu.identity.index, gpu_bdf=gpu.identity.bdf)


def _gpu_list(indices: list[Any]) -> str:
    """The GPUs that did report a value a GPU lost, as its reason names them: '0, 1, 2', the first 8 and '...'."""
    return ", ".join(str(index) for index in indices[:8]) + (", ..." if len(indices) > 8 else "")


def _per_gpu(facts: NodeFacts, probe: str, read: Callable[[GpuRecord], tuple[Any, str | None]]) -> list[Observation]:
    """One observation per GPU of the node, read by ``read`` from its record.

    A GPU that ``probe`` answered for the others and left out is unread, whatever ``read`` finds elsewhere (the
    static record's empty page lists read as 0 retired pages for a GPU the bad-pages listing did not name); so
    is a value missing on one GPU while others of the node report it: the same tool on the same model cannot
    lack the counter on one GPU only, so that GPU's reading was lost, not unsupported.
    """
    observations = []
    for gpu in facts.gpus:
        left_out = facts.left_out(probe, gpu)
        value: Any = None
        missing: str | None = Unread(left_out) if left_out is not None else None
        if left_out is None:
            value, missing = read(gpu)
        unread = isinstance(missing, Unread)
        observations.append(Observation(_gpu_subject(facts, gpu), value, missing, probe, unread=unread))
    read_on = [o.subject.gpu for o in observations if o.value is not None]
    if not read_on:
        return observations
    others = _gpu_list(read_on)
    return [
        o
        if o.value is not None or o.unread
        else Observation(o.subject, None, Unread(f"{o.missing}, while GPU {others} report it"), probe, unread=True)
        for o in observations
    ]


def _field(obj: Any, name: str, absent: str) -> tuple[Any, str | None]:
    if obj is None:
        return None, Absent(absent)
    value = getattr(obj, name, None)
    if value is None:
        reasons = getattr(obj, "unavailable", {}) or {}
        if name not in reasons:
            return None, Absent("not reported")
        # What the parser could not read is no "not supported" (``values.said_no_value``).
        reason = reasons[name]
        return None, reason if said_no_value(reason) else Unread(reason)
    return value, None


def _gpu_metric(name: str, source: str, attr: str, probe: str) -> None:
    def read(gpu: GpuRecord) -> tuple[Any, str | None]:
        holder: Any = gpu.metrics if source == "metrics" else None
        if source == "pcie":
            holder = gpu.metrics.pcie if gpu.metrics is not None else None
        elif source == "ecc":
            holder = gpu.ecc
        elif source == "bad_pages":
            holder = gpu.bad_pages
        return _field(holder, attr, f"no {source} data")

    def extract(facts: NodeFacts) -> list[Observation]:
        return _per_gpu(facts, probe, read)

    METRICS[name] = extract


for _name, _source, _attr, _probe in (
    ("gpu.vram_total_bytes", "metrics", "vram_total_bytes", ProbeId.AMDSMI_METRIC),
    ("gpu.hotspot_temp_c", "metrics", "hotspot_temp_c", ProbeId.AMDSMI_METRIC),
    ("gpu.mem_temp_c", "metrics", "mem_temp_c", ProbeId.AMDSMI_METRIC),
    ("gpu.pcie_speed_gts", "pcie", "speed_gts", ProbeId.AMDSMI_METRIC),
    ("gpu.pcie_width", "pcie", "width", ProbeId.AMDSMI_METRIC),
    ("gpu.pcie_l0_to_recovery", "pcie", "l0_to_recovery_count", ProbeId.AMDSMI_METRIC),
    ("gpu.pcie_nak_sent", "pcie", "nak_sent_count", ProbeId.AMDSMI_METRIC),
    ("gpu.pcie_nak_received", "pcie", "nak_received_count", ProbeId.AMDSMI_METRIC),
    ("gpu.pcie_replay", "pcie", "replay_count", ProbeId.AMDSMI_METRIC),
    ("gpu.ecc_uncorrectable", "ecc", "uncorrectable", ProbeId.AMDSMI_METRIC),
    ("gpu.ecc_correctable", "ecc", "correctable", ProbeId.AMDSMI_METRIC),
    ("gpu.ecc_deferred", "ecc", "deferred", ProbeId.AMDSMI_METRIC),
    ("gpu.bad_page_threshold_exceeded", "bad_pages", "threshold_exceeded", ProbeId.AMDSMI_STATIC),
):
    _gpu_metric(_name, _source, _attr, _probe)


@metric("gpu.power_cap_w")
def power_cap(facts: NodeFacts) -> list[Observation]:
    """Configured power cap per GPU: ``static --limit`` states it (the narrowed metric does not), else metric's."""
    caps = static_power_caps(facts)

    def read(gpu: GpuRecord) -> tuple[Any, str | None]:
        cap = caps.get(gpu.identity.bdf or "")
        return (cap, None) if cap is not None else _field(gpu.metrics, "power_cap_w", "no power limits reported")

    return _per_gpu(facts, ProbeId.AMDSMI_STATIC, read)


@metric("node.gpu_count")
def gpu_count(facts: NodeFacts) -> list[Observation]:
    """GPUs amd-smi enumerates (list, else static); physical GPUs, or logical partitions when partitioned."""
    for probe in (ProbeId.AMDSMI_LIST, ProbeId.AMDSMI_STATIC):
        parsed = facts.parsed(probe)
        if isinstance(parsed, ParsedOutput):
            count = parsed.summary.get("gpu_count")
            if isinstance(count, int):
                detail = "; ".join(parsed.errors[:2]) or None
                return [Observation(_node(facts), count, None, probe, detail=detail)]
    return [Observation(_node(facts), None, facts.missing_reason([ProbeId.AMDSMI_LIST]) or "amd-smi list not run")]


@metric("node.amdsmi_ok")
def amdsmi_ok(facts: NodeFacts) -> list[Observation]:
    """False when any amd-smi output shows the tool failed (driver not loaded, no GPU, errors)."""
    seen = False
    for probe, outcome in facts.outcomes.items():
        # The CPER listing runs under sudo: its refusal says nothing about amd-smi, and its checks say it.
        if not probe.startswith("amdsmi.") or probe == ProbeId.AMDSMI_CPER or not outcome.usable:
            continue
        parsed = outcome.parsed
        if isinstance(parsed, ParsedOutput):
            seen = True
            if not parsed.ok:
                detail = "; ".join(parsed.errors[:3]) or "amd-smi reported a failure"
                return [Observation(_node(facts), False, None, probe, detail=detail)]
    if not seen:
        return [Observation(_node(facts), None, facts.missing_reason([ProbeId.AMDSMI_LIST]) or "amd-smi not run")]
    return [Observation(_node(facts), True, None, ProbeId.AMDSMI_LIST)]


def _page_count(gpu: GpuRecord, status: str) -> tuple[Any, str | None]:
    """How many pages of ``status`` the GPU's listing holds; a listing printed N/A or unread is no count at all
    (its empty list read as 0 retired pages and passed the GPU)."""
    pages = gpu.bad_pages
    if pages is None:
        return None, "no bad-pages data"
    if status in pages.unavailable:
        return None, Unread(f"{status} pages: {pages.unavailable[status]}")
    return len(getattr(pages, status)), None


@metric("gpu.bad_pages_retired")
def bad_pages_retired(facts: NodeFacts) -> list[Observation]:
    """Retired VRAM pages per GPU."""
    return _per_gpu(facts, ProbeId.AMDSMI_BAD_PAGES, lambda g: _page_count(g, "retired"))


@metric("gpu.bad_pages_pending")
def bad_pages_pending(facts: NodeFacts) -> list[Observation]:
    """Pages pending retirement per GPU."""
    return _per_gpu(facts, ProbeId.AMDSMI_BAD_PAGES, lambda g: _page_count(g, "pending"))


@metric("gpu.bad_pages_fraction")
def bad_pages_fraction(facts: NodeFacts) -> list[Observation]:
    """Retired pages as a fraction of the device's BAD_PAGE_THRESHOLD (1.0 = RMA threshold)."""

    def read(gpu: GpuRecord) -> tuple[Any, str | None]:
        pages = gpu.bad_pages
        if pages is None:
            return None, "no bad-pages data"
        if not pages.threshold:
            return None, pages.unavailable.get("threshold", "threshold not reported")
        retired, missing = _page_count(gpu, "retired")
        return (retired / pages.threshold if retired is not None else None), missing

    return _per_gpu(facts, ProbeId.AMDSMI_BAD_PAGES, read)


# PHOT_TVIOL is PROCHOT as the parser names it (``amd-smi monitor --violation``'s name, from ``prochot_*``).
_THERMAL = (
    "TVIOL",
    "HBM_TVIOL",
    "VR_TVIOL",
    "PHOT_TVIOL",
    "PROCHOT",
    "THERMAL",
    "SOCKET_THERMAL",
    "HBM_THERMAL",
    "VR_THERMAL",
)
_POWER = ("PVIOL", "PPT", "POWER", "SOCKET_POWER")


def _violation(gpu: GpuRecord, names: Iterable[str]) -> tuple[Any, str | None]:
    if gpu.metrics is None:
        return None, Absent("no metric data")
    wanted = {n.upper() for n in names}
    lost = [
        f"{key.removeprefix('violation.')}: {why}"
        for key, why in gpu.metrics.unavailable.items()
        if key.startswith("violation.") and key.removeprefix("violation.").upper() in wanted and not said_no_value(why)
    ]
    if lost:
        # One counter garbled is a share unknown: the highest of the others is no maximum.
        return None, Unread("; ".join(lost))
    values = [v.percent for v in gpu.metrics.violations if v.name.upper() in wanted and v.percent is not None]
    if not values:
        return None, gpu.metrics.unavailable.get("violations", Absent("violation counters not reported"))
    return max(values), None


@metric("gpu.thermal_violation_pct")
def thermal_violation(facts: NodeFacts) -> list[Observation]:
    """Highest thermal throttle residency (socket, HBM, VR, PROCHOT) in percent of the window."""
    return _per_gpu(facts, ProbeId.AMDSMI_METRIC, lambda g: _violation(g, _THERMAL))


@metric("gpu.power_violation_pct")
def power_violation(facts: NodeFacts) -> list[Observation]:
    """Power-cap throttle residency (PVIOL/PPT) in percent of the window."""
    return _per_gpu(facts, ProbeId.AMDSMI_METRIC, lambda g: _violation(g, _POWER))


@metric("gpu.device_id")
def device_id(facts: NodeFacts) -> list[Observation]:
    """PCI device id as lower-case hex (``0x74a1``)."""

    def read(gpu: GpuRecord) -> tuple[Any, str | None]:
        value, missing = _field(gpu.identity, "device_id", "no identity")
        return (value.lower() if isinstance(value, str) else value), missing

    return _per_gpu(facts, ProbeId.AMDSMI_STATIC, read)


def _firmware_unread(facts: NodeFacts) -> dict[int, dict[str | None, str]]:
    """Per GPU (by position in ``facts.gpus``), the firmware blocks it has no version of and why: the whole GPU
    (key None) when ``amd-smi firmware`` left it out, else each block another GPU reports or the pool pins.

    A GPU whose list was empty, printed N/A versions or lost a block was otherwise no observation at all: the
    pin and the consistency checks passed the node without reading it.
    """
    pinned = {field.removeprefix("firmware.") for field in facts.pin.pinned_fields() if field.startswith("firmware.")}
    seen: dict[str, list[int]] = {}
    for gpu in facts.gpus:
        for block in gpu.firmware:
            seen.setdefault(block, []).append(gpu.identity.index if gpu.identity.index is not None else -1)
    wanted = set(seen) | pinned
    unread: dict[int, dict[str | None, str]] = {}
    if not facts.answered([ProbeId.AMDSMI_FIRMWARE]):
        return unread
    for position, gpu in enumerate(facts.gpus):
        left_out = facts.left_out(ProbeId.AMDSMI_FIRMWARE, gpu)
        if left_out is not None:
            unread[position] = {None: left_out}
            continue
        lost: dict[str | None, str] = {}
        for block in sorted(wanted - set(gpu.firmware)):
            others = _gpu_list(seen.get(block, []))
            lost[block] = f"{block}: no version read" + (f", while GPU {others} report one" if others else "")
        if lost:
            unread[position] = lost
    return unread


@metric("gpu.firmware")
def firmware(facts: NodeFacts) -> list[Observation]:
    """One observation per GPU and firmware block (compare with ``pin_field = 'firmware.*'``); a block, or a
    whole GPU, with no version read is an unread observation (``_firmware_unread``)."""
    observations = []
    unread = _firmware_unread(facts)
    for position, gpu in enumerate(facts.gpus):
        subject = _gpu_subject(facts, gpu)
        for block, version in sorted(gpu.firmware.items()):
            observations.append(Observation(subject, version, None, ProbeId.AMDSMI_FIRMWARE, key=block))
        for key, why in unread.get(position, {}).items():
            observations.append(Observation(subject, None, why, ProbeId.AMDSMI_FIRMWARE, key=key, unread=True))
    return observations


@metric("node.firmware_mismatches")
def firmware_mismatches(facts: NodeFacts) -> list[Observation]:
    """Firmware blocks whose version differs between GPUs of the node (one GPU reflashed or left behind)."""
    versions: dict[str, set[str]] = {}
    for gpu in facts.gpus:
        for block, version in gpu.firmware.items():
            versions.setdefault(block, set()).add(version)
    if not versions:
        missing = facts.missing_reason([ProbeId.AMDSMI_FIRMWARE]) or "firmware versions not reported"
        return [Observation(_node(facts), None, missing, ProbeId.AMDSMI_FIRMWARE)]
    odd = sorted(block for block, seen in versions.items() if len(seen) > 1)
    detail = ", ".join(f"{block} {'/'.join(sorted(versions[block]))}" for block in odd) or None
    unread = _firmware_unread(facts)
    if unread and not odd:
        # No difference among the GPUs read is no proof of none with one GPU, or one block, not read.
        first = next(iter(unread))
        reasons = list(unread[first].values())
        said = "; ".join(reasons[:2]) + (f" (+{len(reasons) - 2} more blocks)" if len(reasons) > 2 else "")
        index = facts.gpus[first].identity.index
        more = f" (+{len(unread) - 1} more GPUs)" if len(unread) > 1 else ""
        why = Unread(f"GPU {index}: {said}{more}" if not said.startswith(ProbeId.AMDSMI_FIRMWARE) else said + more)
        return [Observation(_node(facts), None, why, ProbeId.AMDSMI_FIRMWARE, unread=True)]
    return [Observation(_node(facts), len(odd), None, ProbeId.AMDSMI_FIRMWARE, detail=detail)]


def _stack_metric(key: str, probes: Sequence[str]) -> Metric:
    def extract(facts: NodeFacts) -> list[Observation]:
        value = facts.stack.get(key)
        missing = None if value else (facts.missing_reason(probes) or f"{key} not reported")
        return [Observation(_node(facts), value, missing, probes[0])]

    return extract


for _key, _probes in (
    ("os", [ProbeId.HOST_OS]),
    ("kernel", [ProbeId.HOST_KERNEL]),
    ("rocm", [ProbeId.HOST_ROCM, ProbeId.AMDSMI_VERSION]),
    ("amdgpu_driver", [ProbeId.HOST_AMDGPU, ProbeId.AMDSMI_VERSION]),
    ("rccl", [ProbeId.RCCL_ALL_REDUCE]),
    ("rvs", [ProbeId.RVS_LEVEL3]),
    ("transferbench", [ProbeId.TB_A2A]),
    ("torch", [ProbeId.FRAMEWORK_TORCH]),
    # The digest of the framework's image, when the pool runs its framework in one named by digest.
    ("image_digest", [ProbeId.FRAMEWORK_TORCH]),
):
    METRICS[f"stack.{_key}"] = _stack_metric(_key, _probes)


def _link_subject(
    facts: NodeFacts, src: int | None, dst: int | None, src_bdf: str | None, dst_bdf: str | None
) -> Subject:
    return facts.subject(Scope.LINK, gpu=src, gpu_bdf=src_bdf, peer=dst, peer_bdf=dst_bdf)


@metric("link.xgmi_up")
def xgmi_up(facts: NodeFacts) -> list[Observation]:
    """True per directly linked GPU pair whose XGMI link is up; None when such a pair's state is not reported.

    A pair that should have a direct link and shows ``N/A``, or no state at all, is a link unread, never
    "no link": on a fully connected node (the pack's ``xgmi_fully_connected``) every pair of the GPUs the
    xgmi tables name should, and elsewhere (MI250X) every pair the node itself shows a port to. A pair with
    neither is not observed: the two GPUs reach each other through a third.
    """
    links = {
        (link.src_index, link.dst_index): link
        for link in facts.xgmi
        if link.src_index != link.dst_index and link.status is not LinkStatus.SELF
    }
    bdfs = _xgmi_bdfs(facts)
    # A GPU the node has (amd-smi list, static, metric) that neither xgmi table names has links too: none of
    # them was read. Only a partition's first logical GPU has links (amd-smi leaves the others out).
    unnamed: dict[int | None, str | None] = {
        gpu.identity.index: gpu.identity.bdf
        for gpu in facts.gpus
        if gpu.identity.index is not None and gpu.identity.index not in bdfs and gpu.identity.partition_id in (None, 0)
    }
    pairs = set(links)
    fully_connected = facts.settings.get("xgmi_fully_connected", True) is not False
    observations = []
    if fully_connected:
        # Rows or cells the status table left out are pairs too (a GPU still named by another row or table).
        bdfs = {**bdfs, **unnamed}
        pairs |= {(src, dst) for src in bdfs for dst in bdfs if src != dst}
    else:
        # Which peers it has a port to is not known (the tables that would say it leave the GPU out): the
        # GPU's links are unread as a whole.
        for index, bdf in sorted(unnamed.items()):
            subject = _link_subject(facts, index, None, bdf, None)
            said = f"GPU {index} is in neither xgmi table"
            observations.append(Observation(subject, None, said, ProbeId.AMDSMI_XGMI_STATUS))
    for src, dst in sorted(pairs, key=lambda pair: (pair[0] or 0, pair[1] or 0)):
        link = links.get((src, dst))
        status = link.status if link is not None else LinkStatus.UNKNOWN
        if status is LinkStatus.UNKNOWN and not (fully_connected or _has_port(link)):
            continue
        src_bdf, dst_bdf = (link.src_bdf, link.dst_bdf) if link is not None else (bdfs.get(src), bdfs.get(dst))
        subject = _link_subject(facts, src, dst, src_bdf, dst_bdf)
        differ = facts.xgmi_disagreements.get((src, dst))
        if status is LinkStatus.UNKNOWN:
            said = f"the tables disagree ({differ})" if differ else "link status not reported"
            observations.append(Observation(subject, None, said, ProbeId.AMDSMI_XGMI))
        else:
            up = status is LinkStatus.UP
            observations.append(Observation(subject, up, None, ProbeId.AMDSMI_XGMI, detail=differ))
    return observations + _xgmi_ports(facts, per_peer=bool(observations))


def _xgmi_ports(facts: NodeFacts, *, per_peer: bool) -> list[Observation]:
    """Each XGMI port of a GPU whose table says it per port, not per peer (ROCm 6.4's ``xgmi --link-status``
    text, ``U U U U D U D X``): up or down; a disabled port (X) is no link to judge, and one not reported is
    unread unless the links were judged ``per_peer`` already (a port table beside them says nothing more)."""
    observations = []
    for probe in (ProbeId.AMDSMI_XGMI_STATUS, ProbeId.AMDSMI_XGMI):
        parsed = facts.parsed(probe)
        for row in getattr(getattr(parsed, "data", None), "xgmi_ports", None) or []:
            for number, state in enumerate(row.ports):
                if state in (LinkStatus.DISABLED, LinkStatus.SELF) or (per_peer and state is LinkStatus.UNKNOWN):
                    continue
                where = f"XGMI port {number}"
                subject = facts.subject(Scope.GPU, gpu=row.gpu_index, gpu_bdf=row.bdf, port=where)
                up = None if state is LinkStatus.UNKNOWN else state is LinkStatus.UP
                said = f"{where}: state not reported" if up is None else None
                observations.append(Observation(subject, up, said, probe, detail=where))
    return observations


def _xgmi_bdfs(facts: NodeFacts) -> dict[int | None, str | None]:
    """The GPUs the xgmi tables name, as sources or destinations, with their PCI addresses."""
    bdfs: dict[int | None, str | None] = {}
    for link in facts.xgmi:
        for index, bdf in ((link.src_index, link.src_bdf), (link.dst_index, link.dst_bdf)):
            if index is not None and bdfs.get(index) is None:
                bdfs[index] = bdf
    return bdfs


def _has_port(link: XgmiLink | None) -> bool:
    """Whether amd-smi's metric table counts traffic to the peer: it lists a port's counters only for a peer
    the GPU has a port to (``amdsmi_get_link_metrics`` per port), ``N/A`` for a peer it reaches through
    another GPU (ROCm/amdsmi ``amdsmi_cli`` ``xgmi``; docs/sources/gpus.md#xgmi-links-per-gpu)."""
    return link is not None and (link.read_bytes is not None or link.write_bytes is not None)


@metric("link.xgmi_bit_rate_gbps")
def xgmi_bit_rate(facts: NodeFacts) -> list[Observation]:
    """XGMI bit rate per link in Gb/s (a link retrained at a lower rate shows here before any error)."""
    observations = []
    for link in facts.xgmi:
        if link.src_index == link.dst_index or link.bit_rate_gbps is None:
            continue
        subject = _link_subject(facts, link.src_index, link.dst_index, link.src_bdf, link.dst_bdf)
        observations.append(Observation(subject, link.bit_rate_gbps, None, ProbeId.AMDSMI_XGMI))
    return observations


@metric("gpu.xgmi_errors")
def xgmi_errors(facts: NodeFacts) -> list[Observation]:
    """XGMI error status per GPU since the last read (``amd-smi metric --xgmi-err``): none, error, multiple."""
    return _per_gpu(
        facts, ProbeId.AMDSMI_METRIC, lambda g: _field(g.metrics, "xgmi_error_status", "no XGMI error status")
    )


def _tb_pairs(facts: NodeFacts, probe: str) -> list[Observation]:
    """GPU-to-GPU bandwidth per directed pair from a TransferBench matrix (one-way runs only).

    Every pair that should have been measured gets an observation: a cell printed N/A, or a pair the run
    left out (a GPU TransferBench did not see), is a pair unread (None), never a pair skipped. On a fully
    connected node that is every ordered pair of the node's GPUs; elsewhere (MI250X, where a2a measures
    only direct links, and partitioned GPUs) every pair measured or shown a port to by amd-smi's xgmi table.
    """
    parsed = facts.parsed(probe)
    if not isinstance(parsed, ParsedOutput) or parsed.data is None:
        return []
    measured: dict[tuple[int, int], float] = {}
    unread: dict[tuple[int, int], str] = {}
    for entry in getattr(parsed.data, "matrix", []) or []:
        if entry.src_type != "GPU" or entry.dst_type != "GPU" or entry.src_index == entry.dst_index:
            continue
        if entry.direction != "uni" or entry.reverse:
            continue
        pair = (entry.src_index, entry.dst_index)
        if entry.gbps is None:
            unread[pair] = entry.unavailable.get("gbps") or "N/A"
        else:
            measured[pair] = entry.gbps
    expected = set(measured)
    # Partitioned GPUs (CPX, ...) are several logical GPUs each, and a2a's direct links join only some of
    # them: which pairs it measures is then not every pair, and it is read as on MI250X.
    partitioned = any(
        (g.identity.partition_id or 0) > 0 or (g.identity.compute_partition or "SPX").upper() != "SPX"
        for g in facts.gpus
    )
    if facts.settings.get("xgmi_fully_connected", True) is not False and not partitioned:
        gpus = {g.identity.index for g in facts.gpus if g.identity.index is not None}
        gpus |= {index for pair in (*measured, *unread) for index in pair}
        expected |= {(src, dst) for src in gpus for dst in gpus if src != dst}
    else:
        expected |= {
            (link.src_index, link.dst_index)
            for link in facts.xgmi
            if link.src_index is not None and link.dst_index is not None and _has_port(link)
        }
    observations = []
    for src, dst in sorted(expected):
        subject = _link_subject(facts, src, dst, None, None)
        if (src, dst) in measured:
            observations.append(Observation(subject, measured[(src, dst)], None, probe))
            continue
        said = unread.get((src, dst))
        why = f"printed {said} for GPU {src} -> GPU {dst}" if said else f"no GPU {src} -> GPU {dst} transfer in the run"
        observations.append(Observation(subject, None, why, probe))
    return observations


@metric("link.tb_a2a_gbps")
def tb_a2a_pairs(facts: NodeFacts) -> list[Observation]:
    """TransferBench all-to-all bandwidth per GPU pair (GB/s)."""
    return _tb_pairs(facts, ProbeId.TB_A2A)


@metric("gpu.hbm_copy_gbps")
def hbm_copy(facts: NodeFacts) -> list[Observation]:
    """HBM bandwidth per GPU from the RVS babel Copy kernel (GB/s), joined to the GPU by PCI address."""
    parsed = facts.parsed(ProbeId.RVS_LEVEL3)
    if not isinstance(parsed, ParsedOutput) or parsed.data is None:
        return []
    data: Any = parsed.data
    by_bdf = {g.identity.bdf: g for g in facts.gpus if g.identity.bdf}
    observations = []
    for result in getattr(data, "results", []) or []:
        if result.module != "babel" or (result.label or "").lower() != "copy" or result.value is None:
            continue
        gpu_id = result.gpu.gpu_id if result.gpu else None
        bdf = (result.gpu.bdf if result.gpu else None) or (data.bdf_of(gpu_id) if gpu_id is not None else None)
        record = by_bdf.get(bdf) if isinstance(bdf, str) else None
        if record is not None:
            subject = _gpu_subject(facts, record)
        else:
            subject = facts.subject(Scope.GPU, gpu_bdf=bdf)
        observations.append(Observation(subject, result.value, None, ProbeId.RVS_LEVEL3))
    return observations


@metric("nic.port_active")
def nic_port_active(facts: NodeFacts) -> list[Observation]:
    """True per RDMA port that every reading says is up: ``rdma link`` state ACTIVE with physical_state
    LINK_UP, and ``ibv_devinfo`` (when it lists the port) PORT_ACTIVE. A port one of them reads as down is
    not active, whatever the other said a moment before (a port that flaps is not a healthy port)."""
    if facts.nics is None:
        missing = facts.missing_reason([ProbeId.HOST_NIC]) or "rdma link not run"
        return [Observation(_node(facts), None, missing, ProbeId.HOST_NIC)]
    ibv = {port.label: port for port in facts.nic_rates or []}
    observations = []
    for port in facts.nics:
        said = [f"state {port.state}"]
        active = port.state == "ACTIVE"
        if port.physical_state is not None:
            said.append(f"physical_state {port.physical_state}")
            active = active and port.physical_state == "LINK_UP"
        other = ibv.get(port.label)
        if other is not None:
            said.append(f"ibv_devinfo {other.state}")
            active = active and other.state == "ACTIVE"
        subject = facts.subject(Scope.NIC, port=port.label)
        observations.append(Observation(subject, active, None, ProbeId.HOST_NIC, detail=", ".join(said)))
    return observations


@metric("gpu.ecc_correctable_increase")
def ecc_correctable_increase(facts: NodeFacts) -> list[Observation]:
    """Correctable ECC errors gained per GPU since the node's previous sweep (a steady 150 and a jump from
    150 to 5,000 both read 150-or-more in the total; only the change tells them apart)."""
    before = facts.previous.get("ecc.correctable")
    observations = []
    for gpu in facts.gpus:
        now, missing = _field(gpu.ecc, "correctable", "no ecc data")
        observations.append(correctable_increase(_gpu_subject(facts, gpu), now, missing, before))
    return observations


def correctable_increase(
    subject: Subject, now: float | None, missing: str | None, before: tuple[int, dict[str, tuple[float, float]]] | None
) -> Observation:
    """One GPU's correctable ECC errors gained since ``before`` (the history's earlier readings) given its
    count ``now``: the metric's reading, also made from a node-judged report's ``ecc.correctable`` figures."""
    if now is None:
        return Observation(subject, None, missing, ProbeId.AMDSMI_METRIC)
    key = subject.gpu_bdf or str(subject.gpu)
    earlier = before[1].get(key) if before is not None else None
    if before is None or earlier is None:
        return Observation(subject, None, "no earlier reading in the history", ProbeId.AMDSMI_METRIC)
    value, when = earlier
    hours = max(0.0, time.time() - when) / 3600
    if now < value:  # the driver reloaded: its counters start again from 0
        detail = f"counter reset since sweep {before[0]} ({value:g} then, {now:g} now)"
        return Observation(subject, float(now), None, ProbeId.AMDSMI_METRIC, detail=detail)
    detail = f"{value:g} -> {now:g} since sweep {before[0]}, {hours:.1f} h ago"
    return Observation(subject, float(now - value), None, ProbeId.AMDSMI_METRIC, detail=detail)


@metric("node.nic_count")
def nic_count(facts: NodeFacts) -> list[Observation]:
    """RDMA ports ``rdma link`` lists, whatever their state (a NIC that vanished is no port at all)."""
    if facts.nics is None:
        return [
            Observation(
                _node(facts), None, facts.missing_reason([ProbeId.HOST_NIC]) or "rdma link not run", ProbeId.HOST_NIC
            )
        ]
    return [Observation(_node(facts), len(facts.nics), None, ProbeId.HOST_NIC)]


@metric("nic.rate_gbps")
def nic_rate(facts: NodeFacts) -> list[Observation]:
    """Link rate (``ibv_devinfo -v``: active width x lane speed) of every ACTIVE port ``rdma link`` lists.

    A port that is not active has no rate (``nic.port_active`` judges it); an active port that
    ibv_devinfo does not list, or lists without a rate, reads as not reported.
    """
    if facts.nic_rates is None:
        unread = facts.missing_reason([ProbeId.HOST_NIC_RATE]) or "ibv_devinfo not run"
        return [Observation(_node(facts), None, unread, ProbeId.HOST_NIC_RATE)]
    read = {port.label: port for port in facts.nic_rates}
    ports = facts.nics if facts.nics is not None else facts.nic_rates
    observations = []
    for port in ports:
        if port.state != "ACTIVE":
            continue
        other = read.get(port.label)
        rate = other.rate_gbps if other is not None else None
        missing = None if rate is not None else f"{port.label} has no rate in ibv_devinfo -v"
        if other is not None and other.state != "ACTIVE":
            # ibv_devinfo reads the port down: whatever width and speed it prints are no rate of a working
            # port (nic.port_active fails it).
            rate, missing = None, f"ibv_devinfo -v reads {port.label} {other.state}"
        observations.append(
            Observation(facts.subject(Scope.NIC, port=port.label), rate, missing, ProbeId.HOST_NIC_RATE)
        )
    return observations


_RVS_GPU = re.compile(r"\[GPU::\s*(\d+)\s*\]")


def _gpus_named(facts: NodeFacts, parsed: ParsedOutput, text: str) -> str:
    """RVS names a GPU by its KFD gpu_id (``[GPU:: 10279]``): say which GPU that is, by index and PCI address.

    The id is looked up among the node's GPUs (amd-smi), else RVS's own GPU list; an id neither
    knows stays as RVS printed it.
    """
    if "GPU::" not in text:
        return text
    known: dict[int, tuple[int | None, str | None]] = {}
    for gpu in getattr(parsed.data, "gpus", None) or []:
        if gpu.gpu_id is not None:
            known[gpu.gpu_id] = (gpu.index, gpu.bdf)
    for record in facts.gpus:
        if record.identity.kfd_gpu_id is not None:
            known[record.identity.kfd_gpu_id] = (record.identity.index, record.identity.bdf)

    def named(match: re.Match[str]) -> str:
        index, bdf = known.get(int(match.group(1)), (None, None))
        if index is None and bdf is None:
            return match.group(0)
        where = ", ".join(part for part in (f"gpu{index}" if index is not None else "", bdf or "") if part)
        return f"[{where} (RVS id {match.group(1)})]"

    return _RVS_GPU.sub(named, text)


def _tool_errors(facts: NodeFacts, parsed: ParsedOutput, count: int) -> str | None:
    """The tool's first ``count`` complaints, one line, GPUs named as the console names them."""
    detail = "; ".join(parsed.errors[:count])
    return _gpus_named(facts, parsed, detail) if detail else None


def _summary_metric(probe: str, key: str) -> Metric:
    def extract(facts: NodeFacts) -> list[Observation]:
        parsed = facts.parsed(probe)
        if not isinstance(parsed, ParsedOutput):
            return [Observation(_node(facts), None, facts.missing_reason([probe]) or f"{probe} not run", probe)]
        value = parsed.summary.get(key)
        detail = _tool_errors(facts, parsed, 2)
        # Without the figure, the parser's reason (``<key>_unread``) or the tool's own complaint says why
        # (a crash, no table); else that it is absent.
        unread = parsed.summary.get(f"{key}_unread")
        missing = None if value is not None else (unread or detail or f"not in the {probe} output")
        return [Observation(_node(facts), value, missing, probe, detail=detail)]

    return extract


def _ok_metric(probe: str, covers_gpus: bool = False) -> Metric:
    """The run's own verdict. With ``covers_gpus``, a passing run is a verdict on the node only when it
    tested every GPU amd-smi lists: a run on fewer (a rank missing, a GPU RVS skipped) judged the rest
    of them not at all, so it is no value, with why, rather than a PASS."""

    def extract(facts: NodeFacts) -> list[Observation]:
        parsed = facts.parsed(probe)
        if not isinstance(parsed, ParsedOutput):
            return [Observation(_node(facts), None, facts.missing_reason([probe]) or f"{probe} not run", probe)]
        detail = _tool_errors(facts, parsed, 3)
        # A passing run whose output the parser could not take as the tool's own (``ok_unread``) is no verdict.
        unread = parsed.summary.get("ok_unread") if parsed.ok else None
        if isinstance(unread, str):
            return [Observation(_node(facts), None, unread, probe, detail=detail)]
        untested = _gpus_untested(facts, parsed, probe) if covers_gpus and parsed.ok else None
        if untested is not None:
            return [Observation(_node(facts), None, untested, probe, detail=detail)]
        return [Observation(_node(facts), parsed.ok, None, probe, detail=detail)]

    return extract


def _gpus_untested(facts: NodeFacts, parsed: ParsedOutput, probe: str) -> str | None:
    """Why ``parsed`` does not cover the node's GPUs, or None when it tested as many as amd-smi lists.

    Without amd-smi's count there is nothing to compare with; the checks that read amd-smi say so."""
    listed = next((o.value for o in gpu_count(facts) if isinstance(o.value, int)), None)
    if listed is None:
        return None
    tested = parsed.summary.get("gpu_count")
    if not isinstance(tested, int) or isinstance(tested, bool):
        return f"{probe} names no GPU it tested; amd-smi lists {listed}"
    if tested < listed:
        return f"{probe} tested {tested} of the {listed} GPUs amd-smi lists: the other {listed - tested} not judged"
    return None


@metric("tb.healthcheck_ok")
def tb_healthcheck(facts: NodeFacts) -> list[Observation]:
    """Whether TransferBench's healthcheck preset passed. It declines hardware it has no criteria for
    (anything but 8 x gfx942): that is no value, with the tool's own words, for the check's SKIP."""
    parsed = facts.parsed(ProbeId.TB_HEALTHCHECK)
    if not isinstance(parsed, ParsedOutput):
        missing = facts.missing_reason([ProbeId.TB_HEALTHCHECK]) or "tb.healthcheck not run"
        return [Observation(_node(facts), None, missing, ProbeId.TB_HEALTHCHECK)]
    if getattr(parsed.data, "unsupported", False):
        said = next((w for w in parsed.warnings if "not supported" in w or "only supported" in w), "declined")
        return [Observation(_node(facts), None, f"the preset declined this node: {said}", ProbeId.TB_HEALTHCHECK)]
    detail = "; ".join(parsed.errors[:3]) or None
    if parsed.errors and all(error.startswith("incomplete:") for error in parsed.errors):
        # Nothing failed, and not every test ran: the tests left out were never judged.
        return [Observation(_node(facts), None, detail, ProbeId.TB_HEALTHCHECK, unread=True)]
    return [Observation(_node(facts), parsed.ok, None, ProbeId.TB_HEALTHCHECK, detail=detail)]


def _sized(read: Metric, size_key: str, setting: str, *, largest: bool, required: bool) -> Metric:
    """``read`` where the run reached the message size its rule is stated at (the pack's ``setting``, in bytes):
    a floor stated at 8 GB says nothing of a paste whose largest row is 8 MB. Short of it, each value is
    missing, "sizes not covered": unjudged (UNKNOWN) when ``required``, else not in the output (``Absent``)."""

    def extract(facts: NodeFacts) -> list[Observation]:
        observations = read(facts)
        parsed = facts.parsed(ProbeId.RCCL_ALL_REDUCE)
        summary = parsed.summary if isinstance(parsed, ParsedOutput) else {}
        size, wanted = summary.get(size_key), facts.settings.get(setting)
        if not isinstance(size, int) or not isinstance(wanted, int) or (size >= wanted if largest else size <= wanted):
            return observations
        which, bound = ("largest", ">=") if largest else ("smallest", "<=")
        said = f"sizes not covered: the {which} size run is {size} bytes; the rule is stated at {bound} {wanted} bytes"
        asked = summary.get("max_bytes_asked")
        # A whole run that was not asked for the size (``-e 128M``) lost nothing: the rule does not apply to it.
        not_asked = largest and summary.get("complete") is True and isinstance(asked, int) and asked <= size
        missing = said if required and not not_asked else Absent(said)
        return [replace(o, value=None, missing=missing) if o.value is not None else o for o in observations]

    return extract


for _name, _probe, _key in (
    ("rccl.busbw_inplace_max_gbps", ProbeId.RCCL_ALL_REDUCE, "inplace_busbw_at_max_size_gbps"),
    ("rccl.wrong_total", ProbeId.RCCL_ALL_REDUCE, "wrong_total"),
    ("rccl.small_time_us", ProbeId.RCCL_ALL_REDUCE, "inplace_time_at_min_size_us"),
    ("tb.a2a_min_gbps", ProbeId.TB_A2A, "min_gbps"),
    ("tb.p2p_min_gbps", ProbeId.TB_P2P, "min_gbps"),
    ("rvs.fail_count", ProbeId.RVS_LEVEL3, "fail_count"),
):
    METRICS[_name] = _summary_metric(_probe, _key)
# The busbw floor is what an all_reduce run is for: a run short of its size proves nothing of the node. The
# small-message time is one figure more: a paste without small sizes does not show it.
METRICS["rccl.busbw_inplace_max_gbps"] = _sized(
    METRICS["rccl.busbw_inplace_max_gbps"], "max_size_bytes", "rccl_busbw_min_size_bytes", largest=True, required=True
)
METRICS["rccl.small_time_us"] = _sized(
    METRICS["rccl.small_time_us"], "min_size_bytes", "rccl_small_size_max_bytes", largest=False, required=False
)

for _name, _probe in (
    ("tb.a2a_ok", ProbeId.TB_A2A),
    ("tb.p2p_ok", ProbeId.TB_P2P),
):
    METRICS[_name] = _ok_metric(_probe)
# Tests that drive every GPU of the node: a run on fewer is no verdict on the others.
METRICS["rccl.ok"] = _ok_metric(ProbeId.RCCL_ALL_REDUCE, covers_gpus=True)
METRICS["rvs.ok"] = _ok_metric(ProbeId.RVS_LEVEL3, covers_gpus=True)


def _cper(facts: NodeFacts, wanted: str) -> list[Observation]:
    """Per GPU, the CPER records of severity class ``wanted`` that count (``console.checks.cper``)."""
    parsed = facts.parsed(ProbeId.AMDSMI_CPER)
    if not isinstance(parsed, ParsedOutput) or not parsed.ok or getattr(parsed.data, "kind", None) != "ras":
        # Nothing listed is not "no records": the check says why it could not judge (never 0, never PASS).
        why = "; ".join(parsed.errors[:2]) if isinstance(parsed, ParsedOutput) and parsed.errors else "no CPER listing"
        return [Observation(_node(facts), None, f"amdsmi.cper: {why}", ProbeId.AMDSMI_CPER)]
    records = list(getattr(parsed.data, "cper", None) or [])
    now = time.time()
    uptime = facts.parsed(ProbeId.HOST_UPTIME)
    booted = now - uptime if isinstance(uptime, float) else None
    max_age = facts.settings.get("cper_max_age_h")
    max_age_h = float(max_age) if isinstance(max_age, int | float) and not isinstance(max_age, bool) else None
    by_gpu: dict[int | None, list[CperRecord]] = {}
    listed: dict[int | None, int] = {}  # every severity: the old read limit cut a device's whole listing
    for record in records:
        listed[record.gpu_index] = listed.get(record.gpu_index, 0) + 1
        if severity_class(record) == wanted:
            by_gpu.setdefault(record.gpu_index, []).append(record)
    known = {gpu.identity.index: gpu for gpu in facts.gpus}
    subjects: list[tuple[int | None, Subject]] = [(index, _gpu_subject(facts, gpu)) for index, gpu in known.items()]
    # Records on a GPU amd-smi's list did not show (or with no GPU, ``-``) are the node's: never dropped.
    strays = [index for index in by_gpu if index not in known]
    if strays or not subjects:
        subjects.append((None, _node(facts)))
    pages_read = facts.answered([ProbeId.AMDSMI_BAD_PAGES])
    skipped = unread_cper_lines(parsed.warnings)
    # A listing with a section per GPU (6.4.1) that has none for a GPU did not read that GPU's records at all.
    sections = getattr(parsed.data, "cper_gpus", None)
    observations = []
    for index, subject in subjects:
        if sections is not None and index is not None and index not in sections and not skipped:
            # (With lines not read as records, the GPU is UNKNOWN below, for a reason that covers every GPU.)
            said = f"amdsmi.cper: the listing has no section for GPU {index} (it lists GPU {_indices(sections)})"
            observations.append(Observation(subject, None, Unread(said), ProbeId.AMDSMI_CPER, unread=True))
            continue
        mine = by_gpu.get(index, []) if index is not None else [r for i in strays for r in by_gpu[i]]
        counted = tally(mine, now=now, booted=booted, max_age_h=max_age_h)
        action, action_why = counted.action()
        gpu = known.get(index) if index is not None else None
        if (
            action is Remedy.RMA
            and gpu is not None
            and (doubt := bad_page_doubt(counted.counted, gpu.bad_pages, pages_read=pages_read))
        ):
            # AFID 19 says the bad-page threshold was reached; the GPU's own retired pages say otherwise.
            action, action_why = Remedy.REBOOT, doubt
        cut = truncation_doubt(listed.get(index, 0), facts.stack.get("rocm")) if index is not None else None
        if skipped and not counted.counted:
            # A line of the listing the parser could not read as a record may be a record of any GPU and any
            # severity: none counted here is then no proof of none.
            observations.append(Observation(subject, None, skipped, ProbeId.AMDSMI_CPER))
            continue
        if cut is not None and not counted.counted:
            # No record of this class among the 20 read is no proof there is none among those not read.
            observations.append(Observation(subject, None, cut, ProbeId.AMDSMI_CPER))
            continue
        observations.append(
            Observation(
                subject,
                float(len(counted.counted)),
                probe=ProbeId.AMDSMI_CPER,
                detail="; ".join(
                    p
                    for p in (
                        counted.detail(severity=wanted == "unknown"),
                        action_why if action is Remedy.REBOOT else None,
                        cut,
                        skipped,
                    )
                    if p
                ),
                always_detail=bool(counted.ignored or counted.notes),
                action=action,
                action_source=action_why,
            )
        )
    return observations


def _indices(indices: Iterable[int]) -> str:
    shown = sorted(indices)
    return ", ".join(str(i) for i in shown[:8]) + (", ..." if len(shown) > 8 else "") if shown else "none"


# How a CPER parser says a line of the listing was no record it could read (``tables.parse_cper`` and the
# 6.4.1 header dump of ``probes.amdsmi.cper``); a key it did not read inside a record is another warning.
_UNREAD_CPER = ("not a CPER record: ", "not a CPER header line: ")


def unread_cper_lines(warnings: Iterable[str]) -> str | None:
    """Why the CPER listing may hold records not counted: the lines its parser could not read, or None."""
    unread = [w.split(": ", 1)[1] for w in warnings if w.startswith(_UNREAD_CPER)]
    if not unread:
        return None
    more = f" (+{len(unread) - 1} more)" if len(unread) > 1 else ""
    return f"{len(unread)} line(s) of the CPER listing not read as records, e.g. {unread[0][:120]!r}{more}"


@metric("gpu.cper_fatal")
def cper_fatal(facts: NodeFacts) -> list[Observation]:
    """Fatal and boot-time CPER records of this boot, younger than the pack's ``cper_max_age_h``."""
    return _cper(facts, "fatal")


@metric("gpu.cper_uncorrected")
def cper_uncorrected(facts: NodeFacts) -> list[Observation]:
    """Non-fatal uncorrected CPER records (poison consumed, deferred errors) of this boot, recent enough."""
    return _cper(facts, "uncorrected")


@metric("gpu.cper_unrecognised")
def cper_unrecognised(facts: NodeFacts) -> list[Observation]:
    """CPER records of a severity the console does not know (amd-smi's ``UNKNOWN``, a new word, none), of
    this boot and recent enough: counted here so that no listed record goes unjudged."""
    return _cper(facts, "unknown")


# Metrics of change -> the check whose figures they compare with the history's, and how one subject's
# change reads from its figure now (a console judges them from a node-judged report's kept figures).
CHANGE_METRICS: dict[str, tuple[str, Callable[..., Observation]]] = {
    "gpu.ecc_correctable_increase": ("ecc.correctable", correctable_increase),
}


# -- the PyTorch framework probe (console.probes.pytorch) -----------------------------------------------

_MODEL_TOKEN = re.compile(r"\bMI\d{3}[A-Z]*\b", re.IGNORECASE)


def _torch_result(facts: NodeFacts) -> tuple[Any, Observation | None]:
    """The framework probe's result, or the one node observation saying why there is none."""
    parsed = facts.parsed(ProbeId.FRAMEWORK_TORCH)
    data = getattr(parsed, "data", None)
    if data is None:
        missing = facts.missing_reason([ProbeId.FRAMEWORK_TORCH]) or "framework.torch not run"
        return None, Observation(_node(facts), None, missing, ProbeId.FRAMEWORK_TORCH)
    return data, None


def _torch_gpu(facts: NodeFacts, device: Any) -> tuple[Subject, GpuRecord | None]:
    """The GPU a torch device is: by PCI address when torch reports it, else by enumeration index (HIP and
    amd-smi both enumerate in PCI order)."""
    record = None
    if device.pci_bus_id:
        record = next((g for g in facts.gpus if g.identity.bdf == device.pci_bus_id.lower()), None)
    elif device.index < len(facts.gpus):
        record = facts.gpus[device.index]
    bdf = record.identity.bdf if record is not None else device.pci_bus_id
    return facts.subject(Scope.GPU, gpu=device.index, gpu_bdf=bdf), record


def _no_devices(facts: NodeFacts, data: Any) -> list[Observation]:
    """The node observation of a per-GPU framework metric when torch has no device to report on: why."""
    if data.devices:
        return []
    why = _torch_not_imported(data) or f"torch sees no GPU (torch.cuda.is_available() = {data.torch.cuda_available})"
    return [Observation(_node(facts), None, why, ProbeId.FRAMEWORK_TORCH)]


def _torch_not_imported(data: Any) -> str | None:
    build = data.torch
    if build.status.value != "ok":
        return f"torch could not be imported: {build.error or build.status.value}"
    return None


@metric("framework.hip_build")
def torch_hip_build(facts: NodeFacts) -> list[Observation]:
    """True when the node's torch imports and is a ROCm (HIP) build that sees a GPU."""
    data, missing = _torch_result(facts)
    if missing is not None:
        return [missing]
    build = data.torch
    if (why := _torch_not_imported(data)) is not None:
        return [Observation(_node(facts), False, None, ProbeId.FRAMEWORK_TORCH, detail=why)]
    detail = f"torch {build.version or '?'}, {build.build_label()}, torch.cuda.is_available() = {build.cuda_available}"
    value = build.is_hip and bool(build.cuda_available)
    return [Observation(_node(facts), value, None, ProbeId.FRAMEWORK_TORCH, detail=detail)]


@metric("framework.devices_unseen")
def torch_devices_unseen(facts: NodeFacts) -> list[Observation]:
    """GPUs amd-smi lists that torch does not see (negative: torch sees more than amd-smi lists)."""
    data, missing = _torch_result(facts)
    if missing is not None:
        return [missing]
    listed = next((o.value for o in gpu_count(facts) if isinstance(o.value, int)), None)
    if listed is None:
        unlisted = facts.missing_reason([ProbeId.AMDSMI_LIST]) or "amd-smi did not say how many GPUs the node has"
        return [Observation(_node(facts), None, unlisted, ProbeId.FRAMEWORK_TORCH)]
    if (why := _torch_not_imported(data)) is not None:
        return [Observation(_node(facts), None, why, ProbeId.FRAMEWORK_TORCH)]
    seen = data.torch.device_count
    if seen is None:
        return [Observation(_node(facts), None, "torch did not report a device count", ProbeId.FRAMEWORK_TORCH)]
    detail = f"torch sees {seen} of the {listed} GPUs amd-smi lists"
    return [Observation(_node(facts), listed - seen, None, ProbeId.FRAMEWORK_TORCH, detail=detail)]


def _model_of(name: str) -> str:
    token = _MODEL_TOKEN.search(name)
    return token.group(0).upper() if token else " ".join(name.lower().split())


def _per_torch_device(
    facts: NodeFacts, read: Callable[[Any, GpuRecord | None], tuple[Any, str | None, str | None]]
) -> list[Observation]:
    """One observation per device torch sees: ``read(device, its amd-smi record)`` gives the value, why it
    is missing and a detail; the node's one observation saying why when torch gave nothing to read."""
    data, missing = _torch_result(facts)
    if missing is not None:
        return [missing]
    if unseen := _no_devices(facts, data):
        return unseen
    observations = []
    for device in data.devices:
        subject, record = _torch_gpu(facts, device)
        value, why, detail = read(device, record)
        observations.append(Observation(subject, value, why, ProbeId.FRAMEWORK_TORCH, detail=detail))
    return observations


@metric("framework.device_model_matches")
def torch_device_model(facts: NodeFacts) -> list[Observation]:
    """Per torch device: whether the model torch names is the one amd-smi names for that GPU."""

    def read(device: Any, record: GpuRecord | None) -> tuple[Any, str | None, str | None]:
        smi = record.identity.market_name if record is not None else None
        if not device.name or not smi:
            return (
                None,
                "torch did not name the device" if not device.name else "amd-smi names no model for this GPU",
                None,
            )
        return _model_of(device.name) == _model_of(smi), None, f"torch: {device.name}; amd-smi: {smi}"

    return _per_torch_device(facts, read)


def _gemm_metric(stage_name: str) -> Metric:
    def read(device: Any, _: GpuRecord | None) -> tuple[Any, str | None, str | None]:
        stage = getattr(device, stage_name)
        if stage.tflops is not None:
            return stage.tflops, None, None
        said = f": {stage.error}" if stage.error else ""
        return None, f"{stage_name} GEMM {stage.status.value}{said}", None

    def extract(facts: NodeFacts) -> list[Observation]:
        observations = _per_torch_device(facts, read)
        data, _ = _torch_result(facts)
        # A stage skipped or absent with no reason is not a GPU that cannot run it (``unsupported``, the
        # check's SKIP): UNKNOWN on that GPU.
        unrun = {
            d.index for d in (data.devices if data is not None else []) if getattr(d, stage_name).status.value in _UNRUN
        }
        return [replace(o, unread=True) if o.value is None and o.subject.gpu in unrun else o for o in observations]

    return extract


_UNRUN = ("skipped", "missing")
METRICS["framework.bf16_tflops"] = _gemm_metric("bf16")
METRICS["framework.fp8_tflops"] = _gemm_metric("fp8")


@metric("framework.gemm_nonfinite")
def torch_gemm_nonfinite(facts: NodeFacts) -> list[Observation]:
    """NaN or Inf elements in a device's GEMM results (BF16 and FP8 added up)."""

    def read(device: Any, _: GpuRecord | None) -> tuple[Any, str | None, str | None]:
        checked = [s for s in (device.bf16, device.fp8) if s.nonfinite is not None]
        if not checked:
            return None, "no GEMM result was checked", None
        counts = {name: s.nonfinite for name, s in (("bf16", device.bf16), ("fp8", device.fp8)) if s.nonfinite}
        detail = ", ".join(f"{name} {count}" for name, count in counts.items()) or None
        return float(sum(s.nonfinite for s in checked)), None, detail

    return _per_torch_device(facts, read)


@metric("framework.all_reduce_correct")
def torch_all_reduce(facts: NodeFacts) -> list[Observation]:
    """Whether the one-node torch.distributed all-reduce gave the exact sum on every rank."""
    data, missing = _torch_result(facts)
    if missing is not None:
        return [missing]
    stage = data.all_reduce
    if stage.correct is None:
        said = f": {stage.error}" if stage.error else ""
        return [Observation(_node(facts), None, f"all-reduce {stage.status.value}{said}", ProbeId.FRAMEWORK_TORCH)]
    detail = (
        f"{stage.backend}, {stage.world_size} ranks, max error {stage.max_abs_error:g}, {stage.nonfinite} NaN/Inf"
        if stage.max_abs_error is not None
        else None
    )
    count = data.torch.device_count
    if stage.correct and count is not None and stage.world_size != count:
        # A correct sum over fewer ranks than devices said nothing of the others.
        ranks = "an unreported number of" if stage.world_size is None else str(stage.world_size)
        why = f"all-reduce ran on {ranks} ranks of the {count} devices torch counts"
        return [Observation(_node(facts), None, why, ProbeId.FRAMEWORK_TORCH, detail=detail)]
    return [Observation(_node(facts), stage.correct, None, ProbeId.FRAMEWORK_TORCH, detail=detail)]


@metric("framework.stages_ok")
def torch_stages(facts: NodeFacts) -> list[Observation]:
    """False when a stage after the import raised (its error text is the detail)."""
    data, missing = _torch_result(facts)
    if missing is not None:
        return [missing]
    if (why := _torch_not_imported(data)) is not None:
        return [Observation(_node(facts), None, why, ProbeId.FRAMEWORK_TORCH)]
    errors = data.stage_errors()
    detail = "; ".join(errors[:3]) or None
    if not errors and (unrun := _torch_unrun(data)):
        # Nothing raised, but not every device torch counts ran every stage: no verdict on those.
        return [Observation(_node(facts), None, "; ".join(unrun[:3]), ProbeId.FRAMEWORK_TORCH)]
    return [Observation(_node(facts), not errors, None, ProbeId.FRAMEWORK_TORCH, detail=detail)]


def _torch_unrun(data: Any) -> list[str]:
    """What the probe left out on the devices torch counts: a device without its entry, one reported twice,
    a GEMM stage skipped or absent with no error (``unsupported`` is a reason, said by the fp8 check)."""
    said = []
    indexes = [device.index for device in data.devices]
    count = data.torch.device_count
    if count is not None:
        absent = [i for i in range(count) if i not in indexes]
        if absent:
            said.append(
                f"torch counts {count} devices, the probe reported none for gpu{', gpu'.join(map(str, absent))}"
            )
    twice = sorted({i for i in indexes if indexes.count(i) > 1})
    if twice:
        said.append(f"device entries repeated for gpu{', gpu'.join(map(str, twice))}")
    for device in data.devices:
        for name in ("bf16", "fp8"):
            stage = getattr(device, name)
            if stage.status.value in _UNRUN:
                reason = f": {stage.error}" if stage.error else ""
                said.append(f"gpu{device.index} {name} GEMM {stage.status.value}{reason}")
    return said
