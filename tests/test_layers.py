"""The data flows one way: each package imports only the layers the architecture puts below it.

inventory -> transport -> probes -> checks -> findings -> store / UI / reports (DEVELOPERS.md). The
engine (sweep) runs probes over a transport and judges them; actions and the service are built on the
engine; the console (ui) talks to the service and never to nodes; commands are the front door and may
use everything. A new import that crosses a layer upward fails here, naming the file and the line.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "console"

# Every package and top-level module of console, with what it may import from console.
ALLOWED: dict[str, frozenset[str]] = {
    "model": frozenset(),
    "exitcodes": frozenset({"model"}),  # the exit code follows from verdicts
    "runtime": frozenset(),
    "files": frozenset(),  # the one way to write an output file (console.files)
    "inert": frozenset(),  # the one way to make text safe to print (console.inert): every printing layer uses it
    "timestamps": frozenset(),  # the one way to print a time, with its zone (console.timestamps)
    "inventory": frozenset({"model"}),
    "transport": frozenset({"inventory"}),  # reaches the inventory's nodes; knows nothing of what runs on them
    "probes": frozenset({"model"}),
    "checks": frozenset({"model", "inventory", "probes"}),
    "report": frozenset({"model", "inventory", "files"}),
    "store": frozenset({"model", "inventory"}),
    # The remediation case machine, its reconciliation and the lease: the history database and nothing above.
    "remediation": frozenset({"model", "inventory", "store"}),
    "sweep": frozenset({"model", "inventory", "transport", "probes", "checks", "report", "store", "remediation"}),
    "actions": frozenset({"model", "inventory", "transport", "probes", "checks", "store", "sweep", "remediation"}),
    "service": frozenset(
        {"model", "inventory", "transport", "checks", "store", "sweep", "actions", "runtime", "files", "remediation"}
    ),
    # The console: the engine's events and results are its input; it never imports a transport.
    "ui": frozenset(
        {
            "model",
            "inventory",
            "probes",
            "checks",
            "report",
            "store",
            "sweep",
            "service",
            "actions",
            "exitcodes",
            "files",
            "runtime",
            "remediation",
        }
    ),
    "sim": frozenset({"model", "inventory"}),  # simulated nodes: they know the console's models only
    "commands": frozenset(),  # the front door: every layer, filled in below
    "cli": frozenset({"commands", "exitcodes", "runtime", "store"}),
    "__main__": frozenset({"cli"}),
}
ALLOWED["commands"] = frozenset(ALLOWED) - {"commands", "__main__"}
for _printing in ("transport", "report", "store", "sweep", "actions", "service", "ui", "cli"):
    ALLOWED[_printing] |= {"inert", "timestamps"}
# Where a layer may use only part of another: the console reads the action catalogue, baselines and
# workload acceptance states (the history database); every action that reaches a node or a scheduler
# runs on the engine side.
ONLY: dict[tuple[str, str], frozenset[str]] = {
    ("ui", "actions"): frozenset(
        {
            "console.actions.catalogue",
            "console.actions.model",
            "console.actions.baseline",
            "console.actions.acceptance",
            # the remediation view and a node's freshness: cases, proposals, breaker and verdicts as stored
            "console.actions.remediation",
            "console.actions.freshness",
        }
    ),
}


def _layer(path: Path) -> str:
    parts = path.relative_to(SRC).parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


def _console_imports(path: Path) -> list[tuple[int, str, str]]:
    """(line, imported layer, module) of every ``console.*`` import in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            if name.startswith("console."):
                found.append((node.lineno, name.split(".")[1], name))
    return found


def test_every_package_has_a_place_in_the_layers() -> None:
    packages = {_layer(path) for path in SRC.rglob("*.py") if path.parent != SRC or path.name != "__init__.py"}
    assert packages - set(ALLOWED) == set(), "a new package needs its place in ALLOWED"


def test_imports_cross_no_layer_upward() -> None:
    crossings = []
    for path in sorted(SRC.rglob("*.py")):
        layer = _layer(path)
        if path.parent == SRC and path.name == "__init__.py":
            continue
        for line, imported, module in _console_imports(path):
            if imported != layer and imported not in ALLOWED[layer]:
                crossings.append(f"{path.relative_to(SRC)}:{line}: {layer} imports console.{imported}")
            elif module not in ONLY.get((layer, imported), frozenset({module})):
                crossings.append(f"{path.relative_to(SRC)}:{line}: {layer} may not use {module}")
    assert not crossings, "\n".join(crossings)


def test_the_rule_finds_an_upward_import(tmp_path: Path) -> None:
    """The check itself: a store module importing the engine is caught (it once did, for host keys)."""
    module = tmp_path / "bad.py"
    module.write_text("from console.sweep.events import Event\nimport console.ui.app\n")
    assert _console_imports(module) == [(1, "sweep", "console.sweep.events"), (2, "ui", "console.ui.app")]
    assert "sweep" not in ALLOWED["store"] and "ui" not in ALLOWED["store"]
