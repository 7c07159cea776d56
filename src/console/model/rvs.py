"""What a ROCm Validation Suite (``rvs``) run reports, normalised.

RVS names GPUs by their KFD ``gpu_id`` (e.g. 28851), sometimes with the KFD node id and the PCI
address (``[GPU:: 2 - 28851 - 0000:05:00.0]``). ``RvsResult.gpus`` collects every gpu_id -> BDF
mapping the output shows (``rvs -g``, the summary grid, pebb/pbqt triples) so results can be joined
with the other tools on BDF. Units are fixed by the result's ``unit`` (``GB/s``, ``W``, ``GFLOPS``,
``C``, ``MHz``); bandwidths printed in MB/s or MiB/s are converted to GB/s.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from console.model.base import Model, WithUnavailable
from console.model.gpu import GpuIdentity, GpuRecord


class RvsGpuRef(Model):
    """A GPU as one RVS line names it: any of KFD node id, KFD gpu_id and PCI address."""

    node_id: int | None = Field(None, description="KFD topology node id")
    gpu_id: int | None = Field(None, description="KFD gpu_id, RVS's GPU name (e.g. 28851)")
    bdf: str | None = Field(None, description="PCI address dddd:bb:dd.f when the line prints it")


class RvsGpu(WithUnavailable):
    """One GPU of the ``rvs -g`` list or of the summary grid."""

    gpu_id: int | None = Field(None, description="KFD gpu_id")
    node_id: int | None = Field(None, description="KFD node id")
    index: int | None = Field(None, description="RVS/SMI index from the summary grid (``ID``)")
    bdf: str | None = None
    name: str | None = Field(None, description="marketing name, e.g. 'AMD Instinct MI300X'")
    device_id: str | None = Field(None, description="PCI device id in hex (``rvs -g`` prints it in decimal)")


class RvsAction(Model):
    """One action of the run (a configured test) and its verdict, when one is known."""

    name: str
    module: str | None = Field(None, description="module in lower case: gst, iet, pebb, ...")
    passed: bool | None = Field(None, description="summary table verdict, else derived from the action's lines")


class RvsGpuResult(WithUnavailable):
    """One result line: a measurement, a verdict or both, for one GPU (or GPU pair) of one action.

    ``metric`` names what was measured:

    * gst ``gflops`` (the final line, with ``target`` and the ``met`` verdict) and ``gflops_sample``;
    * iet ``power_w_sample``; ``verdict`` for a bare pass/fail (iet/tst/smqt/pulse ``pass:``, peqt,
      mem ``Test N`` in ``label``);
    * ``bandwidth`` (final, GB/s: mem, pebb, pbqt, babel with the kernel in ``label``),
      ``bandwidth_sample`` (pebb/pbqt interval lines), ``aggregate_bandwidth`` (pbqt all-to-all);
    * pebb ``distance`` and pbqt ``peers`` (``text`` true/false, NUMA distance in ``value``);
    * gm ``<metric>_violations`` (verdict: zero violations) and ``<metric>_average``;
    * gpup property names, peqt capability names (value as printed in ``text``), tst
      ``max_edge_temp_c`` / ``max_junction_temp_c``, pesm ``link_speed`` / ``power_state``,
      rcqt package counters (``missing_packages`` ...);
    * from the JSON log: ``average_power_w`` (iet) and ``max_junction_temp_c`` (tst).
    """

    module: str | None = None
    action: str | None = None
    gpu: RvsGpuRef | None = Field(None, description="the GPU the line is about (source GPU of a transfer)")
    peer: RvsGpuRef | None = Field(None, description="destination GPU of a pbqt transfer or peer check")
    cpu_node: int | None = Field(None, description="CPU NUMA node of a pebb transfer")
    metric: str
    label: str | None = Field(None, description="sub-test: mem 'Test 11', babel 'Copy', gpup io_link number")
    value: float | None = None
    text: str | None = None
    unit: str | None = None
    target: float | None = None
    passed: bool | None = None
    transfer: str | None = Field(None, description="pebb/pbqt transfer id, e.g. '1/56'")
    direction: str | None = Field(None, description="h2d, d2h, h2d+d2h, unidirectional or bidirectional")
    hop: str | None = Field(None, description="link type and hop distance as printed, e.g. 'xGMI:15'")
    duration_s: float | None = None


class RvsOverview(WithUnavailable):
    """The 'System Overview' part of the RVS >= 1.3 summary box."""

    operating_system: str | None = None
    rvs_version: str | None = None
    rocm_version: str | None = None
    amdgpu_version: str | None = None
    gpu_count: int | None = None
    other: dict[str, str] = Field(default_factory=dict, description="rows this parser does not know, verbatim")


class RvsJsonRecord(Model):
    """One record of the RVS JSON log (every value is a string there; babel nests a results list)."""

    module: str
    action: str | None = None
    fields: dict[str, Any] = Field(default_factory=dict)


class RvsResult(Model):
    """Everything one RVS output shows."""

    version: str | None = Field(None, description="RVS version (banner or summary box)")
    overview: RvsOverview | None = Field(None, description="summary box System Overview, RVS >= 1.3")
    summary_box: bool = Field(False, description="the final summary table was printed (run completed)")
    modules: list[str] = Field(default_factory=list, description="modules seen, lower case, sorted")
    actions: list[RvsAction] = Field(default_factory=list)
    gpus: list[RvsGpu] = Field(default_factory=list, description="rvs -g list / summary grid / triples")
    results: list[RvsGpuResult] = Field(default_factory=list)
    json_log_path: str | None = Field(None, description="path from the 'json log file is ...' line")
    json_records: list[RvsJsonRecord] = Field(default_factory=list)
    json_complete: bool | None = Field(None, description="False when the JSON log was cut (interrupted run)")

    def bdf_of(self, gpu_id: int) -> str | None:
        """PCI address of the GPU with KFD ``gpu_id``, if the output maps it anywhere."""
        for gpu in self.gpus:
            if gpu.gpu_id == gpu_id and gpu.bdf:
                return gpu.bdf
        return None

    def gpu_records(self) -> list[GpuRecord]:
        """The GPUs as shared ``GpuRecord``s (identity only) for joining with other tools on BDF."""
        return [
            GpuRecord(
                identity=GpuIdentity(
                    index=gpu.index,
                    bdf=gpu.bdf,
                    kfd_gpu_id=gpu.gpu_id,
                    kfd_node=gpu.node_id,
                    market_name=gpu.name,
                    device_id=gpu.device_id,
                )
            )
            for gpu in self.gpus
        ]
