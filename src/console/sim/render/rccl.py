"""rccl-tests (``all_reduce_perf`` and friends) on one or several simulated nodes, directly or under mpirun/srun.

The table is computed, not canned: every size row comes from a latency + bandwidth model whose peak
is the node model's expected bus bandwidth (MI300X ~316 GB/s in-place at 8 GB, MI355X ~407), scaled
for the collective, for the NIC fabric when the run spans nodes, and by the faults of every node in
the run: ``rccl_low_busbw`` and XGMI link faults lower the curve, ``rccl_wrong`` puts non-zero
``#wrong`` counts in the table (and ``N FAILED`` in the footer), ``rccl_hang`` stops the output before
the footer and never finishes (``Delivery.HANG``), ``rccl_unvalidated`` runs without validation (every
``#wrong`` N/A), ``rccl_fewer_ranks`` on fewer GPUs than the command asks for and ``rccl_row_repeated``
prints the largest size twice, the second slow; ``rccl_header_line_lost`` drops one line of the table's
header. Across nodes the
fabric counts too: the slowest NIC of any node gates every rail (``nic_slow``), a run between nodes
behind a slow switch uplink and nodes outside it crosses that uplink (``uplink_slow``), and a flaky link
(``rccl_flaky``) breaks every third multi-node run of its node with a network error, counted in the
state directory so it is reproducible.
Layout follows the RCCL line of the node: the rank lines, the version banner and the ``# Collective
test starting`` framing changed across releases.

``mpirun``/``mpiexec``/``srun`` are served here too: they pick the hosts (``-H``, ``-w``, ``-N``), the
rank count and the per-line prefix (srun ``--label``, Open MPI ``--tag-output``) and then run the
program; a program that is not an rccl test is run on every host through ``run_program``.
"""

from __future__ import annotations

import math
import random
import re
import signal
from dataclasses import dataclass, field, replace

from ClusterShell.NodeSet import NodeSet, NodeSetParseError

from console.sim.commands import (
    Delivery,
    SimContext,
    SimReply,
    context_for,
    next_invocation,
    program_name,
    run_program,
)
from console.sim.models import SimNode, build_node

__all__ = ["COLLECTIVES", "Collective", "handle", "parse_size"]

LAUNCHERS = ("mpirun", "mpiexec", "srun")


@dataclass(frozen=True)
class Collective:
    """How one rccl-tests binary prints and scales."""

    redop: bool  # prints the reduction op (else 'none')
    root: bool  # prints a real root (else -1)
    count_per_rank: bool  # element count is per rank (size / nranks)
    bus_factor: str  # 'allreduce' 2(n-1)/n, 'ring' (n-1)/n, 'one' 1
    single_node_peak: float  # fraction of the node model's all_reduce busbw
    multi_node_peak: float  # fraction of the NIC-limited node bandwidth
    latency_us: float
    in_place_check: bool = True  # False: in-place #wrong prints N/A


# all_reduce across nodes reaches 0.93 of the NIC limit (~372 GB/s with 8 x 400G): AMD's two-node floor
# for MI350X/MI355X is 350 GB/s on such NICs (system-acceptance docs/network/validation.md).
COLLECTIVES: dict[str, Collective] = {
    "all_reduce_perf": Collective(True, False, False, "allreduce", 1.0, 0.93, 14.0),
    "all_gather_perf": Collective(False, False, True, "ring", 0.95, 0.85, 11.0),
    "reduce_scatter_perf": Collective(True, False, True, "ring", 0.97, 0.88, 12.0),
    "alltoall_perf": Collective(False, False, True, "ring", 0.85, 0.13, 16.0, in_place_check=False),
    "alltoallv_perf": Collective(False, False, True, "ring", 0.8, 0.12, 18.0, in_place_check=False),
    "broadcast_perf": Collective(False, True, False, "one", 0.52, 0.78, 9.0),
    "reduce_perf": Collective(True, True, False, "one", 0.55, 0.76, 10.0),
    "gather_perf": Collective(False, True, True, "ring", 0.45, 0.5, 12.0),
    "scatter_perf": Collective(False, True, True, "ring", 0.45, 0.5, 12.0),
    "sendrecv_perf": Collective(False, False, False, "one", 0.155, 0.12, 8.0),
    "hypercube_perf": Collective(False, False, True, "ring", 0.5, 0.3, 15.0),
}

_TYPE_SIZES = {"int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "half": 2, "float": 4,
               "double": 8, "bfloat16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1}  # fmt: skip
_TYPE_ALIASES = {"int": "int32", "char": "int8", "fp16": "half", "fp32": "float", "fp64": "double", "bf16": "bfloat16"}
_OPS = ("sum", "prod", "max", "min", "avg")
_SIZE = re.compile(r"^(\d+)([kKmMgGtT]?)[bB]?$")


def parse_size(text: str) -> int | None:
    """rccl-tests size argument: ``8``, ``512k``, ``128M``, ``8G`` (powers of 1024); None if invalid."""
    match = _SIZE.match(text.strip())
    if not match:
        return None
    number, unit = int(match.group(1)), match.group(2).lower()
    return number * 1024 ** ("kmgt".index(unit) + 1) if unit else number


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


# --- launcher -----------------------------------------------------------------------------------


@dataclass
class _Launch:
    """Where and how the program runs: hosts, ranks per host, and the prefix of every output line."""

    hosts: list[str]
    ranks: int
    prefix: str = ""  # 'label' (srun), 'tag' (Open MPI --tag-output) or ''
    env: dict[str, str] = field(default_factory=dict)
    launcher: str = ""

    @property
    def per_host(self) -> int:
        return max(1, math.ceil(self.ranks / max(len(self.hosts), 1)))


_MPI_VALUE = {"-np", "-n", "-c", "--np", "-N", "--npernode", "-npernode", "-H", "--host", "-host", "--hostfile",
              "-hostfile", "-machinefile", "--machinefile", "-x", "--bind-to", "-bind-to", "--map-by", "-map-by",
              "--rank-by", "-wdir", "--wdir", "-ppn", "-hosts", "--prefix", "--report-bindings-file"}  # fmt: skip
_SRUN_VALUE = {"-N", "--nodes", "-n", "--ntasks", "--ntasks-per-node", "-w", "--nodelist", "-p", "--partition", "-t",
               "--time", "-A", "--account", "-c", "--cpus-per-task", "--gpus-per-node", "-G", "--gpus", "-J",
               "--job-name", "--mpi", "-o", "--output", "-e", "--error", "--cpu-bind", "--gpu-bind", "-x",
               "--exclude", "--export", "--mem"}  # fmt: skip


def _split_options(args: list[str], takes_value: set[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """(options as (name, value), program argv): options end at the first word that is not one."""
    options: list[tuple[str, str]] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("-"):
            break
        name, eq, value = arg.partition("=")
        if arg in ("--mca", "-mca", "--gmca", "-env", "-genv"):
            options.append((arg, " ".join(args[i + 1 : i + 3])))
            i += 3
            continue
        if not eq and name in takes_value:
            value = args[i + 1] if i + 1 < len(args) else ""
            i += 1
        options.append((name, value))
        i += 1
    return options, args[i:]


def _slurm_drained(ctx: SimContext, hosts: list[str]) -> list[str]:
    from console.sim.render.slurm import node_states

    states = node_states(ctx)
    return [host for host in hosts if states.of(host).drain or states.of(host).base == "DOWN"]


def _parse_launcher(ctx: SimContext, argv: list[str]) -> tuple[_Launch, list[str]] | SimReply:
    launcher = program_name(argv)
    cluster_names = [spec.name for spec in ctx.cluster.nodes]
    if launcher == "srun":
        options, program = _split_options(argv[1:], _SRUN_VALUE)
        opts = dict(options)
        if "-w" in opts or "--nodelist" in opts:
            try:
                hosts = list(NodeSet(opts.get("-w") or opts.get("--nodelist", "")))
            except NodeSetParseError:
                hosts = []
        else:
            count = int(opts.get("-N") or opts.get("--nodes") or 1)
            start = cluster_names.index(ctx.node.name) if ctx.node.name in cluster_names else 0
            hosts = (cluster_names[start:] + cluster_names[:start])[:count]
        unknown = [host for host in hosts if host not in cluster_names]
        if unknown or not hosts:
            return SimReply(
                stdout="",
                stderr="srun: error: Unable to allocate resources: Invalid node name specified\n",
                exit_status=1,
            )
        drained = _slurm_drained(ctx, hosts)
        if drained:
            queued = (
                "srun: Required node not available (down, drained or reserved)\n"
                f"srun: job {4000 + ctx.invocation % 5000} queued and waiting for resources\n"
            )
            immediate = opts.get("--immediate", opts.get("-I"))
            if immediate is not None:
                # As Slurm 22.05 in the lab (tests/multinode/test_workload_srun.py): it gives up after the wait.
                wait = float(immediate) if immediate.isdigit() else 0.0
                busy = "srun: error: Unable to allocate resources: Requested nodes are busy\n"
                return SimReply(stdout="", stderr=queued + busy, exit_status=1, duration_s=ctx.duration(wait))
            return SimReply(stdout="", stderr=queued, delivery=Delivery.HANG)
        per_node = opts.get("--ntasks-per-node")
        ranks = int(opts.get("-n") or opts.get("--ntasks") or (int(per_node) * len(hosts) if per_node else len(hosts)))
        label = "label" if ("-l" in opts or "--label" in opts) else ""
        exported = [item.partition("=") for item in opts.get("--export", "").split(",") if "=" in item]
        exports = {key: value for key, _, value in exported}
        return _Launch(hosts=hosts, ranks=ranks, prefix=label, env=exports, launcher=launcher), program
    options, program = _split_options(argv[1:], _MPI_VALUE)
    hosts, slots = [ctx.node.name], 0
    env: dict[str, str] = {}
    ranks = 0
    prefix = ""
    for name, value in options:
        if name in ("-np", "-n", "-c", "--np"):
            ranks = int(value) if value.isdigit() else 0
        elif name in ("-H", "--host", "-host", "-hosts"):
            entries = [entry.split(":") for entry in value.split(",") if entry]
            hosts = [entry[0] for entry in entries]
            slots = sum(int(entry[1]) if len(entry) > 1 and entry[1].isdigit() else 1 for entry in entries)
        elif name in ("-x", "-env", "-genv"):
            # Open MPI: -x KEY[=VALUE]; MPICH: -env KEY VALUE.
            key, _, val = value.partition("=" if name == "-x" else " ")
            env[key] = val or ctx.env.get(key, "")
        elif name == "--tag-output":
            prefix = "tag"
    unknown = [host for host in hosts if host not in cluster_names]
    if unknown:
        return SimReply(
            stdout="",
            stderr=f"ssh: Could not resolve hostname {unknown[0]}: Name or service not known\n"
            "--------------------------------------------------------------------------\n"
            "ORTE was unable to reliably start one or more daemons.\n",
            exit_status=1,
        )
    return _Launch(hosts=hosts, ranks=ranks or slots or len(hosts), prefix=prefix, env=env, launcher=launcher), program


# --- test options -------------------------------------------------------------------------------


@dataclass
class _TestArgs:
    min_bytes: int = 33554432
    max_bytes: int = 33554432
    step_factor: int = 2
    step_bytes: int | None = None
    iters: int = 20
    warmup: int = 5
    ngpus: int = 1
    nthreads: int = 1
    check: int = 1
    op: str = "sum"
    dtype: str = "float"
    root: int = 0
    graph: int = 0
    agg_iters: int = 1


_TEST_OPTIONS = {"-b": "minbytes", "--minbytes": "minbytes", "-e": "maxbytes", "--maxbytes": "maxbytes",
                 "-i": "stepbytes", "--stepbytes": "stepbytes", "-f": "stepfactor", "--stepfactor": "stepfactor",
                 "-n": "iters", "--iters": "iters", "-w": "warmup_iters", "--warmup_iters": "warmup_iters",
                 "-g": "ngpus", "--ngpus": "ngpus", "-t": "nthreads", "--nthreads": "nthreads", "-c": "check",
                 "--check": "check", "-o": "op", "--op": "op", "-d": "datatype", "--datatype": "datatype",
                 "-r": "root", "--root": "root", "-G": "cudagraph", "--cudagraph": "cudagraph", "-m": "agg_iters",
                 "--agg_iters": "agg_iters", "-z": "blocking", "--blocking": "blocking", "-a": "average",
                 "--average": "average", "-p": "parallel_init", "--parallel_init": "parallel_init",
                 "-C": "report_cputime", "--report_cputime": "report_cputime", "-T": "timeout",
                 "--timeout": "timeout", "-y": "stream_null", "--stream_null": "stream_null"}  # fmt: skip


def _parse_test_args(args: list[str]) -> _TestArgs | str:
    """The test's options, or the error line rccl-tests prints for a bad one."""
    parsed = _TestArgs()
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if not eq and len(arg) > 2 and arg[:2] in _TEST_OPTIONS and not arg.startswith("--"):
            name, value = arg[:2], arg[2:]
        elif not eq:
            value = args[i + 1] if i + 1 < len(args) else ""
            i += 1
        i += 1
        key = _TEST_OPTIONS.get(name)
        if key is None:
            return f"invalid option -- '{arg.lstrip('-')}'"
        error = _apply_test_option(parsed, key, value)
        if error:
            return error
    return parsed


def _apply_test_option(parsed: _TestArgs, key: str, value: str) -> str | None:
    if key in ("minbytes", "maxbytes", "stepbytes"):
        size = parse_size(value)
        if size is None:
            return f"invalid size specified for '{key}'"
        if key == "minbytes":
            parsed.min_bytes = size
        elif key == "maxbytes":
            parsed.max_bytes = size
        else:
            parsed.step_bytes = size
        return None
    if key == "op":
        if value not in _OPS:
            return f"invalid op specified for '{key}'"
        parsed.op = value
        return None
    if key == "datatype":
        dtype = _TYPE_ALIASES.get(value, value)
        if dtype not in _TYPE_SIZES:
            return f"invalid type specified for '{key}'"
        parsed.dtype = dtype
        return None
    if not re.fullmatch(r"-?\d+", value):
        return f"invalid value specified for '{key}'"
    number = int(value)
    fields = {"stepfactor": "step_factor", "iters": "iters", "warmup_iters": "warmup", "ngpus": "ngpus",
              "nthreads": "nthreads", "check": "check", "root": "root", "cudagraph": "graph",
              "agg_iters": "agg_iters"}  # fmt: skip
    if key in fields:
        setattr(parsed, fields[key], number)
    return None


# --- performance model --------------------------------------------------------------------------


@dataclass
class _Run:
    """Everything one rccl-tests execution depends on."""

    name: str
    coll: Collective
    args: _TestArgs
    launch: _Launch
    nodes: list[SimNode]
    rng: random.Random
    pids: list[int]

    @property
    def nranks(self) -> int:
        return self.launch.ranks * self.args.ngpus

    @property
    def multi_node(self) -> bool:
        return len(self.nodes) > 1

    @property
    def rccl(self) -> tuple[int, ...]:
        return _version(self.nodes[0].stack.rccl)


def _bus_factor(coll: Collective, nranks: int) -> float:
    if nranks <= 1:
        return 0.0 if coll.bus_factor != "one" else 1.0
    if coll.bus_factor == "allreduce":
        return 2 * (nranks - 1) / nranks
    if coll.bus_factor == "ring":
        return (nranks - 1) / nranks
    return 1.0


def _xgmi_factor(node: SimNode) -> float:
    """Ring bandwidth left by the node's slowest XGMI connection (RCCL spreads channels over links)."""
    worst = min((link.bw_factor for gpu in node.gpus for link in gpu.xgmi.values()), default=1.0)
    return 0.5 + 0.5 * worst


def _node_fabric_gbps(node: SimNode) -> float:
    up = [nic.rate_gbps for nic in node.nics if nic.up]
    return min(up) * len(up) / 8 if up else 12.5


def _uplink_factor(nodes: list[SimNode]) -> float:
    """What a run keeps when it crosses a slow uplink: some of its nodes behind it, some not."""
    factor = 1.0
    for uplink in {node.uplink for node in nodes if node.uplink is not None}:
        behind = [node for node in nodes if node.uplink == uplink]
        if len(behind) < len(nodes):
            factor = min(factor, *(node.uplink_factor for node in behind))
    return factor


def _flaky_break(ctx: SimContext, nodes: list[SimNode]) -> SimNode | None:
    """The flaky node whose link breaks this run, if it is one of its failing runs (each counts its own)."""
    broken = None
    for node in nodes:
        if node.rccl_flaky_every:
            count = next_invocation(ctx.state_dir, f"{node.name}.rccl-flaky")
            first, every = node.rccl_flaky_first, node.rccl_flaky_every
            if broken is None and count >= first and (count - first) % every == 0:
                broken = node
    return broken


def _network_failure(run: _Run, flaky: SimNode) -> str:
    host = run.nodes[0].name
    return (
        f"{flaky.name}:{run.pids[-1]}:{run.pids[-1] + 7} [3] NCCL WARN NET/IB : Got completion from peer "
        f"{host}<{run.rng.randrange(40000, 60000)}> with status=12 opcode=0 len=0 vendor err 129 (Recv)\n"
        f"{host}: Test NCCL failure common.cu:1005 'remote process exited or there was a network error / '\n"
        f" .. {host} pid {run.pids[0]}: Test failure common.cu:1040\n"
    )


def _peak_busbw(run: _Run) -> float:
    """Large-message bus bandwidth (GB/s) this run converges to."""
    node = run.nodes[0]
    if run.multi_node:
        # RCCL puts a channel on every NIC (one rail per GPU) and a ring step waits for its slowest
        # channel: each up port carries what the node's slowest one does (a down port carries nothing).
        nic_limit = min(_node_fabric_gbps(each) for each in run.nodes)  # GB/s per node
        peak = nic_limit * run.coll.multi_node_peak * _uplink_factor(run.nodes)
    elif run.name == "sendrecv_perf":
        peak = node.spec.transferbench_pair_gbps * 1.05
    else:
        peak = node.spec.rccl_busbw_gbps * run.coll.single_node_peak
    if run.multi_node and _network_only(run.launch.env):
        # No GPU peer-to-peer and no shared memory: ranks of one node talk through the NICs too, which
        # then carry about twice the traffic; XGMI is not used, and the NICs, not the GPUs, set the pace
        # (so neither XGMI faults nor rccl_low_busbw, a GPU-side slowness, show).
        return peak * NETWORK_ONLY_SHARE * run.rng.uniform(0.995, 1.006)
    faults = min(each.rccl_busbw_factor * _xgmi_factor(each) for each in run.nodes)
    return peak * faults * run.rng.uniform(0.995, 1.006)


NETWORK_ONLY_SHARE = 0.5


def _network_only(env: dict[str, str]) -> bool:
    return env.get("NCCL_P2P_DISABLE") == "1" and env.get("NCCL_SHM_DISABLE") == "1"


def _sizes(args: _TestArgs) -> list[int]:
    sizes: list[int] = []
    size = args.min_bytes
    while size <= args.max_bytes and len(sizes) < 64:
        sizes.append(size)
        nxt = size + args.step_bytes if args.step_bytes else size * max(args.step_factor, 1)
        if nxt <= size:
            break
        size = nxt
    return sizes


def _time_us(run: _Run, size: int, peak: float) -> float:
    factor = _bus_factor(run.coll, run.nranks) or 1.0
    latency = run.coll.latency_us * (2.2 if run.multi_node else 1.0) + (6.0 if size < 1024 else 0.0)
    latency += max(node.rccl_latency_us for node in run.nodes)  # a slow launch path (rccl_latency_high)
    overhead = (120.0 if run.multi_node else 45.0) * size / (size + 4 * 1024 * 1024)
    return latency + overhead + size * factor / (peak * 1e3)


def _time_text(us: float) -> str:
    if us >= 10000:
        return f"{us:7.0f}"
    if us >= 100:
        return f"{us:7.1f}"
    return f"{us:7.2f}"


@dataclass
class _Row:
    size: int
    count: int
    halves: list[tuple[float, float, float, str]]  # (time us, algbw, busbw, wrong) out-of-place, in-place


def _rows(run: _Run) -> list[_Row]:
    type_size = _TYPE_SIZES[run.args.dtype]
    divisor = run.nranks if run.coll.count_per_rank else 1
    peak = _peak_busbw(run)
    factor = _bus_factor(run.coll, run.nranks)
    sizes = _sizes(run.args)
    large = [position for position, size in enumerate(sizes) if size >= 1024 * 1024] or [len(sizes) - 1]
    corrupt = any(node.rccl_wrong for node in run.nodes)
    wrong_rows = set(run.rng.sample(large, min(3, len(large)))) if corrupt and sizes else set()
    rows = []
    for position, size in enumerate(sizes):
        count = size // (type_size * divisor)
        actual = count * type_size * divisor
        halves = []
        for in_place in (False, True):
            # Small messages are noisy (launch latency); large ones settle within a fraction of a percent.
            spread = 0.003 + 0.02 * 1024 * 1024 / (actual + 1024 * 1024)
            time_us = _time_us(run, actual, peak) * run.rng.uniform(1 - spread, 1 + spread)
            algbw = actual / 1e3 / time_us
            if not run.args.check or (in_place and not run.coll.in_place_check):
                wrong = "N/A"
            elif position in wrong_rows and (not in_place or run.rng.random() < 0.5):
                wrong = str(run.rng.randrange(1, max(2, count // 4096)))
            else:
                wrong = "0"
            halves.append((time_us, algbw, algbw * factor, wrong))
        rows.append(_Row(actual, count, halves))
    return rows


# --- text ---------------------------------------------------------------------------------------

_HEADER_1 = "#" + " " * 62 + "out-of-place" + " " * 23 + "in-place"
_HEADER_2 = "#       size         count      type   redop    root" + "     time   algbw   busbw #wrong" * 2
_HEADER_3 = "#        (B)    (elements)" + " " * 31 + "(us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)"


def _row_text(run: _Run, row: _Row) -> str:
    redop = run.args.op if run.coll.redop else "none"
    root = str(run.args.root) if run.coll.root else "-1"
    text = f"{row.size:12d}  {row.count:12d}  {run.args.dtype:>8}  {redop:>6}  {root:>6}"
    for time_us, algbw, busbw, wrong in row.halves:
        text += f"  {_time_text(time_us)}  {algbw:6.2f}  {busbw:6.2f}  {wrong:>5}"
    return text


def _tests_version(rccl: tuple[int, ...]) -> str:
    if rccl >= (2, 23):
        return "HEAD:e1b8a3a"
    if rccl >= (2, 22):
        return "develop:448c4c7"
    return ":+"


def _rank_lines(run: _Run) -> list[str]:
    lines = []
    group_style = run.rccl >= (2, 23)
    for rank in range(run.nranks):
        process = rank // run.args.ngpus
        host_index = min(process // run.launch.per_host, len(run.nodes) - 1)
        node = run.nodes[host_index]
        local = (process % run.launch.per_host) * run.args.ngpus + rank % run.args.ngpus
        gpu = node.gpus[local]
        pid = run.pids[process]
        name = node.spec.market_name
        if group_style:
            bdf = gpu.bdf.rsplit(".", 1)[0]
            lines.append(f"#  Rank {rank:2d} Group  0 Pid {pid:6d} on {node.name:>10} device {local:2d} [{bdf}] {name}")
        else:
            lines.append(f"#   Rank {rank:2d} Pid {pid:6d} on {node.name} device {local:2d} [{gpu.bdf}] {name}")
    return lines


def _version_block(run: _Run) -> list[str]:
    stack = run.nodes[0].stack
    return [
        f"RCCL version : {stack.rccl}-develop:f5b15f2",
        f"HIP version  : {stack.hip}-fa1d09cbd",
        f"ROCm version : {stack.rocm}.0-{stack.rocm_build.rsplit('-', 1)[-1]}-ce2be3b",
        f"Hostname     : {run.nodes[0].name}",
        "Librccl path : /opt/rocm/lib/librccl.so.1",
    ]


def _preamble_lines(run: _Run) -> list[str]:
    """The lines every run prints before it touches a GPU."""
    args = run.args
    step = f"{args.step_bytes}(bytes)" if args.step_bytes else f"{args.step_factor}(factor)"
    lines = [f"# Collective test starting: {run.name}"] if run.rccl >= (2, 26) else []
    return [
        *lines,
        f"# nThread {args.nthreads} nGpus {args.ngpus} minBytes {args.min_bytes} maxBytes {args.max_bytes} "
        f"step: {step} warmup iters: {args.warmup} iters: {args.iters} agg iters: {args.agg_iters} "
        f"validation: {args.check} graph: {args.graph}",
        "#",
        f"rccl-tests: Version {_tests_version(run.rccl)}",
    ]


def _header_lines(run: _Run) -> list[str]:
    lines = [*_preamble_lines(run), "# Using devices", *_rank_lines(run)]
    if run.launch.env.get("NCCL_DEBUG", "").upper() in ("VERSION", "INFO"):
        lines += _version_block(run)
    if run.rccl < (2, 26):
        lines.append("#")
    return [*lines, _HEADER_1 + "          ", _HEADER_2, _HEADER_3 + "       "]


def _footer_lines(run: _Run, rows: list[_Row]) -> list[str]:
    busbws = [half[2] for row in rows for half in row.halves]
    average = sum(busbws) / len(busbws) if busbws else 0.0
    failed = sum(1 for row in rows for half in row.halves if half[3] not in ("0", "N/A"))
    bounds = f"{failed} FAILED" if failed else "0 OK"
    # The rccl-tests build shipped beside RCCL 2.22 ends without the trailing space and the closing '#'.
    build_2_22 = (2, 22) <= run.rccl < (2, 23)
    lines = [
        "# Errors with asterisks indicate errors that have exceeded the maximum threshold.",
        f"# Out of bounds values : {bounds}",
        f"# Avg bus bandwidth    : {average:.6g}{'' if build_2_22 else ' '}",
    ]
    if not build_2_22:
        lines.append("#")
    if run.rccl >= (2, 26):
        lines.append(f"# Collective test concluded: {run.name}")
    return lines


def _hip_failure(run: _Run, reason: str) -> str:
    host = run.nodes[0].name
    return (
        f"{host}: Test HIP failure common.cu:1072 '{reason}'\n"
        f" .. {host} pid {run.pids[0]}: Test failure common.cu:1040\n"
    )


def _prefixed(text: str, launch: _Launch) -> str:
    if not launch.prefix or not text:
        return text
    width = len(str(max(launch.ranks - 1, 0)))
    prefix = f"{0:>{width}}: " if launch.prefix == "label" else "[1,0]<stdout>:"
    return "".join(prefix + line + "\n" for line in text.splitlines())


def _run_test(ctx: SimContext, name: str, args: list[str], launch: _Launch) -> SimReply:
    parsed = _parse_test_args(args)
    if isinstance(parsed, str):
        return SimReply(stdout="", stderr=f"{name}: {parsed}\n", exit_status=1)
    nodes = [ctx.node if host == ctx.node.name else build_node(ctx.cluster, host) for host in launch.hosts]
    # The node's own build or wrapper overrides the command line, and prints what it actually did.
    if any(node.rccl_unvalidated for node in nodes):
        parsed.check = 0
    wrapped = [node.rccl_gpus for node in nodes if node.rccl_gpus is not None]
    if wrapped:
        parsed.ngpus = min(parsed.ngpus, *wrapped)
    rng = ctx.rng
    base_pid = rng.randrange(2000, 3_000_000)
    pids = [base_pid + k for k in range(launch.ranks)]
    run = _Run(name, COLLECTIVES[name], parsed, launch, nodes, rng, pids)
    needed = launch.per_host * parsed.ngpus
    broken = next((node for node in nodes if not node.driver_loaded), None)
    short = next((node for node in nodes if len(node.gpus) < needed), None)
    if broken is not None or short is not None:
        reason = "no ROCm-capable device is detected" if broken is not None else "invalid device ordinal"
        return SimReply(
            stdout=_prefixed("\n".join(_preamble_lines(run)) + "\n", launch),
            stderr=_hip_failure(run, reason),
            exit_status=1,
            duration_s=ctx.duration(3),
        )
    header = _header_lines(run)
    lost = next((node.rccl_header_lost for node in nodes if node.rccl_header_lost is not None), None)
    if lost is not None:
        # The table's header is the last three lines of the header block: 1 placement, 2 columns, 3 units.
        del header[len(header) - 4 + lost]
    rows = _rows(run)
    factor = next((node.rccl_repeat_factor for node in nodes if node.rccl_repeat_factor is not None), None)
    if factor is not None and rows:
        # The largest size once more, slower: the same row key with other figures.
        last = rows[-1]
        halves = [(t / factor, algbw * factor, busbw * factor, wrong) for t, algbw, busbw, wrong in last.halves]
        rows.append(_Row(last.size, last.count, halves))
    lines = header + [_row_text(run, row) for row in rows]
    seconds = 2.5 + sum((parsed.warmup + parsed.iters) * (row.halves[0][0] + row.halves[1][0]) for row in rows) / 1e6
    if any(node.rccl_hang for node in nodes):
        # The collective stops completing part-way through the sweep: no more rows, no footer, no exit.
        keep = len(header) + max(1, (2 * len(rows)) // 3)
        return SimReply(
            stdout=_prefixed("\n".join(lines[:keep]) + "\n", launch),
            duration_s=ctx.duration(seconds * 0.6),
            delivery=Delivery.HANG,
        )
    flaky = _flaky_break(ctx, nodes) if run.multi_node else None
    if flaky is not None:
        # The link drops part-way: the rows so far, then the network error, and the launcher gives up.
        keep = len(header) + max(1, len(rows) // 3)
        return SimReply(
            stdout=_prefixed("\n".join(lines[:keep]) + "\n", launch),
            stderr=_network_failure(run, flaky),
            exit_status=1,
            duration_s=ctx.duration(seconds / 3),
        )
    lines += _footer_lines(run, rows)
    failed = any(half[3] not in ("0", "N/A") for row in rows for half in row.halves)
    return SimReply(
        stdout=_prefixed("\n".join(lines) + "\n", launch),
        exit_status=1 if failed else 0,
        duration_s=ctx.duration(seconds),
    )


def _run_elsewhere(ctx: SimContext, program: list[str], launch: _Launch) -> SimReply:
    """A non-rccl program under a launcher: run it once per rank on the rank's host."""
    out: list[str] = []
    err: list[str] = []
    status = 0
    duration = 0.0
    replies: list[SimReply] = []
    for rank in range(launch.ranks):
        host = launch.hosts[min(rank // launch.per_host, len(launch.hosts) - 1)]
        sub = context_for(ctx.cluster, host, ctx.state_dir)
        if launch.launcher == "srun":  # as Slurm exports it to every task: the job's hosts
            sub.env["SLURM_JOB_NODELIST"] = ",".join(launch.hosts)
        reply = run_program(sub, program)
        replies.append(reply)
        label = f"{rank:>{len(str(max(launch.ranks - 1, 0)))}}: " if launch.prefix == "label" else ""
        out += [label + line + "\n" for line in reply.stdout.splitlines()]
        err += [label + line + "\n" for line in reply.stderr.splitlines()]
        if reply.delivery is Delivery.KILLED:
            # The launcher outlives a task killed by a signal: it says so and exits 128 + the signal.
            err.append(f"srun: error: {host}: task {rank}: {signal.strsignal(reply.kill_signal)}\n")
            status = status or 128 + int(reply.kill_signal)
        status = status or reply.exit_status
        duration = max(duration, reply.duration_s)
    merged = SimReply(stdout="".join(out), stderr="".join(err), exit_status=status, duration_s=duration)
    return _launcher_delivery(merged, replies)


def _launcher_delivery(merged: SimReply, replies: list[SimReply]) -> SimReply:
    """How the launcher's own output arrives, from its tasks': it waits for every task, so one that hangs
    hangs it (ignoring SIGTERM if that task does), one that trickles makes it trickle, and every task's
    filler output passes through it."""
    filler = sum(r.filler_bytes for r in replies)
    hung = [r for r in replies if r.delivery is Delivery.HANG]
    if hung:
        ignores = any(r.ignores_term for r in hung)
        return replace(merged, delivery=Delivery.HANG, ignores_term=ignores, filler_bytes=filler)
    if any(r.delivery is Delivery.TRICKLE for r in replies):
        return replace(merged, delivery=Delivery.TRICKLE, filler_bytes=filler)
    return replace(merged, filler_bytes=filler)


def handle(ctx: SimContext, argv: list[str]) -> SimReply:
    """Run an rccl-tests binary, or a launcher (mpirun/mpiexec/srun) around one."""
    name = program_name(argv)
    if name not in LAUNCHERS:
        return _run_test(ctx, name, argv[1:], _Launch(hosts=[ctx.node.name], ranks=1, env=dict(ctx.env)))
    parsed = _parse_launcher(ctx, argv)
    if isinstance(parsed, SimReply):
        return parsed
    launch, program = parsed
    if not program:
        return SimReply(stdout="", stderr=f"{name}: no executable specified\n", exit_status=1)
    launch = replace(launch, env={**ctx.env, **launch.env})
    test = program_name(program)
    if test in COLLECTIVES:
        return _run_test(ctx, test, program[1:], launch)
    return _run_elsewhere(ctx, program, launch)
