"""What a judged node costs in memory, and the shared pydantic fields-set that keeps it small."""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from pathlib import Path

import pytest
from pydantic import ValidationError

from console.checks import ProbeOutcome, build_facts, evaluate_node, load_packs
from console.inventory.model import Node, StackPin
from console.model.findings import Evidence, Finding, SourceKind, Status, Subject, roll_up
from console.probes import ParseError
from console.sim.commands import context_for, run_program
from console.sim.faults import FaultKind
from console.sim.models import example_cluster
from console.sim.specs import GpuModel
from console.sweep.catalog import ProbeSet, probes_for
from tests.multinode.simcluster import engine_for, start_cluster


def _evidence() -> Evidence:
    return Evidence(observed=1.0, source="spec sheet", source_kind=SourceKind.VENDOR_SPEC)


def test_instances_share_one_complete_fields_set_and_assignment_still_validates() -> None:
    first, second = _evidence(), _evidence()
    assert first.model_fields_set is second.model_fields_set == set(Evidence.model_fields)
    first.source_kind = SourceKind.PIN
    assert second.source_kind is SourceKind.VENDOR_SPEC and first.model_fields_set == set(Evidence.model_fields)
    with pytest.raises(ValidationError):
        first.probe_run_id = "not a number"
    copy = first.model_copy(update={"unit": "C"})
    assert copy.model_fields_set is not first.model_fields_set and copy.unit == "C" and first.unit is None
    finding = Finding(
        check_id="a.b", family="f", status=Status.PASS, subject=Subject(node="n"), message="m", evidence=first
    )
    assert finding == Finding.model_validate_json(finding.model_dump_json())


def test_a_judged_8_gpu_node_stays_under_a_megabyte() -> None:
    cluster = example_cluster(nodes_per_model={GpuModel.MI300X: 1}, with_faults=False)
    spec = cluster.nodes[0]
    texts = {
        p.id: run_program(context_for(cluster, spec.name), list(p.argv)).stdout for p in probes_for(ProbeSet.QUICK)
    }
    node = Node(name=spec.name, pool=spec.pool, gpu_model="MI300X", gpu_count=8, address="127.0.0.1")
    pack = load_packs()["MI300X"]
    by_id = {p.id: p for p in probes_for(ProbeSet.QUICK)}

    def judged() -> object:
        # Each probe's own parser without the digest memo: memoised results would not be counted.
        outcomes = {
            pid: ProbeOutcome(pid, getattr(by_id[pid].parse, "fresh", by_id[pid].parse)(text), None, 1, 0.0)
            for pid, text in texts.items()
        }
        facts = build_facts(node, StackPin(), outcomes)
        return outcomes, facts, roll_up(node.name, evaluate_node(pack, facts, {p: 1 for p in outcomes}))

    judged()  # caches (key normalisation, compiled patterns) are not the node's
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = judged()
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(kept[2].findings) > 200  # type: ignore[index]
    # 1.48 MiB before findings and GPU records shared their fields-set (0.69 MiB after, commit 7b21bd3).
    assert used < 1024 * 1024, f"{used / 1024:.0f} KiB per judged node"


@pytest.mark.parametrize("model", list(GpuModel))
def test_findings_built_without_validation_equal_their_validated_copies(model: GpuModel) -> None:
    # The checks build findings with Numerous.trusted; a value of another type than validation would
    # give (an int for a float, a str for an enum) would differ from the validated copy here.
    cluster = example_cluster(nodes_per_model={model: 4}, with_faults=True)
    pack = load_packs()[model.value]
    by_id = {p.id: p for p in probes_for(ProbeSet.QUICK)}
    checked = 0
    for spec in cluster.nodes:
        outcomes = {}
        for pid, probe in by_id.items():
            reply = run_program(context_for(cluster, spec.name), list(probe.argv))
            try:
                outcomes[pid] = ProbeOutcome(pid, probe.parse(reply.stdout), None, 1, 0.0)
            except ParseError as exc:
                outcomes[pid] = ProbeOutcome(pid, None, f"unreadable output: {exc.reason}", 2, 0.0)
        node = Node(name=spec.name, pool=spec.pool, gpu_model=model.value, gpu_count=8, address="127.0.0.1")
        pin = StackPin(rocm="6.0.0", amdgpu_driver="6.8.5", firmware={"PSP_SOSDRV": "1"})  # pin findings too
        for finding in evaluate_node(pack, build_facts(node, pin, outcomes), {p: 7 for p in outcomes}):
            validated = Finding.model_validate(finding.model_dump())
            assert finding == validated and finding.model_dump_json() == validated.model_dump_json()
            assert type(finding.evidence.observed) is type(validated.evidence.observed)
            checked += 1
    assert checked > 100


def test_trusted_fills_defaults_and_rejects_unknown_fields() -> None:
    evidence = Evidence.trusted(observed=2.0, probe="amdsmi.metric")
    assert evidence == Evidence(observed=2.0, probe="amdsmi.metric")
    finding = Finding.trusted(check_id="a.b", family="f", status=Status.PASS, subject=Subject(node="n"), message="m")
    assert finding.evidence == Evidence() and finding.model_fields_set == set(Finding.model_fields)
    with pytest.raises(TypeError, match="no field observd"):
        Evidence.trusted(observd=1.0)


def test_an_engine_keeps_a_workers_gpu_records_packed_and_reads_them_as_they_were() -> None:
    """With workers the engine keeps each node's GPU records, links and NIC ports packed (``PackedFacts``):
    the screens, the drift report and a re-judgement must read them as the worker sent them. A drift
    report over facts without their GPU records would judge no firmware and look clean."""
    from dataclasses import fields

    from console.actions.pin import drift_rows
    from console.sweep.engine import snapshot_of
    from console.sweep.packed import PackedFacts, pack_screen

    cluster = example_cluster(nodes_per_model={GpuModel.MI300X: 1}, with_faults=False)
    spec = cluster.nodes[0]
    by_id = {p.id: p for p in probes_for(ProbeSet.QUICK)}
    context = context_for(cluster, spec.name)
    outcomes = {
        pid: ProbeOutcome(pid, p.parse(run_program(context, list(p.argv)).stdout), None) for pid, p in by_id.items()
    }
    node = Node(name=spec.name, pool=spec.pool, gpu_model="MI300X", gpu_count=8, address="127.0.0.1")
    facts = build_facts(node, StackPin(), outcomes)
    packed = PackedFacts(**{f.name: getattr(facts, f.name) for f in fields(facts) if f.name not in ("gpus", "xgmi")})
    screens = pack_screen(facts.gpus), pack_screen(facts.xgmi), pack_screen(facts.nics)
    packed.keep_packed(*screens)
    assert len(facts.gpus) == 8 and facts.xgmi
    assert packed.gpus == facts.gpus and packed.xgmi == facts.xgmi and packed.nics == facts.nics
    assert snapshot_of(packed) == snapshot_of(facts)
    # The firmware blocks the pin names are judged on the GPU records, packed or not.
    firmware = {block: "0" for block in facts.gpus[0].firmware}
    pin = StackPin(firmware=dict(list(firmware.items())[:3]))
    pack = load_packs()["MI300X"]
    rows = drift_rows(facts, pin, pack)
    assert rows and any(row.status is Status.WARN and row.field.startswith("firmware.") for row in rows), rows
    assert drift_rows(packed, pin, pack) == rows
    # ~4 KiB packed, against ~200 KiB of objects (bench/README.md, "Engine memory with workers").
    assert sum(len(s) for s in screens) < 16 * 1024, [len(s) for s in screens]


def test_an_engine_without_workers_keeps_its_nodes_packed_and_judges_them_again_as_before(tmp_path: Path) -> None:
    """Without workers the engine keeps each node's facts packed and its parsed outputs packed but for the
    slow-changing ones (reused under an unchanged stamp). A re-judgement (an added multi-node finding, the
    fleet pass) must give the verdict the node had; an output kept with nothing to read must stay UNKNOWN."""
    from console.sweep.packed import PackedFacts, PackedOutcome

    with start_cluster(2, GpuModel.MI300X, FaultKind.XGMI_LINK_DEGRADED) as sim:
        fault = sim.cluster().faults[0]
        engine = engine_for(sim, tmp_path / "h.db")

        async def sweeps() -> None:
            try:
                for _ in range(2):  # the second reuses the slow-changing outcomes kept by the first
                    result = await engine.run()
                    assert result.counts[Status.PASS] == 1 and result.verdicts[fault.node].status is not Status.PASS
                    for name in result.verdicts:
                        facts, kept = engine.facts[name], engine.outcomes[name]
                        assert isinstance(facts, PackedFacts) and facts.packed_screens() is not None
                        packed = {p for p, o in kept.items() if isinstance(o, PackedOutcome)}
                        assert {"amdsmi.static", "amdsmi.metric", "amdsmi.xgmi", "amdsmi.list"} <= packed
                        assert "amdsmi.firmware" not in packed and all(o.usable for o in kept.values())
                        assert len(facts.gpus) == 8 and facts.xgmi and facts.nic_rates
                        assert engine.add_findings(name, "test", []) == result.verdicts[name]
                        assert isinstance(engine.outcomes[name]["amdsmi.static"], PackedOutcome)
                # A kept output with nothing in it reads as unanswered, never as a clean node.
                healthy = next(n for n in result.verdicts if n != fault.node)
                engine.outcomes[healthy]["amdsmi.static"] = PackedOutcome.of(ProbeOutcome("amdsmi.static", None))
                assert not engine.outcomes[healthy]["amdsmi.static"].usable
                assert engine.add_findings(healthy, "test", []).status is Status.UNKNOWN
            finally:
                await engine.close()

        asyncio.run(sweeps())
