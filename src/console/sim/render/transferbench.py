"""TransferBench on a simulated node: the ``a2a``, ``p2p``, ``healthcheck`` and ``a2asweep`` presets.

Bandwidths come from the node model: each GPU pair moves ``transferbench_pair_gbps`` scaled by the
pair's XGMI ``bw_factor`` (``transferbench_pair_slow`` ~0.6, ``xgmi_link_degraded`` ~0.55,
``xgmi_link_down`` ~0.3: the traffic detours through a third GPU), host links by the PCIe link the GPU
trained to, HBM by the GPU's ``hbm_factor``. Layouts follow the TransferBench version of the node's
stack: the v1.6x banner and env dump, the a2asweep table of v1.60-v1.66 (Min/Max per unroll) and of
v1.67+ (``Blocksize:`` and Min only), and the healthcheck preset (HBM tests from v1.63), which only
supports 8 x gfx942 and otherwise prints its ``[WARN]`` and exits 1.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from console.sim.commands import SimContext, SimReply
from console.sim.models import SimGpu, SimNode
from console.sim.specs import pcie_gen_speed

__all__ = ["handle", "parse_bytes"]

SFACTOR = 0.97  # healthcheck scales every limit by this
HEALTHCHECK_LIMITS = {"h2d": 50.0, "d2h": 50.0, "bidir": 90.0, "a2a": 45.0}
HBM_LIMITS = {"READ": 4980.0, "WRITE": 4850.0, "COPY": 2045.0, "ADD": 1405.0}
_HBM_EFFICIENCY = {"READ": 0.955, "WRITE": 0.93, "COPY": 0.392, "ADD": 0.27}  # of the peak HBM bandwidth

_COMMON_ENV = (
    ("ALWAYS_VALIDATE", "0", "Validating after all iterations"),
    ("BLOCK_BYTES", "256", "Each CU gets a mulitple of 256 bytes to copy"),
    ("BYTE_OFFSET", "0", "Using byte offset of 0"),
    ("CLOSEST_NIC", "auto", "Per-GPU closest NIC is set as auto"),
    ("CU_MASK", "0", "All"),
    ("FILL_PATTERN", "0", "Element i = ((i * 517) modulo 383 + 31) * (srcBufferIdx + 1)"),
    ("GFX_BLOCK_SIZE", "256", "Threadblock size of 256"),
    ("GFX_SINGLE_TEAM", "1", "Combining CUs to work across entire data array"),
    ("GFX_UNROLL", "2", "Using GFX unroll factor of 2"),
    ("GFX_WAVE_ORDER", "0", "Using GFX wave ordering of Unroll,Wavefront,CU"),
    ("IP_ADDRESS_FAMILY", "4", "IP address family is set to IPv4"),
    ("IB_GID_INDEX", "-1", "RoCE GID index is set to auto"),
    ("IB_PORT_NUMBER", "1", "IB port number is set to 1"),
    ("MIN_VAR_SUBEXEC", "1", "Using at least 1 subexecutor(s) for variable subExec tranfers"),
    ("MAX_VAR_SUBEXEC", "0", "Using up to all available subexecutors for variable subExec transfers"),
    ("NIC_RELAX_ORDER", "1", "Using relaxed ordering for NIC RDMA"),
    ("NUM_ITERATIONS", "10", "Running 10  timed iteration(s)"),
    ("NUM_SUBITERATIONS", "1", "Running 1 subiterations"),
    ("NUM_WARMUPS", "3", "Running 3 warmup iteration(s) per Test"),
    ("ROCE_VERSION", "2", "RoCE version is set to 2"),
    ("SHOW_ITERATIONS", "0", "Hiding per-iteration timing"),
    ("USE_HIP_EVENTS", "1", "Using HIP events for GFX/DMA Executor timing"),
    ("USE_HSA_DMA", "0", "Using hipMemcpyAsync for DMA execution"),
    ("USE_INTERACTIVE", "0", "Running in non-interactive mode"),
    ("USE_SINGLE_STREAM", "1", "Using single stream per GFX device"),
    ("VALIDATE_DIRECT", "0", "Validate GPU destination memory via CPU staging buffer"),
    ("VALIDATE_SOURCE", "0", "Do not perform source validation after prep"),
)

_BYTES = re.compile(r"^(\d+)([kKmMgG]?)$")


def parse_bytes(text: str) -> int | None:
    """TransferBench byte counts: ``64M``, ``256K``, ``1G`` (powers of 1024) or plain numbers."""
    match = _BYTES.match(text)
    if not match:
        return None
    unit = match.group(2).lower()
    return int(match.group(1)) * (1024 ** ("kmg".index(unit) + 1) if unit else 1)


def _version(text: str) -> tuple[int, int]:
    parts = [int(part) for part in re.findall(r"\d+", text)[:2]] + [0, 0]
    return parts[0], parts[1]


@dataclass
class _Bench:
    """One TransferBench run: the node, its version, jitter and the output being built."""

    node: SimNode
    rng: random.Random
    env: dict[str, str]
    lines: list[str] = field(default_factory=list)

    @property
    def version(self) -> tuple[int, int]:
        return _version(self.node.stack.transferbench)

    @cached_property
    def gpus(self) -> list[SimGpu]:
        """The GPUs HIP enumerates, numbered as HIP numbers them: one it does not see shifts the rest down."""
        visible = [gpu for gpu in self.node.gpus if gpu.hip_visible]
        if len(visible) == len(self.node.gpus):
            return self.node.gpus
        return [gpu.model_copy(update={"index": position}) for position, gpu in enumerate(visible)]

    def jitter(self, low: float = 0.985, high: float = 1.01) -> float:
        return self.rng.uniform(low, high)

    def banner(self) -> None:
        major, minor = self.version
        suffix = " (HEAD:2bc42cd) (Single-node mode)" if self.version >= (1, 67) else ""
        if (1, 60) <= self.version < (1, 67):
            suffix = " (with NIC support)"
        self.lines.append(f"TransferBench v{major}.{minor:02d}.00{suffix}")

    def env_section(self, title: str, entries: list[tuple[str, str, str]], common: bool = False) -> None:
        if self.env.get("HIDE_ENV", "0") not in ("", "0"):
            return
        width = 22 if self.version >= (1, 67) else 20
        if common:
            self.lines.append("=" * 63)
            self.lines.append(f"{'[Common]':<38}(Suppress by setting HIDE_ENV=1)")
            self.lines += [f"{name:<{width}} = {value:>12} : {text}" for name, value, text in _COMMON_ENV]
            self.lines.append("")
        self.lines.append(f"[{title}]")
        self.lines += [f"{name:<{width}} = {value:>12} : {text}" for name, value, text in entries]
        self.lines.append("")


# --- bandwidth model ------------------------------------------------------------------------------


def _direct(gpu: SimGpu, peer: SimGpu) -> bool:
    link = gpu.xgmi.get(peer.slot)
    return link is not None and link.links > 0


def _pair_gbps(bench: _Bench, gpu: SimGpu, peer: SimGpu, scale: float = 1.0) -> float:
    """Measured GPU->peer copy bandwidth (GB/s) with ``scale`` for the preset's CU count and memory."""
    link = gpu.xgmi.get(peer.slot)
    factor = link.bw_factor if link is not None else 0.25
    return bench.node.spec.transferbench_pair_gbps * scale * factor * bench.jitter(0.97, 1.012)


def _pcie_factor(node: SimNode, gpu: SimGpu) -> float:
    spec = node.spec
    speed = pcie_gen_speed(gpu.pcie_gen) / spec.pcie_speed_gts
    return min(1.0, speed) * min(1.0, gpu.pcie_width / spec.pcie_width) * spec.pcie_speed_gts / 32.0


def _cu_scale(cus: int) -> float:
    """Fraction of the link an all-to-all Transfer reaches with ``cus`` CUs (8 CUs saturate XGMI)."""
    return min(1.02, (1 - math.exp(-cus / 2.8)) / (1 - math.exp(-8 / 2.8)))


# --- a2a ----------------------------------------------------------------------------------------


@dataclass
class _Transfer:
    src: SimGpu
    dst: SimGpu
    gbps: float
    ms: float


def _a2a(bench: _Bench, args: list[str]) -> int:
    default_bytes = 256 * 1024 * 1024 if bench.version >= (1, 59) else 64 * 1024 * 1024
    num_bytes = parse_bytes(args[0]) if args else default_bytes
    cus = int(args[1]) if len(args) > 1 and args[1].isdigit() else 8
    if num_bytes is None:
        bench.lines.append(f"[ERROR] Unable to parse number of bytes: {args[0]}")
        return 1
    gpus = bench.gpus
    bench.banner()
    bench.env_section(
        "AllToAll Related",
        [
            ("A2A_DIRECT", "1", "Only using direct links"),
            ("A2A_LOCAL", "0", "Exclude local transfers"),
            ("A2A_MODE", "0", "Copy"),
            ("NUM_GPU_DEVICES", str(len(gpus)), f"Using {len(gpus)} GPUs"),
            ("NUM_QUEUE_PAIRS", "0", "Using 0 queue pairs for NIC transfers"),
            ("NUM_SUB_EXEC", str(cus), f"Using {cus} subexecutors/CUs per Transfer"),
            ("USE_DMA_EXEC", "0", "Using GFX executor"),
            ("USE_FINE_GRAIN", "1", "Using fine-grained memory"),
            ("USE_REMOTE_READ", "0", "Using SRC as executor"),
        ],
        common=True,
    )
    transfers = [
        _Transfer(src, dst, gbps, num_bytes / gbps / 1e6)
        for src in gpus
        for dst in gpus
        if src is not dst and _direct(src, dst) and src.xgmi[dst.slot].tb_measured
        for gbps in [_pair_gbps(bench, src, dst, _cu_scale(cus))]
    ]
    bench.lines += [
        "GPU-GFX All-To-All benchmark:",
        "==========================",
        f"- Copying {num_bytes} bytes between directly connected pairs of GPUs using {cus} CUs "
        f"({len(transfers)} Transfers)",
        "Test 1:",
    ]
    slowest_exec = 0.0
    number = 0
    for gpu in gpus:
        mine = [t for t in transfers if t.src is gpu]
        if not mine:
            continue
        exec_ms = max(t.ms for t in mine) + bench.rng.uniform(0.003, 0.01)
        slowest_exec = max(slowest_exec, exec_ms)
        total = num_bytes * len(mine)
        bench.lines.append(
            f" Executor: GPU {gpu.index:02d} | {total / exec_ms / 1e6:8.3f} GB/s | {exec_ms:8.3f} ms | "
            f"{total:12d} bytes | {sum(t.gbps for t in mine):.3f} GB/s (sum)"
        )
        for t in mine:
            bench.lines.append(
                f"     Transfer {number:02d}  | {t.gbps:8.3f} GB/s | {t.ms:8.3f} ms | {num_bytes:12d} bytes | "
                f"F{t.src.index} -> G{t.src.index:03d}:{cus:03d} -> F{t.dst.index}"
            )
            number += 1
    overhead = bench.rng.uniform(0.3, 0.5)
    all_bytes = num_bytes * len(transfers)
    cpu_ms = slowest_exec + overhead
    cpu_gbps = all_bytes / cpu_ms / 1e6 if transfers else 0.0
    bench.lines.append(
        f" Aggregate (CPU)  | {cpu_gbps:8.3f} GB/s | {cpu_ms:8.3f} ms | {all_bytes:12d} bytes | "
        f"Overhead: {overhead:.3f} ms"
    )
    _a2a_summary(bench, transfers, num_bytes, cpu_gbps)
    return 0


def _a2a_summary(bench: _Bench, transfers: list[_Transfer], num_bytes: int, cpu_gbps: float) -> None:
    gpus = bench.gpus
    cell = {(t.src.index, t.dst.index): t.gbps for t in transfers}
    header = "SRC\\DST" + "".join(f"{f'GPU {g.index:02d}':>{8 if k == 0 else 11}}" for k, g in enumerate(gpus))
    bench.lines += [
        "",
        f"Summary: [{num_bytes} bytes per Transfer]",
        "=" * 58,
        header + f"{'STotal':>14}{'Actual':>12}",
    ]
    actuals = []
    for src in gpus:
        values = [cell.get((src.index, dst.index)) for dst in gpus]
        present = [value for value in values if value is not None]
        actual = min(present) * len(present) if present else 0.0
        actuals.append(actual)
        cells = "".join(
            f"{'N/A' if value is None else f'{value:.3f}':>{9 if k == 0 else 11}}" for k, value in enumerate(values)
        )
        bench.lines.append(f"GPU {src.index:02d}{cells}{sum(present):14.3f}{actual:12.3f}")
    columns = [sum(cell.get((src.index, dst.index), 0.0) for src in gpus) for dst in gpus]
    totals = "".join(f"{value:>{9 if k == 0 else 11}.3f}" for k, value in enumerate(columns))
    grand = sum(t.gbps for t in transfers)
    bench.lines += [
        "",
        f"RTotal{totals}{grand:14.3f}{min(actuals, default=0.0):12.3f}{max(actuals, default=0.0):12.3f}",
        "",
        f"Average   bandwidth (GPU Timed): {grand / max(len(transfers), 1):8.3f} GB/s",
        f"Aggregate bandwidth (GPU Timed): {grand:8.3f} GB/s",
        f"Aggregate bandwidth (CPU Timed): {cpu_gbps:8.3f} GB/s",
    ]


# --- p2p ----------------------------------------------------------------------------------------


def _p2p_value(bench: _Bench, src: tuple[str, int], dst: tuple[str, int], bidir: bool) -> float:
    """One direction of a p2p cell: CPU/GPU executors on local or remote memory."""
    node = bench.node
    kind = (src[0], dst[0])
    if kind == ("CPU", "CPU"):
        base = (88.6 if bidir else 92.0) if src[1] == dst[1] else (88.8 if bidir else 103.5)
        return base * bench.jitter()
    if kind == ("CPU", "GPU"):
        return 44.9 * _pcie_factor(node, bench.gpus[dst[1]]) * bench.jitter(0.985, 1.005)
    if kind == ("GPU", "CPU"):
        return (55.1 if not bidir else 55.0) * _pcie_factor(node, bench.gpus[src[1]]) * bench.jitter(0.975, 1.005)
    gpu, peer = bench.gpus[src[1]], bench.gpus[dst[1]]
    if gpu is peer:
        return node.spec.hbm_bandwidth_gbps * 0.27 * gpu.hbm_factor * bench.jitter()
    return _pair_gbps(bench, gpu, peer, 0.985 if bidir else 1.03)


def _p2p(bench: _Bench, args: list[str]) -> int:
    node = bench.node
    num_bytes = (parse_bytes(args[0]) if args else None) or 256 * 1024 * 1024
    cpus = [("CPU", k) for k in range(node.cpu_sockets)]
    gpus = [("GPU", gpu.index) for gpu in bench.gpus]
    bench.banner()
    bench.env_section(
        "P2P Related",
        [
            ("NUM_CPU_DEVICES", str(len(cpus)), f"Using {len(cpus)} CPUs"),
            ("NUM_CPU_SE", "4", "Using 4 CPU threads per Transfer"),
            ("NUM_GPU_DEVICES", str(len(gpus)), f"Using {len(gpus)} GPUs"),
            ("NUM_GPU_SE", str(node.spec.compute_units), f"Using {node.spec.compute_units} GPU subexecutors/CUs "
             "per Transfer"),
            ("P2P_MODE", "0", "Running Uni + Bi transfers"),
            ("USE_FINE_GRAIN", "0", "Using coarse-grained memory"),
            ("USE_GPU_DMA", "0", "Using GPU-GFX as GPU executor"),
            ("USE_REMOTE_READ", "0", "Using SRC as executor"),
        ],
        common=True,
    )  # fmt: skip
    bench.lines.append(f"Bytes Per Direction {num_bytes}")
    devices = cpus + gpus
    for bidir in (False, True):
        _p2p_table(bench, devices, len(cpus), bidir)
    return 0


def _p2p_table(bench: _Bench, devices: list[tuple[str, int]], num_cpus: int, bidir: bool) -> None:
    direction = "Bi" if bidir else "Uni"
    bench.lines.append(
        f"{direction}directional copy peak bandwidth GB/s [Local read / Remote write] (GPU-Executor: GFX)"
    )
    corner = "SRC\\DST" if bidir else "SRC+EXE\\DST"
    header = f"{corner:>12}"
    for k, (kind, index) in enumerate(devices):
        header += ("   " if k == num_cpus and k else "") + f"{kind:>7} {index:02d}"
    bench.lines.append(header)
    sums: dict[tuple[str, str], list[float]] = {}
    for position, src in enumerate(devices):
        if position == num_cpus and position:
            bench.lines.append("")
        rows: list[list[float | None]] = [[], []]
        for dst in devices:
            same = src == dst
            for way in range(2 if bidir else 1):
                if bidir and same:
                    rows[way].append(None)
                    continue
                a, b = (src, dst) if way == 0 else (dst, src)
                value = _p2p_value(bench, a, b, bidir)
                rows[way].append(value)
                if not same:
                    sums.setdefault((src[0], dst[0]), []).append(value)
        labels = (" ->", "<- ") if bidir else (" ->",)
        if src == ("GPU", bench.node.tb_p2p_row_lost):
            continue  # the rows are lost; the column, and the averages, stay
        for way, label in enumerate(labels):
            bench.lines.append(_p2p_row(src, label, rows[way], num_cpus))
        if bidir:
            combined = [None if x is None or y is None else x + y for x, y in zip(rows[0], rows[1], strict=True)]
            bench.lines.append(_p2p_row(src, "<->", combined, num_cpus))
            if position < len(devices) - 1:
                bench.lines.append("")
    kinds = [(a, b) for a in ("CPU", "GPU") for b in ("CPU", "GPU")]
    bench.lines.append(" " * 25 + "".join(f"  {a}->{b}" for a, b in kinds))
    averages = "".join(
        f"{sum(sums[kind]) / len(sums[kind]):10.2f}" if sums.get(kind) else f"{'N/A':>10}" for kind in kinds
    )
    bench.lines += [f"Averages (During {' BiDir' if bidir else 'UniDir'}):{averages}", ""]


def _p2p_row(src: tuple[str, int], label: str, values: list[float | None], num_cpus: int) -> str:
    text = f"{src[0]:>5} {src[1]:02d} {label:>3}"
    for k, value in enumerate(values):
        text += ("   " if k == num_cpus and k else "") + (f"{'N/A':>10}" if value is None else f"{value:10.2f}")
    return text


# --- healthcheck --------------------------------------------------------------------------------


def _check_line(bench: _Bench, title: str, dots: int, failures: list[str]) -> int:
    result = "PASS" if not failures else f"FAIL ({len(failures)} test(s))"
    bench.lines.append(f"{title:<42} " + "." * dots + result)
    bench.lines += failures
    return 1 if failures else 0


def _healthcheck(bench: _Bench, args: list[str]) -> int:
    node = bench.node
    bench.banner()
    bench.lines += [
        "Disclaimer:",
        "=" * 66,
        "NOTE: This is an experimental feature and may be subject to change",
        "      Failures do not necessarily indicate hardware issues, as other factors",
        "      such as simultaneous workloads may influence results",
        "",
    ]
    spec = node.spec
    gpus = bench.gpus
    if spec.gfx_target != "gfx942" or len(gpus) != 8:
        bench.lines += [
            "[WARN] healthcheck preset is currently not supported on this hardware",
            f"       Detected {len(gpus)} x [{spec.gfx_target}] with [{spec.compute_units}] subexecutors per GPU",
        ]
        return 1
    fails = 0
    if bench.version >= (1, 63):
        for test, efficiency in _HBM_EFFICIENCY.items():
            limit = HBM_LIMITS[test] * SFACTOR
            measured = [
                (gpu, spec.hbm_bandwidth_gbps * efficiency * gpu.hbm_factor * bench.jitter(0.995, 1.01)) for gpu in gpus
            ]
            failures = [
                f" GPU {gpu.index:02d}: Measured: {value:6.2f} GB/s      Criteria: {limit:6.2f} GB/s"
                for gpu, value in measured
                if value < limit
            ]
            fails |= _check_line(bench, f"Testing HBM performance [{test}]", len(gpus), failures)
    host_tests = (
        ("Testing unidirectional host to device copy", "h2d", 54.2),
        ("Testing unidirectional device to host copy", "d2h", 55.3),
        ("Testing bidirectional host<->device copies", "bidir", 101.5),
    )
    for title, key, healthy in host_tests:
        limit = HEALTHCHECK_LIMITS[key] * SFACTOR
        measured = [(gpu, healthy * _pcie_factor(node, gpu) * bench.jitter(0.99, 1.01)) for gpu in gpus]
        failures = [
            f" GPU {gpu.index:02d}: Measured: {value:6.2f} GB/s      Criteria: {limit:6.2f} GB/s"
            for gpu, value in measured
            if value < limit
        ]
        fails |= _check_line(bench, title, len(gpus), failures)
    if node.tb_healthcheck_ends_early:
        return fails
    limit = HEALTHCHECK_LIMITS["a2a"] * SFACTOR
    failures = []
    for gpu in gpus:
        for peer in gpus:
            if peer is not gpu:
                value = _pair_gbps(bench, gpu, peer, 1.0)
                if value < limit:
                    pair = f"GPU {gpu.index:02d} to GPU {peer.index:02d}"
                    failures.append(f" {pair}: {value:6.2f} GB/s      Criteria: {limit:6.2f} GB/s")
    fails |= _check_line(bench, "Testing all-to-all XGMI copies", len(gpus), failures)
    return fails


# --- a2asweep -----------------------------------------------------------------------------------


def _sweep_efficiency(cus: int, unroll: int) -> float:
    """Share of peak all-to-all bandwidth at ``cus`` CUs per Transfer and GFX ``unroll`` (fits the v1.67 docs)."""
    work = cus * unroll
    return (1 - math.exp(-work / 6.5)) * (1 - 0.15 * max(0.0, (work - 48) / 208))


def _a2asweep(bench: _Bench, args: list[str]) -> int:
    gpus = bench.gpus
    num_bytes = (parse_bytes(args[0]) if args else None) or 256 * 1024 * 1024
    unrolls = [1, 2, 3, 4, 6, 8]
    cus_list = [4, 8, 12, 16, 24, 32]
    peers = {gpu.index: [peer for peer in gpus if peer is not gpu and _direct(gpu, peer)] for gpu in gpus}
    new_layout = bench.version >= (1, 67)
    bench.banner()
    section = [
        ("A2A_DIRECT", "1", "Only using direct links"),
        ("A2A_LOCAL", "0", "Exclude local transfers"),
        ("A2A_MODE", "0", "Copy"),
    ]
    if new_layout:
        section += [
            ("BLOCKSIZES", "1", "256"),
            ("MEM_TYPE", "2", "Using uncached GPU memory (0=default, 1=fine-grained, 2=uncached, 3=managed)"),
            ("NUM_GPU_DEVICES", str(len(gpus)), f"Using {len(gpus)} GPUs"),
            ("NUM_SUB_EXECS", str(len(cus_list)), ",".join(map(str, cus_list))),
            ("SHOW_MIN_ONLY", "1", "Showing only slowest GPU results"),
            ("UNROLLS", str(len(unrolls)), ",".join(map(str, unrolls))),
        ]
    else:
        section += [
            ("NUM_CUS", str(len(cus_list)), ",".join(map(str, cus_list))),
            ("NUM_GPU_DEVICES", str(len(gpus)), f"Using {len(gpus)} GPUs"),
            ("UNROLLS", str(len(unrolls)), ",".join(map(str, unrolls))),
            ("USE_FINE_GRAIN", "1", "Using fine-grained memory"),
        ]
    section += [
        ("USE_REMOTE_READ", "0", "Using SRC as executor"),
        ("USE_SPRAY", "0", "One target per SubExecutor" if new_layout else "One target per CU"),
        ("VERBOSE", "0", "Display summary only"),
    ]
    bench.env_section("AllToAll Related", section, common=True)
    bench.lines += [
        "GPU-GFX All-To-All Sweep benchmark:",
        "==========================",
        f"- Copying {num_bytes} bytes between directly connected pairs of GPUs",
    ]

    def executor_rates(cus: int, unroll: int) -> list[float]:
        scale = _sweep_efficiency(cus, unroll) / _sweep_efficiency(16, 2)
        return [sum(_pair_gbps(bench, gpu, peer, scale) for peer in peers[gpu.index]) for gpu in gpus]

    if new_layout:
        bench.lines += ["Blocksize: 256", "#CUs\\Unroll" + "".join(f"  {u}(Min)" for u in unrolls)]
        for cus in cus_list:
            bench.lines.append(f"{cus:9d}" + "".join(f" {min(executor_rates(cus, u)):8.2f}" for u in unrolls))
    else:
        bench.lines.append("#CUs\\Unroll" + "".join(f"  {u}(Min)   {u}(Max) " for u in unrolls))
        for cus in cus_list:
            cells = []
            for u in unrolls:
                rates = executor_rates(cus, u)
                cells.append(f" {min(rates):7.2f}  {max(rates):7.2f} ")
            bench.lines.append(f"   {cus:5d}   " + "".join(cells))
    return 0


# --- entry --------------------------------------------------------------------------------------

_PRESETS: dict[str, tuple[Callable[[_Bench, list[str]], int], float]] = {
    "a2a": (_a2a, 6.0),
    "p2p": (_p2p, 75.0),
    "healthcheck": (_healthcheck, 95.0),
    "a2asweep": (_a2asweep, 140.0),
}

_USAGE = """Usage: TransferBench config <N>
  config: Either:
          - Filename of configFile containing Transfers to execute (see example.cfg for format)
          - Name of preset config:
              a2a          - GPU All-To-All benchmark
              a2asweep     - GPU All-To-All benchmark sweep
              healthcheck  - Simple health check (supported on MI300 series only)
              p2p          - Peer-to-peer device memory bandwidth test
  N     : (Optional) Number of bytes to copy per Transfer.
"""


def handle(ctx: SimContext, argv: list[str]) -> SimReply:
    """Run a TransferBench preset (or report a config file it cannot open)."""
    args = argv[1:]
    bench = _Bench(node=ctx.node, rng=ctx.rng, env=dict(ctx.env))
    if not args or args[0] in ("-h", "--help", "help"):
        bench.banner()
        return SimReply(stdout="\n".join(bench.lines) + "\n" + _USAGE)
    preset = _PRESETS.get(args[0])
    if preset is None:
        bench.banner()
        bench.lines.append(f"[ERROR] Unable to open transfer configuration file: [{args[0]}]")
        return SimReply(stdout="\n".join(bench.lines) + "\n", exit_status=1)
    if not ctx.node.driver_loaded or not ctx.node.gpus:
        bench.banner()
        bench.lines.append("[ERROR] HIP Error: no ROCm-capable device is detected")
        return SimReply(stdout="\n".join(bench.lines) + "\n", exit_status=1, duration_s=ctx.duration(1.0))
    runner, seconds = preset
    status = runner(bench, args[1:])
    return SimReply(stdout="\n".join(bench.lines) + "\n", exit_status=status, duration_s=ctx.duration(seconds))
