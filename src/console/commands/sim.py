"""``instinct-console sim serve``: a simulated Instinct cluster over SSH, for demos, tests and benchmarks."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from console.inert import printable

SERVE_EPILOG = """Every node is an SSH server with its own host key on its own loopback address (default
127.2.0.1, 127.2.0.2, ... port 22022) or, with --listen ports, on its own port of one address.
The inventory TOML, known_hosts and client key are written to the state directory (default
$XDG_STATE_HOME/instinct-console/sim). One "ready:" line is printed once every node listens;
Ctrl-C or SIGTERM stops the simulator.

With --scenario FILE the nodes, pools, stacks and faults come from a scenario TOML (docs/simulator.md)
instead of --nodes/--model/--pools/--faults. While it runs, the simulator re-reads that file and
the live faults of `sim inject`/`sim repair`, applies what changed to the nodes it serves, and
writes what it injected to <state-dir>/injected.json.

exit codes:
  0  stopped by Ctrl-C or SIGTERM
  2  bad options or scenario, or an address or port already in use"""

CHANGE_EPILOG = """The running simulator of --state-dir picks the change up within half a second, rebuilds the
node's state at its next command and records it in <state-dir>/injected.json.

exit codes:
  0  the change is written
  2  bad options (an unknown fault kind, a node the simulator does not serve)"""


def register(sub: Any) -> None:
    """Add the ``sim`` command group and its ``serve`` subcommand."""
    sim = sub.add_parser("sim", help="run a simulated Instinct cluster", description="Simulated cluster tools.")
    actions = sim.add_subparsers(dest="sim_command", metavar="ACTION", required=True)
    p = actions.add_parser(
        "serve",
        help="serve simulated nodes over SSH and write an inventory for them",
        description="Serve a simulated AMD Instinct cluster over SSH until interrupted.",
        epilog=SERVE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--nodes", type=int, default=64, help="number of nodes (default 64)")
    p.add_argument(
        "--model", default="mi300x", help="GPU model, or a comma list cycled over the pools (default mi300x)"
    )
    p.add_argument("--pools", type=int, default=None, help="number of pools (default: one per model)")
    p.add_argument("--faults", default="demo", help="demo, none or random:<fraction> (default demo)")
    p.add_argument("--seed", type=int, default=0, help="seed of node state and faults (default 0)")
    p.add_argument(
        "--time-factor", type=float, default=20.0, help="simulated tool durations are divided by this (default 20)"
    )
    p.add_argument("--state-dir", type=Path, default=None, help="keys, cluster.json, known_hosts, Slurm state")
    p.add_argument(
        "--inventory-out", type=Path, default=None, help="inventory TOML (default <state-dir>/inventory.toml)"
    )
    p.add_argument("--listen", choices=("addresses", "ports"), default="addresses", help="address or port per node")
    p.add_argument("--address-base", default=None, help="nodes get base+1, base+2... (default 127.2.0.0)")
    p.add_argument("--port", type=int, default=22022, help="SSH port; first port with --listen ports (0: any)")
    p.add_argument("--user", default="node", help="login user the nodes accept (default node)")
    p.add_argument("--max-sessions", type=int, default=10, help="channels per connection, like sshd (default 10)")
    p.add_argument("--scenario", type=Path, default=None, help="scenario TOML: nodes, stacks and faults (watched)")
    p.add_argument("--parent-pid", type=int, default=None, help=argparse.SUPPRESS)  # set by start_sim_cluster
    p.set_defaults(func=serve_command)
    for name, what in (("inject", "add a fault to nodes of a running simulator"), ("repair", "remove faults")):
        change = actions.add_parser(
            name,
            help=what,
            description=f"{what[0].upper()}{what[1:]} (live: no restart).",
            epilog=CHANGE_EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        change.add_argument("nodes", help="hostlist of nodes, e.g. sim[003-005]")
        change.add_argument("--kind", required=name == "inject", help="fault kind (repair: all kinds if omitted)")
        change.add_argument("--gpu", type=int, default=None, help="GPU slot, for GPU and link faults")
        change.add_argument("--peer", type=int, default=None, help="second GPU slot, for link faults")
        change.add_argument(
            "--param", action="append", default=[], metavar="KEY=VALUE", help="fault parameter (repeatable)"
        )
        change.add_argument("--state-dir", type=Path, default=None, help="the running simulator's state directory")
        change.set_defaults(func=change_command)
    shown = actions.add_parser(
        "faults",
        help="what a running simulator injects now",
        description="Print <state-dir>/injected.json.",
        epilog="exit codes:\n  0  printed (generation 0, no faults, where no simulator has written yet)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    shown.add_argument("--state-dir", type=Path, default=None, help="the running simulator's state directory")
    shown.set_defaults(func=faults_command)


def serve_command(args: argparse.Namespace) -> int:
    """Validate the options and serve in the foreground (see the exit codes in ``--help``)."""
    from pydantic import ValidationError

    from console.sim.serve import ListenMode, ServeOptions, default_state_dir, parse_models, plan_cluster, run_serve

    listen = ListenMode(args.listen)
    try:
        options = ServeOptions(
            nodes=args.nodes,
            models=parse_models(args.model),
            pools=args.pools,
            faults=args.faults,
            seed=args.seed,
            time_factor=args.time_factor,
            state_dir=args.state_dir or default_state_dir(),
            inventory_out=args.inventory_out,
            listen=listen,
            address_base=args.address_base or ("127.0.0.1" if listen is ListenMode.PORTS else "127.2.0.0"),
            port=args.port,
            user=args.user,
            max_sessions=args.max_sessions,
            parent_pid=args.parent_pid,
            scenario=args.scenario,
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        where = f"--{str(error['loc'][0]).replace('_', '-')}: " if error["loc"] else ""
        print(printable(f"instinct-console sim serve: {where}{error['msg']}"), file=sys.stderr)
        return 2
    except ValueError as exc:
        print(printable(f"instinct-console sim serve: {exc}"), file=sys.stderr)
        return 2
    try:
        plan_cluster(options)  # a scenario that cannot be served is refused before anything listens
    except ValueError as exc:
        print(printable(f"instinct-console sim serve: {exc}"), file=sys.stderr)
        return 2
    return run_serve(options)


def change_command(args: argparse.Namespace) -> int:
    """``sim inject`` / ``sim repair``: edit the live-fault overlay the running simulator watches."""
    from pydantic import ValidationError

    from console.inventory.hostlist import expand
    from console.sim.faults import Fault, FaultKind
    from console.sim.models import ClusterSpec
    from console.sim.scenario import read_injected, read_live_faults, read_planned_from, write_live_faults
    from console.sim.serve import CLUSTER_FILE, default_state_dir

    command = f"instinct-console sim {args.sim_command}"
    state_dir = args.state_dir or default_state_dir()
    try:
        served = {node.name for node in ClusterSpec.load(state_dir / CLUSTER_FILE).nodes}
        nodes = expand(args.nodes)
        unknown = sorted(set(nodes) - served)
        if unknown:
            raise ValueError(f"not served by the simulator in {state_dir}: {', '.join(unknown)}")
        live = read_live_faults(state_dir)
        if args.sim_command == "inject":
            params = dict(_param(text) for text in args.param)
            kind = FaultKind(args.kind)
            _check_targets(kind, args.gpu, args.peer, params)
            added = [Fault(kind=kind, node=n, gpu=args.gpu, peer=args.peer, params=params) for n in nodes]
            live += added
            said = [f"injected {fault.describe()}" for fault in added]
        else:
            kinds = {FaultKind(args.kind)} if args.kind else set(FaultKind)
            kept = [f for f in live if not (f.node in nodes and f.kind in kinds)]
            _, serving = read_injected(state_dir)
            said = _repaired(
                len(live) - len(kept), serving, live, nodes, kinds, planned_from=read_planned_from(state_dir)
            )
            live = kept
        write_live_faults(state_dir, live)
        # Said once written: a refusal above leaves nothing said but the reason.
        print(printable("\n".join(said), keep_newlines=True))
    except (OSError, ValueError, ValidationError) as exc:
        print(printable(f"{command}: {_one_line(exc)}"), file=sys.stderr)
        return 2
    return 0


def _repaired(
    removed: int, served: list[Any], live: list[Any], nodes: list[str], kinds: set[Any], *, planned_from: str
) -> list[str]:
    """How many live faults a repair removed, and the planned faults it cannot remove, with where they come
    from (a silent no-op misled an operator into revalidating a node that was still faulty)."""
    said = [f"removed {removed} live fault{'' if removed == 1 else 's'}"]
    stays = [f for f in served if f.node in nodes and f.kind in kinds and f not in live]
    if stays:
        listed = ", ".join(f.describe() for f in stays[:5]) + (" ..." if len(stays) > 5 else "")
        said.append(f"still served: {listed}: {_where_planned(planned_from)}")
    return said


def _where_planned(planned_from: str) -> str:
    """Where a fault `sim repair` cannot remove comes from, and how to change it there."""
    what, _, given = planned_from.partition(" ")
    if what == "scenario":
        return f"these come from the scenario file {given}; edit it (the simulator applies it)"
    if what == "faults":
        faults, _, seed = given.partition(" seed ")
        return (
            f"these come from sim serve --faults {faults} (seed {seed}), not from sim inject; restart sim serve"
            " with --faults none, or with a --scenario file you can edit while it runs"
        )
    return "these were planned when sim serve started (its scenario or --faults), not injected live"


def faults_command(args: argparse.Namespace) -> int:
    """``sim faults``: the generation and faults the running simulator serves."""
    from console.sim.scenario import read_injected
    from console.sim.serve import default_state_dir

    generation, faults = read_injected(args.state_dir or default_state_dir())
    print(f"generation {generation}: {len(faults)} faults")
    for fault in faults:
        print(printable(f"  {fault.describe()}"))
    return 0


def _check_targets(kind: Any, gpu: int | None, peer: int | None, params: dict[str, Any]) -> None:
    """Refuse a fault whose GPU or peer is missing in the words of this command's options: the model's own
    complaint ("needs a gpu") did not say that the slot is ``--gpu N``, and an operator wrote ``--param gpu=3``."""
    from console.sim.faults import FaultScope, fault_scope

    scope = fault_scope(kind)
    hint = " (--param gpu=... is a fault parameter, not the slot)" if "gpu" in params or "peer" in params else ""
    if scope is not FaultScope.NODE and gpu is None:
        raise ValueError(f"{kind} is a {scope} fault: give its GPU slot with --gpu N{hint}")
    if scope is FaultScope.LINK and (peer is None or peer == gpu):
        raise ValueError(f"{kind} is a link fault: give the second GPU slot with --peer N (not the --gpu one){hint}")
    if scope is not FaultScope.LINK and peer is not None:
        raise ValueError(f"{kind} is a {scope} fault: it takes no --peer")


def _param(text: str) -> tuple[str, str | int | float | bool]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ValueError(f"--param {text!r}: expected KEY=VALUE")
    for convert in (int, float):
        try:
            return key, convert(value)
        except ValueError:
            pass
    return key, {"true": True, "false": False}.get(value.lower(), value)


def _one_line(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        error = errors()[0]
        # A model-level complaint has no field; pydantic's "Value error, " prefix says nothing to an operator.
        where = ".".join(str(p) for p in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        return f"{where}: {message}" if where else message
    return " ".join(str(exc).split())
