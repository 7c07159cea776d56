"""Typed events a sweep streams to its subscribers (the headless progress display, the TUI, tests)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from console.model.base import Model
from console.model.findings import NodeVerdict, Status
from console.model.gpu import GpuRecord, XgmiLink
from console.model.host import NicPort
from console.model.multinode import CollectiveRun, MultinodeResult
from console.store.faults import StoreFault


class SweepStarted(Model):
    """A sweep (or a rerun inside it) began."""

    type: Literal["sweep_started"] = "sweep_started"
    sweep_id: int
    nodes: list[str]
    probes: list[str]
    level: str
    rerun: bool = False


class ProbeStarted(Model):
    """A probe was sent to a node."""

    type: Literal["probe_started"] = "probe_started"
    sweep_id: int
    node: str
    probe: str
    timeout_s: float | None = Field(
        None, description="the most the console waits for it (its bundle's), from now: a countdown for a stuck node"
    )


class ProbeFinished(Model):
    """A probe's output arrived (or it failed to)."""

    type: Literal["probe_finished"] = "probe_finished"
    sweep_id: int
    node: str
    probe: str
    ok: bool = Field(description="usable output was parsed")
    problem: str | None = None
    duration_s: float
    output_bytes: int = 0
    run_id: int | None = None
    reused: bool = Field(False, description="not run again: the stack stamp was unchanged (run_id is the earlier run)")


class NodeSnapshot(Model):
    """What the UI shows of a node besides its verdict: GPUs, links, stack, NICs."""

    gpus: list[GpuRecord] = Field(default_factory=list)
    xgmi: list[XgmiLink] = Field(default_factory=list)
    stack: dict[str, str] = Field(default_factory=dict)
    nics: list[NicPort] = Field(default_factory=list)
    pair_gbps: dict[str, float] = Field(default_factory=dict, description="'i-j' -> TransferBench GB/s")
    probe_runs: dict[str, int] = Field(default_factory=dict, description="probe id -> stored raw output id")


class NodeDone(Model):
    """A node's verdict (sent again when a rerun or the fleet pass changes it)."""

    type: Literal["node_done"] = "node_done"
    sweep_id: int
    pool: str
    verdict: NodeVerdict
    snapshot: NodeSnapshot
    findings_total: int | None = Field(
        None, description="how many findings the verdict has, when ``verdict.findings`` holds only those not PASS"
    )


class SweepDone(Model):
    """The sweep finished, was cancelled or ran out of time."""

    type: Literal["sweep_done"] = "sweep_done"
    sweep_id: int
    outcome: Literal["done", "cancelled", "deadline"]
    counts: dict[Status, int]
    duration_s: float


class StoreFailed(Model):
    """The history database failed under the engine (once): the sweep goes on, storing nothing more."""

    type: Literal["store_failed"] = "store_failed"
    sweep_id: int
    fault: StoreFault


class MultinodeStarted(Model):
    """The multi-node phase began, after the per-node sweep ``sweep_id`` of ``nodes``."""

    type: Literal["multinode_started"] = "multinode_started"
    sweep_id: int
    nodes: list[str]


class MultinodeRunDone(Model):
    """One multi-node collective finished (a pair, a group, or a second-pass run), as it finished."""

    type: Literal["multinode_run"] = "multinode_run"
    sweep_id: int
    run: CollectiveRun


class MultinodeDone(Model):
    """The multi-node phase ended: every run, the nodes named (with their convicting runs), the ranking."""

    type: Literal["multinode_done"] = "multinode_done"
    sweep_id: int
    result: MultinodeResult
    stopped: bool = Field(False, description="cut by the deadline or cancelled: some nodes were not judged")


class WorkloadStarted(Model):
    """A declared workload began a run on nodes of a pool (``console.sweep.workloads``): the acceptance
    view shows it running, with when and where."""

    type: Literal["workload_started"] = "workload_started"
    sweep_id: int
    workload: str
    pool: str
    nodes: list[str]
    started_at: float = Field(description="wall clock (time.time) when the run was sent to its first node")


class WorkloadFinished(Model):
    """A workload's run on those nodes ended: judged (``status``), timed out or refused."""

    type: Literal["workload_finished"] = "workload_finished"
    sweep_id: int
    workload: str
    pool: str
    nodes: list[str]
    status: Status


Event = (
    SweepStarted
    | ProbeStarted
    | ProbeFinished
    | NodeDone
    | SweepDone
    | StoreFailed
    | MultinodeStarted
    | MultinodeRunDone
    | MultinodeDone
    | WorkloadStarted
    | WorkloadFinished
)
