"""Simulated nodes answering on this host through PATH shims, one shim directory per node."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from console.sim.faults import Fault
from console.sim.models import ClusterSpec, NodeSpec
from console.sim.shims import install_shims
from console.sim.specs import DEFAULT_STACK, GpuModel, stack_preset

VENV_BIN = Path(__file__).resolve().parents[2] / ".venv" / "bin"


def local_cluster(root: Path, names: list[str], faults: list[Fault] | None = None) -> Path:
    """Write a one-pool MI300X cluster, its inventory and shims under ``root``; returns the inventory path."""
    stack = stack_preset(DEFAULT_STACK[GpuModel.MI300X])
    nodes = [NodeSpec(name=name, gpu_model=GpuModel.MI300X, pool="p", stack=stack) for name in names]
    cluster = ClusterSpec(name="local", seed=1, time_factor=400, nodes=nodes, faults=faults or [])
    cluster.save(root / "cluster.json")
    for name in names:
        install_shims(shim_dir(root, name), root / "cluster.json", name, root / "state")
    inventory = root / "inventory.toml"
    hosts = ",".join(names)
    inventory.write_text(f'name = "local"\n[[pools]]\nname = "p"\ngpu_model = "MI300X"\nnodes = "{hosts}"\n')
    return inventory


def shim_dir(root: Path, node: str) -> Path:
    """Where the shims answering as ``node`` live."""
    return root / "bin" / node


def per_node_launcher(root: Path) -> Path:
    """A command that runs ``instinct-console`` with the shims of the Slurm node it runs on first on PATH.

    Every node of a test Slurm lab is this same host; ``SLURMD_NODENAME`` tells the tasks apart.
    """
    script = root / "instinct-console-on-node"
    script.write_text(
        f'#!/bin/sh\nPATH="{root / "bin"}/$SLURMD_NODENAME:$PATH" exec {VENV_BIN / "instinct-console"} "$@"\n'
    )
    script.chmod(0o755)
    return script


def amdsmi_json(root: Path, node: str, *argv: str) -> list[dict[str, Any]]:
    """What ``amd-smi <argv> --json`` prints on ``node``, one entry per GPU (either release's layout)."""
    env = {**os.environ, "PATH": f"{shim_dir(root, node)}:{os.environ['PATH']}"}
    out = subprocess.run(["amd-smi", *argv, "--json"], env=env, capture_output=True, text=True, check=True).stdout
    document = json.loads(out)
    return document["gpu_data"] if isinstance(document, dict) else document  # type: ignore[no-any-return]
