"""A real-OpenSSH fleet for bench/sweep.py: tests/harness/sshd_fleet.py nodes answering through the sim shims.

Each sshd node gets the simulator's PATH shims (``console.sim.shims``) for a healthy MI300X node of the
same name, so ``amd-smi``, ``modinfo``, ``cat /etc/os-release``... print what the simulated node would,
through a real sshd, a real ``/bin/sh`` and real processes. Needs root and openssh-server; logs in as
root so the shims can run the venv's interpreter.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from console.inventory.hostlist import fold
from console.sim.models import ClusterSpec, NodeSpec
from console.sim.shims import install_shims
from console.sim.specs import DEFAULT_STACK, GpuModel, stack_preset

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _measure import Fleet
from tests.harness.sshd_fleet import SshdFleet


@contextmanager
def sshd_sim_fleet(count: int, scratch: Path) -> Iterator[Fleet]:
    """``count`` sshd nodes with sim shims, an inventory for the console; stopped (all processes) on exit."""
    # root: the shims exec the venv interpreter, which lives under /root (pyenv) on this machine.
    fleet = SshdFleet(count, prefix="node", max_sessions=10, max_startups="300:30:400", login_user="root")
    fleet.start(timeout_s=120)
    try:
        stack = stack_preset(DEFAULT_STACK[GpuModel.MI300X])
        specs = [NodeSpec(name=n.name, gpu_model=GpuModel.MI300X, pool="p", stack=stack) for n in fleet.nodes]
        cluster_json = fleet.base / "cluster.json"
        ClusterSpec(name="bench", seed=1, time_factor=20, nodes=specs, faults=[]).save(cluster_json)
        (fleet.base / "state").mkdir(mode=0o777)
        (fleet.base / "state").chmod(0o777)  # the login user counts invocations there
        for node in fleet.nodes:
            install_shims(node.bin_dir, cluster_json, node.name, fleet.base / "state")
        inventory = scratch / "inventory.toml"
        names = fold(n.name for n in fleet.nodes)  # node[01-99,100-256]: the names' widths differ
        hosts = "".join(f'\n[hosts.{n.name}]\naddress = "{n.addr}"\nport = {n.port}\n' for n in fleet.nodes)
        inventory.write_text(
            'name = "bench-sshd"\n[ssh]\n'
            f'user = "{fleet.login_user}"\nidentity_file = "{fleet.client_key}"\nknown_hosts = "{fleet.known_hosts}"\n'
            f'\n[[pools]]\nname = "p"\ngpu_model = "MI300X"\ngpu_count = 8\nnodes = "{names}"\n{hosts}'
        )
        addresses = [n.addr for n in fleet.nodes]
        yield Fleet(addresses, fleet.port, fleet.login_user, fleet.client_key, fleet.known_hosts, inventory)
    finally:
        fleet.stop()
