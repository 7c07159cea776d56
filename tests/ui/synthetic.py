"""A deterministic fleet for UI tests and the UI benchmark: the simulator's renderers produce each
probe's output, the console's own parsers and checks judge it, and the result is the exact event
stream the engine would send (SweepStarted, ProbeStarted/Finished, NodeDone, SweepDone).

No SSH and no clock: the same arguments always give the same events, so snapshots are stable.
Raw outputs go to a Store when one is given, so evidence links (probe_run_id) resolve.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from console.checks import (
    CheckPack,
    ProbeOutcome,
    build_facts,
    evaluate_fleet,
    evaluate_node,
    load_packs,
    unreachable_finding,
)
from console.checks.facts import NodeFacts
from console.inventory.load import from_mapping
from console.inventory.model import Inventory, Node
from console.model.findings import Finding, NodeVerdict, Status, roll_up
from console.probes.base import ParsedOutput, ParseError
from console.sim.commands import Delivery, SimContext, run_program
from console.sim.faults import FaultKind
from console.sim.models import ClusterSpec, build_node
from console.sim.serve import ServeOptions, parse_models, plan_cluster
from console.store import Store
from console.sweep.catalog import ProbeSpec, probes_for
from console.sweep.engine import snapshot_of
from console.sweep.events import Event, NodeDone, NodeSnapshot, ProbeFinished, ProbeStarted, SweepDone, SweepStarted

# Faults the SSH server itself acts out: the node never runs a probe.
CONNECTION_FAULTS = {
    FaultKind.SSH_REFUSED: "refused: connection refused (sshd not running?)",
    FaultKind.AUTH_FAILURE: "auth-failed: Permission denied (publickey)",
    FaultKind.HOST_KEY_CHANGED: "host-key-changed: the node's host key differs from known_hosts",
}


@dataclass
class SyntheticFleet:
    """The inventory, the cluster spec behind it and one sweep's events."""

    inventory: Inventory
    cluster: ClusterSpec
    events: list[Event]
    verdicts: dict[str, NodeVerdict]

    def node_done(self) -> list[NodeDone]:
        """Only the NodeDone events, in order."""
        return [e for e in self.events if isinstance(e, NodeDone)]


def synthetic_inventory(cluster: ClusterSpec, pools: list[tuple[str, str, list[str], dict[str, str]]]) -> Inventory:
    """An inventory of the planned pools, the way ``sim serve`` writes it (labels, pins)."""
    data = {
        "name": cluster.name,
        "slurm": {"controller": ""},
        "pools": [
            {
                "name": name,
                "gpu_model": model,
                "nodes": ",".join(nodes),
                "labels": {"rack": f"r{k + 1:02d}"},
                "pin": pin,
            }
            for k, (name, model, nodes, pin) in enumerate(pools)
        ],
    }
    return from_mapping(data, "synthetic")


def _outcome(spec: ProbeSpec, ctx: SimContext, store: Store | None, sweep_id: int) -> ProbeOutcome:
    reply = run_program(ctx, list(spec.argv))
    problem: str | None = None
    parsed = None
    if reply.delivery is Delivery.HANG:
        problem = f"no answer within {spec.timeout_s:g} s (killed on the node)"
    elif reply.delivery is Delivery.DROP:
        problem = "connection lost while the probe ran"
    elif reply.exit_status == 127:
        problem = f"{spec.argv[0]}: command not found on the node"
    else:
        try:
            parsed = spec.parse(reply.stdout)
        except ParseError as exc:
            problem = f"unreadable output: {exc.reason}"
    run_id = None
    if store is not None:
        run_id = store.add_probe_run(
            sweep_id,
            ctx.node.name,
            spec.id,
            command=" ".join(spec.argv),
            exit_status=reply.exit_status,
            started_at=0.0,
            duration_s=0.0,
            stdout=reply.stdout.encode(),
            stderr=reply.stderr.encode(),
            problem=problem,
        )
    return ProbeOutcome(spec.id, parsed, problem, run_id, 0.0)


def _pairs_from_matrix(facts: NodeFacts) -> dict[str, float]:
    # NodeSnapshot.pair_gbps promises TransferBench GB/s per 'i-j' pair; the engine's snapshot_of reads a
    # field the TransferBench model does not have, so fill it from the parsed a2a matrix the same way.
    parsed = facts.parsed("tb.a2a")
    if not isinstance(parsed, ParsedOutput) or parsed.data is None:
        return {}
    pairs = {}
    for entry in getattr(parsed.data, "matrix", []):
        if entry.kind == "a2a" and entry.gbps is not None and entry.src_index != entry.dst_index:
            pairs[f"{entry.src_index}-{entry.dst_index}"] = float(entry.gbps)
    return pairs


def synthetic_fleet(
    nodes: int = 16,
    models: str = "mi300x,mi355x",
    pools: int = 2,
    *,
    level: str = "standard",
    seed: int = 7,
    faults: str = "demo",
    store: Store | None = None,
    sweep_id: int = 1,
    probe_events: bool = True,
) -> SyntheticFleet:
    """One judged sweep of a simulated cluster, as engine events."""
    with tempfile.TemporaryDirectory() as state:
        options = ServeOptions(
            nodes=nodes, models=parse_models(models), pools=pools, faults=faults, seed=seed, state_dir=Path(state)
        )
        plan = plan_cluster(options)
    cluster = plan.cluster
    inventory = synthetic_inventory(cluster, [(p.name, p.gpu_model, p.nodes, p.pin) for p in plan.pools])
    packs = load_packs()
    probes = probes_for(level)
    if store is not None:
        sweep_id = store.start_sweep(level, "synthetic", "", None)
    events: list[Event] = [
        SweepStarted(
            sweep_id=sweep_id, nodes=[n.name for n in inventory.nodes], probes=[p.id for p in probes], level=level
        )
    ]
    facts: dict[str, NodeFacts] = {}
    verdicts: dict[str, NodeVerdict] = {}
    snapshots: dict[str, NodeSnapshot] = {}
    for node in inventory.nodes:
        connection = next(
            (CONNECTION_FAULTS[f.kind] for f in cluster.faults_on(node.name) if f.kind in CONNECTION_FAULTS), None
        )
        if connection is not None:
            verdicts[node.name] = roll_up(node.name, [unreachable_finding(node.name, connection)])
            snapshots[node.name] = NodeSnapshot()
            continue
        ctx = SimContext(node=build_node(cluster, node.name), cluster=cluster, invocation=1)
        outcomes = {}
        for spec in probes:
            if probe_events:
                events.append(ProbeStarted(sweep_id=sweep_id, node=node.name, probe=spec.id))
            outcome = _outcome(spec, ctx, store, sweep_id)
            outcomes[spec.id] = outcome
            if probe_events:
                finished = ProbeFinished(
                    sweep_id=sweep_id,
                    node=node.name,
                    probe=spec.id,
                    ok=outcome.usable,
                    problem=outcome.problem,
                    duration_s=0.0,
                    run_id=outcome.run_id,
                )
                events.append(finished)
        facts[node.name] = build_facts(node, inventory.pools[node.pool].pin, outcomes)
    _judge(inventory, packs, facts, verdicts, snapshots)
    for node in inventory.nodes:
        verdict = verdicts[node.name]
        if store is not None:
            store.record_node(sweep_id, node.pool, verdict, snapshots[node.name].stack)
        events.append(NodeDone(sweep_id=sweep_id, pool=node.pool, verdict=verdict, snapshot=snapshots[node.name]))
    counts = {s: sum(1 for v in verdicts.values() if v.status is s) for s in Status}
    events.append(SweepDone(sweep_id=sweep_id, outcome="done", counts=counts, duration_s=0.0))
    if store is not None:
        store.finish_sweep(sweep_id, "done", {"counts": {k.value: v for k, v in counts.items()}})
    return SyntheticFleet(inventory, cluster, events, verdicts)


def _judge(
    inventory: Inventory,
    packs: dict[str, CheckPack],
    facts: dict[str, NodeFacts],
    verdicts: dict[str, NodeVerdict],
    snapshots: dict[str, NodeSnapshot],
) -> None:
    fleet: dict[str, list[Finding]] = {}
    for pool in inventory.pools.values():
        members: list[Node] = [n for n in inventory.nodes if n.pool == pool.name and n.name in facts]
        pack = packs.get(pool.gpu_model)
        if pack is None or not members:
            continue
        for finding in evaluate_fleet(pack, [facts[n.name] for n in members]):
            fleet.setdefault(finding.subject.node, []).append(finding)
    for name, node_facts in facts.items():
        pack = packs[node_facts.node.gpu_model]
        run_ids = {p: o.run_id for p, o in node_facts.outcomes.items() if o.run_id is not None}
        findings = evaluate_node(pack, node_facts, run_ids) + fleet.get(name, [])
        verdicts[name] = roll_up(name, findings)
        snapshot = snapshot_of(node_facts)
        if not snapshot.pair_gbps:
            snapshot = snapshot.model_copy(update={"pair_gbps": _pairs_from_matrix(node_facts)})
        snapshots[name] = snapshot


def renamed(event: Event, names: dict[str, str], *, share_passing: bool = False) -> Event:
    """``event`` with node names mapped through ``names`` (to grow a fleet by cloning nodes).

    With ``share_passing`` the PASS findings are shared with the original (their subject still names
    it): a cheap clone for streaming benchmarks, where the console keeps only the other findings.
    """
    if isinstance(event, NodeDone):
        verdict = event.verdict

        def moved(finding: Finding) -> Finding:
            if share_passing and finding.status is Status.PASS:
                return finding
            subject = finding.subject.model_copy(update={"node": names[finding.subject.node]})
            return finding.model_copy(update={"subject": subject})

        findings = [moved(f) for f in verdict.findings]
        clone = verdict.model_copy(update={"node": names[verdict.node], "findings": findings})
        return event.model_copy(update={"verdict": clone})
    if isinstance(event, ProbeStarted | ProbeFinished):
        return event.model_copy(update={"node": names[event.node]})
    if isinstance(event, SweepStarted):
        return event.model_copy(update={"nodes": [names[n] for n in event.nodes]})
    return event
