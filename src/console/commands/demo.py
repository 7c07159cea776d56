"""``instinct-console demo``: a simulated Instinct cluster behind real SSH, and the console on it.

Needs no cluster, no root and no configuration: it starts ``sim serve`` in its own process (32 nodes in
4 pools, one of them MI355X, with a fixed, varied fault set), opens the console on it (the TUI on a
terminal, the headless sweep otherwise or with ``--headless``), and stops every process it started.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from console.commands.arguments import UsageError, add_store, options_of
from console.exitcodes import SWEEP_EXIT_CODE_HELP

if TYPE_CHECKING:
    from console.sim.launcher import SimCluster

DEMO_MODELS = "mi300x,mi300x,mi300x,mi355x"

# The headless sweep's codes are the sweep's; the TUI returns what the console returns on quit.
DEMO_EXIT_HELP = (
    "In the TUI: 0 when the operator quits, 2 when the simulator cannot start (one line on stderr).\n"
    "With --headless, or when stdout is not a terminal, the headless sweep's:\n\n" + SWEEP_EXIT_CODE_HELP
)


def register(sub: Any) -> None:
    """Add the ``demo`` subcommand."""
    p = sub.add_parser(
        "demo",
        help="start a simulated cluster with faults and open the console on it",
        description=__doc__.replace("``", "") if __doc__ else None,  # rST quotes read as noise in --help
        epilog=DEMO_EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--nodes", type=int, default=32, help="simulated nodes (default 32)")
    p.add_argument("--seed", type=int, default=7, help="seed of the fault set and node state (default 7)")
    p.add_argument(
        "--probes", choices=["quick", "standard", "full"], default="standard", help="probe set (default standard)"
    )
    p.add_argument("--time-factor", type=float, default=50.0, help="simulated tool durations divided by this")
    p.add_argument(
        "--address-base",
        default=None,
        help="nodes listen on base+1, base+2... of 127.0.0.0/8, as sim serve's (default: a free 127.2.B.0 block)",
    )
    p.add_argument("--headless", action="store_true", help="run the headless sweep instead of the TUI")
    add_store(p, help="history database (default: inside the demo's temporary state)")
    p.add_argument("--json", metavar="FILE", help="headless: write the JSON report")
    p.add_argument("--read-only", action="store_true", help="TUI: hide actions that change the cluster")
    p.add_argument(
        "--scenario",
        type=Path,
        help="serve this scenario file (docs/simulator.md) instead of the demo's own nodes and faults",
    )
    p.set_defaults(func=run)


def _tui_available() -> bool:
    return (
        importlib.util.find_spec("console.ui") is not None
        and importlib.util.find_spec("console.commands.tui") is not None
    )


def run(args: argparse.Namespace) -> int:
    """Start the simulator, run the console against it, stop the simulator."""
    # Imported here: every other command (a prolog's sweep) would pay ~0.3 s for the simulator's models.
    from console.sim.launcher import SimClusterError, start_sim_cluster
    from console.sim.scenario import ScenarioError

    try:
        sim = start_sim_cluster(
            nodes=args.nodes, models=DEMO_MODELS, pools=4, faults="demo", seed=args.seed,
            time_factor=args.time_factor, scenario=args.scenario, address_base=args.address_base,
        )  # fmt: skip
    except ScenarioError as exc:
        raise UsageError(str(exc)) from None
    except SimClusterError as exc:
        raise UsageError(f"cannot start the simulated cluster: {exc}") from None
    with sim:
        code = _run_console(args, sim)
    # The demo's simulator and state are gone now: point at the one that stays up, and the sweep of it.
    print(next_step_line(), file=sys.stderr)
    return code


def next_step_line() -> str:
    """What to try after the demo: a simulator that stays up (``sim serve``) and a sweep of its inventory."""
    from console.sim.serve import default_state_dir

    inventory = default_state_dir() / "inventory.toml"
    return (
        "demo: next, keep a simulated cluster up in another terminal with 'instinct-console sim serve --nodes 8' "
        f"and sweep it: 'instinct-console sweep -i {inventory}' (operator guide, section 2)"
    )


def _run_console(args: argparse.Namespace, sim: SimCluster) -> int:
    """The TUI on the running simulator, or the headless sweep of it; the exit code."""
    store = args.store or sim.state_dir / "history.sqlite"
    inventory = str(sim.inventory_path)
    if not args.headless and sys.stdout.isatty() and _tui_available():
        tui = importlib.import_module("console.commands.tui")
        given = {"inventory": inventory, "store": store, "probes": args.probes, "read_only": args.read_only}
        return int(tui.run(options_of(tui.add_arguments, **given)))
    from console.commands import sweep

    print(f"demo: {sim.ready_line}", file=sys.stderr)
    if args.scenario:
        print(
            f"demo: change faults live: instinct-console sim inject|repair --state-dir {sim.state_dir} ...",
            file=sys.stderr,
        )
    given = {"inventory": inventory, "store": store, "probes": args.probes, "json": args.json}
    return sweep.run(options_of(sweep.add_arguments, **given))
