"""What the PyTorch framework probe reports about one node, normalised.

The probe (``console.probes.pytorch``) runs a script on the node's own Python and prints one JSON
document; these are its stages. Every stage has a ``status``: ``ok`` (it ran; its figures are
below), ``error`` (it raised: ``error`` holds the text), ``unsupported`` (the GPU or the torch build
cannot do it, which is no failure) or ``skipped`` (an earlier stage left it nothing to run on).
Units follow the field suffix: ``_tflops`` 10^12 floating-point operations a second, ``_s`` seconds.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from console.model.base import Model


class StageStatus(StrEnum):
    """How one stage of the probe ended."""

    OK = "ok"
    ERROR = "error"
    UNSUPPORTED = "unsupported"
    SKIPPED = "skipped"
    MISSING = "missing"  # the document has no such stage (a cut-down or older script)


class TorchBuild(Model):
    """The ``import torch`` stage: which torch, built for what, and what it sees."""

    status: StageStatus = StageStatus.MISSING
    error: str | None = None
    version: str | None = Field(None, description="torch.__version__, e.g. 2.7.1+rocm6.4")
    hip: str | None = Field(None, description="torch.version.hip; None on a CPU-only or CUDA build")
    cuda: str | None = Field(None, description="torch.version.cuda; set on a CUDA build")
    cuda_available: bool | None = Field(None, description="torch.cuda.is_available() (HIP answers it on ROCm)")
    device_count: int | None = None

    @property
    def is_hip(self) -> bool:
        """True when torch imported and was built for ROCm."""
        return self.status is StageStatus.OK and bool(self.hip)

    def build_label(self) -> str:
        """``ROCm (HIP 6.4.43483)``, ``CUDA 12.4`` or ``CPU-only``: what the build targets."""
        if self.hip:
            return f"ROCm (HIP {self.hip})"
        if self.cuda:
            return f"CUDA {self.cuda}"
        return "CPU-only"


class GemmStage(Model):
    """One timed GEMM on one device: its throughput and whether its result holds NaN or Inf."""

    status: StageStatus = StageStatus.MISSING
    error: str | None = None
    dtype: str | None = Field(None, description="the FP8 format used (float8_e4m3fnuz on MI300, e4m3fn on MI350)")
    tflops: float | None = None
    seconds: float | None = Field(None, description="time of the timed iterations, warm-up excluded")
    nonfinite: int | None = Field(None, description="NaN or Inf elements in the result")


class TorchDevice(Model):
    """One device torch sees, with its GEMM stages."""

    index: int
    status: StageStatus = StageStatus.MISSING
    error: str | None = None
    name: str | None = Field(None, description="torch.cuda.get_device_name, e.g. AMD Instinct MI300X")
    arch: str | None = Field(None, description="gcnArchName without its features, e.g. gfx942")
    memory_bytes: int | None = None
    pci_bus_id: str | None = Field(None, description="dddd:bb:dd.0 when the torch build reports it")
    bf16: GemmStage = Field(default_factory=GemmStage)
    fp8: GemmStage = Field(default_factory=GemmStage)


class AllReduceStage(Model):
    """The one-node ``torch.distributed`` all-reduce: one rank per device, checked against the exact sum."""

    status: StageStatus = StageStatus.MISSING
    error: str | None = None
    backend: str | None = Field(None, description="nccl (RCCL on ROCm) or gloo")
    world_size: int | None = None
    mib: int | None = Field(None, description="message per rank, MiB")
    correct: bool | None = None
    max_abs_error: float | None = None
    nonfinite: int | None = None
    seconds: float | None = Field(None, description="wall time of the stage, process start-up included")
    rank_seconds: float | None = Field(None, description="the slowest rank's timed all-reduce")


class TorchProbeResult(Model):
    """Everything one run of the framework probe said."""

    schema_version: int | None = None
    python: str | None = None
    params: dict[str, float | int | str] = Field(default_factory=dict, description="the script's options")
    torch: TorchBuild = Field(default_factory=TorchBuild)
    devices: list[TorchDevice] = Field(default_factory=list)
    all_reduce: AllReduceStage = Field(default_factory=AllReduceStage)
    seconds: float | None = None
    container_seen: str | None = Field(None, description="the container runtime the script found itself in")
    unknown_keys: list[str] = Field(default_factory=list, description="keys this parser has no field for")
    other_lines: list[str] = Field(
        default_factory=list, description="lines around the document (torch warnings, stderr), verbatim"
    )

    @property
    def container_runtime(self) -> str | None:
        """The runtime the console started the script in (its ``--container-runtime``), None on the bare node."""
        value = self.params.get("container_runtime")
        return value if isinstance(value, str) else None

    @property
    def container_image(self) -> str | None:
        """The image the console started the script in (its ``--container-image``), None on the bare node."""
        value = self.params.get("container_image")
        return value if isinstance(value, str) else None

    def stage_errors(self) -> list[str]:
        """``gpu3 bf16: HIP error: ...``: every stage that raised, the import excepted, in order."""
        said = []
        for device in self.devices:
            for name, stage in (("device", device), ("bf16", device.bf16), ("fp8", device.fp8)):
                if stage.status is StageStatus.ERROR:
                    said.append(f"gpu{device.index} {name}: {stage.error or 'failed'}")
        if self.all_reduce.status is StageStatus.ERROR:
            said.append(f"all-reduce: {self.all_reduce.error or 'failed'}")
        return said
