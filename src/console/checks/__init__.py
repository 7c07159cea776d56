"""Checks: declarative packs per GPU model (``checks/*.toml``) turned into findings with evidence."""

from console.checks.evaluate import evaluate_fleet, evaluate_node, unreachable_finding
from console.checks.facts import NodeFacts, ProbeOutcome, build_facts
from console.checks.loader import CheckConfigError, builtin_checks_dir, load_pack_file, load_packs
from console.checks.metrics import METRICS, Observation
from console.checks.spec import CheckPack, CheckSpec

__all__ = [
    "METRICS",
    "CheckConfigError",
    "CheckPack",
    "CheckSpec",
    "NodeFacts",
    "Observation",
    "ProbeOutcome",
    "build_facts",
    "builtin_checks_dir",
    "evaluate_fleet",
    "evaluate_node",
    "load_pack_file",
    "load_packs",
    "unreachable_finding",
]
