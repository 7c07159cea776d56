"""What one ``amd-smi`` output says, normalised: GPUs, links, processes, versions and amd-smi-only facts.

Shared GPU facts (identity, telemetry, firmware, ECC, bad pages) live in the ``console.model.gpu``
types so they join with rocm-smi and rocminfo on PCI address. Facts only amd-smi reports (static
limits, clock levels, partitions, CPER records, watch samples) are kept here.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from console.model.base import Model, Numerous, WithUnavailable
from console.model.gpu import GpuMetrics, GpuProcess, GpuRecord, LinkStatus, StackVersions, TopologyLink, XgmiLink


class AmdSmiForm(StrEnum):
    """How the output was printed; the JSON schema changed between ROCm 6.x and 7.x."""

    JSON_LIST = "json-list"
    JSON_GPU_DATA = "json-gpu_data"
    JSON_WATCH = "json-watch"
    TEXT = "text"
    CSV = "csv"
    TABLE = "table"
    BOX = "box"
    ERROR = "error"


class ClockLevels(Numerous):
    """Supported DPM levels of one clock domain (``static --clock``), in MHz."""

    domain: str
    current_level: int | None = None
    levels_mhz: list[float | None] = Field(default_factory=list, description="index = level; None where N/A")


class GpuStaticDetails(WithUnavailable):
    """amd-smi ``static`` facts that have no place in the shared GPU model."""

    gpu_index: int | None = None
    bdf: str | None = None
    driver_name: str | None = None
    driver_version: str | None = Field(None, description="verbatim; may be the whole /proc/version banner")
    os_kernel_version: str | None = None
    max_pcie_width: int | None = None
    max_pcie_speed_gts: float | None = None
    pcie_interface_gen: int | None = None
    slot_type: str | None = None
    power_cap_w: float | None = Field(None, description="socket power limit (PPT0)")
    power_cap_max_w: float | None = None
    power_cap_min_w: float | None = None
    slowdown_edge_temp_c: float | None = None
    slowdown_hotspot_temp_c: float | None = None
    slowdown_vram_temp_c: float | None = None
    shutdown_edge_temp_c: float | None = None
    shutdown_hotspot_temp_c: float | None = None
    shutdown_vram_temp_c: float | None = None
    vram_type: str | None = None
    vram_vendor: str | None = None
    vram_size_bytes: int | None = None
    vram_bit_width: int | None = None
    vram_max_bandwidth_gbps: float | None = Field(None, description="GB/s as amd-smi prints")
    numa_node: int | None = None
    numa_affinity: int | None = None
    ras_eeprom_version: str | None = None
    ras_schemas: dict[str, str] = Field(default_factory=dict, description="parity/single_bit/... -> ENABLED/DISABLED")
    ecc_block_state: dict[str, str] = Field(default_factory=dict, description="RAS block -> ENABLED/DISABLED")
    process_isolation: str | None = None
    clock_levels: list[ClockLevels] = Field(default_factory=list)


class PartitionState(Model):
    """Current compute/memory partition of one GPU (``amd-smi partition``, ``static -p``, ``set`` results)."""

    gpu_index: int | None = None
    memory_partition: str | None = Field(None, description="NPS1, NPS4, ...")
    compute_partition: str | None = Field(None, description="SPX, DPX, QPX, CPX, ...")
    profile_index: int | None = None
    partition_ids: list[int] = Field(default_factory=list)
    message: str | None = Field(None, description="the tool's words for a set operation, verbatim")


class XgmiPortStatus(Numerous):
    """Per-port XGMI status of one GPU (``xgmi --source-status`` / port table): U, D, X or N/A per port."""

    gpu_index: int | None = None
    bdf: str | None = None
    ports: list[LinkStatus] = Field(default_factory=list)


class CperRecord(Model):
    """One CPER record from ``amd-smi ras --cper``, whichever form printed it (table, the 6.4.1 header dump,
    the ``--json`` rows of the newer CLI, or a ``<prefix>-<n>.json`` header file of ``--folder``)."""

    gpu_index: int | None = None
    timestamp: str | None = None
    severity: str | None = None
    file_name: str | None = None
    afids: list[str] = Field(default_factory=list, description="AMD Field IDs, as printed (with --folder)")
    afid_note: str | None = Field(
        None, description="why the AFIDs cell holds no usable id: '-', 'decode failed', an invalid id (2^64-1)"
    )
    afid_unknown: bool = Field(
        False, description="amd-smi printed the invalid AFID (2^64-1, or -1): the record counts, its AFID is unknown"
    )
    notify_type: str | None = Field(None, description="MCE, CMC, BOOT... (header dump, JSON header file)")
    record_id: str | None = Field(None, description="the driver's record id, e.g. '5:1' (header forms only)")


class EngineActivity(Numerous):
    """Per-engine busy percentages (``usage``: VCN/JPEG lists, per-XCP ``gfx_busy_inst``...)."""

    gpu_index: int | None = None
    engine: str = Field(description="amd-smi key, e.g. jpeg_activity, vcn_busy, gfx_busy_inst")
    xcp: int | None = Field(None, description="compute partition for per-XCP lists")
    percents: list[float | None] = Field(default_factory=list, description="None where the tool printed N/A")


class MetricSample(Model):
    """One reading of one GPU in a watch-mode or monitor output (time series kept for counter diffs)."""

    timestamp: int | None = Field(None, description="epoch seconds as amd-smi printed them")
    gpu_index: int | None = None
    xcp: int | None = Field(None, description="compute partition row in monitor tables")
    metrics: GpuMetrics = Field(default_factory=GpuMetrics)


class AmdSmiResult(Model):
    """The typed content of one amd-smi output, whatever subcommand and form produced it."""

    kind: str = Field(description="subcommand: version, list, static, metric, firmware, xgmi, topology, ...")
    form: AmdSmiForm
    gpus: list[GpuRecord] = Field(default_factory=list, description="one per GPU or logical partition shown")
    details: list[GpuStaticDetails] = Field(default_factory=list)
    xgmi_links: list[XgmiLink] = Field(default_factory=list)
    xgmi_ports: list[XgmiPortStatus] = Field(default_factory=list)
    topology: list[TopologyLink] = Field(default_factory=list)
    versions: StackVersions | None = None
    processes: list[GpuProcess] = Field(default_factory=list)
    process_gpus: list[int] = Field(
        default_factory=list, description="GPU indices whose process list was read (empty list = idle)"
    )
    partitions: list[PartitionState] = Field(default_factory=list)
    cper: list[CperRecord] = Field(default_factory=list)
    cper_gpus: list[int] | None = Field(
        None, description="GPUs the CPER listing has a section for (6.4.1 dump); None: a form naming GPUs by record"
    )
    engines: list[EngineActivity] = Field(default_factory=list)
    samples: list[MetricSample] = Field(default_factory=list)
    platform: str | None = Field(None, description="'Linux Baremetal', 'Linux Guest', ... from the box view")

    @model_serializer(mode="wrap")
    def _without_unset_sections(self, handler: SerializerFunctionWrapHandler) -> Any:
        # ``cper_gpus`` only where a CPER listing set it: every other output dumps as it did before it came.
        data = handler(self)
        if isinstance(data, dict) and data.get("cper_gpus", ()) is None:
            del data["cper_gpus"]
        return data
