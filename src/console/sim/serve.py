"""``sim serve``: plan a simulated cluster, serve it over SSH and write what the console needs to reach it.

The plan names nodes ``sim001``.. (wider when there are more than 999), splits them into pools of one
GPU model each, places each node on its own loopback address (``127.2.0.1``, ``127.2.0.2``... on one
port) or on its own port of one address, and draws the faults. Serving writes ``cluster.json`` (the
``ClusterSpec`` shims and tests rebuild nodes from), ``known_hosts``, the client key and the inventory
TOML, then prints one ``ready:`` line and runs until SIGINT/SIGTERM.
"""

from __future__ import annotations

import asyncio
import ctypes
import ipaddress
import os
import resource
import signal
import socket
import string
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from pydantic import Field, field_validator, model_validator

from console.model.base import Model
from console.sim.faults import Fault, demo_faults, random_faults
from console.sim.fleet_files import PoolPlan, SshSettings, inventory_toml
from console.sim.hostkeys import HostKeyStore, client_key, known_hosts_line
from console.sim.models import ClusterSpec, NodeSpec
from console.sim.scenario import (
    LIVE_FAULTS_FILE,
    Scenario,
    ScenarioError,
    group_of,
    load_scenario,
    read_live_faults,
    record_injected,
    stack_for,
)
from console.sim.server import DEFAULT_MAX_SESSIONS, DEFAULT_USER, Endpoint, SimServer
from console.sim.specs import DEFAULT_STACK, GPU_SPECS, GpuModel, stack_preset

CLUSTER_FILE = "cluster.json"
KNOWN_HOSTS_FILE = "known_hosts"
INVENTORY_FILE = "inventory.toml"
DEFAULT_PORT = 22022
DEFAULT_ADDRESS_BASE = "127.2.0.0"  # the asyncssh simulators' block of the loopback address plan
LOOPBACK = ipaddress.IPv4Network("127.0.0.0/8")
_PR_SET_PDEATHSIG = 1


class ListenMode(StrEnum):
    """Where nodes listen: one loopback address each on a shared port, or one port each on one address."""

    ADDRESSES = "addresses"
    PORTS = "ports"


class ServeOptions(Model):
    """Everything ``sim serve`` needs; the CLI flags map one to one."""

    nodes: int = Field(64, ge=1, le=16384)
    models: list[GpuModel] = Field(default_factory=lambda: [GpuModel.MI300X], min_length=1)
    pools: int | None = Field(None, ge=1, description="default: one pool per model")
    faults: str = Field("demo", description="demo, none or random:<fraction>")
    seed: int = 0
    time_factor: float = Field(20.0, gt=0)
    state_dir: Path
    inventory_out: Path | None = None
    listen: ListenMode = ListenMode.ADDRESSES
    address_base: str = DEFAULT_ADDRESS_BASE
    port: int = Field(DEFAULT_PORT, ge=0, le=65535, description="0 with --listen ports: any free ports")
    user: str = DEFAULT_USER
    max_sessions: int = Field(DEFAULT_MAX_SESSIONS, ge=1)
    name: str = Field("sim", description="the cluster's name; a scenario's own name is used unless this is set")
    parent_pid: int | None = Field(None, description="stop when this process (the launcher) dies")
    scenario: Path | None = Field(None, description="scenario TOML: nodes, pools, stacks and faults (watched)")
    watch_interval_s: float = Field(0.5, gt=0, description="how often the scenario and live faults are re-read")

    @field_validator("faults")
    @classmethod
    def _known_fault_set(cls, value: str) -> str:
        if value in ("demo", "none"):
            return value
        kind, _, fraction = value.partition(":")
        if kind != "random" or not _is_fraction(fraction):
            raise ValueError(f"expected demo, none or random:<fraction 0..1>, got {value!r}")
        return value

    @model_validator(mode="after")
    def _endpoints_fit(self) -> ServeOptions:
        node_endpoints(self.nodes, self.listen, self.address_base, self.port)
        return self

    @property
    def inventory_path(self) -> Path:
        """Where the inventory TOML goes."""
        return self.inventory_out or self.state_dir / INVENTORY_FILE


def _is_fraction(text: str) -> bool:
    try:
        return 0.0 <= float(text) <= 1.0
    except ValueError:
        return False


def parse_models(text: str) -> list[GpuModel]:
    """``mi300x`` or ``mi300x,mi355x`` -> GPU models (ValueError names the known ones)."""
    known = {model.value.lower(): model for model in GpuModel}
    models = []
    for item in text.split(","):
        model = known.get(item.strip().lower())
        if model is None:
            raise ValueError(f"unknown GPU model {item.strip()!r}; expected one of {', '.join(known)}")
        models.append(model)
    return models


def default_state_dir() -> Path:
    """``$XDG_STATE_HOME/instinct-console/sim`` (``~/.local/state/...`` by default)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "instinct-console" / "sim"


@dataclass(frozen=True)
class ClusterPlan:
    """The cluster to serve: its spec, pools and the endpoint each node should listen on."""

    cluster: ClusterSpec
    pools: list[PoolPlan]
    endpoints: dict[str, Endpoint]


def node_endpoints(count: int, listen: ListenMode, address_base: str, port: int) -> list[Endpoint]:
    """Endpoints of nodes 1..count: ``base + i`` on ``port``, or ``base`` on ``port + i - 1``."""
    base = ipaddress.IPv4Address(address_base)
    if listen is ListenMode.PORTS:
        if port and port + count - 1 > 65535:
            raise ValueError(f"{count} nodes from port {port} run past 65535")
        return [(str(base), port + i if port else 0) for i in range(count)]
    last = base + count if int(base) + count <= int(ipaddress.IPv4Address("255.255.255.255")) else None
    if last is None or base not in LOOPBACK or last not in LOOPBACK:
        raise ValueError(f"{count} nodes from {address_base} leave the loopback network 127.0.0.0/8")
    if port == 0:
        raise ValueError("--port 0 (any free port) needs --listen ports")
    return [(str(base + i), port) for i in range(1, count + 1)]


def _pool_names(models: list[GpuModel], pools: int) -> list[tuple[str, GpuModel]]:
    """Pool k gets model k mod len(models) and a letter per model: mi300x-a, mi355x-a, mi300x-b..."""
    seen: dict[GpuModel, int] = {}
    names = []
    for k in range(pools):
        model = models[k % len(models)]
        n = seen.get(model, 0)
        seen[model] = n + 1
        letters = string.ascii_lowercase
        suffix = letters[n % 26] * (n // 26 + 1)
        names.append((f"{model.value.lower()}-{suffix}", model))
    return names


def _faults(spec: str, names: list[str], seed: int) -> list[Fault]:
    if spec == "none":
        return []
    if spec == "demo":
        return demo_faults(names, seed)
    return random_faults(names, float(spec.partition(":")[2]), seed)


def plan_cluster(options: ServeOptions) -> ClusterPlan:
    """Names, pools, stacks, endpoints and faults of the cluster ``options`` describe (deterministic)."""
    if options.scenario is not None:
        return plan_scenario(load_scenario(options.scenario), options)
    width = max(3, len(str(options.nodes)))
    names = [f"sim{i:0{width}d}" for i in range(1, options.nodes + 1)]
    endpoints = node_endpoints(options.nodes, options.listen, options.address_base, options.port)
    pool_count = min(options.pools or len(options.models), options.nodes)
    pools: list[PoolPlan] = []
    specs: list[NodeSpec] = []
    for k, (pool_name, model) in enumerate(_pool_names(options.models, pool_count)):
        first, end = k * options.nodes // pool_count, (k + 1) * options.nodes // pool_count
        stack = stack_preset(DEFAULT_STACK[model])
        pools.append(
            PoolPlan(
                name=pool_name,
                gpu_model=model.value,
                gpu_count=GPU_SPECS[model].gpus_per_node,
                nodes=names[first:end],
                labels={"rack": f"r{k + 1:02d}"},
                pin={"rocm": stack.rocm, "amdgpu_driver": stack.amdgpu_driver},
            )
        )
        for i in range(first, end):
            address, port = endpoints[i]
            # Port 0 (any free port) is replaced by the bound port before the cluster file is written.
            specs.append(
                NodeSpec(name=names[i], gpu_model=model, pool=pool_name, stack=stack, address=address, port=port or 22)
            )
    cluster = ClusterSpec(
        name=options.name,
        seed=options.seed,
        time_factor=options.time_factor,
        nodes=specs,
        faults=_faults(options.faults, names, options.seed),
    )
    return ClusterPlan(cluster=cluster, pools=pools, endpoints=dict(zip(names, endpoints, strict=True)))


def plan_scenario(scenario: Scenario, options: ServeOptions) -> ClusterPlan:
    """The cluster a scenario file describes: its nodes in file order, a pool per name it gives."""
    names = scenario.node_names()
    endpoints = node_endpoints(len(names), options.listen, options.address_base, options.port)
    groups = group_of(scenario)
    pools: dict[str, PoolPlan] = {}
    specs: list[NodeSpec] = []
    for name, (address, port) in zip(names, endpoints, strict=True):
        group = groups[name]
        stack = stack_for(group)
        pool_name = group.pool or group.model.value.lower()
        pool = pools.get(pool_name)
        if pool is None:
            pool = pools[pool_name] = PoolPlan(
                name=pool_name,
                gpu_model=group.model.value,
                gpu_count=GPU_SPECS[group.model].gpus_per_node,
                nodes=[],
                labels=dict(group.labels),
                pin={"rocm": stack.rocm, "amdgpu_driver": stack.amdgpu_driver},
                nic_rate_gbps=group.nic_rate_gbps,
            )
        elif pool.gpu_model != group.model.value:
            raise ScenarioError(f"pool {pool_name} mixes {pool.gpu_model} and {group.model.value} nodes")
        if group.labels != pool.labels:
            pool.node_labels[name] = dict(group.labels)
        pool.nodes.append(name)
        specs.append(
            NodeSpec(
                name=name,
                gpu_model=group.model,
                pool=pool_name,
                stack=stack,
                address=address,
                port=port or 22,
                nic_rate_gbps=group.nic_rate_gbps,
            )
        )
    # The scenario names its cluster; an explicit ``ServeOptions.name`` still wins (a caller that set it meant it).
    cluster = ClusterSpec(
        name=options.name if "name" in options.model_fields_set else scenario.name,
        seed=scenario.seed,
        time_factor=scenario.time_factor,
        nodes=specs,
        faults=scenario.all_faults(),
    )
    return ClusterPlan(cluster=cluster, pools=list(pools.values()), endpoints=dict(zip(names, endpoints, strict=True)))


def raise_open_file_limit() -> int:
    """Raise RLIMIT_NOFILE to the hard limit (1,024 nodes need more than the usual 1,024 fds)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def _free_port(address: str) -> int:
    """A port nothing listens on now (for a refused node that has to appear somewhere in the inventory)."""
    with socket.socket() as probe:
        probe.bind((address, 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass(frozen=True)
class ServedCluster:
    """What a serving simulator wrote and where its nodes listen."""

    cluster: ClusterSpec
    cluster_path: Path
    inventory_path: Path
    known_hosts_path: Path
    client_key_path: Path
    endpoints: dict[str, Endpoint]
    refused: list[str]
    startup_s: float

    def ready_line(self) -> str:
        """The one line ``sim serve`` prints once every node listens."""
        addresses = sorted({address for address, _ in self.endpoints.values()}, key=ipaddress.IPv4Address)
        ports = sorted({port for _, port in self.endpoints.values()})
        where = addresses[0] if len(addresses) == 1 else f"{addresses[0]}-{addresses[-1]}"
        port = str(ports[0]) if len(ports) == 1 else f"{ports[0]}-{ports[-1]}"
        refused = f" ({len(self.refused)} refusing connections)" if self.refused else ""
        return (
            f"ready: {len(self.endpoints)} nodes at {where}:{port}{refused} "
            f"inventory at {self.inventory_path} ({self.startup_s:.2f} s)"
        )


async def serve(options: ServeOptions, on_ready: Callable[[ServedCluster], None], stop: asyncio.Event) -> None:
    """Serve the planned cluster until ``stop`` is set; ``on_ready`` runs once every node listens."""
    start = time.perf_counter()
    raise_open_file_limit()
    state_dir = options.state_dir.resolve()
    state_dir.mkdir(parents=True, exist_ok=True)
    plan = plan_cluster(options)
    keys = HostKeyStore(state_dir)
    key_path, key = client_key(state_dir)
    server = SimServer(
        plan.cluster, keys, key, state_dir=state_dir, user=options.user, max_sessions=options.max_sessions
    )
    bound = await server.start(plan.endpoints)
    refused = [name for name, runtime in server.nodes.items() if runtime.faults.refused]
    for name in refused:
        if bound[name][1] == 0:
            bound[name] = (bound[name][0], _free_port(bound[name][0]))
    try:
        for spec in plan.cluster.nodes:
            spec.address, spec.port = bound[spec.name]
        _write_files(options, state_dir, plan=plan, keys=keys, key_path=key_path, bound=bound)
        watcher = _FaultWatcher(options, state_dir, plan.cluster, server)
        watching = asyncio.create_task(watcher.run(stop))
        on_ready(
            ServedCluster(
                cluster=plan.cluster,
                cluster_path=state_dir / CLUSTER_FILE,
                inventory_path=options.inventory_path.resolve(),
                known_hosts_path=state_dir / KNOWN_HOSTS_FILE,
                client_key_path=key_path,
                endpoints=bound,
                refused=refused,
                startup_s=time.perf_counter() - start,
            )
        )
        await stop.wait()
        await watching
    finally:
        await server.stop()


class _FaultWatcher:
    """Re-reads the scenario file and the live-fault overlay; applies what changed to the served nodes.

    The node list is fixed at start (endpoints, keys and the inventory are written once); faults,
    stacks and NIC speeds may change while it runs. Every applied state is recorded as a new
    generation in ``injected.json``.
    """

    def __init__(self, options: ServeOptions, state_dir: Path, cluster: ClusterSpec, server: SimServer) -> None:
        self.options = options
        self.state_dir = state_dir
        self.cluster = cluster
        self.server = server
        self.planned_faults = list(cluster.faults)  # what the plan gave, before any live change
        self.generation = 1
        if options.scenario is not None:
            self.planned_from = f"scenario {options.scenario.resolve()}"
        else:
            self.planned_from = f"faults {options.faults} seed {options.seed}"
        # A new run starts from its plan: live changes of an earlier run of this state dir are dropped.
        (state_dir / LIVE_FAULTS_FILE).unlink(missing_ok=True)
        self._seen = self._stamps()
        record_injected(state_dir, self.generation, cluster.faults, self.planned_from)

    def _stamps(self) -> tuple[float | None, float | None]:
        def mtime(path: Path | None) -> float | None:
            try:
                return path.stat().st_mtime_ns if path is not None else None
            except OSError:
                return None

        return mtime(self.options.scenario), mtime(self.state_dir / LIVE_FAULTS_FILE)

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), self.options.watch_interval_s)
            except TimeoutError:
                self.apply_if_changed()

    def apply_if_changed(self) -> None:
        stamps = self._stamps()
        if stamps == self._seen:
            return
        self._seen = stamps
        try:
            updated = self._read()
        except (ScenarioError, ValueError, OSError) as exc:
            # A half-written or wrong file must not stop the fleet: keep serving the last good state.
            print(f"instinct-console sim serve: not applied: {exc}", file=sys.stderr, flush=True)
            return
        self.cluster = updated
        self.server.apply(updated)
        updated.save(self.state_dir / CLUSTER_FILE)
        self.generation += 1
        record_injected(self.state_dir, self.generation, updated.faults, self.planned_from)

    def _read(self) -> ClusterSpec:
        """The served cluster with the scenario's current nodes' stacks and faults, plus the live overlay."""
        base, faults = self.cluster, self.planned_faults
        nodes = base.nodes
        if self.options.scenario is not None:
            planned = plan_scenario(load_scenario(self.options.scenario), self.options).cluster
            if [n.name for n in planned.nodes] != [n.name for n in base.nodes]:
                raise ScenarioError("the scenario's nodes changed: restart sim serve to serve other nodes")
            fresh = {n.name: n for n in planned.nodes}
            nodes = [
                n.model_copy(update={"stack": fresh[n.name].stack, "nic_rate_gbps": fresh[n.name].nic_rate_gbps})
                for n in base.nodes
            ]
            faults = planned.faults
        live = read_live_faults(self.state_dir)
        missing = sorted({f.node for f in live} - {n.name for n in nodes})
        if missing:
            raise ScenarioError(f"{LIVE_FAULTS_FILE}: no node {', '.join(missing)} in this simulator")
        return base.model_copy(update={"nodes": nodes, "faults": [*faults, *live]})


def _write_files(
    options: ServeOptions,
    state_dir: Path,
    *,
    plan: ClusterPlan,
    keys: HostKeyStore,
    key_path: Path,
    bound: dict[str, Endpoint],
) -> None:
    """Write cluster.json, known_hosts and the inventory TOML."""
    plan.cluster.save(state_dir / CLUSTER_FILE)
    known_hosts = state_dir / KNOWN_HOSTS_FILE
    # Every node is listed with its own key; a host_key_changed node serves a different one.
    lines = [
        known_hosts_line(address, port, keys.host_key(name), alias=name) for name, (address, port) in bound.items()
    ]
    known_hosts.write_text("\n".join(lines) + "\n", encoding="ascii")
    ports = {port for _, port in bound.values()}
    ssh = SshSettings(
        user=options.user,
        port=options.port if options.port in ports else min(ports),
        identity_file=key_path,
        known_hosts=known_hosts,
    )
    inventory = options.inventory_path
    inventory.parent.mkdir(parents=True, exist_ok=True)
    controller = plan.cluster.nodes[0].name
    inventory.write_text(inventory_toml(plan.cluster.name, ssh, controller, plan.pools, bound), encoding="utf-8")


def _stop_with_parent(parent_pid: int) -> bool:
    """Ask the kernel for SIGTERM when our parent dies; False if it is already gone."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    return os.getppid() == parent_pid


def run_serve(options: ServeOptions) -> int:
    """Serve in the foreground until SIGINT/SIGTERM; prints the ready line on stdout. Returns an exit code."""
    if options.parent_pid is not None and not _stop_with_parent(options.parent_pid):
        return 0

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, stop.set)

        def ready(served: ServedCluster) -> None:
            print(served.ready_line(), flush=True)

        await serve(options, ready, stop)

    try:
        asyncio.run(main())
    except OSError as exc:
        print(f"instinct-console sim serve: cannot listen: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0
