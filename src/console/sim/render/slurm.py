"""Slurm 22.05 as the simulated cluster's head node shows it: ``sinfo`` and ``scontrol`` with node states.

Every node of the cluster file is a Slurm node; its partition is its pool (the first pool is the
default, marked ``*``). Nodes start IDLE, a node with hardware faults included: Slurm knows nothing
until someone drains it. ``scontrol update`` keeps the states in ``slurm-state.json`` under
``ctx.state_dir`` behind a file lock, so every process serving the cluster sees the same states
(without a state dir they live in this process only).

Messages, exit codes and column layouts were copied from a real Slurm 22.05.8 (Debian 12) lab,
including its quirks: RESUME on an idle node fails with "Invalid node state specified", an update
naming an unknown node still changes the known ones, ``scontrol --json`` is not built in but
``sinfo --json`` is (openapi v0.0.38). ``scontrol create/delete/show reservation`` keep reservations in
the same state file (a name already taken is refused as Slurm refuses it).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ClusterShell.NodeSet import NodeSet, NodeSetParseError
from pydantic import Field

from console.model.base import Model
from console.sim.commands import SimContext, SimReply, program_name
from console.sim.models import ClusterSpec, NodeSpec, build_node
from console.sim.render.host import kernel_build

__all__ = ["NodeState", "Reservation", "SlurmState", "handle", "load_state", "node_states"]

SLURM_VERSION = "22.05.8"
STATE_FILE = "slurm-state.json"
LOCK_FILE = "slurm-state.lock"
SLURMD_PORT = 6818


class NodeState(Model):
    """What slurmctld remembers about one node."""

    base: str = "IDLE"  # IDLE or DOWN
    drain: bool = False
    fail: bool = False
    reason: str | None = None
    user: str | None = None
    reason_time: int | None = None  # epoch seconds
    changed: int | None = None  # epoch seconds of the last state change

    @property
    def flags(self) -> list[str]:
        """State flags in the order scontrol prints them."""
        return [name for name, on in (("DRAIN", self.drain), ("FAIL", self.fail)) if on]

    def long_state(self) -> str:
        """``%T`` of sinfo: idle, down, drained, fail."""
        if self.fail:
            return "fail"
        if self.drain:
            return "drained"
        return self.base.lower()

    def compact_state(self) -> str:
        """``%t`` of sinfo: idle, down, drain, fail."""
        if self.fail:
            return "fail"
        if self.drain:
            return "drain"
        return self.base.lower()

    def scontrol_state(self) -> str:
        """``State=`` of scontrol: IDLE, IDLE+DRAIN, DOWN+DRAIN, IDLE+FAIL."""
        return "+".join([self.base, *self.flags])


class Reservation(Model):
    """One reservation ``scontrol create reservation`` made: what ``scontrol show reservation`` prints back."""

    nodes: list[str]
    start: int
    minutes: int
    users: str = "(null)"
    flags: str = ""


class SlurmState(Model):
    """All node states of one cluster, as stored in the state file."""

    nodes: dict[str, NodeState] = Field(default_factory=dict)
    reservations: dict[str, Reservation] = Field(default_factory=dict)

    def of(self, name: str) -> NodeState:
        """The state of ``name`` (IDLE when never touched)."""
        return self.nodes.get(name) or NodeState()


# Without a shared state dir the states live in this process, keyed by cluster name.
_IN_PROCESS: dict[str, SlurmState] = {}


@contextmanager
def _locked_state(ctx: SimContext, write: bool) -> Iterator[SlurmState]:
    """The cluster's Slurm state; changes are saved when ``write`` (under an exclusive file lock)."""
    if ctx.state_dir is None:
        yield _IN_PROCESS.setdefault(ctx.cluster.name, SlurmState())
        return
    ctx.state_dir.mkdir(parents=True, exist_ok=True)
    with (ctx.state_dir / LOCK_FILE).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if write else fcntl.LOCK_SH)
        state = load_state(ctx.state_dir)
        yield state
        if write:
            path = ctx.state_dir / STATE_FILE
            tmp = path.with_suffix(".tmp")
            tmp.write_text(state.model_dump_json(indent=2) + "\n", encoding="utf-8")
            tmp.replace(path)


def node_states(ctx: SimContext) -> SlurmState:
    """A snapshot of the cluster's Slurm node states (what srun checks before placing a job)."""
    with _locked_state(ctx, write=False) as state:
        return state.model_copy(deep=True)


def load_state(state_dir: Path) -> SlurmState:
    """The Slurm state saved under ``state_dir`` (empty when none was saved yet)."""
    path = state_dir / STATE_FILE
    if not path.exists():
        return SlurmState()
    return SlurmState.model_validate_json(path.read_text(encoding="utf-8"))


# --- node facts ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Facts:
    """Static Slurm view of one node (what slurmd registered)."""

    spec: NodeSpec
    cpus: int
    sockets: int
    cores: int
    threads: int
    memory_mb: int
    gres: str
    features: str
    os: str
    boot_time: int


def _epoch_seed(*parts: object) -> int:
    return int(hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:8], 16)


def _facts(cluster: ClusterSpec, spec: NodeSpec) -> _Facts:
    node = build_node(cluster, spec.name)
    gpu_type = spec.gpu_model.value.lower()
    cpus = node.cpu_sockets * node.cores_per_socket * 2
    uptime_days = 3 + _epoch_seed(cluster.seed, spec.name) % 40
    return _Facts(
        spec=spec,
        cpus=cpus,
        sockets=node.cpu_sockets,
        cores=node.cores_per_socket,
        threads=2,
        memory_mb=int(node.host_memory_bytes / 1024**2 * 0.98),
        gres=f"gpu:{gpu_type}:{len(node.gpus)}(S:0-{node.cpu_sockets - 1})",
        features=f"{gpu_type},{node.spec.gfx_target}",
        os=f"Linux {node.stack.kernel} {kernel_build(node)} ",
        boot_time=int(time.time()) - uptime_days * 86400 - _epoch_seed("boot", spec.name) % 86400,
    )


def _partitions(cluster: ClusterSpec) -> list[str]:
    """Pools in order of first appearance; the first is the default partition."""
    seen: list[str] = []
    for spec in cluster.nodes:
        if spec.pool not in seen:
            seen.append(spec.pool)
    return seen


def _stamp(epoch: int | None) -> str:
    return datetime.fromtimestamp(epoch).strftime("%Y-%m-%dT%H:%M:%S") if epoch else "None"


def _expand(cluster: ClusterSpec, expression: str) -> tuple[list[str], list[str]]:
    """(known, unknown) node names of a hostlist expression like ``gpu[001-004],n7``."""
    try:
        names = list(NodeSet(expression))
    except NodeSetParseError:
        names = [expression]
    known = {spec.name for spec in cluster.nodes}
    return [n for n in names if n in known], [n for n in names if n not in known]


def _fold(names: list[str]) -> str:
    return str(NodeSet.fromlist(names)) if names else ""


# --- sinfo ---------------------------------------------------------------------------------------


@dataclass
class _Row:
    """One sinfo output line: a node or a group of nodes sharing every displayed field."""

    partition: str
    default: bool
    names: list[str]
    state: NodeState
    facts: _Facts | None


def _field(row: _Row, letter: str) -> str | None:
    """Value of sinfo format letter ``letter`` for ``row`` (None: unknown letter)."""
    state = row.state
    facts = row.facts
    getters: dict[str, Callable[[], str]] = {
        "P": lambda: row.partition + ("*" if row.default else ""),
        "R": lambda: row.partition,
        "a": lambda: "up",
        "l": lambda: "infinite",
        "D": lambda: str(len(row.names)),
        "t": lambda: state.compact_state() if row.names else "n/a",
        "T": lambda: state.long_state() if row.names else "n/a",
        "N": lambda: _fold(row.names),
        "n": lambda: _fold(row.names),
        "E": lambda: state.reason or "none",
        "u": lambda: state.user or "Unknown",
        "U": lambda: f"{state.user}(0)" if state.user else "Unknown",
        "H": lambda: _stamp(state.reason_time) if state.reason_time else "Unknown",
        "c": lambda: str(facts.cpus) if facts else "0",
        "z": lambda: f"{facts.sockets}:{facts.cores}:{facts.threads}" if facts else "0:0:0",
        "m": lambda: str(facts.memory_mb) if facts else "0",
        "d": lambda: "0",
        "w": lambda: "1",
        "f": lambda: facts.features if facts else "(null)",
        "b": lambda: facts.features if facts else "(null)",
        "G": lambda: facts.gres if facts else "(null)",
        "s": lambda: "1-infinite",
        "r": lambda: "no",
        "h": lambda: "NO",
        "g": lambda: "all",
        "C": lambda: f"0/{facts.cpus}/0/{facts.cpus}" if facts else "0/0/0/0",
        "O": lambda: "0.51",
        "X": lambda: str(facts.sockets) if facts else "0",
        "Y": lambda: str(facts.cores) if facts else "0",
        "Z": lambda: str(facts.threads) if facts else "0",
    }
    getter = getters.get(letter)
    return getter() if getter else None


_HEADERS = {
    "P": "PARTITION", "R": "PARTITION", "a": "AVAIL", "l": "TIMELIMIT", "D": "NODES", "t": "STATE",
    "T": "STATE", "N": "NODELIST", "n": "HOSTNAMES", "E": "REASON", "u": "USER", "U": "USER",
    "H": "TIMESTAMP", "c": "CPUS", "z": "S:C:T", "m": "MEMORY", "d": "TMP_DISK", "w": "WEIGHT",
    "f": "AVAIL_FEATURES", "b": "ACTIVE_FEATURES", "G": "GRES", "s": "JOB_SIZE", "r": "ROOT",
    "h": "OVERSUBSCRIBE", "g": "GROUPS", "C": "CPUS(A/I/O/T)", "O": "CPU_LOAD", "X": "SOCKETS",
    "Y": "CORES", "Z": "THREADS",
}  # fmt: skip

_SPEC = re.compile(r"%(#?)(\.?)(\d*)([A-Za-z])|%(.)")

_DEFAULT_FORMAT = "%#P %.5a %.10l %.6D %.6t %N"
_LONG_FORMAT = "%#P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N"
_NODE_FORMAT = "%#N %.6D %.9P %6t"
_NODE_LONG_FORMAT = "%#N %.6D %.9P %.11T %4c %.8z %.6m %.8d %.6w %.8f %20E"
_REASON_FORMAT = "%20E %9u %19H %N"
_REASON_LONG_FORMAT = "%20E %12U %19H %6t %N"
_DYNAMIC = -1


@dataclass
class _Format:
    """A parsed sinfo ``--format``: literal text and (right-justify, width, letter) fields."""

    parts: list[str | tuple[bool, int | None, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str) -> _Format:
        parsed = cls()
        pos = 0
        for match in _SPEC.finditer(text):
            parsed.parts.append(text[pos : match.start()])
            pos = match.end()
            dynamic, right, digits, letter, other = match.groups()
            if other is not None or letter not in _HEADERS:
                parsed.parts.append(match.group(0))
                parsed.errors.append(f"Invalid node format specification: {other or letter}")
                continue
            # '#': as wide as the widest value (never narrower than the header), like sinfo's defaults.
            width = _DYNAMIC if dynamic else int(digits) if digits else None
            parsed.parts.append((bool(right), width, letter))
        parsed.parts.append(text[pos:])
        return parsed

    def letters(self) -> list[str]:
        return [part[2] for part in self.parts if isinstance(part, tuple)]

    def fit(self, rows: list[_Row]) -> None:
        """Resolve '#' widths against the values of ``rows``."""
        for i, part in enumerate(self.parts):
            if isinstance(part, tuple) and part[1] == _DYNAMIC:
                letter = part[2]
                longest = max((len(_field(row, letter) or "") for row in rows), default=0)
                extra = 1 if letter in "Nn" else 0
                self.parts[i] = (part[0], max(len(_HEADERS[letter]) + extra, longest + extra), letter)

    def render(self, values: Callable[[str], str]) -> str:
        out = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
                continue
            right, width, letter = part
            value = values(letter)
            if width is not None:
                value = value[:width]
                value = value.rjust(width) if right else value.ljust(width)
            out.append(value)
        return "".join(out)


@dataclass
class _SinfoArgs:
    node_view: bool = False
    long: bool = False
    reasons: bool = False
    no_header: bool = False
    json: bool = False
    fmt: str | None = None
    nodes: str | None = None
    partitions: list[str] | None = None
    states: list[str] | None = None


_SINFO_VALUE_OPTS = {"-o": "fmt", "--format": "fmt", "-n": "nodes", "--nodes": "nodes", "-p": "partitions",
                     "--partition": "partitions", "-t": "states", "--states": "states"}  # fmt: skip
_SINFO_FLAGS = {"N": "node_view", "l": "long", "R": "reasons", "h": "no_header"}


def _parse_sinfo(args: list[str]) -> _SinfoArgs | str:
    """Options of sinfo, or the error text for an unknown option."""
    parsed = _SinfoArgs()
    rest = iter(args)
    for arg in rest:
        key, eq, inline = arg.partition("=")
        if key in _SINFO_VALUE_OPTS:
            value = inline if eq else next(rest, "")
            name = _SINFO_VALUE_OPTS[key]
            setattr(parsed, name, value.split(",") if name in ("partitions", "states") else value)
        elif arg in ("--Node", "--long", "--list-reasons", "--noheader", "--json"):
            attr = {"--Node": "node_view", "--long": "long", "--list-reasons": "reasons", "--noheader": "no_header"}
            setattr(parsed, attr.get(arg, "json"), True)
        elif arg.startswith("-") and not arg.startswith("--") and len(arg) > 1:
            for flag in arg[1:]:
                if flag not in _SINFO_FLAGS:
                    return f"sinfo: invalid option -- '{flag}'\nTry \"sinfo --help\" for more information\n"
                setattr(parsed, _SINFO_FLAGS[flag], True)
        else:
            return f"sinfo: unrecognized option '{arg}'\nTry \"sinfo --help\" for more information\n"
    return parsed


def _state_matches(state: NodeState, wanted: list[str]) -> bool:
    names = {state.base.lower(), state.long_state(), state.compact_state()}
    if state.drain:
        names.add("drain")
    return any(want.lower() in names for want in wanted)


def _sinfo_format(args: _SinfoArgs) -> str:
    if args.fmt is not None:
        return args.fmt
    if args.reasons:
        return _REASON_LONG_FORMAT if args.long else _REASON_FORMAT
    if args.node_view:
        return _NODE_LONG_FORMAT if args.long else _NODE_FORMAT
    return _LONG_FORMAT if args.long else _DEFAULT_FORMAT


def _sinfo_rows(ctx: SimContext, args: _SinfoArgs, fmt: _Format, state: SlurmState) -> list[_Row]:
    cluster = ctx.cluster
    partitions = _partitions(cluster)
    wanted = set(_expand(cluster, args.nodes)[0]) if args.nodes else None
    needs_facts = any(letter in "czmfbGCXYZ" for letter in fmt.letters())
    rows: list[_Row] = []
    for spec in cluster.nodes:
        if wanted is not None and spec.name not in wanted:
            continue
        if args.partitions and spec.pool not in args.partitions:
            continue
        node_state = state.of(spec.name)
        if args.states and not _state_matches(node_state, args.states):
            continue
        if args.reasons and not (node_state.drain or node_state.fail or node_state.base == "DOWN"):
            continue
        facts = _facts(cluster, spec) if needs_facts else None
        rows.append(_Row(spec.pool, spec.pool == partitions[0], [spec.name], node_state, facts))
    if args.node_view:
        return rows
    grouped: dict[tuple[str, ...], _Row] = {}
    shown = [letter for letter in fmt.letters() if letter not in "NnD"]
    for row in rows:
        key = (row.partition, *(_field(row, letter) or "" for letter in shown))
        if key in grouped:
            grouped[key].names.append(row.names[0])
        else:
            grouped[key] = row
    result = list(grouped.values())
    if args.reasons:
        return sorted(result, key=lambda row: row.names[0])
    if wanted is not None and not args.partitions:
        for part in partitions:
            if not any(row.partition == part for row in result):
                result.append(_Row(part, part == partitions[0], [], NodeState(), None))
    order = {part: i for i, part in enumerate(partitions)}
    return sorted(result, key=lambda row: (order[row.partition], row.state.compact_state() if row.names else ""))


def _sinfo(ctx: SimContext, args_in: list[str]) -> SimReply:
    args = _parse_sinfo(args_in)
    if isinstance(args, str):
        return SimReply(stdout="", stderr=args, exit_status=1)
    with _locked_state(ctx, write=False) as state:
        snapshot = state.model_copy(deep=True)
    if args.json:
        return SimReply(stdout=_sinfo_json(ctx, snapshot))
    fmt = _Format.parse(_sinfo_format(args))
    rows = _sinfo_rows(ctx, args, fmt, snapshot)
    fmt.fit(rows)
    lines: list[str] = []
    if args.long:
        lines.append(time.strftime("%a %b %d %H:%M:%S %Y"))
    if not args.no_header:
        lines.append(fmt.render(lambda letter: _HEADERS[letter]))
    lines += [_render_row(fmt, row) for row in rows]
    stderr = "".join(error + "\n" for error in dict.fromkeys(fmt.errors))
    return SimReply(stdout="".join(line + "\n" for line in lines), stderr=stderr)


def _render_row(fmt: _Format, row: _Row) -> str:
    return fmt.render(lambda letter: _field(row, letter) or "")


def _json_text(value: Any, indent: int = 0) -> str:
    """JSON the way Slurm's serializer prints it: 2-space indent, escaped slashes, multi-line empty arrays."""
    pad = "  " * indent
    if isinstance(value, dict):
        items = [f"{pad}  {_json_text(str(key))}: {_json_text(item, indent + 1)}" for key, item in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list):
        items = [f"{pad}  {_json_text(item, indent + 1)}" for item in value]
        return "[\n" + "".join(item + ",\n" for item in items[:-1]) + (items[-1] + "\n" if items else "") + f"{pad}]"
    if isinstance(value, float):
        return repr(value)
    return json.dumps(value).replace("/", "\\/")


def _sinfo_json(ctx: SimContext, state: SlurmState) -> str:
    cluster = ctx.cluster
    major, minor, micro = (int(part) for part in SLURM_VERSION.split("."))
    nodes = []
    for spec in cluster.nodes:
        facts = _facts(cluster, spec)
        node_state = state.of(spec.name)
        nodes.append(
            {
                "architecture": "x86_64",
                "burstbuffer_network_address": "",
                "boards": 1,
                "boot_time": facts.boot_time,
                "comment": "",
                "cores": facts.cores,
                "cpu_binding": 0,
                "cpu_load": 51,
                "extra": "",
                "free_memory": int(facts.memory_mb * 0.97),
                "cpus": facts.cpus,
                "last_busy": node_state.changed or facts.boot_time + 120,
                "features": facts.features,
                "active_features": facts.features,
                "gres": facts.gres,
                "gres_drained": "N/A",
                "gres_used": facts.gres.split("(", 1)[0].rsplit(":", 1)[0] + ":0(IDX:N/A)",
                "mcs_label": "",
                "name": spec.name,
                "next_state_after_reboot": "invalid",
                "address": spec.address,
                "hostname": spec.name,
                "state": node_state.base.lower(),
                "state_flags": node_state.flags,
                "next_state_after_reboot_flags": [],
                "operating_system": facts.os.rstrip(),
                "owner": None,
                "partitions": [spec.pool],
                "port": SLURMD_PORT,
                "real_memory": facts.memory_mb,
                "reason": node_state.reason or "",
                "reason_changed_at": node_state.reason_time or 0,
                "reason_set_by_user": node_state.user,
                "slurmd_start_time": facts.boot_time + 60,
                "sockets": facts.sockets,
                "threads": facts.threads,
                "temporary_disk": 0,
                "weight": 1,
                "tres": _tres(facts),
                "slurmd_version": SLURM_VERSION,
                "alloc_memory": 0,
                "alloc_cpus": 0,
                "idle_cpus": facts.cpus,
                "tres_used": None,
                "tres_weighted": 0.0,
            }
        )
    document = {
        "meta": {
            "plugin": {"type": "openapi/v0.0.38", "name": "Slurm OpenAPI v0.0.38"},
            "Slurm": {"version": {"major": major, "micro": micro, "minor": minor}, "release": SLURM_VERSION},
        },
        "errors": [],
        "nodes": nodes,
    }
    return _json_text(document)


def _tres(facts: _Facts) -> str:
    gpus = facts.gres.split("(", 1)[0].rsplit(":", 1)[-1]
    return f"cpu={facts.cpus},mem={facts.memory_mb}M,billing={facts.cpus},gres/gpu={gpus}"


# --- scontrol ------------------------------------------------------------------------------------


def _show_node_lines(facts: _Facts, state: NodeState) -> list[str]:
    spec = facts.spec
    last_busy = state.changed or facts.boot_time + 120
    lines = [
        f"NodeName={spec.name} Arch=x86_64 CoresPerSocket={facts.cores} ",
        f"   CPUAlloc=0 CPUEfctv={facts.cpus} CPUTot={facts.cpus} CPULoad=0.51",
        f"   AvailableFeatures={facts.features}",
        f"   ActiveFeatures={facts.features}",
        f"   Gres={facts.gres}",
        f"   NodeAddr={spec.address} NodeHostName={spec.name} Version={SLURM_VERSION}",
        f"   OS={facts.os}",
        f"   RealMemory={facts.memory_mb} AllocMem=0 FreeMem={int(facts.memory_mb * 0.97)} Sockets={facts.sockets} "
        "Boards=1",
        f"   State={state.scontrol_state()} ThreadsPerCore={facts.threads} TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A",
        f"   Partitions={spec.pool} ",
        f"   BootTime={_stamp(facts.boot_time)} SlurmdStartTime={_stamp(facts.boot_time + 60)}",
        f"   LastBusyTime={_stamp(last_busy)}",
        f"   CfgTRES={_tres(facts)}",
        "   AllocTRES=",
        "   CapWatts=n/a",
        "   CurrentWatts=0 AveWatts=0",
        "   ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s",
    ]
    if state.reason:
        lines.append(f"   Reason={state.reason} [{state.user}@{_stamp(state.reason_time)}]")
    return lines


def _show_node(ctx: SimContext, names: str | None, one_liner: bool) -> SimReply:
    cluster = ctx.cluster
    if names is None:
        specs = list(cluster.nodes)
    else:
        known, unknown = _expand(cluster, names)
        if not known:
            return SimReply(stdout=f"Node {names} not found\n", exit_status=1)
        specs = [spec for spec in cluster.nodes if spec.name in set(known) | set(unknown)]
    with _locked_state(ctx, write=False) as state:
        snapshot = state.model_copy(deep=True)
    blocks = []
    for spec in specs:
        lines = _show_node_lines(_facts(cluster, spec), snapshot.of(spec.name))
        if one_liner:
            blocks.append(" ".join(line.removeprefix("   ") for line in lines) + "\n")
        else:
            blocks.append("\n".join(lines) + "\n\n")
    return SimReply(stdout="".join(blocks))


_VALID_STATES_MSG = (
    "Request aborted\nValid states are: NoResp DRAIN FAIL FUTURE RESUME POWER_DOWN POWER_UP UNDRAIN\n"
    "Not all states are valid given a node's prior state\n"
)
_NEEDS_REASON = "You must specify a reason when DOWNING or DRAINING a node. Request denied\n"
_NO_ENTITY = (
    "No valid entity in update command\n"
    'Input line must include "NodeName", "PartitionName", "Reservation", "JobId", or "SlurmctldDebug"\n'
)


def _update_fields(args: list[str]) -> dict[str, str]:
    """``Key=value`` words of ``scontrol update`` (keys lower-cased, quotes around values removed)."""
    fields: dict[str, str] = {}
    for arg in args:
        key, eq, value = arg.partition("=")
        if eq:
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            fields[key.lower()] = value
    return fields


def _apply(node: NodeState, new_state: str | None, reason: str | None, user: str, now: int) -> str | None:
    """Change one node; returns the slurm_update error text when slurmctld refuses."""
    if new_state is None:
        if reason is not None:
            node.reason, node.user, node.reason_time = reason, user, now
        return None
    if new_state == "RESUME":
        if not (node.drain or node.fail or node.base == "DOWN"):
            return "Invalid node state specified"
        node.base, node.drain, node.fail = "IDLE", False, False
        node.reason = node.user = node.reason_time = None
    elif new_state == "UNDRAIN":
        node.drain = False
        if not node.fail and node.base != "DOWN":
            node.reason = node.user = node.reason_time = None
    elif new_state in ("DRAIN", "FAIL", "DOWN"):
        node.drain = node.drain or new_state == "DRAIN"
        node.fail = node.fail or new_state == "FAIL"
        if new_state == "DOWN":
            node.base = "DOWN"
        node.reason, node.user, node.reason_time = reason, user, now
    elif new_state != "IDLE":
        return "Invalid node state specified"
    node.changed = now
    return None


def _update(ctx: SimContext, args: list[str]) -> SimReply:
    fields = _update_fields(args)
    names = fields.get("nodename")
    if names is None:
        return SimReply(stdout="", stderr=_NO_ENTITY, exit_status=1)
    new_state = fields["state"].upper() if "state" in fields else None
    reason = fields.get("reason")
    if new_state is None and reason is None:
        return SimReply(stdout="", stderr="No changes specified\n", exit_status=1)
    if new_state is not None and new_state not in ("DRAIN", "FAIL", "DOWN", "RESUME", "UNDRAIN", "IDLE"):
        return SimReply(
            stdout="", stderr=f"Invalid input: State={fields['state']}\n" + _VALID_STATES_MSG, exit_status=1
        )
    if new_state in ("DRAIN", "FAIL", "DOWN") and not reason:
        return SimReply(stdout="", stderr=_NEEDS_REASON, exit_status=1)
    known, unknown = _expand(ctx.cluster, names)
    user = ctx.env.get("USER") or ctx.env.get("LOGNAME") or "root"
    now = int(time.time())
    errors: list[str] = []
    with _locked_state(ctx, write=True) as state:
        for name in known:
            node = state.nodes.setdefault(name, NodeState())
            error = _apply(node, new_state, reason, user, now)
            if error:
                errors.append(error)
    if unknown:
        errors.append("Invalid node name specified")
    if errors:
        return SimReply(stdout="", stderr=f"slurm_update error: {errors[0]}\n", exit_status=1)
    return SimReply(stdout="")


# --- reservations (what ``watch --reservation`` sends and reads: console.actions.reservation) ---------
# Messages and layout copied from the real Slurm 22.05.8 lab (tests/harness/slurm_lab.py). A reservation
# is kept in the shared state until deleted; it does not end by itself and does not change node states
# (real Slurm marks the nodes MAINT+RESERVED while it is active): watch plans a round before it reserves.


def _create_reservation(ctx: SimContext, args: list[str]) -> SimReply:
    fields = _update_fields(args)
    name = fields.get("reservationname")
    if "duration" not in fields and "endtime" not in fields:
        return SimReply(
            stdout="",
            stderr="scontrol: error: An end time or duration must be given.  No reservation created.\n",
            exit_status=1,
        )
    minutes = int(fields["duration"]) if fields.get("duration", "").isdigit() else 0
    known, unknown = _expand(ctx.cluster, fields.get("nodes", ""))
    with _locked_state(ctx, write=True) as state:
        if name in state.reservations:
            error = "Duplicate reservation name"
        elif unknown or not known:
            error = "Invalid node name specified"
        else:
            error = ""
            flags = fields.get("flags", "")
            state.reservations[name or f"root_{len(state.reservations) + 1}"] = Reservation(
                nodes=known,
                start=int(time.time()),
                minutes=minutes,
                users=fields.get("users", "(null)"),
                flags=",".join([*filter(None, flags.split(",")), "SPEC_NODES"]),
            )
    if error:
        return SimReply(stdout="", stderr=f"Error creating the reservation: {error}\n", exit_status=1)
    return SimReply(stdout=f"Reservation created: {name}\n")


def _delete_reservation(ctx: SimContext, args: list[str]) -> SimReply:
    fields = _update_fields(args)
    if "reservationname" not in fields:
        return SimReply(stdout="", stderr=_NO_ENTITY, exit_status=1)
    name = fields["reservationname"]
    with _locked_state(ctx, write=True) as state:
        found = state.reservations.pop(name, None)
    if found is None:
        return SimReply(
            stdout="",
            stderr=f"delete_reservation ReservationName={name}: Requested reservation is invalid\n",
            exit_status=1,
        )
    return SimReply(stdout="")


def _show_reservations(ctx: SimContext, name: str | None, one_liner: bool) -> SimReply:
    with _locked_state(ctx, write=False) as state:
        held = dict(state.reservations)
    if name is not None and name not in held:
        return SimReply(stdout=f"Reservation {name} not found\n", exit_status=1)
    if not held:
        return SimReply(stdout="No reservations in the system\n")
    blocks = []
    for rname, r in held.items():
        if name is not None and rname != name:
            continue
        start = datetime.fromtimestamp(r.start).strftime("%Y-%m-%dT%H:%M:%S")
        end = datetime.fromtimestamp(r.start + r.minutes * 60).strftime("%Y-%m-%dT%H:%M:%S")
        hours, minutes = divmod(r.minutes, 60)
        lines = [
            f"ReservationName={rname} StartTime={start} EndTime={end} Duration={hours:02d}:{minutes:02d}:00",
            f"Nodes={_fold(r.nodes)} NodeCnt={len(r.nodes)} CoreCnt={len(r.nodes)} Features=(null)"
            f" PartitionName=(null) Flags={r.flags}",
            f"TRES=cpu={len(r.nodes)}",
            f"Users={r.users} Groups=(null) Accounts=(null) Licenses=(null) State=ACTIVE BurstBuffer=(null) Watts=n/a",
            "MaxStartDelay=(null)",
        ]
        blocks.append(" ".join(lines) + "\n" if one_liner else "\n   ".join(lines) + "\n\n")
    return SimReply(stdout="".join(blocks))


def _scontrol(ctx: SimContext, args: list[str]) -> SimReply:
    one_liner = False
    words: list[str] = []
    for arg in args:
        if arg in ("-o", "--oneliner"):
            one_liner = True
        elif arg in ("-V", "--version"):
            return SimReply(stdout=f"slurm-wlm {SLURM_VERSION}\n")
        elif arg.startswith("-") and not words:
            return SimReply(
                stdout="",
                stderr=f"scontrol: unrecognized option '{arg}'\nTry \"scontrol --help\" for more information\n",
                exit_status=1,
            )
        else:
            words.append(arg)
    if not words:
        return SimReply(
            stdout="", stderr="scontrol: no command given (interactive mode is not simulated)\n", exit_status=1
        )
    command = words[0].lower()
    if command == "update":
        return _update(ctx, words[1:])
    if command == "create" and len(words) > 1 and words[1].lower() == "reservation":
        return _create_reservation(ctx, words[2:])
    if command == "delete":
        return _delete_reservation(ctx, words[1:])
    if command == "ping":
        return SimReply(stdout="Slurmctld(primary) at head is UP\n")
    if command == "show" and len(words) > 1:
        entity, _, inline = words[1].partition("=")
        if entity.lower() in ("node", "nodes", "nodename"):
            return _show_node(ctx, inline or (words[2] if len(words) > 2 else None), one_liner)
        if entity.lower() in ("reservation", "reservations", "reservationname"):
            return _show_reservations(ctx, inline or (words[2] if len(words) > 2 else None), one_liner)
    if command == "show":
        return SimReply(stdout="", stderr=f"invalid entity: {' '.join(words[1:2])} for keyword:show\n", exit_status=1)
    return SimReply(stdout="", stderr=f"invalid keyword: {words[0]}\n", exit_status=1)


def handle(ctx: SimContext, argv: list[str]) -> SimReply:
    """Answer ``sinfo`` or ``scontrol`` from the shared Slurm state of the cluster."""
    if program_name(argv) == "sinfo":
        if argv[1:2] in (["-V"], ["--version"]):
            return SimReply(stdout=f"slurm-wlm {SLURM_VERSION}\n")
        return _sinfo(ctx, argv[1:])
    return _scontrol(ctx, argv[1:])
