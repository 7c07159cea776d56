"""A multi-node revalidation: the repaired node's own checks, then one collective run with a known-good
partner of its pool (issue 19 item 3, "optionally a multinode pair with a known-good node").

The partner is chosen from what the store knows: a node of the same pool whose newest verdict is PASS
(the pool's accepted baseline nodes first), with no open remediation case and no drain the console holds.
The node passes only when its own checks and the pair run both pass; with no partner it is not judged.
"""

from __future__ import annotations

from dataclasses import dataclass

from console.inventory import Inventory
from console.model.family import Family
from console.model.findings import Evidence, Finding, NodeVerdict, Status, Subject
from console.store import Store
from console.store.follow import newest_verdicts
from console.sweep.catalog import ProbeSet
from console.sweep.engine import SweepEngine
from console.sweep.known_good import disqualified
from console.sweep.multinode import CHECK_ID, MultinodeOptions, refreshed, run_multinode

SOURCE = "revalidation-partner"


@dataclass(frozen=True)
class Partner:
    """The known-good node a revalidation pairs ``node`` with, or None and why there is none."""

    node: str
    partner: str | None
    why: str

    def plan_line(self) -> str:
        """How the plan says it: the partner, where it was judged good, and that its GPUs are taken."""
        if self.partner is None:
            return f"no pair run: {self.why}: not judged (UNKNOWN)"
        return f"one pair run with {self.partner} ({self.why}); {self.partner}'s GPUs are taken for the run"


def choose_partner(store: Store, inventory: Inventory, node: str) -> Partner:
    """The known-good partner for ``node``: PASS in its newest verdict (accepted baseline nodes first), no
    open case, no console drain. Nodes under revalidation have open cases, so they never pair each other."""
    pool = inventory.node(node).pool
    members = [n.name for n in inventory.nodes if n.pool == pool and n.name != node]
    newest = newest_verdicts(store, members)
    ruled_out = disqualified(store, members, after=0)
    good = [m for m in members if m not in ruled_out and m in newest and newest[m].status == Status.PASS.value]
    base = store.baseline(pool)
    in_base = set()
    if base is not None:
        in_base = {r["node"] for r in store.node_verdicts(base) if r["status"] == Status.PASS.value}
    if not good:
        return Partner(node, None, f"no known-good partner in pool {pool}")
    name = min(good, key=lambda m: m not in in_base)  # baseline nodes first, then inventory order
    verdict = newest[name]
    if name in in_base and verdict.sweep_id == base:
        return Partner(node, name, f"PASS in pool {pool}'s accepted baseline, sweep {base}")
    return Partner(node, name, f"PASS in its newest verdict, {verdict.where()}")


async def revalidate_pair(engine: SweepEngine, node: str, partner: Partner) -> tuple[NodeVerdict, int, str]:
    """Sweep ``node`` (and its partner) at the standard level, then, when both passed, one pair run.

    Answers the node's verdict for its case, the sweep id and the sweep's outcome. The verdict is PASS only
    when its own checks and a pair run with the partner passed; no partner, or a partner that did not pass
    its own checks now, leaves it UNKNOWN (an added finding says why), never PASS.
    """
    names = [node] if partner.partner is None else [node, partner.partner]
    nodes = [engine.inventory.node(n) for n in names]
    result = await engine.run(nodes, level=ProbeSet.MULTINODE.value)
    own = result.verdicts.get(node)
    if own is None or own.status is not Status.PASS:
        return _verdict_or_unknown(node, own), result.sweep_id, result.outcome
    if result.outcome != "done":  # its own checks passed, but no pair ran: not a pass
        why = f"the sweep ended {result.outcome} before the pair run"
        return NodeVerdict(node=node, status=Status.UNKNOWN, reason=why), result.sweep_id, result.outcome
    theirs = result.verdicts.get(partner.partner) if partner.partner is not None else None
    if partner.partner is None or theirs is None or theirs.status is not Status.PASS:
        if partner.partner is None:
            why = f"{partner.why}: the pair run did not take place"
        else:
            status = theirs.status.value if theirs is not None else "not judged"
            why = f"no known-good partner: {partner.partner} was {status} in its own checks now"
        verdict = _not_judged(engine, node, why)
        refreshed(engine, result)  # the stored sweep's counts include the added finding
        return verdict, result.sweep_id, result.outcome
    options = MultinodeOptions(baseline_partners=False, vouchers=(partner.partner,))
    pairs = await run_multinode(engine, result, options)
    result = refreshed(engine, result)
    verdict = result.verdicts[node]
    ran = [run for run in pairs.runs if node in run.nodes and partner.partner in run.nodes]
    if verdict.status is Status.PASS and not any(run.status is Status.PASS for run in ran):
        verdict = _not_judged(engine, node, f"no pair run with {partner.partner} passed or was judged")
    return verdict, result.sweep_id, result.outcome


def _verdict_or_unknown(node: str, verdict: NodeVerdict | None) -> NodeVerdict:
    if verdict is not None:
        return verdict
    return NodeVerdict(node=node, status=Status.UNKNOWN, reason="not swept")


def _not_judged(engine: SweepEngine, node: str, why: str) -> NodeVerdict:
    """Add an UNKNOWN finding to the node's verdict in this sweep (stored, as any finding), and answer it."""
    finding = Finding(
        check_id=CHECK_ID,
        family=Family.RCCL,
        status=Status.UNKNOWN,
        subject=Subject(node=node),
        message=f"multi-node revalidation: {why}",
        evidence=Evidence(),
    )
    return engine.add_findings(node, SOURCE, [finding])
