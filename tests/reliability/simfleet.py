"""A simulated cluster served by real OpenSSH nodes: sshd fleet + simulator replies + the inventory file.

Node ``simNNN`` of the simulated cluster is sshd node ``simNNN`` of the fleet (prefix ``sim0`` and
two-digit numbering give the simulator's three-digit names). Its tools are replay scripts rendered from
the cluster's faults; connection faults (refused, auth, host key, frozen) are the fleet's own controls.
The inventory is the one ``sim serve`` writes (pools, pins, one host entry per node), pointed at the
fleet's addresses, client key and known_hosts.
"""

from __future__ import annotations

import os
import pwd
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from console.sim.commands import SimReply
from console.sim.faults import Fault
from console.sim.fleet_files import SshSettings, inventory_toml
from console.sim.models import ClusterSpec
from console.sim.serve import ServeOptions, plan_cluster
from console.sim.specs import GpuModel
from console.sweep import NodeDone, SweepEngine, SweepResult
from console.sweep.catalog import ProbeSet, probes_for
from console.sweep.events import Event
from tests.harness.sshd_fleet import SshdFleet
from tests.reliability.replay import install_replay_tools, render_replies

NAME_PREFIX = "sim0"  # SshdFleet numbers nodes with two digits: sim001..sim099, the simulator's names


@dataclass
class SimOnSshd:
    """The pieces a test needs: the fleet (fault controls), the simulated cluster and the inventory."""

    fleet: SshdFleet
    cluster: ClusterSpec
    inventory_path: Path

    def exec_log(self, node: str) -> list[str]:
        """Command lines the node's tools ran, in order."""
        path = self.fleet.node(node).dir / "exec.log"
        return path.read_text(encoding="utf-8").splitlines() if path.exists() else []

    def clear_exec_logs(self) -> None:
        """Empty every node's execution log."""
        for node in self.fleet.nodes:
            (node.dir / "exec.log").write_text("")


def install_node_tools(
    fleet: SshdFleet,
    cluster: ClusterSpec,
    level: ProbeSet = ProbeSet.QUICK,
    overrides: Mapping[str, Mapping[tuple[str, ...], SimReply]] | None = None,
) -> dict[str, dict[tuple[str, ...], SimReply]]:
    """(Re)write every node's replay tools for the probes of ``level``, from ``cluster`` and its faults.

    ``overrides`` replaces (or adds) replies per node: ``{node: {argv: reply}}``. Returns the replies
    installed, per node.
    """
    argvs = [spec.argv for spec in probes_for(level)]
    login = pwd.getpwnam(fleet.login_user)
    installed: dict[str, dict[tuple[str, ...], SimReply]] = {}
    for node in fleet.nodes:
        for tool in node.bin_dir.iterdir():
            tool.unlink()
        log = node.dir / "exec.log"
        log.write_text("")
        os.chown(log, login.pw_uid, login.pw_gid)  # the node's login user appends to it
        replies = {**render_replies(cluster, node.name, argvs), **(overrides or {}).get(node.name, {})}
        install_replay_tools(node.bin_dir, replies, log)
        installed[node.name] = replies
    return installed


def plan_sim_cluster(count: int, faults: list[Fault], base: Path) -> tuple[ClusterSpec, ServeOptions]:
    """Two pools (MI300X and MI355X) of ``count`` nodes with exactly ``faults``."""
    options = ServeOptions(
        nodes=count,
        models=[GpuModel.MI300X, GpuModel.MI355X],
        faults="none",
        time_factor=30,  # a trickled reply takes 90 simulated seconds: 3 s here
        state_dir=base,
    )
    cluster = plan_cluster(options).cluster
    cluster.faults = list(faults)
    return cluster, options


def start_sim_on_sshd(
    count: int,
    faults: list[Fault],
    base: Path,
    *,
    fleet: SshdFleet | None = None,
    connect_timeout_s: int = 3,
    endpoints: Mapping[str, tuple[str, int]] | None = None,
) -> SimOnSshd:
    """Start ``fleet`` (default: a plain SshdFleet of ``count`` nodes) and make it the simulated cluster.

    ``endpoints`` sends the console to another address for some nodes (a proxy in front of them).
    """
    cluster, options = plan_sim_cluster(count, faults, base)
    fleet = (fleet or SshdFleet(count, prefix=NAME_PREFIX)).start()
    try:
        assert [n.name for n in fleet.nodes] == [n.name for n in cluster.nodes]
        install_node_tools(fleet, cluster)
        pools = plan_cluster(options).pools
        ssh = SshSettings(
            user=fleet.login_user,
            port=fleet.port,
            identity_file=fleet.client_key,
            known_hosts=fleet.known_hosts,
            connect_timeout_s=connect_timeout_s,
        )
        where = {n.name: (n.addr, n.port) for n in fleet.nodes} | dict(endpoints or {})
        inventory = base / "inventory.toml"
        inventory.write_text(inventory_toml("sim-on-sshd", ssh, "", pools, where))
    except BaseException:
        fleet.stop()
        raise
    return SimOnSshd(fleet, cluster, inventory)


def watch_arrivals(engine: SweepEngine) -> dict[str, float]:
    """Seconds from now to each node's first verdict, filled in as the engine publishes them."""
    started = time.monotonic()
    arrived: dict[str, float] = {}

    def watch(event: Event) -> None:
        if isinstance(event, NodeDone):
            arrived.setdefault(event.verdict.node, time.monotonic() - started)

    engine.subscribe(watch)
    return arrived


def report_matrix(where: str, rows: list[tuple[str, str, str]], result: SweepResult, arrived: dict[str, float]) -> None:
    """Append ``(fault, node, expected)`` rows with what was observed to $IC_MATRIX_REPORT (a Markdown table)."""
    target = os.environ.get("IC_MATRIX_REPORT")
    if not target:
        return
    with open(target, "a", encoding="utf-8") as out:
        for fault, node, expected in rows:
            verdict = result.verdicts[node]
            reason = verdict.reason.replace("|", "/")
            out.write(
                f"| {fault} | {where} | {expected} | {verdict.status.value}: {reason} | {arrived[node]:.1f} s |\n"
            )
