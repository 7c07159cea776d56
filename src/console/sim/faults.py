"""The fault catalogue of the simulated cluster: what can go wrong, where, and deterministic fault sets.

A ``Fault`` names a kind, a node and, where the kind needs it, a GPU (physical slot 0..n-1, stable even
when another GPU is missing) or a GPU pair. ``params`` tune the effect (see ``console.sim.effects``
for each kind's defaults). Faults are plain JSON so a cluster file fully describes a run.
"""

from __future__ import annotations

import random
from enum import StrEnum

from pydantic import Field, model_validator

from console.model.base import Model

JsonScalar = str | int | float | bool


class FaultKind(StrEnum):
    """Every failure the simulator can inject."""

    XGMI_LINK_DOWN = "xgmi_link_down"
    XGMI_LINK_DEGRADED = "xgmi_link_degraded"
    # amd-smi cannot say what it knows: a healthy link's state printed N/A, a GPU's link-status row left out.
    XGMI_LINK_STATE_NA = "xgmi_link_state_na"
    XGMI_STATUS_ROW_MISSING = "xgmi_status_row_missing"
    # amd-smi loses one GPU's reading: a value printed as N/A or garbled, a listing printed N/A, a GPU left out
    # of one subcommand's output while the others name it.
    AMDSMI_VALUE_UNREAD = "amdsmi_value_unread"
    BAD_PAGES_UNREAD = "bad_pages_unread"
    AMDSMI_GPU_LEFT_OUT = "amdsmi_gpu_left_out"
    # A GPU amd-smi's xgmi tables leave out altogether (its row and its column), and a link that dropped
    # between the two reads: ``xgmi -l`` prints D (or N/A) while ``xgmi``'s own table, read first, says U.
    XGMI_GPU_UNLISTED = "xgmi_gpu_unlisted"
    XGMI_LINK_FLAP = "xgmi_link_flap"
    # ``xgmi -l`` prints a GPU's row twice (two reads): the link to the peer D, then U.
    XGMI_STATUS_ROW_REPEATED = "xgmi_status_row_repeated"
    ECC_UNCORRECTABLE = "ecc_uncorrectable"
    ECC_CORRECTABLE_STORM = "ecc_correctable_storm"
    BAD_PAGES_OVER_THRESHOLD = "bad_pages_over_threshold"
    GPU_MISSING = "gpu_missing"
    HBM_BANDWIDTH_LOW = "hbm_bandwidth_low"
    THERMAL_THROTTLE = "thermal_throttle"
    POWER_THROTTLE = "power_throttle"
    PCIE_DOWNTRAINED_GEN = "pcie_downtrained_gen"
    PCIE_DOWNTRAINED_WIDTH = "pcie_downtrained_width"
    ROCM_DRIFT = "rocm_drift"
    DRIVER_DRIFT = "driver_drift"
    FIRMWARE_DRIFT = "firmware_drift"
    RVS_GST_LOW = "rvs_gst_low"
    RCCL_WRONG = "rccl_wrong"
    RCCL_LOW_BUSBW = "rccl_low_busbw"
    RCCL_HANG = "rccl_hang"
    RCCL_LATENCY_HIGH = "rccl_latency_high"
    TRANSFERBENCH_PAIR_SLOW = "transferbench_pair_slow"
    # TransferBench measures less than it should, and says so only by what it leaves out: a pair's a2a cell
    # N/A, a GPU HIP does not enumerate (the run has one GPU fewer), a healthcheck that ends before all-to-all.
    TRANSFERBENCH_PAIR_NA = "transferbench_pair_na"
    TRANSFERBENCH_GPU_UNSEEN = "transferbench_gpu_unseen"
    TRANSFERBENCH_HEALTHCHECK_SHORT = "transferbench_healthcheck_short"
    TRANSFERBENCH_P2P_ROW_LOST = "transferbench_p2p_row_lost"
    NIC_PORT_DOWN = "nic_port_down"
    NIC_MISSING = "nic_missing"
    NIC_SLOW = "nic_slow"
    # The two tools' readings of a port, which must agree: rdma link lists it twice, prints it ACTIVE with a
    # physical_state DISABLED, or reads it ACTIVE while ibv_devinfo, a moment later, reads it down.
    NIC_LISTED_TWICE = "nic_listed_twice"
    NIC_PHYS_DISABLED = "nic_phys_disabled"
    NIC_PORT_FLAP = "nic_port_flap"
    CPER_RECORD = "cper_record"
    CPER_NOT_ENABLED = "cper_not_enabled"
    # A fatal record amd-smi cannot decode (AFIDs 2^64-1 before 7.2.1), and more records than amd-smi
    # before 7.0.2 reads (20 per device), the fatal one last, where an old amd-smi does not show it.
    CPER_UNDECODABLE = "cper_undecodable"
    CPER_FLOOD = "cper_flood"
    SUDO_DENIED = "sudo_denied"
    UPLINK_SLOW = "uplink_slow"
    RCCL_FLAKY = "rccl_flaky"
    TOOL_MISSING = "tool_missing"
    DRIVER_NOT_LOADED = "driver_not_loaded"
    COMMAND_HANG = "command_hang"
    IGNORES_SIGTERM = "ignores_sigterm"
    COMMAND_KILLED = "command_killed"
    GARBAGE_OUTPUT = "garbage_output"
    EMPTY_OUTPUT = "empty_output"
    TRUNCATED_OUTPUT = "truncated_output"
    HUGE_OUTPUT = "huge_output"
    NON_UTF8_OUTPUT = "non_utf8_output"
    EXIT_CODE = "exit_code"
    SLOW_TRICKLE = "slow_trickle"
    SSH_REFUSED = "ssh_refused"
    SSH_DROP_MID_COMMAND = "ssh_drop_mid_command"
    AUTH_FAILURE = "auth_failure"
    HOST_KEY_CHANGED = "host_key_changed"
    # The node's PyTorch (the framework probe, ``python3 -c``): its install, its build and what it computes.
    TORCH_MISSING = "torch_missing"
    TORCH_CPU_ONLY = "torch_cpu_only"
    TORCH_DEVICE_COUNT = "torch_device_count"
    TORCH_GEMM_SLOW = "torch_gemm_slow"
    TORCH_GEMM_NAN = "torch_gemm_nan"
    TORCH_ALLREDUCE_WRONG = "torch_allreduce_wrong"
    TORCH_ALLREDUCE_HANG = "torch_allreduce_hang"
    # The node's container runtime, as a containerised framework probe or workload meets it.
    CONTAINER_IMAGE_MISSING = "container_image_missing"
    CONTAINER_NO_GPU = "container_no_gpu"
    # Outputs of RVS, rccl-tests and the framework probe that look complete and are not a full verdict:
    # #wrong never checked, a run on fewer GPUs than the node has, a log that stops between actions.
    RCCL_UNVALIDATED = "rccl_unvalidated"
    RCCL_FEWER_RANKS = "rccl_fewer_ranks"
    RVS_PEQT_WORD = "rvs_peqt_word"
    RVS_GPU_UNSEEN = "rvs_gpu_unseen"
    RVS_STOPS_EARLY = "rvs_stops_early"
    TORCH_DEVICE_ENTRY_LOST = "torch_device_entry_lost"
    TORCH_ALLREDUCE_FEW_RANKS = "torch_allreduce_few_ranks"
    TORCH_FP8_SKIPPED = "torch_fp8_skipped"
    RCCL_ROW_REPEATED = "rccl_row_repeated"
    AMDSMI_IMPOSSIBLE_READING = "amdsmi_impossible_reading"
    RCCL_HEADER_LINE_LOST = "rccl_header_line_lost"


# Faults that act on how one program (optionally only some of its subcommands) answers, not on the
# hardware it reports: ``params["program"]`` (default ``amd-smi``) and ``params["args"]`` (words that must
# all be among its arguments, e.g. ``"list"`` or ``"xgmi -l"``; default: every invocation).
BEHAVIOUR_KINDS = frozenset(
    {
        FaultKind.TOOL_MISSING,
        FaultKind.COMMAND_HANG,
        FaultKind.IGNORES_SIGTERM,
        FaultKind.COMMAND_KILLED,
        FaultKind.GARBAGE_OUTPUT,
        FaultKind.EMPTY_OUTPUT,
        FaultKind.TRUNCATED_OUTPUT,
        FaultKind.HUGE_OUTPUT,
        FaultKind.NON_UTF8_OUTPUT,
        FaultKind.EXIT_CODE,
        FaultKind.SLOW_TRICKLE,
        FaultKind.SSH_DROP_MID_COMMAND,
    }
)


class FaultScope(StrEnum):
    """What a fault kind is attached to."""

    NODE = "node"
    GPU = "gpu"
    LINK = "link"


_GPU_KINDS = {
    FaultKind.ECC_UNCORRECTABLE,
    FaultKind.ECC_CORRECTABLE_STORM,
    FaultKind.BAD_PAGES_OVER_THRESHOLD,
    FaultKind.GPU_MISSING,
    FaultKind.HBM_BANDWIDTH_LOW,
    FaultKind.THERMAL_THROTTLE,
    FaultKind.POWER_THROTTLE,
    FaultKind.PCIE_DOWNTRAINED_GEN,
    FaultKind.PCIE_DOWNTRAINED_WIDTH,
    FaultKind.FIRMWARE_DRIFT,
    FaultKind.RVS_GST_LOW,
    FaultKind.CPER_RECORD,
    FaultKind.CPER_UNDECODABLE,
    FaultKind.CPER_FLOOD,
    FaultKind.TORCH_GEMM_SLOW,
    FaultKind.TORCH_GEMM_NAN,
    FaultKind.XGMI_STATUS_ROW_MISSING,
    FaultKind.AMDSMI_VALUE_UNREAD,
    FaultKind.BAD_PAGES_UNREAD,
    FaultKind.AMDSMI_GPU_LEFT_OUT,
    FaultKind.RVS_GPU_UNSEEN,
    FaultKind.TORCH_FP8_SKIPPED,
    FaultKind.AMDSMI_IMPOSSIBLE_READING,
    FaultKind.TRANSFERBENCH_GPU_UNSEEN,
    FaultKind.XGMI_GPU_UNLISTED,
    FaultKind.TRANSFERBENCH_P2P_ROW_LOST,
}
_LINK_KINDS = {
    FaultKind.XGMI_LINK_DOWN,
    FaultKind.XGMI_LINK_DEGRADED,
    FaultKind.XGMI_LINK_STATE_NA,
    FaultKind.XGMI_LINK_FLAP,
    FaultKind.XGMI_STATUS_ROW_REPEATED,
    FaultKind.TRANSFERBENCH_PAIR_SLOW,
    FaultKind.TRANSFERBENCH_PAIR_NA,
}


def fault_scope(kind: FaultKind) -> FaultScope:
    """Whether ``kind`` applies to a whole node, one GPU or one GPU pair."""
    if kind in _LINK_KINDS:
        return FaultScope.LINK
    if kind in _GPU_KINDS:
        return FaultScope.GPU
    return FaultScope.NODE


class Fault(Model):
    """One injected fault. ``gpu``/``peer`` are physical GPU slots (0-based)."""

    kind: FaultKind
    node: str
    gpu: int | None = Field(None, ge=0, description="GPU slot, for GPU and link faults")
    peer: int | None = Field(None, ge=0, description="second GPU slot, for link faults")
    params: dict[str, JsonScalar] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _targets_match_scope(self) -> Fault:
        scope = fault_scope(self.kind)
        if scope is not FaultScope.NODE and self.gpu is None:
            raise ValueError(f"{self.kind} needs a gpu")
        if scope is FaultScope.LINK and (self.peer is None or self.peer == self.gpu):
            raise ValueError(f"{self.kind} needs a peer different from gpu")
        if scope is not FaultScope.LINK and self.peer is not None:
            raise ValueError(f"{self.kind} takes no peer")
        return self

    def describe(self) -> str:
        """One-line human description, e.g. 'xgmi_link_down on n03 GPU 2<->5'."""
        where = self.node
        if self.gpu is not None:
            where += f" GPU {self.gpu}" + (f"<->{self.peer}" if self.peer is not None else "")
        extra = "".join(f" {k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.kind} on {where}{extra}"


# The demo shows the most telling faults first when there are few nodes to spread them over.
DEMO_ORDER: tuple[FaultKind, ...] = (
    FaultKind.XGMI_LINK_DOWN,
    FaultKind.ECC_UNCORRECTABLE,
    FaultKind.GPU_MISSING,
    FaultKind.THERMAL_THROTTLE,
    FaultKind.ROCM_DRIFT,
    FaultKind.PCIE_DOWNTRAINED_WIDTH,
    FaultKind.RCCL_LOW_BUSBW,
    FaultKind.COMMAND_HANG,
    FaultKind.SSH_REFUSED,
    FaultKind.BAD_PAGES_OVER_THRESHOLD,
    FaultKind.DRIVER_NOT_LOADED,
    FaultKind.RVS_GST_LOW,
    FaultKind.TRANSFERBENCH_PAIR_SLOW,
    FaultKind.NIC_PORT_DOWN,
    FaultKind.FIRMWARE_DRIFT,
    FaultKind.POWER_THROTTLE,
    FaultKind.ECC_CORRECTABLE_STORM,
    FaultKind.XGMI_LINK_DEGRADED,
    FaultKind.HBM_BANDWIDTH_LOW,
    FaultKind.PCIE_DOWNTRAINED_GEN,
    FaultKind.DRIVER_DRIFT,
    FaultKind.RCCL_WRONG,
    FaultKind.RCCL_HANG,
    FaultKind.RCCL_LATENCY_HIGH,
    FaultKind.TOOL_MISSING,
    FaultKind.GARBAGE_OUTPUT,
    FaultKind.SLOW_TRICKLE,
    FaultKind.SSH_DROP_MID_COMMAND,
    FaultKind.AUTH_FAILURE,
    FaultKind.HOST_KEY_CHANGED,
    FaultKind.NIC_MISSING,
    FaultKind.NIC_SLOW,
    FaultKind.IGNORES_SIGTERM,
    FaultKind.COMMAND_KILLED,
    FaultKind.EMPTY_OUTPUT,
    FaultKind.TRUNCATED_OUTPUT,
    FaultKind.NON_UTF8_OUTPUT,
    FaultKind.EXIT_CODE,
    FaultKind.HUGE_OUTPUT,
    FaultKind.CPER_RECORD,
    FaultKind.CPER_NOT_ENABLED,
    FaultKind.CPER_UNDECODABLE,
    FaultKind.CPER_FLOOD,
    FaultKind.SUDO_DENIED,
    FaultKind.XGMI_LINK_STATE_NA,
    FaultKind.XGMI_STATUS_ROW_MISSING,
    FaultKind.BAD_PAGES_UNREAD,
    FaultKind.AMDSMI_VALUE_UNREAD,
    FaultKind.AMDSMI_GPU_LEFT_OUT,
    FaultKind.RCCL_UNVALIDATED,
    FaultKind.RCCL_FEWER_RANKS,
    FaultKind.RVS_PEQT_WORD,
    FaultKind.RVS_GPU_UNSEEN,
    FaultKind.RVS_STOPS_EARLY,
    FaultKind.RCCL_ROW_REPEATED,
    FaultKind.AMDSMI_IMPOSSIBLE_READING,
    FaultKind.RCCL_HEADER_LINE_LOST,
    FaultKind.TRANSFERBENCH_PAIR_NA,
    FaultKind.TRANSFERBENCH_GPU_UNSEEN,
    FaultKind.TRANSFERBENCH_HEALTHCHECK_SHORT,
    FaultKind.XGMI_GPU_UNLISTED,
    FaultKind.XGMI_LINK_FLAP,
    FaultKind.NIC_LISTED_TWICE,
    FaultKind.NIC_PHYS_DISABLED,
    FaultKind.NIC_PORT_FLAP,
    FaultKind.TRANSFERBENCH_P2P_ROW_LOST,
    FaultKind.XGMI_STATUS_ROW_REPEATED,
    # Seen only by a framework sweep (``--probes framework``): last, so smaller demos keep their faults.
    FaultKind.TORCH_MISSING,
    FaultKind.TORCH_CPU_ONLY,
    FaultKind.TORCH_DEVICE_COUNT,
    FaultKind.TORCH_GEMM_SLOW,
    FaultKind.TORCH_GEMM_NAN,
    FaultKind.TORCH_ALLREDUCE_WRONG,
    FaultKind.TORCH_ALLREDUCE_HANG,
    FaultKind.TORCH_DEVICE_ENTRY_LOST,
    FaultKind.TORCH_ALLREDUCE_FEW_RANKS,
    FaultKind.TORCH_FP8_SKIPPED,
)


# Faults of the fabric between nodes: only a multi-node run shows them (and a slow uplink is one fault on
# every node behind it), so the demo and the random draws, which give a node a fault of its own that a
# sweep of that node can see, leave them out; a scenario file places them.
FABRIC_KINDS = frozenset({FaultKind.UPLINK_SLOW, FaultKind.RCCL_FLAKY})
# Faults of the container runtime: only a command run in a container shows them (a pool's
# ``[pools.framework] container``, a containerised workload), which no demo or random node runs, so
# they too are left to a scenario file, beside a cluster file that names the container.
CONTAINER_KINDS = frozenset({FaultKind.CONTAINER_IMAGE_MISSING, FaultKind.CONTAINER_NO_GPU})
# Faults a scenario places and draws never do.
PLACED_KINDS = FABRIC_KINDS | CONTAINER_KINDS


# A fault drawn for a demo or at random hits amd-smi whole, except where that would be a burden rather
# than a fault: 200 MB from every amd-smi subcommand of a node, each sweep.
_DRAWN_PARAMS: dict[FaultKind, dict[str, JsonScalar]] = {FaultKind.HUGE_OUTPUT: {"args": "static"}}


def make_fault(kind: FaultKind, node: str, rng: random.Random, gpus: int = 8) -> Fault:
    """A fault of ``kind`` on ``node`` with its GPU (and peer) drawn from ``rng``."""
    scope = fault_scope(kind)
    if scope is FaultScope.NODE:
        return Fault(kind=kind, node=node, params=dict(_DRAWN_PARAMS.get(kind, {})))
    gpu, peer = rng.sample(range(gpus), 2)
    return Fault(kind=kind, node=node, gpu=gpu, peer=peer if scope is FaultScope.LINK else None)


def demo_faults(node_names: list[str], seed: int, gpus: int = 8) -> list[Fault]:
    """A fixed, varied fault set: one fault per faulted node, about a third of the nodes kept healthy.

    The same names and seed always give the same faults. With few nodes, the kinds earliest in
    ``DEMO_ORDER`` win; the first node in the list is always healthy so a demo has a reference node.
    """
    rng = random.Random(f"demo:{seed}")
    candidates = list(node_names[1:])
    rng.shuffle(candidates)
    budget = min(len(DEMO_ORDER), (2 * len(node_names)) // 3)
    return [make_fault(kind, node, rng, gpus) for kind, node in zip(DEMO_ORDER[:budget], candidates, strict=False)]


def random_faults(node_names: list[str], fraction: float, seed: int, gpus: int = 8) -> list[Fault]:
    """One random fault on each of ``round(fraction * len(node_names))`` random nodes (deterministic)."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction must be within 0..1, got {fraction}")
    rng = random.Random(f"random:{seed}")
    chosen = rng.sample(node_names, round(fraction * len(node_names)))
    kinds = sorted(set(FaultKind) - PLACED_KINDS)
    return [make_fault(rng.choice(kinds), node, rng, gpus) for node in chosen]
