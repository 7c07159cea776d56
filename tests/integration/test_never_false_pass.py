"""The first rule, as a property over the whole fault catalogue: a faulted node is never PASS.

Every behaviour fault of the simulator (hang, SIGTERM ignored, killed, garbage, empty, cut, huge,
non-UTF-8, non-zero exit, missing tool, dropped connection, a trickle slower than the timeout) is put
on every probe of every level, one node each, through a scenario file; every hardware and connection
fault goes on a node of its own at the lowest level that can see it. Each level is swept, over real
SSH against the simulator, under a probe-timeout cap, in batches. A node may be WARN, FAIL or UNKNOWN, never PASS,
except for the few cases named in ``EXCEPTIONS``, each with the reason it is a true answer. A
healthy node per level must PASS, so the property cannot hold by everything being UNKNOWN. The amdsmi
library's own faults (a call that raises, values left out, no library) are put on ``check-local``.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from console.checks import load_packs
from console.cli import main
from console.inventory import load_inventory
from console.inventory.model import PoolFramework
from console.model.findings import NodeVerdict, Status
from console.model.multinode import MultinodeResult
from console.model.workload import ContainerSpec
from console.sim.faults import (
    BEHAVIOUR_KINDS,
    FABRIC_KINDS,
    PLACED_KINDS,
    Fault,
    FaultKind,
    FaultScope,
    fault_scope,
)
from console.sim.launcher import SimCluster, start_sim_cluster
from console.sim.scenario import write_live_faults
from console.store import Store
from console.sweep import SweepEngine
from console.sweep.catalog import ProbeSet, ProbeSpec, probes_for
from console.sweep.multinode import MultinodeOptions
from console.sweep.node_report import LocalCheckReport
from console.sweep.pairing import Pairing
from console.transport.connect import transport_for
from tests.fake_amdsmi import fake_amdsmi_path, node_outputs, node_values, write_fake_amdsmi
from tests.integration.test_workload_sweep import WORKLOAD
from tests.multinode.localnodes import local_cluster, shim_dir
from tests.multinode.simcluster import multinode_sweep

__all__ = ["fake_amdsmi_path"]  # the fixture, used by name

CAP_S = 8.0  # the probe-timeout cap: a hung probe costs this, not its catalogue timeout
# Nodes swept at once: the cap counts from a node's start, connecting included, and a busy machine
# serving 230 nodes at once kept healthy probes past a 4 s cap. Batches keep every node's share small.
BATCH = 48
OUTPUT_LIMIT = 1 << 20  # a huge output is 3 MiB here, over this limit: the same cut, cheaper
# framework stands apart (quick + torch): its new probe is the torch one, swept last.
LEVELS = (ProbeSet.QUICK, ProbeSet.STANDARD, ProbeSet.FULL, ProbeSet.FRAMEWORK)
# Behaviour faults need no GPU; each gets the parameters that make it a fault of the named probe.
PARAMS: dict[FaultKind, dict[str, object]] = {
    FaultKind.HUGE_OUTPUT: {"mb": 3},
    FaultKind.SLOW_TRICKLE: {"seconds": 4000},  # at time factor 400: 10 s, past the cap
    FaultKind.EXIT_CODE: {"status": 3},
}
# Hardware and connection faults, and the level whose probes see them (the rest see them at quick).
HARDWARE_LEVEL: dict[FaultKind, ProbeSet] = {
    FaultKind.HBM_BANDWIDTH_LOW: ProbeSet.FULL,
    FaultKind.RVS_GST_LOW: ProbeSet.FULL,
    FaultKind.RCCL_WRONG: ProbeSet.STANDARD,
    FaultKind.RCCL_LOW_BUSBW: ProbeSet.STANDARD,
    FaultKind.RCCL_HANG: ProbeSet.STANDARD,
    FaultKind.RCCL_LATENCY_HIGH: ProbeSet.STANDARD,
    FaultKind.TRANSFERBENCH_PAIR_SLOW: ProbeSet.STANDARD,
    FaultKind.RCCL_UNVALIDATED: ProbeSet.STANDARD,
    FaultKind.RCCL_FEWER_RANKS: ProbeSet.STANDARD,
    FaultKind.RCCL_ROW_REPEATED: ProbeSet.STANDARD,
    FaultKind.RCCL_HEADER_LINE_LOST: ProbeSet.STANDARD,
    FaultKind.RVS_PEQT_WORD: ProbeSet.FULL,
    FaultKind.RVS_GPU_UNSEEN: ProbeSet.FULL,
    FaultKind.RVS_STOPS_EARLY: ProbeSet.FULL,
    FaultKind.TRANSFERBENCH_PAIR_NA: ProbeSet.STANDARD,
    FaultKind.TRANSFERBENCH_GPU_UNSEEN: ProbeSet.STANDARD,
    FaultKind.TRANSFERBENCH_HEALTHCHECK_SHORT: ProbeSet.STANDARD,
    FaultKind.TRANSFERBENCH_P2P_ROW_LOST: ProbeSet.STANDARD,
    **{kind: ProbeSet.FRAMEWORK for kind in FaultKind if kind.value.startswith("torch_")},
}
# (fault kind, probe id) cases where PASS is the true answer, and why.
EXCEPTIONS: dict[tuple[FaultKind, str], str] = {
    (FaultKind.EMPTY_OUTPUT, "host.dkms"): "dkms status prints nothing where amdgpu is the kernel's own driver",
}
# Node faults (no probe) where PASS is the true answer, and why.
NODE_EXCEPTIONS: dict[FaultKind, str] = {
    FaultKind.CPER_NOT_ENABLED: "a driver without a CPER ring has no records to read: the CPER checks SKIP "
    "and the ECC counters of amd-smi metric judge the same errors",
}


@dataclass(frozen=True)
class Case:
    """One node of the scenario: a fault on it (or none), and the level it is swept at."""

    node: str
    level: ProbeSet
    kind: FaultKind | None
    probe: ProbeSpec | None = None

    @property
    def label(self) -> str:
        what = self.kind.value if self.kind else "healthy"
        return f"{what} on {self.probe.id}" if self.probe else what


def _new_probes(level: ProbeSet) -> list[ProbeSpec]:
    below = {p.id for lower in LEVELS[: LEVELS.index(level)] for p in probes_for(lower)}
    return [p for p in probes_for(level) if p.id not in below]


def _cases() -> list[Case]:
    cases: list[Case] = []

    def add(level: ProbeSet, kind: FaultKind | None, probe: ProbeSpec | None = None) -> None:
        cases.append(Case(f"sim{len(cases) + 1:03d}", level, kind, probe))

    for level in LEVELS:
        add(level, None)
        for probe in _new_probes(level):
            for kind in sorted(BEHAVIOUR_KINDS):
                add(level, kind, probe)
    for kind in sorted(set(FaultKind) - BEHAVIOUR_KINDS - PLACED_KINDS):
        add(HARDWARE_LEVEL.get(kind, ProbeSet.QUICK), kind)
    return cases


CASES = _cases()


def _toml_value(value: object) -> str:
    return json.dumps(value) if not isinstance(value, bool) else str(value).lower()


def _scenario(cases: list[Case]) -> str:
    lines = ['name = "never-false-pass"', "seed = 16", "time_factor = 400", ""]
    lines += ["[[nodes]]", f'names = "sim[001-{len(cases):03d}]"', 'model = "MI300X"', 'pool = "mi300x"', ""]
    for case in cases:
        if case.kind is None:
            continue
        lines += ["[[faults]]", f'nodes = "{case.node}"', f'kind = "{case.kind.value}"']
        if case.probe is not None:
            argv = case.probe.argv
            params = {"program": argv[0], "args": " ".join(argv[1:]), **PARAMS.get(case.kind, {})}
            lines += [f"{key} = {_toml_value(value)}" for key, value in params.items()]
        elif fault_scope(case.kind) is FaultScope.LINK:
            lines += ["gpu = 1", "peer = 4"]
        elif fault_scope(case.kind) is FaultScope.GPU:
            lines += ["gpu = 3"]
        lines.append("")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, NodeVerdict]]:
    scenario = tmp_path_factory.mktemp("scenario") / "never-false-pass.toml"
    scenario.write_text(_scenario(CASES), encoding="utf-8")
    with start_sim_cluster(scenario=scenario, time_factor=400) as sim:
        yield asyncio.run(_sweep_each_level(sim))


async def _sweep_each_level(sim: SimCluster) -> dict[str, NodeVerdict]:
    inventory = load_inventory(sim.inventory_path)
    engine = SweepEngine(
        inventory,
        transport_for(inventory),
        load_packs(),
        probe_timeout_cap_s=CAP_S,
        max_probe_output_bytes=OUTPUT_LIMIT,
        steady_max_age_s=0,
    )
    verdicts: dict[str, NodeVerdict] = {}
    try:
        for level in LEVELS:
            nodes = [inventory.node(c.node) for c in CASES if c.level is level]
            for first in range(0, len(nodes), BATCH):
                result = await engine.run(nodes[first : first + BATCH], level=level)
                verdicts.update(result.verdicts)
    finally:
        await engine.close()
    return verdicts


def test_the_catalogue_covers_every_fault_kind_and_every_probe() -> None:
    kinds = {c.kind for c in CASES if c.kind is not None} | {kind for _, kind, _ in FABRIC_CASES if kind}
    kinds |= {kind for _, _, kind, _ in CONTAINER_CASES if kind}
    assert kinds == set(FaultKind)
    assert {c.probe.id for c in CASES if c.probe} == {p.id for level in LEVELS for p in probes_for(level)}


def test_a_healthy_node_passes_at_every_level(verdicts: dict[str, NodeVerdict]) -> None:
    for case in CASES:
        if case.kind is None:
            verdict = verdicts[case.node]
            assert verdict.status is Status.PASS, f"{case.level.value}: {verdict.reason}"


def test_no_faulted_node_is_pass(verdicts: dict[str, NodeVerdict]) -> None:
    false_pass = []
    for case in CASES:
        if case.kind is None or verdicts[case.node].status is not Status.PASS:
            continue
        if case.probe is not None and (case.kind, case.probe.id) in EXCEPTIONS:
            continue
        if case.probe is None and case.kind in NODE_EXCEPTIONS:
            continue
        false_pass.append(f"{case.label} at {case.level.value}")
    assert not false_pass, f"{len(false_pass)} faulted nodes read PASS:\n" + "\n".join(false_pass)


def test_the_named_exceptions_are_still_true_answers(verdicts: dict[str, NodeVerdict]) -> None:
    """An exception that no longer reads PASS is no longer needed: the list says only what is true."""
    excepted = [c for c in CASES if c.probe is not None and (c.kind, c.probe.id) in EXCEPTIONS]
    excepted += [c for c in CASES if c.probe is None and c.kind in NODE_EXCEPTIONS]
    assert len(excepted) == len(EXCEPTIONS) + len(NODE_EXCEPTIONS)
    assert [c.label for c in excepted if verdicts[c.node].status is not Status.PASS] == []


def test_a_probe_fault_is_blamed_on_its_probe(verdicts: dict[str, NodeVerdict]) -> None:
    """The non-PASS finding names the faulted probe (its own finding or a check reading it), so the
    operator reads which command failed, not a neighbour's name."""
    unattributed = []
    for case in CASES:
        if case.probe is None or case.kind is None or (case.kind, case.probe.id) in EXCEPTIONS:
            continue
        verdict = verdicts[case.node]
        named = [
            f
            for f in verdict.findings
            if f.status is not Status.PASS
            and (f.evidence.probe == case.probe.id or f.family == "reachability" or case.probe.id in f.message)
        ]
        if not named:
            unattributed.append(f"{case.label}: {verdict.status.value} {verdict.reason}")
    assert not unattributed, "\n".join(unattributed)


# -- a sweep cut short by its deadline ----------------------------------------------------------------------
# Each quick probe hangs on a node of its own, healthy otherwise, and on another that also has uncorrectable
# ECC; the sweep's deadline ends them all. Each is judged on the probes that finished: never PASS, the hung
# probe UNKNOWN, and FAIL wherever the ECC probe had answered.
CUT_DEADLINE_S = 10.0
ECC_PROBE = "amdsmi.metric"


def test_a_sweep_cut_by_its_deadline_is_never_pass_and_keeps_the_fail_found(tmp_path: Path) -> None:
    quick = probes_for(ProbeSet.QUICK)
    cases = [Case("sim001", ProbeSet.QUICK, None)]
    for probe in quick:
        for _ in ("healthy", "ecc"):
            cases.append(Case(f"sim{len(cases) + 1:03d}", ProbeSet.QUICK, FaultKind.COMMAND_HANG, probe))
    ecc = {c.node for c in cases[2::2]}
    scenario = _scenario(cases) + "".join(
        f'\n[[faults]]\nnodes = "{node}"\nkind = "ecc_uncorrectable"\ngpu = 3\n' for node in sorted(ecc)
    )
    path = tmp_path / "cut.toml"
    path.write_text(scenario, encoding="utf-8")
    with start_sim_cluster(scenario=path, time_factor=400) as sim:
        inventory = load_inventory(sim.inventory_path)

        async def sweep() -> tuple[str, dict[str, NodeVerdict]]:
            engine = SweepEngine(inventory, transport_for(inventory), load_packs(), steady_max_age_s=0)
            try:
                result = await engine.run(level=ProbeSet.QUICK, deadline_s=CUT_DEADLINE_S)
            finally:
                await engine.close()
            return result.outcome, result.verdicts

        outcome, verdicts = asyncio.run(sweep())
    assert outcome == "deadline"
    assert verdicts["sim001"].status is Status.PASS, verdicts["sim001"].reason
    wrong, failed = [], 0
    for case in cases[1:]:
        verdict = verdicts[case.node]
        assert case.probe is not None
        hung = [f for f in verdict.findings if f.check_id == f"probe.{case.probe.id}"]
        if verdict.status is Status.PASS or [f.status for f in hung] != [Status.UNKNOWN]:
            wrong.append(f"{case.node} hang on {case.probe.id}: {verdict.status.value} {verdict.reason}")
        answered = not any(f.check_id == f"probe.{ECC_PROBE}" for f in verdict.findings)
        failed += case.node in ecc and verdict.status is Status.FAIL
        if case.node in ecc and answered and verdict.status is not Status.FAIL:
            wrong.append(f"{case.node} ECC and a hang on {case.probe.id}: {verdict.status.value} {verdict.reason}")
    assert not wrong, "\n".join(wrong)
    # Only a hang ahead of the ECC probe in its bundle keeps it from answering: most of these nodes FAIL.
    assert failed >= len(ecc) // 2, f"only {failed} of {len(ecc)} nodes with uncorrectable ECC read FAIL"


# -- faults of the fabric between nodes -------------------------------------------------------------------
# Only a multi-node run sees them: the multinode level (the nodes' standard probes, then rccl-tests over
# node pairs, as `sweep --probes multinode` and the console's `m` run it) on one pool with three racks.
# (node, fault or None, what the node must read): a healthy node of the reference's rack passes; the
# reference reads WARN only for the path the flaky link broke.
FABRIC_CASES: list[tuple[str, FaultKind | None, set[Status]]] = [
    ("sim001", None, {Status.PASS, Status.WARN}),
    ("sim002", None, {Status.PASS}),
    ("sim003", None, {Status.PASS}),
    # Behind a slow uplink: they pass with each other, so the rack is named and they read WARN.
    ("sim004", FaultKind.UPLINK_SLOW, {Status.WARN}),
    ("sim005", FaultKind.UPLINK_SLOW, {Status.WARN}),
    ("sim006", FaultKind.NIC_SLOW, {Status.FAIL}),
    # The flaky link breaks its first run, then passes the second pass: a suspect path, never PASS.
    ("sim007", FaultKind.RCCL_FLAKY, {Status.WARN, Status.FAIL}),
    # Its own checks FAIL (a fatal CPER record), its fabric is fine: its runs may be clean, but it never
    # vouches for another node (a known-good partner, the pool's reference, an isolation baseline).
    ("sim008", FaultKind.CPER_RECORD, {Status.FAIL}),
]
FABRIC_PARAMS: dict[FaultKind, str] = {
    FaultKind.UPLINK_SLOW: 'uplink = "r02"',
    FaultKind.RCCL_FLAKY: "first = 1",
    FaultKind.CPER_RECORD: "gpu = 2",
}


def _fabric_scenario() -> str:
    lines = ['name = "never-false-pass-fabric"', "seed = 16", "time_factor = 400", ""]
    # (nodes, rack, rail group): sim008 shares its rail group with one healthy node only, so rail pairing puts
    # the two together and their clean run is the one a failed node must not clear anyone by. Each rack has
    # one leaf switch (sw01 in r01...), so switch pairing has groups to keep its pairs in, as rack pairing does.
    layout = (
        ("sim001", "r01", "ra1"),
        ("sim002", "r01", "ra2"),
        ("sim003", "r01", "ra1"),
        ("sim[004-005]", "r02", "ra1"),
        ("sim[006-007]", "r03", "ra1"),
        ("sim008", "r01", "ra2"),
    )
    for names, rack, rail in layout:
        lines += ["[[nodes]]", f'names = "{names}"', 'model = "MI300X"', 'pool = "mi300x"']
        lines += [f'labels = {{ rack = "{rack}", switch = "sw{rack[1:]}", rail = "{rail}" }}', ""]
    for node, kind, _ in FABRIC_CASES:
        if kind is not None:
            lines += ["[[faults]]", f'nodes = "{node}"', f'kind = "{kind.value}"', FABRIC_PARAMS.get(kind, ""), ""]
    return "\n".join(lines)


def _fabric_sweep(tmp_path: Path, pairing: Pairing) -> tuple[dict[str, NodeVerdict], MultinodeResult]:
    scenario = tmp_path / "fabric.toml"
    scenario.write_text(_fabric_scenario(), encoding="utf-8")
    return multinode_sweep(scenario, MultinodeOptions(pairing=pairing))


def _vouched_by_unfit(verdicts: dict[str, NodeVerdict], pairs: MultinodeResult) -> list[str]:
    """Every place a node whose own (single-node) checks did not pass vouched for another node: a second-pass
    or leftover partner, the pool's reference, an isolation baseline, or a clean run that cleared a node."""
    unfit = {
        node
        for node, verdict in verdicts.items()
        if any(f.status in (Status.FAIL, Status.UNKNOWN) for f in verdict.findings if f.check_id != "rccl.multinode")
    }
    named = {c.node for c in pairs.culprits}
    by_seq = {run.seq: run for run in pairs.runs}
    wrong = [
        f"run #{r.seq} {r.purpose}: partner {r.nodes[0]}" for r in pairs.runs if r.partner_from and r.nodes[0] in unfit
    ]
    wrong += [f"pool {p.pool}: reference {p.reference}" for p in pairs.pools if p.reference in unfit]
    isolation = [r for r in pairs.runs if r.purpose == "isolation"]
    wrong += [f"isolation run #{r.seq} with {n}" for r in isolation for n in r.nodes if n in unfit and n not in named]
    for standing in pairs.stragglers:
        if standing.status is not Status.PASS:
            continue
        for seq in standing.decided_by:
            others = [n for n in by_seq[seq].nodes if n != standing.node]
            if others and all(n in unfit for n in others):
                wrong.append(f"{standing.node} cleared by #{seq} with {', '.join(others)}")
    return wrong


def test_a_fabric_fault_is_never_pass_at_the_multinode_level(tmp_path: Path) -> None:
    verdicts, pairs = _fabric_sweep(tmp_path, Pairing.REFERENCE)
    wrong = [
        f"{node} ({kind.value if kind else 'healthy'}): {verdicts[node].status.value} {verdicts[node].reason}"
        for node, kind, allowed in FABRIC_CASES
        if verdicts[node].status not in allowed
    ]
    assert not wrong, "\n".join(wrong)
    assert "sim006" in {c.node for c in pairs.culprits}
    assert [(r.rack, r.nodes) for r in pairs.racks] == [("r02", ["sim004", "sim005"])]
    assert not _vouched_by_unfit(verdicts, pairs)


@pytest.mark.parametrize("pairing", [p for p in Pairing if p is not Pairing.REFERENCE])
def test_a_fabric_fault_is_never_pass_and_a_failed_node_never_vouches_in_any_pairing_mode(
    tmp_path: Path, pairing: Pairing
) -> None:
    """Every paired mode: no faulted node reads PASS, neither its node verdict nor its multi-node finding
    (the nodes behind the slow uplink, whose pairs a rack or switch pairing keeps inside the rack; the flaky
    link, whose one broken run may be with a faulted node; the slow NIC, named and not its switch's uplink),
    and a node whose own checks failed (sim008's fatal CPER record, sim006's slow port) reads FAIL and is never
    anyone's known-good partner, reference, isolation baseline or clearing run.

    The healthy nodes are held to less than in reference pairing: which run the flaky link breaks depends on
    the order side-by-side pairs start in, and its partner then reads WARN with it (a suspect path)."""
    verdicts, pairs = _fabric_sweep(tmp_path, pairing)
    standing = {s.node: s for s in pairs.stragglers}
    # sim008's fabric is fine (its runs may be clean): only its node verdict is held, below.
    fabric = [node for node, kind, _ in FABRIC_CASES if kind in (*FABRIC_KINDS, FaultKind.NIC_SLOW)]
    wrong = [
        f"{node}: node {verdicts[node].status.value}, multi-node {standing[node].status.value} {standing[node].how}"
        for node in fabric
        if Status.PASS in (verdicts[node].status, standing[node].status)
    ]
    assert not wrong, f"{pairing.value} pairing:\n" + "\n".join(wrong)
    for node in ("sim006", "sim008"):
        assert verdicts[node].status is Status.FAIL, f"{pairing.value} pairing: {node} {verdicts[node].reason}"
    # The slow NIC is never taken for its rack's or switch's uplink (it is slow inside its rack too), and no
    # healthy node is named. Whether the uplink of r02 is named depends on the mode: with two racks of clean
    # nodes only, rack pairing cannot tell which end of a slow run between them is slow, and says so (UNKNOWN).
    assert not any("sim006" in r.nodes for r in pairs.racks), f"{pairing.value} pairing: {pairs.racks}"
    healthy = {node for node, kind, _ in FABRIC_CASES if kind is None}
    assert not healthy & {c.node for c in pairs.culprits}, f"{pairing.value} pairing: {pairs.culprits}"
    wrong = _vouched_by_unfit(verdicts, pairs)
    assert not wrong, f"{pairing.value} pairing:\n" + "\n".join(wrong)
    # The plan did judge with known-good partners: the property does not hold by no run passing at all.
    assert any(run.partner_from for run in pairs.runs), f"{pairing.value} pairing ran no second pass"


# -- the framework probe in a pool's container ------------------------------------------------------------
# A pool that names its framework's container (``[pools.framework] container``) runs the torch script in
# it: the runtime's own faults (image absent and its pull refused, the runtime not installed, no GPU
# passed into the container) and the node's torch faults met through the container are never PASS; a
# healthy node there is PASS. One pool per runtime: podman and docker (status 125), apptainer (255).
CONTAINERS = {
    "ctr-podman": ContainerSpec(runtime="podman", image="docker.io/rocm/pytorch@sha256:" + "5e" * 32),
    "ctr-docker": ContainerSpec(runtime="docker", image="rocm/pytorch:rocm6.4.1_ubuntu22.04_py3.10_pytorch_2.7.1"),
    "ctr-apptainer": ContainerSpec(runtime="apptainer", image="/shared/images/pytorch-rocm6.4.sif"),
}
# (node, pool, fault or None, fault parameters)
CONTAINER_CASES: list[tuple[str, str, FaultKind | None, dict[str, object]]] = [
    ("sim001", "ctr-podman", None, {}),
    ("sim002", "ctr-podman", FaultKind.CONTAINER_IMAGE_MISSING, {}),
    ("sim003", "ctr-podman", FaultKind.CONTAINER_NO_GPU, {}),
    ("sim004", "ctr-podman", FaultKind.TOOL_MISSING, {"program": "podman"}),
    ("sim005", "ctr-podman", FaultKind.TORCH_MISSING, {}),
    ("sim006", "ctr-podman", FaultKind.TORCH_CPU_ONLY, {}),
    ("sim007", "ctr-podman", FaultKind.TORCH_GEMM_NAN, {"gpu": 3}),
    ("sim008", "ctr-podman", FaultKind.EXIT_CODE, {"program": "podman", "status": 125}),
    ("sim009", "ctr-docker", None, {}),
    ("sim010", "ctr-docker", FaultKind.CONTAINER_IMAGE_MISSING, {}),
    ("sim011", "ctr-docker", FaultKind.CONTAINER_NO_GPU, {}),
    ("sim012", "ctr-apptainer", None, {}),
    ("sim013", "ctr-apptainer", FaultKind.CONTAINER_IMAGE_MISSING, {}),
    ("sim014", "ctr-apptainer", FaultKind.CONTAINER_NO_GPU, {}),
    ("sim015", "ctr-apptainer", FaultKind.TOOL_MISSING, {"program": "apptainer"}),
    # A slower torch build in the pool's own image (the simulator slows the GEMM in that image only).
    (
        "sim016",
        "ctr-podman",
        FaultKind.TORCH_GEMM_SLOW,
        {"gpu": 3, "factor": 0.3, "image": CONTAINERS["ctr-podman"].image},
    ),
]


def _container_scenario() -> str:
    lines = ['name = "never-false-pass-containers"', "seed = 16", "time_factor = 400", ""]
    for pool in CONTAINERS:
        names = ",".join(node for node, where, _, _ in CONTAINER_CASES if where == pool)
        lines += ["[[nodes]]", f'names = "{names}"', 'model = "MI300X"', f'pool = "{pool}"', ""]
    for node, _, kind, params in CONTAINER_CASES:
        if kind is not None:
            lines += ["[[faults]]", f'nodes = "{node}"', f'kind = "{kind.value}"']
            lines += [f"{key} = {_toml_value(value)}" for key, value in params.items()]
            lines.append("")
    return "\n".join(lines)


def test_the_framework_probe_in_a_container_is_never_false_pass(tmp_path: Path) -> None:
    scenario = tmp_path / "containers.toml"
    scenario.write_text(_container_scenario(), encoding="utf-8")
    with start_sim_cluster(scenario=scenario, time_factor=400) as sim:
        inventory = load_inventory(sim.inventory_path)
        for pool, container in CONTAINERS.items():
            inventory.pools[pool].framework = PoolFramework(container=container)
        engine = SweepEngine(
            inventory, transport_for(inventory), load_packs(), probe_timeout_cap_s=CAP_S, steady_max_age_s=0
        )

        async def sweep() -> dict[str, NodeVerdict]:
            try:
                return (await engine.run(inventory.nodes, level=ProbeSet.FRAMEWORK)).verdicts
            finally:
                await engine.close()

        verdicts = asyncio.run(sweep())
    wrong = []
    for node, pool, kind, _ in CONTAINER_CASES:
        verdict = verdicts[node]
        if (verdict.status is Status.PASS) is not (kind is None):
            wrong.append(
                f"{node} in {pool} ({kind.value if kind else 'healthy'}): {verdict.status.value} {verdict.reason}"
            )
    assert not wrong, "\n".join(wrong)
    # The image the framework ran in is in each healthy node's stack, named digest, tag or file as it was.
    refs = {node: engine.facts[node].stack for node, _, kind, _ in CONTAINER_CASES if kind is None}
    assert {n: (s["framework_image"], s["framework_image_ref"]) for n, s in refs.items()} == {
        "sim001": (CONTAINERS["ctr-podman"].image, "digest"),
        "sim009": (CONTAINERS["ctr-docker"].image, "tag"),
        "sim012": (CONTAINERS["ctr-apptainer"].image, "file"),
    }


# -- faults that appear between sweeps -----------------------------------------------------------------
# A node judged healthy, then faulted live (as a storm or a flap does), is swept again the way the console
# sweeps a fleet it already knows: connections kept, slow-changing probes reused while the node's stamp
# is unchanged, earlier figures read from the history. The fault must show.
GROWN_COUNT = 60  # correctable ECC 30 -> 60: still under the total's line (100), only the growth tells


def _appearing() -> list[tuple[str, Fault]]:
    cases: list[tuple[str, Fault]] = []

    def add(kind: FaultKind, **params: str | int) -> None:
        node = f"sim{len(cases) + 2:03d}"  # sim001 stays healthy, the reference
        scope = fault_scope(kind)
        gpu = {FaultScope.LINK: 1, FaultScope.GPU: 3}.get(scope)
        peer = 4 if scope is FaultScope.LINK else None
        cases.append((node, Fault(kind=kind, node=node, gpu=gpu, peer=peer, params=params)))

    for kind in sorted(set(FaultKind) - BEHAVIOUR_KINDS - PLACED_KINDS):
        if HARDWARE_LEVEL.get(kind, ProbeSet.QUICK) is ProbeSet.QUICK:
            add(kind)
    for probe in probes_for(ProbeSet.QUICK):
        add(FaultKind.COMMAND_HANG, program=probe.argv[0], args=" ".join(probe.argv[1:]))
    add(FaultKind.ECC_CORRECTABLE_STORM, count=GROWN_COUNT)  # on top of the 30 every node starts with
    return cases


APPEARING = _appearing()
# Cases where the second sweep may read PASS, and why it is the true answer.
STEADY_REUSE = "a slow-changing probe is reused while the node's boot id and loaded versions are unchanged"
APPEARING_EXCEPTIONS = {
    FaultKind.AUTH_FAILURE: "sshd checks keys at login: the console's connection, authenticated before the "
    "keys changed, still runs the probes and the hardware is healthy; the next login says so",
    **NODE_EXCEPTIONS,
}


def test_a_fault_that_appears_between_sweeps_is_never_pass(tmp_path: Path) -> None:
    names = f"sim[001-{len(APPEARING) + 1:03d}]"
    scenario = tmp_path / "appearing.toml"
    scenario.write_text(
        f'time_factor = 400\n[[nodes]]\nnames = "{names}"\nmodel = "MI300X"\n'
        f'[[faults]]\nnodes = "{names}"\nkind = "ecc_correctable_storm"\ngpu = 3\ncount = 30\n'
    )
    with start_sim_cluster(scenario=scenario) as sim:
        inventory = load_inventory(sim.inventory_path)
        engine = SweepEngine(
            inventory, transport_for(inventory), load_packs(), Store(tmp_path / "h.sqlite"), probe_timeout_cap_s=CAP_S
        )

        async def sweep() -> dict[str, NodeVerdict]:
            return dict((await engine.run()).verdicts)

        async def both() -> tuple[dict[str, NodeVerdict], dict[str, NodeVerdict]]:
            try:
                before = await sweep()
                write_live_faults(sim.state_dir, [fault for _, fault in APPEARING])
                await asyncio.to_thread(sim.wait_for_generation, 2)
                return before, await sweep()
            finally:
                await engine.close()

        before, after = asyncio.run(both())
    assert {v.status for v in before.values()} == {Status.PASS}, "every node starts healthy (30 correctable)"
    slow = {p.id for p in probes_for(ProbeSet.QUICK) if p.slow_changing}
    false_pass: list[str] = []
    reused: list[str] = []
    for node, fault in APPEARING:
        if after[node].status is not Status.PASS or fault.kind in APPEARING_EXCEPTIONS:
            continue
        probe = next((p.id for p in probes_for(ProbeSet.QUICK) if " ".join(p.argv[1:]) == fault.params.get("args")
                      and p.argv[0] == fault.params.get("program")), None)  # fmt: skip
        if probe is not None and probe in slow:
            reused.append(probe)
        else:
            false_pass.append(fault.describe())
    assert after["sim001"].status is Status.PASS
    assert not false_pass, f"{len(false_pass)} faults that appeared read PASS:\n" + "\n".join(false_pass)
    # A hang of a slow-changing probe is met at its next run, not on a warm sweep: STEADY_REUSE. The cat
    # ones share their file with the stamp, which hangs too and makes them run again.
    assert sorted(reused) == ["amdsmi.firmware", "amdsmi.version", "host.kernel"], STEADY_REUSE
    excepted = [n for n, f in APPEARING if f.kind in APPEARING_EXCEPTIONS]
    assert [after[n].status for n in excepted] == [Status.PASS] * len(APPEARING_EXCEPTIONS), (
        "an exception no longer needed goes"
    )


# -- a site's workload ---------------------------------------------------------------------------------
# Workloads are no catalogued probe: the cluster file declares their commands. Every behaviour fault of
# the command a workload runs must leave its node short of PASS too.
# The site workload the workload sweep test judges (an 8 GB all-reduce on its average bus bandwidth).


def test_no_fault_of_a_workloads_command_reads_pass(tmp_path: Path) -> None:
    kinds = sorted(BEHAVIOUR_KINDS)
    lines = ["time_factor = 400", "[[nodes]]", f'names = "sim[001-{len(kinds) + 1:03d}]"', 'model = "MI300X"']
    lines.append('pool = "mi300x"')
    for number, kind in enumerate(kinds, start=2):
        lines += ["[[faults]]", f'nodes = "sim{number:03d}"', f'kind = "{kind.value}"', 'program = "all_reduce_perf"']
        # A workload's output is held to the transport's 16 MiB, not the probes' limit: 20 MiB passes it.
        params = {**PARAMS.get(kind, {}), **({"mb": 20} if kind is FaultKind.HUGE_OUTPUT else {})}
        lines += [f"{key} = {_toml_value(value)}" for key, value in params.items()]
    scenario = tmp_path / "workload-faults.toml"
    scenario.write_text("\n".join(lines) + "\n")
    report = tmp_path / "r.json"
    with start_sim_cluster(scenario=scenario) as sim:
        cluster = tmp_path / "cluster.toml"
        cluster.write_text(sim.inventory_path.read_text() + WORKLOAD)
        args = ["sweep", "-i", str(cluster), "--probes", "workload", "--store", str(tmp_path / "h.sqlite")]
        # --force: every node at once, as these judge each fault's run, not the cap (test_workload_sweep.py).
        main([*args, "--json", str(report), "--force"])
    status = {n["node"]: n["status"] for n in json.loads(report.read_text())["nodes"]}
    assert status["sim001"] == "PASS", "the healthy node runs the workload and passes"
    false_pass = [kind.value for number, kind in enumerate(kinds, start=2) if status[f"sim{number:03d}"] == "PASS"]
    assert not false_pass, f"faults of the workload's command that read PASS: {false_pass}"


# -- CPER faults in every form amd-smi prints ------------------------------------------------------------
# The catalogue above runs on the pool's usual stack (ROCm 6.4.1: the header dump, no AFID). amd-smi 7.0.2
# prints the table with AFIDs and every record: each CPER fault goes on a node of both, a healthy node of
# each release must PASS. (The refactored CLI's --json rows are read only when asked for: tests/sim.)
# Each case is a fault kind and its parameters: a record of a severity the console does not know (amd-smi's
# UNKNOWN) counts as much as a fatal one here, since no listed record may vanish (issue 19).
CPER_CASES: tuple[tuple[FaultKind, dict[str, str]], ...] = (
    (FaultKind.CPER_RECORD, {}),
    (FaultKind.CPER_RECORD, {"severity": "unknown"}),
    (FaultKind.CPER_UNDECODABLE, {}),
    (FaultKind.CPER_FLOOD, {}),
)
CPER_RELEASES = ("6.4.1", "7.0.2")


def _quick_verdicts(scenario: Path, lines: list[str]) -> dict[str, NodeVerdict]:
    """Every node of the scenario ``lines`` (written to ``scenario``) swept once at the quick level."""
    scenario.write_text("\n".join(lines), encoding="utf-8")
    with start_sim_cluster(scenario=scenario, time_factor=400) as sim:
        inventory = load_inventory(sim.inventory_path)
        engine = SweepEngine(inventory, transport_for(inventory), load_packs(), probe_timeout_cap_s=CAP_S)

        async def sweep() -> dict[str, NodeVerdict]:
            try:
                return dict((await engine.run(level=ProbeSet.QUICK)).verdicts)
            finally:
                await engine.close()

        return asyncio.run(sweep())


def _case_name(case: tuple[FaultKind, dict[str, str]] | None) -> str:
    if case is None:
        return "healthy"
    kind, params = case
    return kind.value + "".join(f" {key}={value}" for key, value in params.items())


def test_a_cper_fault_is_never_pass_in_any_form(tmp_path: Path) -> None:
    lines = ['name = "never-false-pass-cper"', "seed = 16", "time_factor = 400", ""]
    cases: list[tuple[str, str, tuple[FaultKind, dict[str, str]] | None]] = []
    for group, rocm in enumerate(CPER_RELEASES):
        first = len(cases) + 1
        cases += [(f"sim{first + i:03d}", rocm, case) for i, case in enumerate((None, *CPER_CASES))]
        lines += ["[[nodes]]", f'names = "sim[{first:03d}-{len(cases):03d}]"', 'model = "MI300X"']
        lines += [f'pool = "p{group}"', f'rocm = "{rocm}"', ""]
    for node, _, case in cases:
        if case is not None:
            kind, params = case
            lines += ["[[faults]]", f'nodes = "{node}"', f'kind = "{kind.value}"', "gpu = 3"]
            lines += [f'{key} = "{value}"' for key, value in params.items()] + [""]
    verdicts = _quick_verdicts(tmp_path / "cper.toml", lines)
    wrong = [
        f"{_case_name(case)} on ROCm {rocm}: {verdicts[node].status.value} {verdicts[node].reason}"
        for node, rocm, case in cases
        if (verdicts[node].status is Status.PASS) != (case is None)
    ]
    assert not wrong, "\n".join(wrong)


# -- XGMI link states amd-smi leaves unsaid, on a node that is not fully connected -----------------------
# The main catalogue puts every fault on MI300X, where every GPU pair has a direct link. On MI250X some GCD
# pairs have none (amd-smi prints N/A for them, rightly): a direct link printed N/A, or a GPU whose status
# row is left out, must still not read PASS, while a healthy MI250X node does. ROCm 6.4.1: the first
# release whose amd-smi lists the link states (the simulator's MI250X default, 6.2.2, has no ``xgmi -l``).
LINK_STATE_CASES: list[tuple[str, FaultKind | None, str]] = [
    ("sim001", None, ""),
    ("sim002", FaultKind.XGMI_LINK_STATE_NA, "gpu = 0, peer = 2"),  # same parity: one direct link
    ("sim003", FaultKind.XGMI_LINK_STATE_NA, "gpu = 4, peer = 5"),  # one OAM's two GCDs: four links
    ("sim004", FaultKind.XGMI_STATUS_ROW_MISSING, "gpu = 2"),
    ("sim005", FaultKind.XGMI_STATUS_ROW_MISSING, "gpu = 0, all = true"),
    ("sim006", FaultKind.XGMI_GPU_UNLISTED, "gpu = 2"),
]


def test_an_unsaid_link_state_is_never_pass_on_mi250x(tmp_path: Path) -> None:
    lines = ['name = "never-false-pass-mi250x"', "seed = 16", "time_factor = 400", ""]
    lines += ["[[nodes]]", f'names = "sim[001-{len(LINK_STATE_CASES):03d}]"', 'model = "MI250X"']
    lines += ['pool = "mi250x"', 'rocm = "6.4.1"', ""]
    for node, kind, where in LINK_STATE_CASES:
        if kind is not None:
            lines += ["[[faults]]", f'nodes = "{node}"', f'kind = "{kind.value}"', *where.split(", "), ""]
    verdicts = _quick_verdicts(tmp_path / "mi250x.toml", lines)
    wrong = [
        f"{kind.value if kind else 'healthy'} ({where}): {verdicts[node].status.value} {verdicts[node].reason}"
        for node, kind, where in LINK_STATE_CASES
        if (verdicts[node].status is Status.PASS) != (kind is None)
    ]
    assert not wrong, "\n".join(wrong)
    for node, kind, _ in LINK_STATE_CASES[1:]:
        # The link check says which links it could not read; no table at all is 6.4's JSON ``[]``, which
        # also fails the probe.
        said = {f.check_id for f in verdicts[node].findings if f.status is Status.UNKNOWN}
        assert "xgmi.link_up" in said and said <= {"xgmi.link_up", "probe.amdsmi.xgmi_status"}, f"{kind}: {said}"


# -- a site's workload on N nodes, through srun ------------------------------------------------------
# srun waits for every task: a task that hangs, is killed, floods its output or runs past the timeout
# must leave its group short of PASS whichever task it is. Every task's result is judged (srun --label):
# a task whose output alone is empty or corrupted leaves its group UNKNOWN, though another task printed
# its result line in full (docs/workloads.md, "N nodes through srun").
N_NODE_WORKLOAD = """
[[workloads]]
name = "pair-train"
pools = ["mi300x"]
nodes = 2
timeout_s = 8
command = ["python3", "/shared/smoke/train.py", "--steps", "100", "--report-prefix", "RESULT "]
[workloads.results]
json_prefix = "RESULT "
[[workloads.criteria]]
figure = "tokens_per_s"
fail_if = "< 40000"
source = "the simulator's MI300X pair: 51234 tok/s"
"""


@pytest.mark.parametrize("task", [0, 1], ids=["first-task", "second-task"])
def test_no_fault_of_one_task_of_an_n_node_workload_reads_pass(tmp_path: Path, task: int) -> None:
    kinds = sorted(BEHAVIOUR_KINDS)
    nodes = 2 * (len(kinds) + 1)  # a healthy pair, then a pair per fault
    lines = ["time_factor = 400", "[[nodes]]", f'names = "sim[001-{nodes:03d}]"', 'model = "MI300X"']
    lines.append('pool = "mi300x"')
    for pair, kind in enumerate(kinds, start=1):
        lines += ["[[faults]]", f'nodes = "sim{2 * pair + 1 + task:03d}"', f'kind = "{kind.value}"']
        params = {**PARAMS.get(kind, {}), **({"mb": 20} if kind is FaultKind.HUGE_OUTPUT else {})}
        lines += ['program = "python3"', *(f"{key} = {_toml_value(value)}" for key, value in params.items())]
    scenario = tmp_path / "n-node-faults.toml"
    scenario.write_text("\n".join(lines) + "\n")
    report = tmp_path / "r.json"
    with start_sim_cluster(scenario=scenario) as sim:
        cluster = tmp_path / "cluster.toml"
        cluster.write_text(sim.inventory_path.read_text() + N_NODE_WORKLOAD)
        args = ["sweep", "-i", str(cluster), "--probes", "workload", "--store", str(tmp_path / "h.sqlite")]
        # --force: every node at once, as these judge each fault's run, not the cap (test_workload_sweep.py).
        main([*args, "--json", str(report), "--force"])
    status = {n["node"]: n["status"] for n in json.loads(report.read_text())["nodes"]}
    assert status["sim001"] == status["sim002"] == "PASS", "the healthy pair runs the workload and passes"
    passed = {
        kind
        for pair, kind in enumerate(kinds, start=1)
        if "PASS" in (status[f"sim{2 * pair + 1:03d}"], status[f"sim{2 * pair + 2:03d}"])
    }
    assert not passed, f"faults of a task that read PASS: {sorted(passed)}"


# -- the amdsmi library on the node --------------------------------------------------------------------
# ``check-local`` reads list, static, metric, firmware and bad-pages through the amdsmi library when it
# loads. Its faults (a call that raises, values it leaves out, a library that does not initialise) are
# put on healthy and faulted simulated nodes; the fake library answers with the node's own figures.
LIBRARY_NODES = {
    "lib001": None,
    "lib002": Fault(kind=FaultKind.ECC_UNCORRECTABLE, node="lib002", gpu=3),
    "lib003": Fault(kind=FaultKind.BAD_PAGES_OVER_THRESHOLD, node="lib003", gpu=3),
    "lib004": Fault(kind=FaultKind.XGMI_LINK_DOWN, node="lib004", gpu=1, peer=4),
}


def _ecc_without_uncorrectable(values: list[dict[str, Any]]) -> None:
    for gpu in values:
        gpu["amdsmi_get_gpu_total_ecc_count"].pop("uncorrectable_count")


def _fewer_link_states(values: list[dict[str, Any]]) -> None:
    for gpu in values:  # the library answers the state of fewer ports than it has metrics for
        gpu["amdsmi_get_gpu_xgmi_link_status"]["status"].pop()


@dataclass(frozen=True)
class LibraryCase:
    """A node checked through the fake library with one of the library's faults (or none)."""

    node: str
    what: str
    change: Callable[[list[dict[str, Any]]], None] | None = None  # what the fault does to the values
    options: dict[str, Any] | None = None  # the fake's: raise_on, init_error

    @property
    def healthy(self) -> bool:
        """No fault on the node nor in the library: PASS is the true answer."""
        return LIBRARY_NODES[self.node] is None and self.change is None and not self.options


LIBRARY_CASES = [
    LibraryCase("lib001", "healthy"),  # the reference: the property cannot hold by everything being UNKNOWN
    LibraryCase("lib001", "a metric call raises", options={"raise_on": {"amdsmi_get_gpu_total_ecc_count": 1}}),
    LibraryCase("lib001", "a static call raises", options={"raise_on": {"amdsmi_get_gpu_asic_info": 8}}),
    LibraryCase("lib002", "partial values: no uncorrectable count", change=_ecc_without_uncorrectable),
    LibraryCase("lib003", "the library does not initialise", options={"init_error": 8}),
    LibraryCase("lib003", "bad pages not supported", options={"raise_on": {"amdsmi_get_gpu_bad_page_info": 2}}),
    LibraryCase("lib004", "a link down, read through the library"),
    LibraryCase("lib001", "partial values: fewer link states than ports", change=_fewer_link_states),
]


@pytest.fixture(scope="module")
def library_nodes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("library-nodes")
    faults = [fault for fault in LIBRARY_NODES.values() if fault is not None]
    return root, local_cluster(root, list(LIBRARY_NODES), faults)


@pytest.mark.parametrize("case", LIBRARY_CASES, ids=[c.what for c in LIBRARY_CASES])
def test_no_fault_of_the_amdsmi_library_reads_pass(
    case: LibraryCase,
    library_nodes: tuple[Path, Path],
    fake_amdsmi_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root, inventory = library_nodes
    values = node_values(node_outputs(root, case.node))
    if case.change is not None:
        case.change(values)
    options = case.options or {}
    write_fake_amdsmi(fake_amdsmi_path, values, **options)
    monkeypatch.setenv("PATH", f"{shim_dir(root, case.node)}:{os.environ['PATH']}")
    monkeypatch.setenv("SLURMD_NODENAME", case.node)
    main(["check-local", "-i", str(inventory), "--json", "-"])
    report = LocalCheckReport.model_validate_json(capsys.readouterr().out)
    said = f"{case.node} ({case.what}): {report.status.value} {report.reason}"
    assert (report.status is Status.PASS) is case.healthy, said
    path = "amd-smi command" if "init_error" in options else "amdsmi library"
    assert report.collector is not None and report.collector.startswith(path)
