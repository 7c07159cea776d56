"""What the GPU tools (amd-smi, rocm-smi, rocminfo) report about GPUs, normalised.

Units are fixed by the field name suffix: ``_c`` degrees Celsius, ``_w`` watts, ``_mhz`` MHz,
``_bytes`` bytes, ``_gts`` PCIe GT/s, ``_gbps`` gigabytes per second, ``_pct`` percent.
GPUs from different tools are joined on the PCI address (``bdf``, always ``dddd:bb:dd.f``),
never on an index: amd-smi, rocm-smi, HIP and KFD number GPUs differently.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from console.model.base import Model, Numerous, WithUnavailable


class GpuIdentity(WithUnavailable):
    """Who a GPU (or logical partition) is. ``bdf`` is the join key across tools."""

    index: int | None = Field(None, description="the tool's own index (amd-smi GPU n, rocm-smi GPU[n])")
    bdf: str | None = Field(None, description="PCI address, normalised to dddd:bb:dd.f, lower case")
    kfd_gpu_id: int | None = Field(None, description="KFD gpu_id as RVS prints it (e.g. 28851)")
    kfd_node: int | None = Field(None, description="KFD topology node id")
    uuid: str | None = None
    serial: str | None = None
    market_name: str | None = None
    product_name: str | None = None
    vendor_id: str | None = Field(None, description="hex, e.g. 0x1002")
    device_id: str | None = Field(None, description="hex, e.g. 0x74a1")
    subsystem_id: str | None = None
    revision_id: str | None = None
    gfx_target: str | None = Field(None, description="LLVM target, e.g. gfx942")
    compute_units: int | None = None
    vbios_version: str | None = Field(None, description="VBIOS or, from ROCm 7, IFWI version")
    vbios_part_number: str | None = None
    compute_partition: str | None = Field(None, description="SPX, DPX, QPX, CPX, ...")
    memory_partition: str | None = Field(None, description="NPS1, NPS4, ...")
    partition_id: int | None = None
    oam_id: int | None = None


class PcieLink(WithUnavailable):
    """Host PCIe link of one GPU: current vs maximum, plus error counters (cumulative)."""

    speed_gts: float | None = None
    width: int | None = None
    max_speed_gts: float | None = None
    max_width: int | None = None
    interface_gen: int | None = Field(None, description="PCIe generation the link runs at")
    bandwidth_mbps: float | None = Field(None, description="instantaneous bandwidth, Mb/s as amd-smi reports")
    replay_count: int | None = None
    replay_rollover_count: int | None = None
    l0_to_recovery_count: int | None = None
    nak_sent_count: int | None = None
    nak_received_count: int | None = None


class Violation(Numerous):
    """One throttle/violation type (PVIOL, TVIOL, ...): share of the window spent throttled."""

    name: str
    percent: float | None = None
    active: bool | None = None
    accumulated: int | None = None


class GpuMetrics(WithUnavailable):
    """Live telemetry of one GPU."""

    edge_temp_c: float | None = None
    hotspot_temp_c: float | None = None
    mem_temp_c: float | None = None
    power_w: float | None = Field(None, description="current socket power")
    power_cap_w: float | None = None
    power_cap_max_w: float | None = None
    gfx_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    gfx_util_pct: float | None = None
    mem_util_pct: float | None = None
    vram_total_bytes: int | None = None
    vram_used_bytes: int | None = None
    energy_j: float | None = None
    fan_pct: float | None = None
    throttle_status: str | None = Field(None, description="pre-MI300 THROTTLE_STATUS string")
    xgmi_error_status: str | None = Field(
        None, description="amd-smi metric --xgmi-err: none, error or multiple errors since the last read"
    )
    violations: list[Violation] = Field(default_factory=list)
    pcie: PcieLink | None = None


class EccBlock(Numerous):
    """Error counts of one RAS block (UMC, SDMA, GFX, MMHUB, PCIE_BIF, XGMI_WAFL, ...)."""

    block: str
    correctable: int | None = None
    uncorrectable: int | None = None
    deferred: int | None = None
    state: str | None = Field(None, description="ENABLED / DISABLED / N/A when the tool says")


class EccCounts(WithUnavailable):
    """ECC totals and per-block counts of one GPU."""

    correctable: int | None = None
    uncorrectable: int | None = None
    deferred: int | None = None
    cache_correctable: int | None = None
    cache_uncorrectable: int | None = None
    blocks: list[EccBlock] = Field(default_factory=list)


class BadPage(Numerous):
    """One retired, pending or unreservable VRAM page."""

    address: str
    size_bytes: int | None = None
    status: str = Field(description="retired / pending / unreservable / the tool's word")


class BadPages(WithUnavailable):
    """Bad-page state of one GPU. ``threshold`` comes from ``amd-smi static --ras``."""

    retired: list[BadPage] = Field(default_factory=list)
    pending: list[BadPage] = Field(default_factory=list)
    unreservable: list[BadPage] = Field(default_factory=list)
    threshold: int | None = None
    threshold_exceeded: bool | None = None


class LinkStatus(StrEnum):
    """State of one XGMI link as the tools show it."""

    UP = "up"
    DOWN = "down"
    SELF = "self"
    DISABLED = "disabled"
    UNKNOWN = "unknown"


class XgmiLink(WithUnavailable):
    """One directed GPU-to-GPU XGMI link, from ``amd-smi xgmi`` (metric and link status)."""

    src_index: int | None = None
    dst_index: int | None = None
    src_bdf: str | None = None
    dst_bdf: str | None = None
    status: LinkStatus = LinkStatus.UNKNOWN
    bit_rate_gbps: float | None = Field(None, description="link bit rate in Gb/s (bits)")
    max_bandwidth_gbps: float | None = Field(None, description="max bandwidth in Gb/s (bits) as amd-smi prints")
    read_bytes: int | None = Field(None, description="accumulated read traffic")
    write_bytes: int | None = Field(None, description="accumulated write traffic")
    error_count: int | None = None


class TopologyLink(WithUnavailable):
    """One GPU pair from ``amd-smi topology`` or ``rocm-smi --showtopo``."""

    src_index: int | None = None
    dst_index: int | None = None
    src_bdf: str | None = None
    dst_bdf: str | None = None
    accessible: bool | None = None
    weight: int | None = None
    hops: int | None = None
    link_type: str | None = Field(None, description="SELF / XGMI / PCIE / ...")
    numa_bw_min_mbps: float | None = None
    numa_bw_max_mbps: float | None = None


class GpuProcess(Model):
    """A process holding a GPU."""

    gpu_index: int | None = None
    gpu_bdf: str | None = None
    pid: int
    name: str | None = None
    vram_bytes: int | None = None


class StackVersions(WithUnavailable):
    """Versions of the software stack as the GPU tools report them."""

    amdsmi_tool: str | None = None
    amdsmi_lib: str | None = None
    rocm: str | None = None
    amdgpu_driver: str | None = None
    hsmp_driver: str | None = None
    rocm_smi: str | None = None
    hsa_runtime: str | None = None
    kfd_version: str | None = None


class GpuRecord(Numerous):
    """Everything one output says about one GPU, joined on ``identity.bdf``."""

    identity: GpuIdentity = Field(default_factory=GpuIdentity)
    metrics: GpuMetrics | None = None
    firmware: dict[str, str] = Field(default_factory=dict, description="block name -> version string")
    ecc: EccCounts | None = None
    bad_pages: BadPages | None = None


def merge_gpu_records(records: list[GpuRecord], *, same_tool: bool = False) -> list[GpuRecord]:
    """Join GPU records from several outputs on PCI address; records without one keep their place.

    With ``same_tool`` (all records come from one tool, e.g. amd-smi static + metric), a record
    without an address joins the record with the same tool index: amd-smi metric JSON carries only
    the index, and amd-smi numbers GPUs the same way in every subcommand.
    Later records fill fields the earlier ones left empty; they never overwrite a known value.
    """
    by_bdf: dict[str, GpuRecord] = {}
    by_index: dict[int, GpuRecord] = {}
    merged: list[GpuRecord] = []
    for record in records:
        bdf, index = record.identity.bdf, record.identity.index
        target = by_bdf.get(bdf) if bdf is not None else None
        if target is None and same_tool and index is not None:
            candidate = by_index.get(index)
            if candidate is not None and (bdf is None or candidate.identity.bdf in (None, bdf)):
                target = candidate
        if target is None:
            target = _own_copy(record)
            merged.append(target)
        else:
            _fill_missing(target, record)
        if target.identity.bdf is not None:
            by_bdf[target.identity.bdf] = target
        if same_tool and target.identity.index is not None:
            by_index.setdefault(target.identity.index, target)
    return merged


# What a merge may fill in from another tool's record (not the reasons dict: those stay the record's own).
_IDENTITY_FIELDS = tuple(name for name in GpuIdentity.model_fields if name != "unavailable")


def _own_copy(record: GpuRecord) -> GpuRecord:
    """A record whose identity and firmware table the merge may fill in.

    Metrics, ECC and bad pages are shared with the parsed output, which nothing modifies once parsed
    (parsed results are even reused across sweeps): a deep copy of every GPU record was three
    quarters of building a node's facts.
    """
    identity = record.identity.model_copy(update={"unavailable": dict(record.identity.unavailable)})
    return record.model_copy(update={"identity": identity, "firmware": dict(record.firmware)})


def _fill_missing(target: GpuRecord, source: GpuRecord) -> None:
    for name in _IDENTITY_FIELDS:
        if getattr(target.identity, name) is None and getattr(source.identity, name) is not None:
            setattr(target.identity, name, getattr(source.identity, name))
    for name in ("metrics", "ecc"):
        if getattr(target, name) is None and getattr(source, name) is not None:
            setattr(target, name, getattr(source, name))  # shared, read-only (see _own_copy)
    if source.bad_pages is not None:
        target.bad_pages = _joined_bad_pages(target.bad_pages, source.bad_pages)
    for block, version in source.firmware.items():
        target.firmware.setdefault(block, version)


def _joined_bad_pages(have: BadPages | None, more: BadPages) -> BadPages:
    """One GPU's bad pages from two subcommands: ``static --ras`` knows the threshold and lists no pages,
    ``bad-pages`` lists the pages. Whichever came first, the pages and the threshold both survive (the
    static record's empty lists used to win, and every GPU read 0 retired and 0 pending pages)."""
    if have is None:
        return more
    joined = BadPages(
        retired=have.retired or more.retired,
        pending=have.pending or more.pending,
        unreservable=have.unreservable or more.unreservable,
        threshold=have.threshold if have.threshold is not None else more.threshold,
        threshold_exceeded=have.threshold_exceeded if have.threshold_exceeded is not None else more.threshold_exceeded,
    )
    joined.unavailable = {**more.unavailable, **have.unavailable}
    return joined
