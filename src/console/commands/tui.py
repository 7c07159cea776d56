"""``instinct-console tui``: the live console on a cluster file (also what runs with no subcommand).

Textual is imported only when the console opens, so ``--help`` and the headless commands never load it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from console.commands.arguments import UsageError, add_baseline_partners, add_engine_options, add_workers
from console.inventory import default_inventory_paths
from console.sweep.pairing import Pairing

EPILOG = """keys: ? in the console lists every key; ctrl+p opens the command palette.
Without -i, ./cluster.toml is used, else $XDG_CONFIG_HOME/instinct-console/cluster.toml.
Your own keys: $XDG_CONFIG_HOME/instinct-console/keys.toml (docs/operator-guide.md, "Your own keys").

exit codes:
  0    the operator quit
  2    usage or configuration error (cluster file, check packs, theme, key file)"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``tui`` options (shared by ``register`` and ``main``)."""
    add_engine_options(p, inventory_required=False)
    add_workers(p)
    p.add_argument("--read-only", action="store_true", help="hide every action that changes the cluster")
    p.add_argument("--probes", choices=["quick", "standard", "full"], default="quick", help="probe set (default quick)")
    p.add_argument("--theme", default="dark", help="dark (default), light, high-contrast or a Textual theme name")
    p.add_argument("--no-sweep", action="store_true", help="open without sweeping (S starts a sweep)")
    p.add_argument(
        "--pairing",
        choices=[mode.value for mode in Pairing],
        default="reference",
        help="the multinode level's first pass (keys m, M): each node with a known-good one (default), or "
        "nodes with each other at random, within a rack or across racks, within a switch or across "
        "switches, or rail-aligned (the cluster file's rack, switch and rail labels)",
    )
    p.add_argument("--pairing-seed", type=int, default=0, metavar="N", help="seed of the random pairs (default 0)")
    add_baseline_partners(p)
    p.add_argument(
        "--engine",
        choices=["process", "thread"],
        default="process",
        help="where the sweep engine runs: its own process (default) or a thread of the console's (debugging)",
    )


def register(sub: Any) -> None:
    """Add the ``tui`` subcommand."""
    p = sub.add_parser(
        "tui",
        help="open the live console: sweep, watch verdicts, drill into evidence, drain and rerun",
        description="Open the live console on a cluster and sweep it.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(p)
    p.set_defaults(func=run)


def _inventory_path(given: str | None) -> Path | None:
    if given:
        return Path(given)
    return next((p for p in default_inventory_paths() if p.is_file()), None)


def run(args: argparse.Namespace) -> int:
    """Load the cluster and checks, open the console, return when the operator quits."""
    from console.checks import load_packs
    from console.inventory import load_inventory
    from console.service.assembly import EngineSpec
    from console.service.workers import default_workers
    from console.store import default_store_path
    from console.store.db import open_for_sweeping

    path = _inventory_path(args.inventory)
    if path is None:
        looked = ", ".join(str(p) for p in default_inventory_paths())
        raise UsageError(f"no cluster file: pass -i FILE (looked for {looked})")
    inventory = load_inventory(path)
    packs = load_packs(list(args.checks))
    from console.ui import run_tui
    from console.ui.keymap import KeymapError, load_keymap
    from console.ui.theme import ThemeError

    try:
        keymap = load_keymap()  # before the database is opened: a bad key file is a usage error
    except KeymapError as exc:
        raise UsageError(str(exc)) from None

    # A database that cannot be written is read (the console starts read-only, its banner says why).
    store_path = Path(args.store or default_store_path(inventory))
    store, _ = open_for_sweeping(store_path, cluster=inventory)
    spec = EngineSpec(
        inventory,
        packs,
        store_path,
        accept_new=args.accept_new,
        read_only=args.read_only,
        probe_timeout_cap_s=args.probe_timeout,
        workers=default_workers(len(inventory.nodes)) if args.workers is None else args.workers,
        origin="console",
    )
    try:
        return run_tui(
            spec,
            store,
            engine_in_thread=args.engine == "thread",
            level=args.probes,
            theme=args.theme,
            start_sweep=not args.no_sweep,
            pairing=args.pairing,
            pairing_seed=args.pairing_seed,
            baseline_partners=not args.no_baseline_partners,
            keymap=keymap,
        )
    except ThemeError as exc:
        raise UsageError(str(exc)) from None
    finally:
        if store is not None:
            store.close()
