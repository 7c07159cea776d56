"""Simulated clusters with exactly one chosen fault, served over real SSH, and an engine on them."""

from __future__ import annotations

import asyncio
from pathlib import Path

from console.checks import load_packs
from console.inventory import load_inventory
from console.model.findings import NodeVerdict
from console.model.multinode import MultinodeResult
from console.sim.faults import FaultKind
from console.sim.launcher import SimCluster, start_sim_cluster
from console.sim.serve import ServeOptions, plan_cluster
from console.sim.specs import GpuModel
from console.store import Store
from console.sweep import SweepEngine
from console.sweep.catalog import ProbeSet
from console.sweep.cluster_sweep import sweep_cluster
from console.sweep.multinode import MultinodeOptions
from console.transport.connect import transport_for

TIME_FACTOR = 400.0


def seed_with_one_fault(kind: FaultKind, nodes: int, model: GpuModel) -> int:
    """A seed whose ``random:1/nodes`` fault set is one ``kind`` fault, not on the first node."""
    for seed in range(5000):
        options = ServeOptions(nodes=nodes, models=[model], faults=f"random:{1 / nodes}", seed=seed, state_dir=Path())
        faults = plan_cluster(options).cluster.faults
        if len(faults) == 1 and faults[0].kind is kind and faults[0].node != "sim001":
            return seed
    raise AssertionError(f"no seed gives a lone {kind} fault on {nodes} nodes")


def start_cluster(nodes: int, model: GpuModel, fault: FaultKind | None = None) -> SimCluster:
    """A one-pool cluster of ``model``: healthy, or with one ``fault`` on a node other than the first."""
    if fault is None:
        return start_sim_cluster(nodes, model.value.lower(), faults="none", time_factor=TIME_FACTOR)
    seed = seed_with_one_fault(fault, nodes, model)
    return start_sim_cluster(
        nodes, model.value.lower(), faults=f"random:{1 / nodes}", seed=seed, time_factor=TIME_FACTOR
    )


def engine_for(sim: SimCluster, store_path: Path) -> SweepEngine:
    """An engine over SSH to the simulated nodes, recording into ``store_path``."""
    inventory = load_inventory(str(sim.inventory_path))
    return SweepEngine(inventory, transport_for(inventory), load_packs(), Store(store_path))


def multinode_sweep(scenario: Path, options: MultinodeOptions) -> tuple[dict[str, NodeVerdict], MultinodeResult]:
    """The multinode level (the nodes' standard probes, then the pair runs) over the simulated cluster of the
    ``scenario`` file, as ``sweep --probes multinode`` runs it: every node's verdict and the multi-node result."""
    with start_sim_cluster(scenario=scenario, time_factor=TIME_FACTOR) as sim:
        inventory = load_inventory(sim.inventory_path)
        engine = SweepEngine(inventory, transport_for(inventory), load_packs(), probe_timeout_cap_s=60)

        async def sweep() -> tuple[dict[str, NodeVerdict], MultinodeResult | None]:
            try:
                result, pairs = await sweep_cluster(engine, inventory.nodes, ProbeSet.MULTINODE, multinode=options)
                return result.verdicts, pairs
            finally:
                await engine.close()

        verdicts, pairs = asyncio.run(sweep())
    assert pairs is not None and pairs.runs
    return verdicts, pairs
