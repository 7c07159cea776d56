"""A real-OpenSSH fleet for bench/sweep.py: tests/harness/sshd_fleet.py nodes answering pre-rendered outputs.

Each sshd node answers the quick probes (and the metric's fallback) with what a healthy simulated MI300X
node of the same name prints: the simulator's own renderers (``console.sim.commands.run_program``) run
once per node up front, their outputs are stored as files in the fleet directory, and tiny ``/bin/sh``
shims first on the node's PATH ``cat`` the file for their argv after the simulated duration, with the
simulated exit status. The simulator's Python shims (``console.sim.shims``) would start an interpreter
per call (~0.15 s CPU, 14 calls per node): the row would measure them, not sshd and the clients. With no
Python on the node side the harness's unprivileged login user (``icfleet``) runs everything, so no
root shell start-up files are involved either.

An argv that was not rendered gets the simulator's reply for an unknown argument of that program (its
message with the argv put in), and ``cat`` of a path the simulator does not own runs the real ``cat``,
as ``console.sim.shims`` does.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from console.inventory.hostlist import fold
from console.sim.commands import Delivery, SimContext, SimReply, run_program
from console.sim.models import ClusterSpec, NodeSpec, build_node
from console.sim.shims import REAL_CAT, SIM_OWNED_PATHS
from console.sim.specs import DEFAULT_STACK, GpuModel, stack_preset
from console.sweep.catalog import ProbeSet, probes_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _measure import Fleet
from tests.harness.sshd_fleet import FleetNode, SshdFleet

# Stands for the caller's arguments in the simulator's reply to an argv it was not rendered for.
_ARGS_TOKEN = "ic-bench-unrendered-argv"


@dataclass(frozen=True)
class SshdBench:
    """The running fleet, the clients' view of it, and what each node's quick probes print."""

    sshd: SshdFleet
    fleet: Fleet
    expected_lines: dict[str, int]  # node address -> stdout lines of its quick probes (pdsh's check)

    def node_cpu_s(self) -> float:
        """CPU s used so far by every node (sshd, sessions, shells, shims): the server work clients cause."""
        return sum(self.sshd.cpu_s(node) for node in self.sshd.nodes)


def quick_argvs() -> list[tuple[str, ...]]:
    """Every argv the quick set may run on a node: each probe's, and its fallback."""
    argvs: list[tuple[str, ...]] = []
    for probe in probes_for(ProbeSet.QUICK):
        argvs += [probe.argv] if probe.fallback is None else [probe.argv, probe.fallback]
    return argvs


def _render(ctx: SimContext, argv: Sequence[str]) -> SimReply:
    reply = run_program(ctx, list(argv))
    if reply.delivery is not Delivery.NORMAL:
        raise RuntimeError(f"{ctx.node.name}: {shlex.join(argv)} is not a plain reply ({reply.delivery})")
    return reply


def _printf(text: str, redirect: str = "") -> str:
    """Shell that prints ``text`` with the caller's ``$*`` in place of the argument token."""
    if not text:
        return ""
    parts = text.split(_ARGS_TOKEN)
    fmt = "%s" * (2 * len(parts) - 1)
    args = ' "$*" '.join(shlex.quote(part) for part in parts)
    return f"printf '{fmt}' {args}{redirect}; "


def _reply_shell(reply: SimReply, out: Path | None, err: Path | None) -> str:
    """Shell acting out ``reply``: sleep the simulated duration, print stdout then stderr, exit with its status.

    ``out``/``err`` hold the rendered text; without them the text is printed inline (unknown-argv replies).
    """
    sleep = f"sleep {reply.duration_s:.4f}; " if reply.duration_s > 0 else ""
    if out is None:
        return f"{sleep}{_printf(reply.stdout)}{_printf(reply.stderr, ' >&2')}exit {reply.exit_status}"
    if reply.exit_status == 0 and err is None:
        return f"{sleep}exec {REAL_CAT} {shlex.quote(str(out))}"
    show_err = f"{REAL_CAT} {shlex.quote(str(err))} >&2; " if err is not None else ""
    return f"{sleep}{REAL_CAT} {shlex.quote(str(out))}; {show_err}exit {reply.exit_status}"


def _shim(program: str, known: list[tuple[str, str]], unknown: str) -> str:
    """``program``'s shim: a case on ``$*`` over the rendered argvs (none contain spaces), else ``unknown``."""
    lines = ["#!/bin/sh", "# instinct-console bench shim: pre-rendered simulator outputs", 'case "$*" in']
    lines += [f"  {shlex.quote(args)}) {action} ;;" for args, action in known]
    if program == "cat":
        # As console.sim.shims: the simulator answers for the paths it owns, the real cat for the rest.
        owned = "|".join(SIM_OWNED_PATHS)
        lines += ["esac", "for arg do", '  case "$arg" in', f"    {owned}) {unknown} ;;", "  esac", "done"]
        lines.append(f'exec {REAL_CAT} "$@"')
    else:
        lines += [f"  *) {unknown} ;;", "esac"]
    return "\n".join(lines) + "\n"


def install_rendered(fleet: SshdFleet, cluster: ClusterSpec, node: FleetNode, argvs: list[tuple[str, ...]]) -> int:
    """Render ``argvs`` on ``node``'s simulated twin into files and install the shims; returns stdout lines.

    The lines counted are those of each probe's first argv (what pdsh's joined command prints).
    """
    ctx = SimContext(node=build_node(cluster, node.name), cluster=cluster, invocation=1)
    rendered = node.dir / "rendered"
    rendered.mkdir()
    known: dict[str, list[tuple[str, str]]] = {}
    lines = 0
    primary = {probe.argv for probe in probes_for(ProbeSet.QUICK)}
    for i, argv in enumerate(argvs):
        reply = _render(ctx, argv)
        out = rendered / f"{i}.out"
        out.write_text(reply.stdout, encoding="utf-8")
        err = None
        if reply.stderr:
            err = rendered / f"{i}.err"
            err.write_text(reply.stderr, encoding="utf-8")
        known.setdefault(argv[0], []).append((" ".join(argv[1:]), _reply_shell(reply, out, err)))
        lines += reply.stdout.count("\n") if argv in primary else 0
    for program, cases in known.items():
        unknown = _reply_shell(_render(ctx, [program, _ARGS_TOKEN]), None, None)
        fleet.install_tool(node, program, _shim(program, cases, unknown))
    return lines


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
        argvs = quick_argvs()
        expected = {node.addr: install_rendered(fleet, cluster, node, argvs) for node in fleet.nodes}
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
