"""What an rccl-tests (or nccl-tests) run such as ``all_reduce_perf`` reports, normalised.

Units follow the field name suffix: ``_bytes`` bytes, ``_us`` microseconds, ``_gbps`` gigabytes
per second. One ``RcclRow`` is one message size; its two halves are the out-of-place and the
in-place measurement (either may be absent: ``-O 0`` disables out-of-place).
"""

from __future__ import annotations

from pydantic import Field

from console.model.base import Model, WithUnavailable


class RcclHeader(Model):
    """The parameter line (``# nThread 1 nGpus 8 minBytes 8 ...``) of the run."""

    n_threads: int | None = None
    n_gpus: int | None = Field(None, description="GPUs per thread (-g)")
    n_ranks: int | None = Field(None, description="only printed by very old builds")
    min_bytes: int | None = None
    max_bytes: int | None = None
    step: int | None = None
    step_mode: str | None = Field(None, description="'factor' (-f) or 'bytes' (-i)")
    warmup_iters: int | None = None
    iters: int | None = None
    agg_iters: int | None = None
    validation: int | None = None
    graph: int | None = Field(None, description="as printed; does not reflect -G in some builds")
    other: dict[str, str] = Field(default_factory=dict, description="parameters this parser has no field for")


class RcclRank(Model):
    """One ``#  Rank  0 Group  0 Pid 7085 on host device  0 [0000:05:00] AMD Instinct MI300X`` line."""

    rank: int
    group: int | None = None
    pid: int | None = None
    host: str | None = None
    device: int | None = Field(None, description="HIP device index on its host")
    bus_id: str | None = Field(None, description="PCI id exactly as printed: 0000:05:00, 0000:0c:00.0 or 0x23")
    bdf: str | None = Field(None, description="normalised dddd:bb:dd.f when the bus id is a full address")
    gpu_name: str | None = None


class RcclVersions(WithUnavailable):
    """Version lines printed before the table."""

    tests: str | None = Field(None, description="rccl-tests/nccl-tests build, e.g. develop:448c4c7")
    rccl: str | None = None
    nccl: str | None = None
    hip: str | None = None
    rocm: str | None = None
    hostname: str | None = None
    librccl_path: str | None = None


class RcclMeasurement(WithUnavailable):
    """One half of a table row (out-of-place or in-place)."""

    time_us: float | None = None
    algbw_gbps: float | None = None
    busbw_gbps: float | None = None
    wrong: int | None = Field(None, description="#wrong elements; None when printed N/A (not checked)")
    max_error: float | None = Field(None, description="old builds print a max delta in an 'error' column")
    over_threshold: bool = Field(False, description="the value carried the '*' the tool uses for failures")


class RcclRow(Model):
    """One message size of the results table."""

    size_bytes: int
    count: int = Field(description="elements per rank as the tool prints it")
    type: str
    redop: str | None = None
    root: int | None = None
    cycle: int = Field(1, description="stress cycle (-s) the row belongs to")
    out_of_place: RcclMeasurement | None = None
    in_place: RcclMeasurement | None = None


class RcclFooter(WithUnavailable):
    """The lines after the table; ``complete`` is False when the run never printed its average."""

    out_of_bounds: int | None = Field(None, description="'# Out of bounds values : N OK|FAILED'")
    out_of_bounds_failed: bool | None = None
    avg_busbw_gbps: float | None = None
    min_bw_check: str | None = Field(None, description="'OK'/'FAILED' when NCCL_TESTS_MIN_BW was set")
    complete: bool = False


class RcclResult(Model):
    """Everything one rccl-tests output says."""

    collective: str = Field(description="test binary, e.g. all_reduce_perf, or 'unknown'")
    header: RcclHeader | None = None
    versions: RcclVersions = Field(default_factory=RcclVersions)
    ranks: list[RcclRank] = Field(default_factory=list)
    rows: list[RcclRow] = Field(default_factory=list)
    footer: RcclFooter = Field(default_factory=RcclFooter)
    errors: list[str] = Field(default_factory=list, description="failure lines, verbatim, and why the run is not OK")
    warnings: list[str] = Field(default_factory=list)
