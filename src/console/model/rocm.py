"""What ``rocm-smi`` and ``rocminfo`` report, normalised.

Facts both tools share with amd-smi (identity, telemetry, firmware, PCIe, topology) live in the
``console.model.gpu`` types, so the three tools join on PCI address. What only these tools say is
kept here: rocm-smi's table layout and logical-partition rows, VRAM%, supported clock levels, KFD
processes; rocminfo's HSA runtime attributes, agents, memory pools and ISAs.
"""

from __future__ import annotations

from pydantic import Field

from console.model.base import Model, WithUnavailable
from console.model.gpu import GpuRecord, StackVersions, TopologyLink


class ClockLevel(Model):
    """One DPM level from rocm-smi's supported-clock lists (``GPU[0] : 1: 1300Mhz *``)."""

    level: str = Field(description="'0', '1', ... or 'S' for the deep-sleep level")
    mhz: float | None = Field(None, description="None for PCIe levels, which are printed as GT/s and lanes")
    text: str = Field(description="the level as printed, e.g. '1300Mhz' or '16.0GT/s x16'")
    current: bool = Field(False, description="rocm-smi marks the current level with '*'")


class KfdProcess(Model):
    """A process with a KFD (compute) context, from rocm-smi's ``KFD Processes`` table."""

    pid: int
    name: str | None = Field(None, description="None when rocm-smi prints UNKNOWN")
    gpu_count: int | None = Field(None, description="'GPU(s)' column: how many GPUs the process uses")
    vram_bytes: int | None = None
    sdma_usage: int | None = None
    cu_occupancy: int | None = None


class RocmSmiDevice(WithUnavailable):
    """One GPU or logical partition as rocm-smi lists it (``GPU[n]``, concise row ``n``, ``cardn``).

    ``shown_in_full`` is False for rows where rocm-smi printed N/A for the device ID and every reading:
    secondary partitions of a DPX/TPX/CPX GPU look like that on ROCm 6.4 (ROCm issue #4759).
    """

    index: int
    gpu: GpuRecord
    perf_level: str | None = Field(None, description="DPM performance level, e.g. 'auto', 'manual'")
    vram_used_pct: float | None = Field(None, description="share of VRAM allocated (concise VRAM%)")
    numa_node: int | None = None
    numa_affinity: int | None = None
    shown_in_full: bool = True
    supported_clocks: dict[str, list[ClockLevel]] = Field(
        default_factory=dict, description="clock domain (sclk, mclk, fclk, socclk, PCIe, ...) -> levels"
    )
    unsupported: list[str] = Field(
        default_factory=list, description="calls rocm-smi said are not supported here, e.g. 'get_power_profiles'"
    )
    properties: dict[str, str] = Field(
        default_factory=dict, description="every 'key: value' rocm-smi printed for this device, verbatim"
    )


class RocmSmiReport(Model):
    """Everything one rocm-smi output says."""

    layout: str | None = Field(
        None,
        description="concise table generation ('concise-5.x', 'concise-6.0', 'concise-6.3', 'showhw'), "
        "'keyed' for GPU[n] lines, 'json' for --json",
    )
    temp_sensor: str | None = Field(None, description="sensor of the concise Temp column: junction, edge, ...")
    power_kind: str | None = Field(None, description="concise Power column: socket (current) or average")
    devices: list[RocmSmiDevice] = Field(default_factory=list)
    topology: list[TopologyLink] = Field(default_factory=list, description="one entry per ordered GPU pair")
    processes: list[KfdProcess] = Field(default_factory=list)
    versions: StackVersions = Field(default_factory=StackVersions)
    system: dict[str, str] = Field(default_factory=dict, description="system-level 'key: value' lines, verbatim")


class HsaMemoryPool(Model):
    """One memory pool of an HSA agent (``Pool N`` in rocminfo)."""

    segment: str | None = Field(None, description="GLOBAL, GROUP, ...")
    flags: list[str] = Field(default_factory=list, description="COARSE GRAINED, FINE GRAINED, KERNARG, ...")
    size_bytes: int | None = None
    allocatable: bool | None = None
    accessible_by_all: bool | None = None


class HsaAgentBase(WithUnavailable):
    """What rocminfo prints for every agent, CPU or GPU."""

    agent: int = Field(description="rocminfo's 'Agent N' number (CPUs come first)")
    vendor_name: str | None = None
    device_type: str | None = Field(None, description="CPU, GPU, DSP, ...")
    max_clock_mhz: float | None = None
    cache_bytes: dict[str, int] = Field(default_factory=dict, description="L1/L2/L3 -> size")
    pools: list[HsaMemoryPool] = Field(default_factory=list)
    isas: list[str] = Field(default_factory=list, description="ISA names, e.g. 'amdgcn-amd-amdhsa--gfx942:xnack-'")
    properties: dict[str, str] = Field(default_factory=dict, description="agent-level 'key: value' lines, verbatim")


class HsaAgent(HsaAgentBase):
    """A non-GPU agent (CPU socket, DSP, ...)."""

    name: str | None = None
    marketing_name: str | None = None
    node: int | None = Field(None, description="KFD topology node")
    compute_units: int | None = Field(None, description="for a CPU: hardware threads")


class HsaGpuAgent(HsaAgentBase):
    """A GPU agent; its identity (gfx target, CUs, BDF, KFD node, ...) is in ``gpu`` to join with other tools."""

    gpu: GpuRecord
    simds_per_cu: int | None = None
    shader_engines: int | None = None
    wavefront_size: int | None = None


class RocminfoReport(Model):
    """Everything one rocminfo output says."""

    rock_module_loaded: bool | None = Field(None, description="from the 'ROCk module is (NOT) loaded' line")
    runtime_version: str | None = None
    runtime_ext_version: str | None = None
    system: dict[str, str] = Field(default_factory=dict, description="HSA System Attributes, verbatim")
    gpus: list[HsaGpuAgent] = Field(default_factory=list)
    cpus: list[HsaAgent] = Field(default_factory=list)
    others: list[HsaAgent] = Field(default_factory=list, description="agents that are neither CPU nor GPU")
    versions: StackVersions = Field(default_factory=StackVersions)
