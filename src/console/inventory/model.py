"""The cluster as the operator describes it: pools of nodes of one GPU model, SSH settings, Slurm."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from console.model.workload import ContainerSpec, WorkloadSpec

GPU_MODELS = ("MI300X", "MI325X", "MI350X", "MI355X", "MI250X", "MI210", "MI300A")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SshConfig(_Strict):
    """How to reach the nodes. Unset fields fall back to ~/.ssh/config and OpenSSH defaults."""

    user: str | None = None
    port: int | None = Field(None, ge=1, le=65535)
    identity_file: str | None = None
    known_hosts: str | None = None
    proxy_jump: str | None = Field(None, description="bastion host, shared by every target")
    connect_timeout_s: float = Field(10.0, gt=0)
    max_channels_per_node: int = Field(8, ge=1, le=64)
    max_handshakes: int = Field(64, ge=1)
    max_commands: int = Field(256, ge=1)
    kill_grace_s: float = Field(
        5.0, gt=0, le=120, description="after SIGTERM to a command given up on, how long before SIGKILL"
    )


class SlurmConfig(_Strict):
    """Where Slurm commands run: empty controller means on this host with its SLURM_CONF."""

    controller: str = ""
    partition: str | None = None


class StackPin(_Strict):
    """The known-good stack of a pool; empty fields are not pinned."""

    os: str | None = None
    kernel: str | None = None
    rocm: str | None = None
    amdgpu_driver: str | None = None
    firmware_bundle: str | None = None
    rccl: str | None = None
    rvs: str | None = None
    transferbench: str | None = None
    torch: str | None = Field(None, description="torch.__version__ of the node's python3 (the framework probe)")
    image_digest: str | None = None
    firmware: dict[str, str] = Field(default_factory=dict, description="GPU firmware block -> version")

    def pinned_fields(self) -> dict[str, str]:
        """Every pinned field (firmware blocks as ``firmware.<BLOCK>``)."""
        fields = {k: v for k, v in self.model_dump(exclude={"firmware"}).items() if v}
        fields.update({f"firmware.{block}": version for block, version in self.firmware.items()})
        return fields


class LifecyclePolicy(_Strict):
    """How a drained node comes back (``[lifecycle]``): revalidation passes needed, and the strikes that escalate."""

    passes_required: int = Field(2, ge=1, le=10, description="passing revalidations in a row before it may return")
    max_strikes: int = Field(
        3,
        ge=1,
        le=100,
        description="strikes (new FAILs of a check, failed revalidations) within the window that escalate",
    )
    window_h: float = Field(168.0, gt=0, description="the strike window, in hours (a week by default)")
    level: str = Field("standard", description="the probe level a revalidation sweeps at")
    pass_spacing_min: float = Field(
        0.0, ge=0, description="minutes between the starts of two revalidation sweeps that both count as passes"
    )
    # watch's circuit breaker: docs/operator-guide.md "Automation: watch", estimates.md#watch-circuit-breaker
    breaker_pool_fraction: float = Field(
        0.2, gt=0, le=1, description="share of a pool the console may hold out (at least one node) before it trips"
    )
    breaker_pool_count: int = Field(8, ge=1, description="nodes of one pool the console may hold out")
    breaker_fleet_fraction: float = Field(
        0.1, gt=0, le=1, description="share of the fleet the console may hold out (at least one node)"
    )
    breaker_fleet_count: int = Field(16, ge=1, description="nodes of the fleet the console may hold out")

    @property
    def window_s(self) -> float:
        """The strike window in seconds."""
        return self.window_h * 3600

    def for_pool(self, own: PoolLifecycle) -> LifecyclePolicy:
        """This (fleet) policy with a pool's own values over it, validated (ValidationError when out of bounds)."""
        return LifecyclePolicy.model_validate({**self.model_dump(), **own.model_dump(exclude_none=True)})

    def origins(self, own: PoolLifecycle, pool: str) -> dict[str, str]:
        """Where each value of ``for_pool(own)`` comes from: the pool's table, ``[lifecycle]`` or the default."""
        mine = own.model_dump(exclude_none=True)
        return {
            name: f"pool {pool}" if name in mine else "[lifecycle]" if name in self.model_fields_set else "default"
            for name in type(self).model_fields
        }


# The limits that are the fleet's alone: a pool's table cannot set them (``PoolLifecycle``).
FLEET_ONLY = ("breaker_fleet_fraction", "breaker_fleet_count")


class PoolLifecycle(_Strict):
    """A pool's own lifecycle values (``[pools.lifecycle]``): each one set here wins over ``[lifecycle]``.

    Unset fields follow the fleet's policy. The bounds are ``LifecyclePolicy``'s: the inventory loader
    checks the merged policy of each pool (``LifecyclePolicy.for_pool``) and names the pool's field.
    """

    passes_required: int | None = None
    max_strikes: int | None = None
    window_h: float | None = None
    level: str | None = None
    pass_spacing_min: float | None = None
    breaker_pool_fraction: float | None = None
    breaker_pool_count: int | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_fleet_limits(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name in FLEET_ONLY:
                if name in data:
                    raise ValueError(f"{name} is a limit of the whole fleet: set it in [lifecycle], not in a pool")
        return data


class PoolFramework(_Strict):
    """Where a pool's framework (the framework probe, ``sweep --probes framework``) runs (``[pools.framework]``).

    Without ``container`` the probe runs on the node's own ``python3``; with one, the same script runs
    in that image, as a containerised workload does (one container type: ``ContainerSpec``, pinned).
    """

    container: ContainerSpec | None = None


class Pool(_Strict):
    """Nodes that share a GPU model, an expected GPU count and a stack pin."""

    name: str = Field(min_length=1)
    gpu_model: str
    gpu_count: int = Field(8, ge=1, le=64)
    nic_count: int | None = Field(None, ge=0, le=64, description="backend RDMA ports per node; default: the pack's")
    nic_rate_gbps: float | None = Field(None, gt=0, description="their link rate in Gb/s; default: the pack's")
    nodes: str = Field(min_length=1, description="hostlist expression, e.g. gpu[001-128]")
    labels: dict[str, str] = Field(default_factory=dict)
    pin: StackPin = Field(default_factory=StackPin)
    scheduler: Literal["slurm", "kubernetes"] = Field(
        "slurm", description="what takes its nodes out of service: Slurm drains, or Kubernetes cordons and taints"
    )
    lifecycle: PoolLifecycle = Field(
        default_factory=PoolLifecycle, description="this pool's lifecycle values over the fleet's [lifecycle]"
    )
    framework: PoolFramework = Field(
        default_factory=PoolFramework, description="where the framework probe runs: the node's python3 or a container"
    )

    @field_validator("gpu_model")
    @classmethod
    def _known_model(cls, value: str) -> str:
        upper = value.strip().upper()
        if upper not in GPU_MODELS:
            raise ValueError(f"unknown GPU model {value!r}; expected one of {', '.join(GPU_MODELS)}")
        return upper


class HostOverride(_Strict):
    """Per-node connection details that differ from the pool's defaults."""

    address: str | None = None
    port: int | None = Field(None, ge=1, le=65535)
    user: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)


class ClusterSection(_Strict):
    """``[cluster]``: what the cluster is called; its history database and every record in it are its own."""

    name: str | None = Field(None, min_length=1, max_length=100)


class InventoryFile(_Strict):
    """The TOML cluster file as written by the operator (or by ``sim serve --inventory-out``)."""

    # The cluster's name: ``[cluster] name``, or this older top-level key (the same thing); when neither
    # is given, a default derived from the file's path (``console.inventory.load.cluster_name``).
    name: str = "cluster"
    cluster: ClusterSection = Field(default_factory=ClusterSection)
    ssh: SshConfig = Field(default_factory=SshConfig)
    slurm: SlurmConfig = Field(default_factory=SlurmConfig)
    lifecycle: LifecyclePolicy = Field(default_factory=LifecyclePolicy)
    pools: list[Pool] = Field(default_factory=list)
    hosts: dict[str, HostOverride] = Field(default_factory=dict)
    workloads: list[WorkloadSpec] = Field(default_factory=list, description="site workloads (docs/workloads.md)")


class Node(_Strict):
    """One node after expansion: its pool, model, connection address and labels."""

    name: str
    pool: str
    gpu_model: str
    gpu_count: int
    nic_count: int | None = None
    nic_rate_gbps: float | None = None
    address: str
    port: int | None = None
    user: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)


class Inventory(_Strict):
    """The expanded cluster: every node once, in file order, with its pool."""

    name: str
    ssh: SshConfig
    slurm: SlurmConfig
    pools: dict[str, Pool]
    lifecycle: LifecyclePolicy = Field(default_factory=LifecyclePolicy)
    nodes: list[Node]
    source: str = Field("", description="file the inventory was read from")
    workloads: dict[str, WorkloadSpec] = Field(default_factory=dict, description="by name, in file order")

    def node(self, name: str) -> Node:
        """The node called ``name`` (KeyError if absent)."""
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    def pool_of(self, name: str) -> Pool:
        """The pool of node ``name``."""
        return self.pools[self.node(name).pool]

    def policy(self, pool: str) -> LifecyclePolicy:
        """The lifecycle policy of ``pool``: the fleet's ``[lifecycle]`` with the pool's own values over it."""
        own = self.pools[pool].lifecycle if pool in self.pools else PoolLifecycle()
        return self.lifecycle.for_pool(own)

    def policy_of(self, node: str) -> LifecyclePolicy:
        """The lifecycle policy of node ``node``'s pool (the fleet's for a node of no pool)."""
        try:
            return self.policy(self.node(node).pool)
        except KeyError:
            return self.lifecycle
