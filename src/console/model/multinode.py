"""Multi-node RCCL results: every collective run over node pairs or groups, and the nodes they named.

Kept apart from the runner so reports and the TUI's node-pair view can read it without the engine.
A run's ``seq`` is its number, counted from 1 in the order runs finished (over every pool), as the
operator reads it (``#3``): a culprit's ``runs``, a standing's ``decided_by`` and the text that says
``#3`` name the same run, live and in the report alike.
"""

from __future__ import annotations

from pydantic import Field

from console.model.base import Model
from console.model.findings import Status


class CollectiveRun(Model):
    """One multi-node collective: a reference node plus the members under test."""

    seq: int = Field(1, description="the run's number, from 1 in the order the runs finished (the text's #N is this)")
    pool: str
    nodes: list[str] = Field(description="reference first; it launched the run")
    purpose: str = Field(
        description="group (a pair when one member), split (half of a failed group), confirm (the second "
        "pass: a node of a failed run with another known-good node), rack (two nodes named in one rack, "
        "with each other), pair (two untested nodes paired by the pairing mode), uplink (a rack's, switch's or rail "
        "group's known-good node with another's, for the way out of the group) or isolation (network-only, no "
        "floor: says which layer a named node's fault is in)"
    )
    status: Status
    busbw_gbps: float | None = Field(None, description="in-place busbw at the largest message size")
    floor_gbps: float | None = Field(None, description="the busbw the run had to reach; None when no floor is known")
    wrong: int | None = Field(None, description="#wrong elements summed over the table")
    reason: str = Field("", description="one line: why the run passed, failed or could not be judged")
    command: str = ""
    duration_s: float = 0.0
    run_id: int | None = Field(None, description="store id of the raw output")
    partner_from: str = Field(
        "",
        description="where the run's known-good node (the first of nodes) came from: 'this sweep', 'baseline "
        "sweep #N' (the pool's accepted baseline; the node was not swept now), or '' when no node of the run "
        "was known to be good (a first-pass pair, two named nodes of one rack)",
    )
    topology: str = Field(
        "", description="where its nodes sit by the cluster file's labels, e.g. 'rack r01; switch sw1 and sw2'"
    )

    @property
    def ratio(self) -> float | None:
        """busbw over the floor (1.0 is exactly the floor); None without both."""
        if self.busbw_gbps is None or not self.floor_gbps:
            return None
        return self.busbw_gbps / self.floor_gbps


class Culprit(Model):
    """A node the runs named."""

    pool: str
    node: str
    reason: str = Field(description="how the runs named it and what its last failing run showed")
    runs: list[int] = Field(
        default_factory=list, description="run numbers (seq, #N in the text) of the failed runs that convicted it"
    )
    layer: str = Field(
        "unknown",
        description="inter-node (its network-only run is slow too, else its own single-node all_reduce_perf "
        "passes), intra-node (the network-only run is fine, else the single-node run fails too) or unknown",
    )
    layer_evidence: str = Field("", description="the node's own RCCL checks that the layer rests on")
    found_by: str = Field(
        "", description="which pairing mode and pass found it, and where each known-good partner came from"
    )


class RackCulprit(Model):
    """A rack (or switch) whose uplink the runs named: its nodes fail only on runs leaving it, and pass with
    each other or other nodes of it fail across it too."""

    pool: str
    rack: str = Field(description="the nodes' topology label value (the rack's name, or the switch's)")
    label: str = Field("rack", description="the topology label the group is named by: rack, switch or rail")
    nodes: list[str] = Field(description="its nodes the runs cleared of fault of their own")
    reason: str
    runs: list[int] = Field(
        default_factory=list, description="run numbers (seq, #N in the text) of the runs that convicted the uplink"
    )
    found_by: str = Field("", description="which pairing mode's runs showed it")


class NodeStanding(Model):
    """One node's multi-node verdict and its worst run: a line of the straggler ranking."""

    pool: str
    node: str
    status: Status = Field(description="its multi-node finding: FAIL named, WARN suspect path, PASS cleared")
    worst_ratio: float | None = Field(None, description="lowest busbw / floor over its runs; None if none had both")
    worst_with: list[str] = Field(default_factory=list, description="the other nodes of that worst run")
    runs: list[int] = Field(
        default_factory=list, description="run numbers (seq, #N in the text) of every run it took part in"
    )
    decided_by: list[int] = Field(
        default_factory=list,
        description="run numbers (seq, #N in the text) of the runs that convicted it (FAIL) or cleared it (PASS)",
    )
    how: str = Field(
        "", description="one line: which runs convicted or cleared it, with whom, and where each partner came from"
    )


class PoolRuns(Model):
    """How one pool was tested: its reference, or why it could not be."""

    pool: str
    reference: str | None = None
    retired_references: list[str] = Field(default_factory=list, description="references every run failed with")
    cleared: list[str] = Field(default_factory=list, description="nodes admitted by a clean run")
    note: str = Field("", description="why no run happened, or what was left unjudged")
    baseline_sweep: int | None = Field(None, description="the pool's accepted baseline, whose nodes may partner")
    borrowed: list[str] = Field(
        default_factory=list,
        description="nodes known-good by the accepted baseline, not swept now, that partnered a second pass "
        "because no node of this sweep could",
    )
    topology_missing: list[str] = Field(
        default_factory=list, description="nodes without the pairing mode's label (grouped together)"
    )
    coverage: str = Field(
        "",
        description="which paths the pairing mode's runs tested, and which they could not (its nodes are not "
        "judged for those)",
    )


class MultinodeResult(Model):
    """The multi-node phase of a sweep."""

    collective: str = "all_reduce_perf"
    launcher: str
    pairing: str = Field(
        "reference",
        description="first pass: reference (each node with a known-good one), random, rack, across (racks), "
        "switch, across-switches or rail (rail-aligned pairs)",
    )
    label: str | None = Field(None, description="the cluster file's label the pairing grouped by: rack, switch, rail")
    seed: int | None = Field(None, description="the pairing's seed (random pairs, order within racks)")
    pools: list[PoolRuns] = Field(default_factory=list)
    runs: list[CollectiveRun] = Field(default_factory=list)
    culprits: list[Culprit] = Field(default_factory=list)
    racks: list[RackCulprit] = Field(default_factory=list, description="racks whose uplink the runs named")
    stragglers: list[NodeStanding] = Field(
        default_factory=list, description="every judged node, worst first: lowest busbw ratio, then by verdict"
    )
