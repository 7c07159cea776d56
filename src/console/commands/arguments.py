"""Option values checked as the command line is read, and usage errors said in one line.

A ``type=`` below refuses a value with the reason; argparse names the option, and ``OneLineParser``
prints ``instinct-console sweep: error: argument --every: ...`` and exits 2 like every usage error.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from console.checks.loader import CheckConfigError
from console.exitcodes import ExitCode
from console.files import OutputRefused, check_target
from console.inert import printable
from console.inventory import HostlistError, Inventory, InventoryError, SelectionError
from console.remediation.lease import LeaseHeld
from console.store.cluster import state_dir
from console.store.db import Store, StoreError, default_store_path


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr (a log or a prolog keeps one line)."""

    def error(self, message: str) -> NoReturn:
        """Print ``PROG: error: MESSAGE`` and exit with the usage code; the usage itself is in ``--help``."""
        self.exit(int(ExitCode.USAGE), f"{self.prog}: error: {printable(message)} (see --help)\n")


class UsageError(ValueError):
    """What a command cannot run with, found after its command line was read (``--count`` without ``--every``)."""


# Usage and configuration errors: a command raises them and the front door (``console.cli``) says each in
# one line, ``instinct-console sweep: error: ...``, and exits 2, whichever command it came from.
USAGE_ERRORS: tuple[type[Exception], ...] = (
    UsageError,
    InventoryError,
    HostlistError,
    SelectionError,
    CheckConfigError,
    StoreError,
    OutputRefused,
    LeaseHeld,  # another actor holds the history database's lease: one actor at a time
)


def usage_error_line(prog: str, exc: Exception) -> str:
    """The one line a usage error is said in (text from files and nodes made printable)."""
    return f"{prog}: error: {printable(str(exc))}"


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def text(value: str) -> str:
    """A reason or note for the audit log: text, not bytes that are not UTF-8 (which the store cannot keep)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(f"{printable(value)!r} is not UTF-8 text") from None
    return value


def seconds(text: str) -> float:
    """A timeout, deadline or interval: a number of seconds above 0 (0 would give up at once)."""
    value = _finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} s: give a number of seconds above 0")
    return value


_UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


def duration(text: str) -> float:
    """An age or interval: seconds, or a number with s, m (min), h or d after it (``90``, ``30m``, ``1d``)."""
    stripped = text.strip().lower()
    unit = next((u for u in sorted(_UNITS, key=len, reverse=True) if stripped.endswith(u)), "")
    number = stripped[: len(stripped) - len(unit)].strip() if unit else stripped
    try:
        value = _finite(number) * _UNITS.get(unit, 1)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"{text!r}: give seconds, or a number with s, m, h or d (e.g. 12h)") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text}: give a duration above 0")
    return value


def share(text: str) -> float:
    """A share of a pool, above 0 and at most 1 (0.10 is a tenth)."""
    value = _finite(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text}: give a fraction above 0 and at most 1")
    return value


def whole(minimum: int) -> Callable[[str], int]:
    """A whole number, ``minimum`` or more: ``--cap 0`` holds no node out, ``--count 0`` would never sweep."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text}: give a whole number, {minimum} or more")
        return value

    return parse


# Options several commands share, declared once: the same flag means the same thing everywhere.

INVENTORY_HELP = "cluster file (TOML, hostfile or cvs cluster.json)"


def add_inventory(p: argparse.ArgumentParser, *, required: bool = False, help: str = INVENTORY_HELP) -> None:
    """``-i/--inventory``: the cluster file (``help`` says what this command needs it for)."""
    p.add_argument("-i", "--inventory", required=required, help=help)


def add_store(p: argparse.ArgumentParser, *, help: str | None = None) -> None:
    """``--store``: the history database (default: the XDG state directory)."""
    p.add_argument(
        "--store",
        type=Path,
        default=None,
        help=help or f"history database (default: the cluster's own, under {state_dir() / 'clusters'})",
    )


def add_checks(p: argparse.ArgumentParser) -> None:
    """``--checks``: extra check-pack directories, layered over the built-in packs."""
    p.add_argument("--checks", type=Path, action="append", default=[], help="extra check directory (repeatable)")


def add_accept_new(p: argparse.ArgumentParser) -> None:
    """``--accept-new``: trust and record a host key on first contact (audited)."""
    p.add_argument("--accept-new", action="store_true", help="accept and record host keys of first contact")


def add_probe_timeout(p: argparse.ArgumentParser) -> None:
    """``--probe-timeout``: a cap on every probe's timeout."""
    p.add_argument(
        "--probe-timeout",
        type=seconds,
        metavar="SECONDS",
        help="cap every probe's timeout; a node still busy after this long is UNKNOWN (default: per probe)",
    )


def add_workers(p: argparse.ArgumentParser) -> None:
    """``--workers N``: engine worker processes that check and judge the nodes (0: the engine's own)."""
    p.add_argument(
        "--workers",
        type=whole(0),
        metavar="N",
        default=None,
        help="processes that check and judge the nodes, each on a core (default: one per core but one, from 64 "
        "nodes on a host of 4 cores or more; else 0: the engine's own process)",
    )


def add_baseline_partners(p: argparse.ArgumentParser) -> None:
    """``--no-baseline-partners``: the multinode level borrows no node outside the selection (sweep, tui)."""
    p.add_argument(
        "--no-baseline-partners",
        action="store_true",
        help="multinode: never borrow a node known-good in the pool's accepted baseline as a second-pass partner "
        "(by default one is borrowed, its GPUs taken for that run, when no selected node can partner)",
    )


def add_force_overwrite(p: argparse.ArgumentParser) -> None:
    """``--force-overwrite``: the one way past the ownership check of an output file (console.files)."""
    p.add_argument(
        "--force-overwrite",
        action="store_true",
        help="replace an output file that belongs to another user (a symlink, directory or device is refused"
        " whatever this says)",
    )


def check_outputs(args: argparse.Namespace, *names: str) -> None:
    """Refuse, before any work, an output path the command could not replace at its end (console.files)."""
    for name in names:
        path = getattr(args, name, None)
        if path and path != "-":
            check_target(path, force=getattr(args, "force_overwrite", False))


def add_lease_wait(p: argparse.ArgumentParser) -> None:
    """``--wait-lease``: how long to wait for another actor's lease on the history database before exit 2."""
    p.add_argument(
        "--wait-lease",
        type=_non_negative,
        default=0.0,
        metavar="SECONDS",
        help="wait up to SECONDS for another actor (watch, a console, a resume) holding this history database's"
        " lease; default 0: exit 2 at once, naming the holder",
    )


def _non_negative(text: str) -> float:
    value = _finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give 0 or more seconds")
    return value


def add_engine_options(p: argparse.ArgumentParser, *, inventory_required: bool = True) -> None:
    """What every command that sweeps needs: the cluster, the history, the checks and the SSH trust."""
    add_inventory(p, required=inventory_required)
    add_store(p)
    add_checks(p)
    add_accept_new(p)
    add_probe_timeout(p)


def options_of(add_arguments: Callable[[argparse.ArgumentParser], None], **given: Any) -> argparse.Namespace:
    """A command's options as its command line would give them with ``given`` set and every other at its
    default: how one command (``demo``) runs another without writing its command line."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    defaults = {a.dest: a.default for a in parser._actions if a.dest not in (argparse.SUPPRESS, "help")}
    unknown = set(given) - set(defaults)
    if unknown:
        raise TypeError(f"no such option: {', '.join(sorted(unknown))}")
    return argparse.Namespace(**(defaults | given))


def existing_store(
    path: Path | str | None, cluster: Inventory | None = None, *, write: bool = False, check: bool = True
) -> Store:
    """The history database to read (``--store``, else the default: ``cluster``'s own when given); a usage
    error when there is none, or when it is another cluster's.

    Reading must not create one: a mistyped --store would show an empty history instead of an error. It is
    opened read-only (``mode=ro``) unless the command ``write``s (``accept``): reading works on a read-only
    file or filesystem, and changes nothing. A corrupt one is a usage error naming the way to recover it
    (``Store.check_integrity``) unless ``check`` is False.
    """
    where = Path(path or default_store_path(cluster))
    if not where.exists():
        raise UsageError(f"no history database at {where} (sweep first, or --store)")
    store = Store(where, cluster, read_only=not write, check=check)
    if store.read_only and store.outdated() and os.access(where, os.W_OK) and os.access(where.parent, os.W_OK):
        # Written by an older console: upgraded once, in place, as any writer would (console.store.upgrade).
        store.close()
        Store(where, check=False).close()
        store = Store(where, cluster, read_only=True, check=False)
    return store
