"""Multi-node RCCL results: every collective run over node pairs or groups, and the nodes they named.

Kept apart from the runner so reports and the TUI's cluster view can read it without the engine.
"""

from __future__ import annotations

from pydantic import Field

from console.model.base import Model
from console.model.findings import Status


class CollectiveRun(Model):
    """One multi-node collective: a reference node plus the members under test."""

    pool: str
    nodes: list[str] = Field(description="reference first; it launched the run")
    purpose: str = Field(description="group (a pair when one member), split (half of a failed group) or confirm")
    status: Status
    busbw_gbps: float | None = Field(None, description="in-place busbw at the largest message size")
    floor_gbps: float | None = Field(None, description="the busbw the run had to reach; None when no floor is known")
    wrong: int | None = Field(None, description="#wrong elements summed over the table")
    reason: str = Field("", description="one line: why the run passed, failed or could not be judged")
    command: str = ""
    duration_s: float = 0.0
    run_id: int | None = Field(None, description="store id of the raw output")


class Culprit(Model):
    """A node the runs named."""

    pool: str
    node: str
    reason: str = Field(description="how the runs named it and what its last failing run showed")


class PoolRuns(Model):
    """How one pool was tested: its reference, or why it could not be."""

    pool: str
    reference: str | None = None
    retired_references: list[str] = Field(default_factory=list, description="references every run failed with")
    cleared: list[str] = Field(default_factory=list, description="nodes admitted by a clean run")
    note: str = Field("", description="why no run happened, or what was left unjudged")


class MultinodeResult(Model):
    """The multi-node phase of a sweep."""

    collective: str = "all_reduce_perf"
    launcher: str
    pools: list[PoolRuns] = Field(default_factory=list)
    runs: list[CollectiveRun] = Field(default_factory=list)
    culprits: list[Culprit] = Field(default_factory=list)
