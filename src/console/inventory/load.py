"""Reading cluster files: TOML inventories, plain hostfiles, ``sinfo`` output and ROCm/cvs cluster.json.

Every error is an ``InventoryError`` whose message names the file, the field and what was wrong, so
the operator can fix the file without reading a traceback.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from console.inventory.hostlist import MAX_NODES, HostlistError, expand
from console.inventory.model import HostOverride, Inventory, InventoryFile, Node, Pool

_PLAIN_KEY = re.compile(r"[\w.-]+", re.ASCII)
# A node name is a host name (or an address): it names files, Slurm nodes and log lines, never a shell word.
_NODE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,252}")


class InventoryError(ValueError):
    """A cluster file that cannot be used; the message names the file and the field."""


def _field_path(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            # A key the operator typed may hold anything, a newline included: quote all but plain words.
            name = item if _PLAIN_KEY.fullmatch(item) else repr(item)
            parts.append(f".{name}" if parts else name)
    return "".join(parts) or "(top level)"


def _validation_message(source: str, exc: ValidationError, under: tuple[int | str, ...] = ()) -> str:
    first = exc.errors()[0]
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{source}: field {_field_path((*under, *first['loc']))}: {first['msg']}{more}"


def from_mapping(data: dict[str, Any], source: str = "<inventory>") -> Inventory:
    """Validate a parsed cluster file and expand its pools into nodes."""
    try:
        spec = InventoryFile.model_validate(data)
    except ValidationError as exc:
        raise InventoryError(_validation_message(source, exc)) from None
    return expand_inventory(spec, source)


def expand_inventory(
    spec: InventoryFile, source: str = "<inventory>", expanded: Mapping[str, list[str]] | None = None
) -> Inventory:
    """Turn pools with hostlist expressions into one ``Node`` per host; a node may be in one pool only.

    ``expanded`` gives the node names of pools an importer has already expanded (pool name -> names):
    expanding a hostlist twice made a 100,000-node hostfile cost seconds more.
    """
    pools: dict[str, Pool] = {}
    nodes: list[Node] = []
    seen: dict[str, str] = {}
    for index, pool in enumerate(spec.pools):
        if pool.name in pools:
            raise InventoryError(f"{source}: field pools[{index}].name: pool {pool.name!r} is defined twice")
        pools[pool.name] = pool
        try:
            # Checked merged with the fleet's: a pool's value obeys the bounds of [lifecycle] itself.
            spec.lifecycle.for_pool(pool.lifecycle)
        except ValidationError as exc:
            raise InventoryError(_validation_message(source, exc, ("pools", index, "lifecycle"))) from None
        try:
            names = (expanded or {}).get(pool.name) or expand(pool.nodes, MAX_NODES - len(seen))
        except HostlistError as exc:
            raise InventoryError(f"{source}: field pools[{index}].nodes: {exc}") from None
        for name in names:
            if not _NODE_NAME.fullmatch(name):
                raise InventoryError(
                    f"{source}: field pools[{index}].nodes: node name {name!r} is not a host name"
                    " (letters, digits, '.', '_', '-', ':')"
                )
            if name in seen:
                raise InventoryError(
                    f"{source}: field pools[{index}].nodes: node {name!r} is already in pool {seen[name]!r}"
                )
            seen[name] = pool.name
            override = spec.hosts.get(name, HostOverride())
            nodes.append(
                Node(
                    name=name,
                    pool=pool.name,
                    gpu_model=pool.gpu_model,
                    gpu_count=pool.gpu_count,
                    nic_count=pool.nic_count,
                    nic_rate_gbps=pool.nic_rate_gbps,
                    address=override.address or name,
                    port=override.port or spec.ssh.port,
                    user=override.user or spec.ssh.user,
                    labels={**pool.labels, **override.labels, "pool": pool.name, "model": pool.gpu_model},
                )
            )
    unknown = sorted(set(spec.hosts) - set(seen))
    if unknown:
        raise InventoryError(f"{source}: field {_field_path(('hosts', unknown[0]))}: node is not in any pool")
    workloads = {}
    for index, workload in enumerate(spec.workloads):
        where = f"{source}: field workloads[{index}]"
        if workload.name in workloads:
            raise InventoryError(f"{where}.name: workload {workload.name!r} is defined twice")
        unknown = [name for name in workload.pools if name not in pools]
        if unknown:
            raise InventoryError(f"{where}.pools: no pool is called {', '.join(map(repr, unknown))}")
        workloads[workload.name] = workload
    return Inventory(
        name=cluster_name(spec, source),
        ssh=spec.ssh,
        slurm=spec.slurm,
        pools=pools,
        nodes=nodes,
        source=source,
        lifecycle=spec.lifecycle,
        workloads=workloads,
    )


def cluster_name(spec: InventoryFile, source: str) -> str:
    """The cluster's name: ``[cluster] name``, else the top-level ``name``, else ``<file stem>-<8 hex>``.

    The default is stable for a file that stays where it is, and two unnamed cluster files never share
    it (the hex is of the file's absolute path): two clusters never share a default history database.
    """
    given = spec.cluster.name
    if "name" in spec.model_fields_set:
        if given is not None and given != spec.name:
            raise InventoryError(f"{source}: field cluster.name: {given!r}, but the top-level name is {spec.name!r}")
        given = given or spec.name
    if given is not None:
        return given
    if source.startswith("<"):
        return spec.name
    where = Path(source).absolute()
    return f"{where.stem or 'cluster'}-{hashlib.sha256(str(where).encode()).hexdigest()[:8]}"


def load_inventory(path: str | Path) -> Inventory:
    """Read a TOML cluster file; ``.json`` is read as a ROCm/cvs cluster.json, other names as a hostfile."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InventoryError(f"{path}: cannot read: {exc.strerror or exc}") from None
    text = raw.decode("utf-8", errors="replace")
    if path.suffix == ".json":
        return from_cvs_cluster_json(text, str(path))
    if path.suffix != ".toml" and not _looks_like_toml(text):
        return from_hostfile(text, str(path))
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InventoryError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise InventoryError(f"{path}: not valid TOML: nested too deeply") from None
    return from_mapping(data, str(path))


def _looks_like_toml(text: str) -> bool:
    return bool(re.search(r"^\s*\[\[?\w", text, re.MULTILINE) or re.search(r"^\s*\w+\s*=", text, re.MULTILINE))


def _built(source: str, spec: Any) -> InventoryFile:
    """``InventoryFile.model_validate(spec)`` for the importers: a value they copied in may still be invalid."""
    try:
        return InventoryFile.model_validate(spec)
    except ValidationError as exc:
        raise InventoryError(_validation_message(source, exc)) from None


def _single_pool(names: list[str], source: str, gpu_model: str, pool_name: str) -> Inventory:
    if not names:
        raise InventoryError(f"{source}: no nodes found")
    names = list(dict.fromkeys(names))  # an MPI hostfile names a host once per slot
    pool = {"name": pool_name, "gpu_model": gpu_model, "nodes": ",".join(names)}
    spec = _built(source, {"pools": [pool]})
    return expand_inventory(spec, source, {pool_name: names})


def from_hostfile(text: str, source: str = "<hostfile>", gpu_model: str = "MI300X") -> Inventory:
    """A plain hostfile: one host or hostlist per line; ``# comments`` and MPI ``slots=N`` are ignored."""
    names: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        entry = line.split("#", 1)[0].strip()
        if not entry:
            continue
        token = entry.split()[0]
        try:
            names.extend(expand(token, MAX_NODES - len(names)))
        except HostlistError as exc:
            raise InventoryError(f"{source}: line {number}: {exc}") from None
    return _single_pool(names, source, gpu_model, "default")


def from_cvs_cluster_json(text: str, source: str = "<cluster.json>", gpu_model: str = "MI300X") -> Inventory:
    """ROCm/cvs ``cluster.json``: ``username``, ``priv_key_file``, ``node_dict`` {host: {...}}."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InventoryError(f"{source}: not valid JSON: {exc.msg} at line {exc.lineno}") from None
    except RecursionError:
        raise InventoryError(f"{source}: not valid JSON: nested too deeply") from None
    if not isinstance(data, dict) or not isinstance(data.get("node_dict"), dict):
        raise InventoryError(f"{source}: field node_dict: expected an object of hosts")
    hosts = [str(h) for h in data["node_dict"]]
    if not hosts:
        raise InventoryError(f"{source}: field node_dict: no hosts")
    if not all(hosts):
        raise InventoryError(f"{source}: field node_dict: a host has an empty name")
    if len(hosts) > MAX_NODES:
        raise InventoryError(f"{source}: field node_dict: more than {MAX_NODES} hosts")
    ssh = {
        "user": str(data["username"]) if data.get("username") else None,
        "identity_file": str(data["priv_key_file"]) if data.get("priv_key_file") else None,
    }
    overrides: dict[str, dict[str, str]] = {}
    for host, info in data["node_dict"].items():
        address = info.get("vpc_ip") if isinstance(info, dict) else None
        if address and str(address) != str(host):
            overrides[str(host)] = {"address": str(address)}
    pool = {"name": "default", "gpu_model": gpu_model, "nodes": ",".join(hosts)}
    spec = {"ssh": ssh, "pools": [pool], "hosts": overrides}
    return expand_inventory(_built(source, spec), source, {"default": hosts})


def from_sinfo(text: str, source: str = "<sinfo>", gpu_model: str = "MI300X") -> Inventory:
    """``sinfo -h -N -o '%N %P'`` (node and partition per line): one pool per partition.

    The default ``sinfo`` table (PARTITION AVAIL TIMELIMIT NODES STATE NODELIST) is accepted too.
    """
    by_partition: dict[str, dict[str, None]] = {}  # partition -> its nodes, in order, once each
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0] in ("PARTITION", "NODELIST"):
            continue
        if len(fields) >= 6:  # default sinfo table
            partition, nodelist = fields[0], fields[5]
        elif len(fields) >= 2:
            nodelist, partition = fields[0], fields[1]
        else:
            continue
        partition = partition.rstrip("*")
        try:
            names = expand(nodelist, MAX_NODES - sum(map(len, by_partition.values())))
        except HostlistError as exc:
            raise InventoryError(f"{source}: {exc}") from None
        by_partition.setdefault(partition or "default", {}).update(dict.fromkeys(names))
    if not any(by_partition.values()):
        raise InventoryError(f"{source}: no nodes found")
    pools: list[dict[str, str]] = []
    members_of: dict[str, list[str]] = {}
    seen: set[str] = set()
    for partition, members in by_partition.items():
        fresh = [n for n in members if n not in seen]
        seen.update(fresh)
        if fresh:
            pools.append({"name": partition, "gpu_model": gpu_model, "nodes": ",".join(fresh)})
            members_of[partition] = fresh
    spec = _built(source, {"name": "slurm", "slurm": {"controller": ""}, "pools": pools})
    return expand_inventory(spec, source, members_of)
