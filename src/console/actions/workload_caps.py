"""How many nodes of a pool a workload run may hold at once: the drains' blast-radius cap (``caps``).

A workload occupies every GPU of the nodes it runs on, so while it runs they serve no job: for the
pool that is the same as a drain. The same ``CapPolicy`` bounds both. Nodes already out of service
(drained or down, by anyone) count against the cap as they do for a drain, and what is left is how
many nodes the run may hold at once. The run still covers the whole pool: the nodes past the cap wait
until a run ends and frees a place (``console.sweep.workloads``). Forced, the cap is not applied.

Only the caller that may read the scheduler (the CLI, the service) computes the allowance; the sweep
engine only obeys it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from console.actions.caps import CapPolicy
from console.actions.service import ActionService
from console.inventory.model import Inventory, Node
from console.model.workload import WorkloadSpec
from console.store import Store


@dataclass(frozen=True)
class WorkloadAllowance:
    """Per pool, how many of its nodes a workload run may hold at once, and how that was reached."""

    at_once: dict[str, int]
    why: dict[str, str]  # pool -> "cap 2 = max(2, 10% of 6); 1 already out of service"
    unread: str | None = None  # why the scheduler's states were not read (only the console's drains counted)

    def capped(self, nodes: Sequence[Node]) -> list[str]:
        """Of ``nodes`` (in run order), those that wait for a place: the ones past their pool's allowance."""
        seen: dict[str, int] = {}
        waiting = []
        for node in nodes:
            seen[node.pool] = seen.get(node.pool, 0) + 1
            if node.pool in self.at_once and seen[node.pool] > self.at_once[node.pool]:
                waiting.append(node.name)
        return waiting

    def too_small(self, specs: Sequence[WorkloadSpec], pools: Sequence[str]) -> list[str]:
        """One line per workload and pool whose group needs more nodes at once than the pool allows."""
        return [
            f"{spec.name} needs {spec.nodes} nodes of pool {pool} at once; {self.at_once[pool]} allowed"
            f" ({self.why[pool]})"
            for spec in specs
            for pool in pools
            if pool in self.at_once and spec.nodes > self.at_once[pool] and (not spec.pools or pool in spec.pools)
        ]

    def notes(self, pools: Sequence[str]) -> list[str]:
        """What the plan says of the cap, per pool, and what was not read."""
        said = [
            f"pool {pool}: at most {self.at_once[pool]} nodes run it at once ({self.why[pool]}); the others wait"
            " for a place"
            for pool in pools
            if pool in self.at_once
        ]
        if self.unread:
            said.append(f"the scheduler was not read ({self.unread}): only the console's own drains count as out")
        return said


def allowance(
    policy: CapPolicy, inventory: Inventory, pools: Sequence[str], out: frozenset[str], unread: str | None = None
) -> WorkloadAllowance:
    """The allowance of each of ``pools`` (Slurm pools only: cordons are Kubernetes' to count)."""
    at_once: dict[str, int] = {}
    why: dict[str, str] = {}
    for pool in pools:
        if pool in inventory.pools and inventory.pools[pool].scheduler != "slurm":
            continue
        members = {n.name for n in inventory.nodes if n.pool == pool}
        if not members:
            continue
        cap = policy.cap(pool, len(members))
        already = len(members & out)
        at_once[pool] = max(0, cap - already)
        why[pool] = policy.describe(pool, len(members)) + (f"; {already} already out of service" if already else "")
    return WorkloadAllowance(at_once, why, unread)


async def out_of_service(actions: ActionService | None, store: Store | None) -> tuple[frozenset[str], str | None]:
    """The nodes out of service now (drained, down, by anyone), and why the scheduler was not read.

    The console's own open drains count whatever the scheduler says; where it cannot be read, they
    are all that is known, and the caller says so.
    """
    ours = frozenset(r.node for r in store.drains(open_only=True)) if store is not None else frozenset()
    if actions is None:
        return ours, "no action service (the history database is needed)"
    states = await actions.node_states()
    unread = next((s.removeprefix("UNKNOWN: ") for s in states.values() if s.startswith("UNKNOWN: ")), None)
    if unread is not None or actions.slurm_nodes is None:
        return ours, unread or "no Slurm node listed"
    return ours | frozenset(n for n, s in actions.slurm_nodes.items() if s.out_of_service), None


async def workload_allowance(
    policy: CapPolicy, inventory: Inventory, pools: Sequence[str], actions: ActionService | None, store: Store | None
) -> WorkloadAllowance:
    """Read what is out of service now, and the allowance of ``pools`` under ``policy``."""
    out, unread = await out_of_service(actions, store)
    return allowance(policy, inventory, pools, out, unread)


def pools_of(nodes: Sequence[Node]) -> list[str]:
    """The pools of ``nodes``, in order of first appearance."""
    return list(dict.fromkeys(n.pool for n in nodes))


def as_mapping(allowed: WorkloadAllowance | None) -> Mapping[str, int] | None:
    """What the sweep engine obeys: None when no cap applies (forced)."""
    return None if allowed is None else dict(allowed.at_once)
