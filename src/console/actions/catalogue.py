"""Every operator action that changes something, listed once: the CLI, the engine and the console read it.

An action's id is its ``ActionKind`` value: the CLI subcommand (where it has one), the console's key
binding id and the audit log's ``action`` column are all that one name. ``dangerous`` actions change
the cluster or what its nodes are judged against; ``--read-only`` hides them in the console and the
action service (and ``pin --clear``) refuses them, whichever front end asks. The console shows every
action's plan and asks before it runs (the count of targets too, past its threshold); the CLI does
for the scheduler actions and pins (``--yes`` skips the question), while ``accept`` runs at once.

To add an action: a member of ``ActionKind``, its entry here, and its planning and execution in
``ActionService`` (CONTRIBUTING.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from console.actions.model import ActionKind


class Targets(StrEnum):
    """What an action is given to act on."""

    NODES = "nodes"  # a hostlist, or the marked nodes in the console
    NODE = "node"  # one node (a pin is taken from its stack)
    POOL = "pool"  # one pool
    POOLS = "pools"  # the pools a sweep covered


class Reason(StrEnum):
    """Whether the operator must say why (the reason goes to the audit log, and to Slurm or Kubernetes)."""

    REQUIRED = "required"
    OPTIONAL = "optional"


@dataclass(frozen=True)
class CatalogueEntry:
    """One action: what the operator sees, what it changes, and the rules it runs under."""

    kind: ActionKind
    title: str
    summary: str  # one line: the CLI's help and the console's key description
    changes: str  # what it changes, and where
    targets: Targets
    reason: Reason
    dangerous: bool

    @property
    def id(self) -> str:
        """The one name of the action (CLI, key binding id, audit log)."""
        return self.kind.value


CATALOGUE: tuple[CatalogueEntry, ...] = (
    CatalogueEntry(ActionKind.DRAIN, "Drain", "drain nodes in Slurm with a tagged reason (running jobs finish)",
                   "Slurm node state: DRAIN, with the reason tagged as the console's", Targets.NODES, Reason.REQUIRED,
                   dangerous=True),
    CatalogueEntry(ActionKind.RESUME, "Resume",
                   "return nodes the console drained to service, once their case is revalidated (else --force)",
                   "Slurm node state: RESUME (back in service)", Targets.NODES, Reason.OPTIONAL, dangerous=True),
    CatalogueEntry(ActionKind.UNDRAIN, "Undrain",
                   "clear the drain flag of nodes the console drained, leaving DOWN alone",
                   "Slurm node state: UNDRAIN", Targets.NODES, Reason.OPTIONAL, dangerous=True),
    CatalogueEntry(ActionKind.CORDON, "Cordon",
                   "cordon and taint Kubernetes nodes and set the console's node condition (pods keep running)",
                   "Kubernetes: unschedulable, the NoSchedule taint instinct-console/remediation, the condition"
                   " InstinctConsoleRemediation and annotations with the reason", Targets.NODES, Reason.REQUIRED,
                   dangerous=True),
    CatalogueEntry(ActionKind.UNCORDON, "Uncordon",
                   "return Kubernetes nodes the console cordoned, once their case is revalidated (else --force)",
                   "Kubernetes: what the console set removed (cordon, taint, condition, annotations); others' stay",
                   Targets.NODES, Reason.OPTIONAL, dangerous=True),
    CatalogueEntry(ActionKind.ENFORCE_PIN, "Enforce pin",
                   "hold the pinned ROCm packages on nodes that match their pool's pin (drifted ones are refused)",
                   "the nodes' package manager: holds on the pinned ROCm packages", Targets.NODES, Reason.OPTIONAL,
                   dangerous=True),
    CatalogueEntry(ActionKind.PIN, "Pin stack", "make a node's stack the pin of its pool",
                   "the pool's stored pin, which every sweep judges the pool's stacks against", Targets.NODE,
                   Reason.OPTIONAL, dangerous=True),
    CatalogueEntry(ActionKind.UNPIN, "Unpin", "drop a pool's stored pin: the cluster file's applies again",
                   "the pool's stored pin, which every sweep judges the pool's stacks against", Targets.POOL,
                   Reason.OPTIONAL, dangerous=True),
    CatalogueEntry(ActionKind.ACCEPT, "Accept baseline", "accept a finished sweep as the baseline of its pools",
                   "the pools' accepted baseline in the history database (what diff compares with)", Targets.POOLS,
                   Reason.OPTIONAL, dangerous=False),
    CatalogueEntry(ActionKind.REPAIRED, "Repaired",
                   "say the repair a drained node's case calls for is done (who and what): it is revalidated next",
                   "the node's remediation case in the history database: revalidating, its passes counted from 0"
                   " (on a Kubernetes pool, the console's taint and condition say so too)",
                   Targets.NODES, Reason.REQUIRED, dangerous=True),
    CatalogueEntry(ActionKind.ESCALATE, "Escalate", "send a drained node to the vendor (RMA): its case closes",
                   "the node's remediation case in the history database: escalated (the node stays drained;"
                   " on a Kubernetes pool, its taint and condition say so)",
                   Targets.NODES, Reason.REQUIRED, dangerous=True),
    CatalogueEntry(ActionKind.ROLLBACK, "Roll back",
                   "set a pool's pin and workload images back to its last accepted stack, and hold its packages",
                   "the pool's stored pin and workload images in the history database; package holds on the nodes"
                   " already on that stack", Targets.POOL, Reason.REQUIRED, dangerous=True),
    CatalogueEntry(ActionKind.REVALIDATE, "Revalidate",
                   "sweep repaired nodes at the policy's level: a pass, or a strike (FAIL or WARN) on their cases",
                   "the nodes' remediation cases in the history database (a pass or a strike); a sweep of the nodes",
                   Targets.NODES, Reason.OPTIONAL, dangerous=True),
    CatalogueEntry(ActionKind.APPROVE, "Approve proposal",
                   "carry out the drain or resume watch proposed for nodes (refused while its breaker is tripped)",
                   "what the proposed action changes (Slurm node state), and the proposal: decided, by whom",
                   Targets.NODES, Reason.OPTIONAL, dangerous=True),
)  # fmt: skip

BY_KIND: dict[ActionKind, CatalogueEntry] = {entry.kind: entry for entry in CATALOGUE}
DANGEROUS: frozenset[ActionKind] = frozenset(entry.kind for entry in CATALOGUE if entry.dangerous)


def entry(kind: ActionKind) -> CatalogueEntry:
    """The catalogue's entry for ``kind`` (every kind has one: a test checks it)."""
    return BY_KIND[kind]
