"""The simulated cluster: its JSON description and the concrete state of each node.

``ClusterSpec`` is what a cluster file holds (nodes, stacks, faults, seed). ``build_node`` turns it
into a ``SimNode`` deterministically, so any process (the SSH server, a shim, a test) rebuilds the
same node from the same file. Per-invocation variation comes from ``jitter_rng`` on top of it:
readings move within realistic bands from run to run while fault evidence stays put.

GPU *slots* are physical positions 0..n-1 and never change; ``SimGpu.index`` is the enumeration
index the tools print, which shifts down when a GPU is missing from the bus.
"""

from __future__ import annotations

import random
from enum import StrEnum
from pathlib import Path

from pydantic import Field

from console.model.base import Model
from console.sim.faults import Fault, FaultKind, demo_faults
from console.sim.specs import (
    DEFAULT_STACK,
    GPU_SPECS,
    GpuModel,
    GpuModelSpec,
    StackSpec,
    stack_preset,
)

__all__ = [
    "ClusterSpec",
    "GpuModel",
    "GpuModelSpec",
    "LinkState",
    "NodeSpec",
    "SimBadPage",
    "SimBehaviour",
    "SimEcc",
    "SimGpu",
    "SimNic",
    "SimNode",
    "SimTorch",
    "SimXgmiLink",
    "StackSpec",
    "build_node",
    "example_cluster",
    "jitter_rng",
]

ECC_BLOCKS = ("UMC", "SDMA", "GFX", "MMHUB", "PCIE_BIF", "HDP", "XGMI_WAFL")
VIOLATION_TYPES = ("PVIOL", "TVIOL", "PHOT_TVIOL", "VR_TVIOL", "HBM_TVIOL")


class NodeSpec(Model):
    """One node of the cluster file: its name, hardware model, pool, software and SSH endpoint."""

    name: str
    gpu_model: GpuModel
    pool: str = "default"
    stack: StackSpec
    address: str = "127.0.0.1"
    port: int = Field(22, ge=1, le=65535)
    nic_rate_gbps: int | None = Field(None, gt=0, description="every backend NIC's link rate (default 400)")

    @property
    def spec(self) -> GpuModelSpec:
        """Hardware facts of this node's GPU model."""
        return GPU_SPECS[self.gpu_model]


class ClusterSpec(Model):
    """A whole simulated cluster; JSON round-trippable (``save`` / ``load``)."""

    name: str
    seed: int = 0
    time_factor: float = Field(
        20.0, gt=0, description="simulated durations are divided by this (20: a 10-minute RVS run takes 30 s)"
    )
    nodes: list[NodeSpec]
    faults: list[Fault] = Field(default_factory=list)

    def node(self, name: str) -> NodeSpec:
        """The node called ``name`` (KeyError if absent)."""
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(f"no node {name!r} in cluster {self.name!r}")

    def faults_on(self, name: str) -> list[Fault]:
        """Faults injected on node ``name``, in file order."""
        return [fault for fault in self.faults if fault.node == name]

    def save(self, path: Path) -> None:
        """Write the cluster as indented JSON."""
        path.write_text(self.model_dump_json(indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> ClusterSpec:
        """Read a cluster written by ``save``."""
        return cls.model_validate_json(path.read_text(encoding="utf-8"))


class LinkState(StrEnum):
    """State of a direct XGMI connection between two GPUs."""

    UP = "up"
    DOWN = "down"
    DEGRADED = "degraded"


class SimXgmiLink(Model):
    """The XGMI connection from one GPU to a peer (both directions carry the same state)."""

    peer_slot: int
    links: int = Field(description="number of physical links; 0 means reached through another GPU")
    state: LinkState = LinkState.UP
    bit_rate_gbps: int
    max_bandwidth_gbps: int
    error_count: int = 0
    bw_factor: float = Field(1.0, description="scales measured GPU-to-GPU bandwidth (TransferBench, RVS pbqt)")
    state_reported: bool = Field(True, description="False: amd-smi prints N/A for the state of this (working) link")
    tb_measured: bool = Field(True, description="False: TransferBench a2a makes no transfer for it and prints N/A")
    link_status_word: str | None = Field(
        None, description="what `amd-smi xgmi -l` prints for it (D, N/A) while `xgmi`'s table, read first, says U"
    )

    @property
    def hops(self) -> int:
        """Hops between the two GPUs: 1 when directly linked, otherwise 2."""
        return 1 if self.links else 2


class SimEcc(Model):
    """Error counters of one RAS block."""

    correctable: int = 0
    uncorrectable: int = 0
    deferred: int = 0


class SimBadPage(Model):
    """One VRAM page the driver retired (or will retire)."""

    address: int
    size_bytes: int = 4096
    status: str = Field("retired", description="retired / pending / unreservable")


class SimCperRecord(Model):
    """One CPER record in the driver's ring of a GPU."""

    severity: str = Field(description="fatal, boot, uncorrected, corrected, or another word amd-smi prints as is")
    afids: list[int] = Field(default_factory=list)
    age_s: float = Field(3600.0, description="how long before the invocation the driver stamped it")
    time_text: str | None = Field(None, description="the time column as printed, when it is not the real one")
    undecodable: bool = Field(False, description="amd-smi cannot derive its AFIDs (a malformed record)")


class SimGpu(Model):
    """Concrete state of one GPU at build time; renderers add per-invocation jitter."""

    slot: int
    index: int
    bus: int
    bdf: str
    kfd_node: int
    kfd_gpu_id: int
    numa_node: int
    oam_id: int
    serial: str
    asic_serial: str
    uuid: str
    hotspot_c: float
    mem_c: float
    edge_c: float | None = Field(description="None where the board has no edge sensor (MI300 and newer)")
    power_w: float
    power_cap_w: float
    gfx_clock_mhz: float
    mem_clock_mhz: float
    gfx_util_pct: float = 0.0
    mem_util_pct: float = 0.0
    vram_used_bytes: int
    energy_uj: int = Field(description="accumulated energy counter at build time")
    pcie_gen: int
    pcie_width: int
    pcie_replay_count: int = 0
    pcie_l0_to_recovery_count: int = 0
    pcie_nak_sent_count: int = 0
    pcie_nak_received_count: int = 0
    ecc: dict[str, SimEcc] = Field(default_factory=dict, description="RAS block -> counters")
    bad_pages: list[SimBadPage] = Field(default_factory=list)
    bad_page_threshold: int
    cper: list[SimCperRecord] = Field(default_factory=list, description="CPER records in the driver's ring")
    violations_pct: dict[str, float] = Field(default_factory=dict, description="PVIOL/TVIOL/... -> % throttled")
    throttle_status: str = Field("UNTHROTTLED", description="pre-MI300 THROTTLE_STATUS text")
    firmware: dict[str, str]
    vbios_version: str
    xgmi: dict[int, SimXgmiLink] = Field(default_factory=dict, description="peer slot -> connection")
    xgmi_status_row: bool = Field(True, description="False: amd-smi's link-status table leaves this GPU's row out")
    left_out_of: list[str] = Field(
        default_factory=list, description="amd-smi subcommands whose output leaves this GPU out (bad-pages, static)"
    )
    unread: dict[str, str] = Field(
        default_factory=dict,
        description="'<subcommand>:<dotted key>' -> what amd-smi prints there instead of the value (N/A, '#@!', NaN)",
    )
    xgmi_row_repeated: int | None = Field(
        None, description="peer slot: `xgmi -l` prints this GPU's row twice, the link to that peer D, then U"
    )
    xgmi_listed: bool = Field(True, description="False: amd-smi's xgmi tables leave out its row and its column")
    hip_visible: bool = Field(True, description="False: HIP does not enumerate it, so TransferBench runs without it")
    gst_factor: float = Field(1.0, description="scales RVS GST GFLOPS")
    impossible: str | None = Field(
        None, description="amd-smi metric prints a failed read as a value: 'ecc' (-1 errors) or 'throttle' (-3 %)"
    )
    hbm_factor: float = Field(1.0, description="scales HBM bandwidth (RVS mem, babel, TransferBench HBM)")

    def ecc_total(self, field: str) -> int:
        """Sum of one counter (``correctable`` / ``uncorrectable`` / ``deferred``) over all blocks."""
        total: int = sum(getattr(block, field) for block in self.ecc.values())
        return total


class SimNic(Model):
    """One RDMA NIC port of the node's scale-out fabric."""

    index: int
    device: str = Field(description="RDMA device name, e.g. mlx5_0, bnxt_re0, ionic_0")
    netdev: str
    bdf: str
    numa_node: int
    port: int = 1
    up: bool = True
    rate_gbps: int = 400
    # How the two tools misread it (NIC faults): rdma link's line twice, its physical_state, ibv_devinfo's read.
    rdma_lines: int = Field(1, description="times `rdma link` prints the port's line")
    rdma_physical_state: str | None = Field(
        None, description="what `rdma link` prints as physical_state, if not the state's"
    )
    ibv_down: bool = Field(False, description="True: ibv_devinfo reads the port down while rdma link read it ACTIVE")
    guid: str
    mac: str


class SimTorch(Model):
    """The node's Python and PyTorch, as the framework probe finds them; torch faults change it."""

    installed: bool = True
    hip_build: bool = Field(True, description="False: a CPU-only build (torch.version.hip is None)")
    visible_devices: int | None = Field(None, description="devices torch sees; None: every GPU on the bus")
    gemm_factor: dict[int, float] = Field(default_factory=dict, description="GPU slot -> scale of its GEMM TFLOPs")
    gemm_image: str | None = Field(None, description="the container image the slow GEMM is in; None: every run")
    nonfinite: dict[int, int] = Field(default_factory=dict, description="GPU slot -> NaN/Inf in its GEMM results")
    all_reduce: str = Field("ok", description="ok, wrong (a rank's sum is off) or hang (a rank never finishes)")
    entry_lost: str | None = Field(
        None, description="the last device's entry is dropped ('drop') or replaced by the one before ('repeat')"
    )
    all_reduce_world: int | None = Field(None, description="ranks the all-reduce runs on; None: every device")
    fp8_skipped: list[int] = Field(default_factory=list, description="GPU slots whose FP8 stage says skipped")


class SimContainer(Model):
    """What the node's container runtimes (docker, podman, apptainer) do with any image; container faults change it."""

    image_missing: bool = Field(False, description="no image is present and the pull is refused")
    no_gpu: bool = Field(False, description="containers get no GPU device, whatever options they are given")


class SimBehaviour(Model):
    """How one program (or some of its subcommands) misbehaves on a node: a behaviour fault, resolved."""

    kind: FaultKind
    program: str
    args: tuple[str, ...] = Field((), description="words that must all be among the arguments; () matches all")
    params: dict[str, str | int | float | bool] = Field(default_factory=dict)

    def matches(self, program: str, argv: list[str]) -> bool:
        """Whether this behaviour applies to ``argv`` (whose program's basename is ``program``)."""
        # Words, not arguments: ``args = "-c %n %i"`` names `stat -L -c "%n %i" /sys/module/amdgpu` too.
        return program == self.program and set(self.args) <= set(" ".join(argv[1:]).split())


class SimNode(Model):
    """Everything the renderers need to answer a command on one node."""

    name: str
    pool: str
    gpu_model: GpuModel
    stack: StackSpec = Field(description="effective stack, after drift faults")
    expected_stack: StackSpec = Field(description="the stack the cluster file pins for this node")
    gpus: list[SimGpu] = Field(description="GPUs the bus enumerates, in index order")
    missing_slots: list[int] = Field(default_factory=list)
    nics: list[SimNic] = Field(default_factory=list)
    cpu_model: str
    cpu_sockets: int
    cores_per_socket: int
    host_memory_bytes: int
    kernel_cmdline: str
    boot_id: str
    driver_loaded: bool = True
    uptime_s: float = Field(7 * 86_400.0, description="seconds since the node booted")
    cper_enabled: bool = Field(True, description="the driver keeps a CPER ring (amd-smi ras --cper can read it)")
    sudo_denied: bool = Field(False, description="sudo -n refuses the SSH user (a password is required)")
    behaviours: list[SimBehaviour] = Field(default_factory=list)
    ssh_refused: bool = False
    auth_failure: bool = False
    host_key_changed: bool = False
    rccl_wrong: bool = False
    rccl_hang: bool = False
    rvs_peqt_word: str | None = Field(None, description="the word this node's RVS prints as every peqt verdict")
    rvs_unseen_slots: list[int] = Field(
        default_factory=list, description="GPU slots RVS does not enumerate (every module skips them)"
    )
    rvs_stop_after: int | None = Field(
        None, description="RVS stops after this many actions of a run and still exits 0 (a crashed child)"
    )
    rccl_unvalidated: bool = Field(
        False, description="the node's rccl-tests ignore -c 1: no #wrong is checked (every cell N/A)"
    )
    rccl_repeat_factor: float | None = Field(
        None, description="the largest size is measured and printed again, at this share of its busbw"
    )
    rccl_header_lost: int | None = Field(
        None, description="the table header line (1 placement, 2 columns, 3 units) the node's log collector drops"
    )
    rccl_gpus: int | None = Field(
        None, description="the node's all_reduce_perf (a site wrapper) drives only this many GPUs per process"
    )
    rccl_busbw_factor: float = 1.0
    rccl_latency_us: float = Field(0.0, description="added to every collective's time: small messages show it")
    tb_p2p_row_lost: int | None = Field(
        None, description="GPU index whose rows TransferBench p2p's matrices print none of (the columns stay)"
    )
    tb_healthcheck_ends_early: bool = Field(
        False, description="TransferBench's healthcheck exits 0 before its all-to-all test, with no error line"
    )
    torch: SimTorch = Field(default_factory=SimTorch)
    container: SimContainer = Field(default_factory=SimContainer)
    uplink: str | None = Field(None, description="the slow switch uplink this node sits behind (uplink_slow)")
    uplink_factor: float = Field(1.0, description="what a run crossing that uplink keeps of its busbw")
    rccl_flaky_every: int = Field(0, description="every Nth multi-node run with this node fails (0: never)")
    rccl_flaky_first: int = Field(0, description="the first of those failing runs, counted from 1")
    faults: list[Fault] = Field(default_factory=list)

    @property
    def spec(self) -> GpuModelSpec:
        """Hardware facts of this node's GPU model."""
        return GPU_SPECS[self.gpu_model]

    def gpu_by_slot(self, slot: int) -> SimGpu | None:
        """The GPU in physical slot ``slot``; None if it is missing from the bus."""
        return next((gpu for gpu in self.gpus if gpu.slot == slot), None)

    def behaviour_for(self, program: str, argv: list[str]) -> SimBehaviour | None:
        """The first behaviour fault acting on ``argv`` (``program`` is its basename), if any."""
        return next((b for b in self.behaviours if b.matches(program, argv)), None)

    def has_fault(self, kind: FaultKind) -> bool:
        """Whether a fault of ``kind`` is injected on this node."""
        return any(fault.kind == kind for fault in self.faults)


def jitter_rng(seed: int, node: str, invocation: int) -> random.Random:
    """The RNG for one command invocation: same (seed, node, invocation) -> same readings."""
    return random.Random(f"jitter:{seed}:{node}:{invocation}")


def _xgmi_links(model: GpuModel, slot: int, peer: int) -> int:
    """Physical XGMI links between two GPU slots."""
    if model is not GpuModel.MI250X:
        return 1
    # MI250X: the two GCDs of one OAM share 4 links; GCDs of the same parity on other OAMs one link;
    # the rest are reached through a neighbour (2 hops).
    if slot // 2 == peer // 2:
        return 4
    return 1 if slot % 2 == peer % 2 else 0


def _hex(rng: random.Random, digits: int) -> str:
    return f"{rng.getrandbits(4 * digits):0{digits}x}"


def _build_gpu(spec: GpuModelSpec, slot: int, kfd_node: int, rng: random.Random) -> SimGpu:
    bus = spec.bus_numbers[slot]
    idle = spec.gfx_clock_idle_mhz
    per_socket = spec.gpus_per_node // 2
    return SimGpu(
        slot=slot,
        index=slot,
        bus=bus,
        bdf=f"0000:{bus:02x}:00.0",
        kfd_node=kfd_node,
        kfd_gpu_id=rng.randrange(1000, 65535),
        numa_node=slot // per_socket,
        oam_id=slot // 2 if spec.model is GpuModel.MI250X else (slot * 5 + 2) % spec.gpus_per_node,
        serial=f"{rng.randrange(10**11, 10**12)}",
        asic_serial="0x" + _hex(rng, 16).upper(),
        uuid=f"{_hex(rng, 2)}ff{spec.device_id}-0000-1000-80{_hex(rng, 2)}-{_hex(rng, 12)}",
        hotspot_c=round(spec.idle_hotspot_c + rng.uniform(-3, 6), 1),
        mem_c=round(spec.idle_mem_c + rng.uniform(-2, 5), 1),
        edge_c=round(spec.idle_hotspot_c - 6 + rng.uniform(-2, 3), 1) if spec.model is GpuModel.MI250X else None,
        power_w=round(spec.idle_power_w * rng.uniform(0.95, 1.06)),
        power_cap_w=spec.power_cap_w,
        gfx_clock_mhz=round(idle * rng.uniform(0.97, 1.08)),
        mem_clock_mhz=spec.mem_clock_idle_mhz,
        vram_used_bytes=rng.randrange(280, 300) * 1024 * 1024,
        energy_uj=rng.randrange(10**12, 10**13),
        pcie_gen=spec.pcie_gen,
        pcie_width=spec.pcie_width,
        pcie_replay_count=rng.choice((0, 0, 0, 1, 2)),
        ecc={block: SimEcc() for block in ECC_BLOCKS},
        bad_page_threshold=spec.bad_page_threshold,
        violations_pct={name: 0.0 for name in VIOLATION_TYPES} if spec.has_violation_api else {},
        firmware=dict(spec.firmware),
        vbios_version=spec.vbios_version,
        xgmi={
            peer: SimXgmiLink(
                peer_slot=peer,
                links=_xgmi_links(spec.model, slot, peer),
                bit_rate_gbps=spec.xgmi_bit_rate_gbps,
                max_bandwidth_gbps=spec.xgmi_max_bandwidth_gbps * _xgmi_links(spec.model, slot, peer),
            )
            for peer in range(spec.gpus_per_node)
            if peer != slot
        },
    )


_NIC_FAMILY = {
    GpuModel.MI300X: ("mlx5_{i}", "ens{n}np0"),
    GpuModel.MI325X: ("mlx5_{i}", "ens{n}np0"),
    GpuModel.MI350X: ("bnxt_re{i}", "ens{n}f0np0"),
    GpuModel.MI355X: ("ionic_{i}", "enp{n}s0"),
    GpuModel.MI250X: ("mlx5_{i}", "ens{n}np0"),
}
_CPU = {
    GpuModel.MI300X: ("AMD EPYC 9654 96-Core Processor", 96, 2048),
    GpuModel.MI325X: ("AMD EPYC 9654 96-Core Processor", 96, 3072),
    GpuModel.MI350X: ("AMD EPYC 9575F 64-Core Processor", 64, 3072),
    GpuModel.MI355X: ("AMD EPYC 9575F 64-Core Processor", 64, 3072),
    GpuModel.MI250X: ("AMD EPYC 7A53 64-Core Processor", 64, 512),
}


def _build_nics(model: GpuModel, gpus: list[SimGpu], rng: random.Random, rate_gbps: int | None) -> list[SimNic]:
    device_fmt, netdev_fmt = _NIC_FAMILY[model]
    count = 4 if model is GpuModel.MI250X else len(gpus)
    nics = []
    for i in range(count):
        gpu = gpus[i * len(gpus) // count]
        bus = (gpu.bus - 2) & 0xFF
        mac_tail = _hex(rng, 6)
        nics.append(
            SimNic(
                index=i,
                device=device_fmt.format(i=i),
                netdev=netdev_fmt.format(n=bus),
                bdf=f"0000:{bus:02x}:00.0",
                numa_node=gpu.numa_node,
                guid=f"{_hex(rng, 4)}:{_hex(rng, 4)}:{_hex(rng, 4)}:{_hex(rng, 4)}",
                mac="7c:c2:55:" + ":".join(mac_tail[k : k + 2] for k in (0, 2, 4)),
                rate_gbps=rate_gbps or 400,
            )
        )
    return nics


def build_node(cluster: ClusterSpec, name: str) -> SimNode:
    """The concrete state of node ``name``: deterministic in (cluster seed, node spec, faults)."""
    from console.sim.effects import apply_fault

    node_spec = cluster.node(name)
    spec = node_spec.spec
    rng = random.Random(f"node:{cluster.seed}:{name}")
    # KFD numbers nodes in discovery order, which is not bus order: CPUs first, then GPUs shuffled.
    kfd_nodes = list(range(2, 2 + spec.gpus_per_node))
    rng.shuffle(kfd_nodes)
    gpus = [_build_gpu(spec, slot, kfd_nodes[slot], rng) for slot in range(spec.gpus_per_node)]
    cpu_model, cores, mem_gib = _CPU[node_spec.gpu_model]
    node = SimNode(
        name=name,
        pool=node_spec.pool,
        gpu_model=node_spec.gpu_model,
        stack=node_spec.stack.model_copy(deep=True),
        expected_stack=node_spec.stack.model_copy(deep=True),
        gpus=gpus,
        nics=_build_nics(node_spec.gpu_model, gpus, rng, node_spec.nic_rate_gbps),
        cpu_model=cpu_model,
        cpu_sockets=2,
        cores_per_socket=cores,
        host_memory_bytes=mem_gib * 1024**3,
        kernel_cmdline=(
            f"BOOT_IMAGE=/boot/vmlinuz-{node_spec.stack.kernel} root=/dev/mapper/vg0-root ro "
            "pci=realloc=off pci=bfsort amd_iommu=on iommu=pt numa_balancing=disable modprobe.blacklist=amdgpu"
        ),
        boot_id=f"{_hex(rng, 8)}-{_hex(rng, 4)}-{_hex(rng, 4)}-{_hex(rng, 4)}-{_hex(rng, 12)}",
        faults=cluster.faults_on(name),
        # Drawn apart from the node's build so that adding it changed no other drawn value.
        uptime_s=random.Random(f"uptime:{cluster.seed}:{name}").uniform(2, 30) * 86_400.0,
    )
    for fault in node.faults:
        apply_fault(node, fault, random.Random(f"fault:{cluster.seed}:{fault.describe()}"))
    for index, gpu in enumerate(node.gpus):
        gpu.index = index
    return node


def example_cluster(
    name: str = "demo",
    seed: int = 7,
    nodes_per_model: dict[GpuModel, int] | None = None,
    base_port: int = 22,
    with_faults: bool = True,
) -> ClusterSpec:
    """A ready-made cluster: a pool per GPU model on its default ROCm line, plus ``demo_faults``.

    Nodes are named ``<model>-<nn>`` (e.g. ``mi300x-01``) and listen on consecutive ports from
    ``base_port`` when it is not 22 (one local server per node), else all on port 22.
    """
    counts = nodes_per_model or {GpuModel.MI300X: 4, GpuModel.MI355X: 4}
    nodes: list[NodeSpec] = []
    for model, count in counts.items():
        for n in range(1, count + 1):
            port = base_port if base_port == 22 else base_port + len(nodes)
            nodes.append(
                NodeSpec(
                    name=f"{model.value.lower()}-{n:02d}",
                    gpu_model=model,
                    pool=model.value.lower(),
                    stack=stack_preset(DEFAULT_STACK[model]),
                    port=port,
                )
            )
    names = [node.name for node in nodes]
    faults = demo_faults(names, seed) if with_faults else []
    return ClusterSpec(name=name, seed=seed, nodes=nodes, faults=faults)
