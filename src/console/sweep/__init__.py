"""Sweeps: schedule nodes x probes through one node checker, stream events, rerun and cancel."""

from console.sweep.catalog import PROBES, PROBES_BY_ID, ProbeSet, ProbeSpec, probes_for
from console.sweep.engine import SweepEngine, SweepResult, describe, probes_for_families, snapshot_of
from console.sweep.events import Event, NodeDone, NodeSnapshot, ProbeFinished, ProbeStarted, SweepDone, SweepStarted

__all__ = [
    "PROBES",
    "PROBES_BY_ID",
    "Event",
    "NodeDone",
    "NodeSnapshot",
    "ProbeFinished",
    "ProbeSet",
    "ProbeSpec",
    "ProbeStarted",
    "SweepDone",
    "SweepEngine",
    "SweepResult",
    "SweepStarted",
    "describe",
    "probes_for",
    "probes_for_families",
    "snapshot_of",
]
