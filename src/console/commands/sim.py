"""``instinct-console sim serve``: a simulated Instinct cluster over SSH, for demos, tests and benchmarks."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

SERVE_EPILOG = """Every node is an SSH server with its own host key on its own loopback address (default
127.2.0.1, 127.2.0.2, ... port 22022) or, with --listen ports, on its own port of one address.
The inventory TOML, known_hosts and client key are written to the state directory (default
$XDG_STATE_HOME/instinct-console/sim). One "ready:" line is printed once every node listens;
Ctrl-C or SIGTERM stops the simulator.

exit codes:
  0  stopped by Ctrl-C or SIGTERM
  2  bad options, or an address or port already in use"""


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
    p.add_argument("--parent-pid", type=int, default=None, help=argparse.SUPPRESS)  # set by start_sim_cluster
    p.set_defaults(func=serve_command)


def serve_command(args: argparse.Namespace) -> int:
    """Validate the options and serve in the foreground (see the exit codes in ``--help``)."""
    from pydantic import ValidationError

    from console.sim.serve import ListenMode, ServeOptions, default_state_dir, parse_models, run_serve

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
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        where = f"--{str(error['loc'][0]).replace('_', '-')}: " if error["loc"] else ""
        print(f"instinct-console sim serve: {where}{error['msg']}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"instinct-console sim serve: {exc}", file=sys.stderr)
        return 2
    return run_serve(options)
