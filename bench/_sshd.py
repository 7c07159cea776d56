"""A real-OpenSSH fleet for bench/sweep.py: tests/harness/sshd_fleet.py nodes answering pre-rendered outputs.

Each sshd node answers the quick probes with what a healthy simulated MI300X node of the same name
prints, through the replay tools the real-sshd tests use (``tests/reliability/simfleet.py``
``install_node_tools``): the simulator's renderers run once per node up front, their outputs are stored
as files, and small ``/bin/sh`` scripts first on the node's PATH act them out (simulated duration,
stdout, stderr, exit status). The simulator's Python shims (``console.sim.shims``) would start an
interpreter per call (~0.15 s CPU): the row would measure them, not sshd and the clients. With no
Python on the node side the harness's unprivileged login user (``icfleet``) runs everything, so no
root shell start-up files are involved either.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from console.inventory.hostlist import fold
from console.sim.models import ClusterSpec, NodeSpec
from console.sim.specs import DEFAULT_STACK, GpuModel, stack_preset

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _measure import Fleet
from tests.harness.sshd_fleet import SshdFleet
from tests.reliability.simfleet import install_node_tools


@dataclass(frozen=True)
class SshdBench:
    """The running fleet, the clients' view of it, and what each node's quick probes print."""

    sshd: SshdFleet
    fleet: Fleet
    expected_lines: dict[str, int]  # node address -> stdout lines of its quick probes (pdsh's check)

    def node_cpu_s(self) -> float:
        """CPU s used so far by every node (sshd, sessions, shells, shims): the server work clients cause."""
        return sum(self.sshd.cpu_s(node) for node in self.sshd.nodes)


@contextmanager
def sshd_sim_fleet(count: int, scratch: Path) -> Iterator[SshdBench]:
    """``count`` sshd nodes answering the quick probes, an inventory for the console; stopped on exit."""
    # OpenSSH's default 10 sessions per connection is kept: the console's bundles stay under it.
    fleet = SshdFleet(count, prefix="node", max_sessions=10, max_startups="300:30:400")
    fleet.start(timeout_s=120)
    try:
        stack = stack_preset(DEFAULT_STACK[GpuModel.MI300X])
        specs = [NodeSpec(name=n.name, gpu_model=GpuModel.MI300X, pool="p", stack=stack) for n in fleet.nodes]
        cluster = ClusterSpec(name="bench", seed=1, time_factor=20, nodes=specs, faults=[])
        replies = install_node_tools(fleet, cluster)
        # pdsh's check: the stdout lines every node's joined quick command prints.
        expected = {n.addr: sum(r.stdout.count("\n") for r in replies[n.name].values()) for n in fleet.nodes}
        inventory = scratch / "inventory.toml"
        names = fold(n.name for n in fleet.nodes)  # node[01-99,100-256]: the names' widths differ
        hosts = "".join(f'\n[hosts.{n.name}]\naddress = "{n.addr}"\nport = {n.port}\n' for n in fleet.nodes)
        inventory.write_text(
            'name = "bench-sshd"\n[ssh]\n'
            f'user = "{fleet.login_user}"\nidentity_file = "{fleet.client_key}"\nknown_hosts = "{fleet.known_hosts}"\n'
            f'\n[[pools]]\nname = "p"\ngpu_model = "MI300X"\ngpu_count = 8\nnodes = "{names}"\n{hosts}'
        )
        addresses = [n.addr for n in fleet.nodes]
        view = Fleet(addresses, fleet.port, fleet.login_user, fleet.client_key, fleet.known_hosts, inventory)
        yield SshdBench(fleet, view, expected)
    finally:
        fleet.stop()
