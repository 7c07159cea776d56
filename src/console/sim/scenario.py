"""Scenario files: which simulated node runs which model, pool and stack, and which faults it has.

A scenario is a TOML file an operator or a test writes (``docs/simulator.md`` has the format and
examples); ``sim serve --scenario FILE`` serves it, and ``--nodes``/``--model``/``--faults`` are then
not used. Node groups and faults name their nodes with hostlists (``sim[001-016]``)::

    name = "triage-drill"
    seed = 7

    [[nodes]]
    names = "sim[001-008]"
    model = "MI300X"
    pool = "mi300x-a"
    rocm = "6.4.1"
    labels = { rack = "r01" }

    [[faults]]
    nodes = "sim003"
    kind = "command_hang"
    program = "amd-smi"
    args = "list"

A fault's keys other than ``nodes``, ``kind``, ``gpu`` and ``peer`` are its parameters (see
``console.sim.effects``). The running simulator watches the file and a JSON overlay of live changes
beside its state (``sim inject`` / ``sim repair``), applies every change to the nodes it serves,
and records what it injected (``injected.json``), so storms, repairs and flaps can be played
between sweeps and a test can compare the console's verdicts with the truth.
"""

from __future__ import annotations

import json
import os
import time
import tomllib
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator

from console.inventory.hostlist import expand
from console.model.base import Model
from console.sim.faults import Fault, FaultKind, JsonScalar
from console.sim.specs import DEFAULT_STACK, GpuModel, stack_preset

LIVE_FAULTS_FILE = "live-faults.json"
INJECTED_FILE = "injected.json"


class ScenarioError(ValueError):
    """A scenario file that cannot be served: names the file and what is wrong, in one line."""


class NodeGroup(Model):
    """Nodes sharing a GPU model, pool, ROCm stack and NIC speed."""

    names: str = Field(min_length=1, description="hostlist, e.g. sim[001-016]")
    model: GpuModel = GpuModel.MI300X
    pool: str | None = Field(None, description="default: the model's name in lower case, e.g. mi300x")
    rocm: str | None = Field(None, description="ROCm stack preset; default: the model's usual one")
    nic_rate_gbps: int | None = Field(None, gt=0, description="link rate of every backend NIC (default 400)")
    labels: dict[str, str] = Field(default_factory=dict)

    @field_validator("model", mode="before")
    @classmethod
    def _any_case(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value


class FaultEntry(Model):
    """One ``[[faults]]`` table: a fault kind on every node of a hostlist, with its parameters."""

    nodes: str = Field(min_length=1)
    kind: FaultKind
    gpu: int | None = Field(None, ge=0)
    peer: int | None = Field(None, ge=0)
    params: dict[str, JsonScalar] = Field(default_factory=dict)

    def faults(self) -> list[Fault]:
        """The fault on each node the hostlist names."""
        return [
            Fault(kind=self.kind, node=node, gpu=self.gpu, peer=self.peer, params=dict(self.params))
            for node in expand(self.nodes)
        ]


class Scenario(Model):
    """A whole scenario file."""

    name: str = "sim"
    seed: int = 0
    time_factor: float = Field(20.0, gt=0)
    nodes: list[NodeGroup] = Field(min_length=1)
    faults: list[FaultEntry] = Field(default_factory=list)

    def node_names(self) -> list[str]:
        """Every node, in file order (a node named twice is an error, raised by ``load_scenario``)."""
        return [name for group in self.nodes for name in expand(group.names)]

    def all_faults(self) -> list[Fault]:
        """The file's faults, one per node they name."""
        return [fault for entry in self.faults for fault in entry.faults()]


_FAULT_FIELDS = {"nodes", "kind", "gpu", "peer"}


def load_scenario(path: Path) -> Scenario:
    """Read and check a scenario file (ScenarioError names the file and the problem)."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read the scenario: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path}: not TOML: {exc}") from None
    faults = raw.get("faults", [])
    if isinstance(faults, list):
        raw["faults"] = [_with_params(entry) for entry in faults]
    try:
        scenario = Scenario.model_validate(raw)
        names = scenario.node_names()
        all_faults = scenario.all_faults()
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise ScenarioError(f"{path}: {where}: {error['msg']}") from None
    except ValueError as exc:  # a hostlist that does not parse
        raise ScenarioError(f"{path}: {exc}") from None
    _check_names(path, names, all_faults)
    return scenario


def _with_params(entry: Any) -> Any:
    """A ``[[faults]]`` table's parameters written inline (``program = "amd-smi"``) moved into ``params``."""
    if not isinstance(entry, dict):
        return entry
    params = dict(entry.get("params", {}))
    params.update({key: value for key, value in entry.items() if key not in _FAULT_FIELDS | {"params"}})
    return {**{key: entry[key] for key in _FAULT_FIELDS if key in entry}, "params": params}


def _check_names(path: Path, names: list[str], faults: list[Fault]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ScenarioError(f"{path}: node {name} is in two [[nodes]] groups")
        seen.add(name)
    for fault in faults:
        if fault.node not in seen:
            raise ScenarioError(f"{path}: a {fault.kind} fault names {fault.node}, which no [[nodes]] group has")


def group_of(scenario: Scenario) -> dict[str, NodeGroup]:
    """Each node's group."""
    return {name: group for group in scenario.nodes for name in expand(group.names)}


def stack_for(group: NodeGroup) -> Any:
    """The group's stack preset (ScenarioError when there is none for its ROCm release)."""
    rocm = group.rocm or DEFAULT_STACK[group.model]
    try:
        return stack_preset(rocm)
    except KeyError as exc:
        raise ScenarioError(str(exc.args[0])) from None


# -- live changes ------------------------------------------------------------------------------------


def read_live_faults(state_dir: Path) -> list[Fault]:
    """Faults added at run time (``sim inject``), beside the scenario's own."""
    path = state_dir / LIVE_FAULTS_FILE
    if not path.exists():
        return []
    return [Fault.model_validate(item) for item in json.loads(path.read_text(encoding="utf-8"))]


def write_live_faults(state_dir: Path, faults: list[Fault]) -> None:
    """Replace the live overlay atomically (the simulator may read it at any moment)."""
    _atomic_write(state_dir / LIVE_FAULTS_FILE, json.dumps([f.model_dump(mode="json") for f in faults], indent=2))


def record_injected(state_dir: Path, generation: int, faults: list[Fault], planned_from: str = "") -> None:
    """What the simulator serves now: the truth a test compares the console's verdicts with.

    ``planned_from`` says where the faults it started with came from (its scenario file, or ``--faults``),
    so ``sim repair``, which removes live faults only, can say where the others can be changed."""
    document = {
        "generation": generation,
        "changed_at": time.time(),
        "planned_from": planned_from,
        "faults": [fault.model_dump(mode="json") for fault in faults],
    }
    _atomic_write(state_dir / INJECTED_FILE, json.dumps(document, indent=2))


def read_injected(state_dir: Path) -> tuple[int, list[Fault]]:
    """The generation and faults the simulator last recorded (``(0, [])`` before it started)."""
    path = state_dir / INJECTED_FILE
    if not path.exists():
        return 0, []
    document = json.loads(path.read_text(encoding="utf-8"))
    return int(document["generation"]), [Fault.model_validate(item) for item in document["faults"]]


def read_planned_from(state_dir: Path) -> str:
    """Where the running simulator's planned faults came from (``record_injected``); "" when not recorded."""
    path = state_dir / INJECTED_FILE
    if not path.exists():
        return ""
    return str(json.loads(path.read_text(encoding="utf-8")).get("planned_from", ""))


def _atomic_write(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(text + "\n", encoding="utf-8")
    temporary.replace(path)
