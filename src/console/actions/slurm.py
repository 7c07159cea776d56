"""Drain, resume and undrain through ``scontrol update``, with ownership tags and idempotence.

The console tags every reason it sets: ``instinct-console: <reason> [sweep N]``, and records each
drain it makes in the history database. Unless the operator forces it, it resumes (or undrains) only
the nodes it drained itself, per those records and still drained with the reason it set: anyone can
type the tag, so a tagged reason alone is not the console's. It never overwrites a reason someone
else set, and treats draining a drained node or resuming an idle one as a no-op (Slurm itself would
refuse the latter with "Invalid node state specified").

Reasons reach ``scontrol`` as one argv word ``Reason="<text>"``: no shell sees them locally, and over
SSH the runner quotes every word. ``scontrol`` strips one leading and one trailing double quote from a
reason, so the console adds both itself and the text between them arrives exactly as written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet

from console.actions.model import ActionKind, Decision
from console.actions.runner import CommandRunner
from console.actions.slurm_state import (
    SINFO_FORMAT,
    SlurmNode,
    parse_nodes_json,
    parse_show_node,
    parse_sinfo_nodes,
)
from console.probes.base import ParseError

TAG = "instinct-console:"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")

_SCONTROL_STATE = {ActionKind.DRAIN: "DRAIN", ActionKind.RESUME: "RESUME", ActionKind.UNDRAIN: "UNDRAIN"}

# How to read node states, newest interface first; the service remembers which one a controller answers.
STATE_READERS: tuple[tuple[tuple[str, ...], Callable[[str], dict[str, SlurmNode]]], ...] = (
    (("scontrol", "show", "node", "--json"), parse_nodes_json),
    (("sinfo", "--json"), parse_nodes_json),
    (("scontrol", "-o", "show", "node"), parse_show_node),
    (("sinfo", "-N", "-h", "-o", SINFO_FORMAT), parse_sinfo_nodes),
)


class SlurmError(RuntimeError):
    """Slurm could not be asked (no controller, no client tools, unreadable answers)."""


def clean_reason(reason: str) -> str:
    """The reason on one line: newlines and other control characters become one space; the rest is kept."""
    return _CONTROL.sub(" ", reason).strip()


def tag_reason(reason: str, sweep_id: int | None = None) -> str:
    """``instinct-console: <reason> [sweep N]``: the form that marks a drain as the console's own."""
    suffix = f" [sweep {sweep_id}]" if sweep_id is not None else ""
    return f"{TAG} {clean_reason(reason)}{suffix}"


def is_ours(reason: str | None) -> bool:
    """True when a node's reason was set by the console (it carries the tag)."""
    return bool(reason) and str(reason).startswith(TAG)


def update_argv(hostlist: str, kind: ActionKind, reason: str | None = None) -> tuple[str, ...]:
    """``scontrol update NodeName=<hostlist> State=<STATE> [Reason="<reason>"]`` as argv words."""
    argv = ("scontrol", "update", f"NodeName={hostlist}", f"State={_SCONTROL_STATE[kind]}")
    return (*argv, f'Reason="{reason}"') if reason is not None else argv


def holder(node: SlurmNode) -> str:
    """Who set the node's reason, as shown to the operator: ``the console`` or ``<user>``/``others``."""
    if is_ours(node.reason):
        return "the console"
    return node.reason_user or "others"


def describe(node: SlurmNode) -> str:
    """``DRAINED by root: ops: reseat riser`` / ``IDLE``: state, holder and reason in one line."""
    if not node.reason:
        return node.state
    return f"{node.state} by {holder(node)}: {node.reason}"


async def read_states(runner: CommandRunner, where: str, first_reader: int = 0) -> tuple[dict[str, SlurmNode], int]:
    """Every node's state from the controller, and the index of the reader that worked."""
    problems: list[str] = []
    for index in range(first_reader, len(STATE_READERS)):
        argv, parse = STATE_READERS[index]
        out = await runner.run(where, argv, timeout_s=30)
        if out.error:
            raise SlurmError(f"cannot reach {where} to read node states: {out.error}")
        if not out.ok:
            problems.append(f"{argv[0]}: {out.message()}")
            continue
        try:
            return parse(out.stdout), index
        except ParseError as exc:
            problems.append(f"{' '.join(argv[:3])}: {exc.reason}")
    raise SlurmError(f"cannot read node states on {where}: " + "; ".join(problems[-2:]))


def decide(
    kind: ActionKind, name: str, states: Mapping[str, SlurmNode] | None, force: bool, *, owned: AbstractSet[str]
) -> Decision:
    """Ownership and idempotence for one node; ``states`` None means the scheduler was not read yet.

    ``owned``: the nodes the console drained itself (its drain records) that Slurm still shows drained
    with the reason it set.
    """
    if states is None:
        return Decision(True, f"{kind.value} (scheduler state not read yet: checked again when executing)")
    node = states.get(name)
    if node is None:
        return Decision(False, "skip: not a node of this Slurm cluster")
    ours = name in owned
    if kind is ActionKind.DRAIN:
        if node.draining_flag and ours:
            return Decision(False, f"no-op: already {node.state} by the console ({node.reason})", no_op=True)
        if node.reason and not ours:
            if force:
                return Decision(True, f"drain, replacing the reason of {describe(node)} (forced)")
            return Decision(False, f"skip: {_not_ours(node)}; not overwritten without --force")
        return Decision(True, f"drain (now {node.state})")
    wanted = node.resumable if kind is ActionKind.RESUME else node.draining_flag
    if not wanted:
        return Decision(False, f"no-op: {node.state}, nothing to {kind.value}", no_op=True)
    if ours:
        return Decision(True, f"{kind.value} ({describe(node)})")
    if force:
        return Decision(True, f"{kind.value} {describe(node)} (forced)")
    return Decision(False, f"skip: {_not_ours(node)}; the console {kind.value}s only its own drains without --force")


def _not_ours(node: SlurmNode) -> str:
    """A node held by someone else, said plainly; a copied tag is named as such."""
    if is_ours(node.reason):
        return f"{node.state} with the console's tag, but not drained by this console (no record of it): {node.reason}"
    return describe(node)
