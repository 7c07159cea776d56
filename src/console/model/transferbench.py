"""What a TransferBench run reports (presets a2a, p2p, healthcheck, a2asweep, nicrings, scaling, config files).

Units follow the field name suffix: ``_gbps`` gigabytes per second, ``_ms`` milliseconds,
``_bytes`` bytes. Devices are named the way TransferBench names them: a type (``GPU``, ``CPU``,
``NIC``) and the tool's index, which is the HIP/NUMA index, not a PCI address.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from console.model.base import Model, WithUnavailable


class Direction(StrEnum):
    """Whether the transfer ran alone (uni) or together with its reverse (bi)."""

    UNI = "uni"
    BI = "bi"


class EnvSetting(Model):
    """One line of the environment dump: ``NAME = value : description``."""

    value: str
    description: str = ""
    section: str | None = Field(None, description="'Common', 'AllToAll Related', ...")


class MemoryRef(Model):
    """One memory location of a Transfer descriptor, e.g. ``F0`` (fine-grained GPU 0) or ``R1G3``."""

    letter: str = Field(description="memory type letter as printed: C, G, F, B, U, M, N, ...")
    index: int | None = Field(None, description="device index; None for the null memory 'N'")
    rank: int | None = Field(None, description="rank of multi-node runs (R<n> prefix)")


class TransferResult(WithUnavailable):
    """One ``Transfer NN | GB/s | ms | bytes | src -> exe -> dst`` line."""

    test: int
    index: int
    gbps: float | None = None
    duration_ms: float | None = None
    size_bytes: int | None = None
    descriptor: str = Field(description="as printed, e.g. 'F0 -> G000:008 -> F1'")
    srcs: list[MemoryRef] = Field(default_factory=list)
    executor: str | None = Field(None, description="executor type letter(s): G (GFX), D (DMA), C (CPU), I/N (NIC)")
    executor_index: int | None = None
    executor_rank: int | None = None
    executor_sub_index: str | None = Field(None, description="'.N' or '.*' after the executor, when printed")
    subexecutors: int | None = Field(None, description="CUs, DMA engines, CPU threads or queue pairs")
    dsts: list[MemoryRef] = Field(default_factory=list)


class ExecutorResult(WithUnavailable):
    """One `` Executor: GPU 00 | GB/s | ms | bytes | GB/s (sum)`` line."""

    test: int
    device_type: str = Field(description="GPU, DMA, CPU or NIC")
    index: int
    rank: int | None = None
    host: str | None = None
    gbps: float | None = None
    duration_ms: float | None = None
    size_bytes: int | None = None
    sum_gbps: float | None = None


class BlockAggregate(WithUnavailable):
    """The `` Aggregate (CPU) | GB/s | ms | bytes | Overhead`` line closing a Test."""

    gbps: float | None = None
    duration_ms: float | None = None
    size_bytes: int | None = None
    overhead_ms: float | None = None


class TransferTest(Model):
    """One ``Test N:`` block."""

    number: int
    executors: list[ExecutorResult] = Field(default_factory=list)
    transfers: list[TransferResult] = Field(default_factory=list)
    aggregate: BlockAggregate | None = None


class BandwidthEntry(WithUnavailable):
    """One cell of a result matrix: bandwidth of the transfer ``src -> dst``."""

    kind: str = Field(description="table it came from: a2a, p2p or scaling")
    direction: Direction = Direction.UNI
    src_type: str
    src_index: int
    dst_type: str
    dst_index: int
    gbps: float | None = None
    reverse: bool = Field(
        False, description="p2p bidirectional '<-' row: the return transfer measured in the dst->src pair test"
    )


class PeerAverage(WithUnavailable):
    """One value of the p2p ``Averages (During UniDir|BiDir)`` line, e.g. GPU->GPU."""

    direction: Direction
    src_type: str
    dst_type: str
    gbps: float | None = None


class HealthcheckItem(Model):
    """A per-GPU (or per GPU pair) measurement against the healthcheck criteria."""

    gpu: int
    dst_gpu: int | None = None
    measured_gbps: float
    criteria_gbps: float
    passed: bool


class HealthcheckTest(Model):
    """One ``Testing <what> ........PASS|FAIL (N test(s))`` line and the items printed under it."""

    name: str
    passed: bool | None = Field(None, description="None when the run stopped before the verdict")
    failed_count: int | None = None
    gpus_tested: int | None = Field(None, description="one progress dot per GPU in non-verbose runs")
    items: list[HealthcheckItem] = Field(default_factory=list)


class SweepCell(Model):
    """One cell of the a2asweep table: the slowest (or fastest) GPU at a CU count and unroll."""

    block_size: int | None = None
    num_cus: int
    unroll: int
    statistic: str = Field(description="'min' (slowest GPU) or 'max' (fastest GPU)")
    gbps: float | None = Field(None, description="None where the tool printed 0.00 (the run failed)")


class NicRingCell(Model):
    """Bandwidth of one NIC ring as seen by one rank."""

    rank: int
    host: str
    device: str | None = Field(None, description="memory device the ring uses, e.g. 'GPU 03'")
    nic_index: int
    nic_name: str | None = None
    gbps: float | None = None


class NicRingStat(Model):
    """A MAX/AVG/MIN row value: per NIC, or for the rank totals when ``nic_index`` is None."""

    statistic: str
    nic_index: int | None = None
    gbps: float | None = None


class ScalingCell(Model):
    """Scaling preset: bandwidth from the local GPU to one device with ``num_cus`` CUs."""

    num_cus: int
    device_type: str
    device_index: int
    gbps: float | None = None


class Totals(WithUnavailable):
    """Closing bandwidth lines of a2a and nicrings."""

    average_gpu_gbps: float | None = Field(None, description="'Average   bandwidth (GPU Timed)'")
    aggregate_gpu_gbps: float | None = None
    aggregate_cpu_gbps: float | None = None


class TransferBenchResult(Model):
    """Everything one TransferBench output says."""

    kind: str
    version: str | None = Field(None, description="e.g. 1.60.00")
    banner: str | None = Field(None, description="the banner line as printed")
    env: dict[str, EnvSetting] = Field(default_factory=dict)
    bytes_per_transfer: int | None = None
    tests: list[TransferTest] = Field(default_factory=list)
    matrix: list[BandwidthEntry] = Field(default_factory=list)
    averages: list[PeerAverage] = Field(default_factory=list)
    totals: Totals = Field(default_factory=Totals)
    healthcheck: list[HealthcheckTest] = Field(default_factory=list)
    sweep: list[SweepCell] = Field(default_factory=list)
    nic_rings: list[NicRingCell] = Field(default_factory=list)
    nic_ring_stats: list[NicRingStat] = Field(default_factory=list)
    scaling: list[ScalingCell] = Field(default_factory=list)
    unsupported: bool = Field(False, description="healthcheck declined to run on this hardware")
    warnings: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
