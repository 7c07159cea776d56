"""The framework checks (checks/framework.toml) on simulated nodes of every model: healthy ones pass,
each torch fault is named with its check, its GPU or stage, and each model's GEMM floors bite at their value."""

from __future__ import annotations

from dataclasses import replace

import pytest

from console.checks import NodeFacts, ProbeOutcome, build_facts, evaluate_node, load_packs
from console.inventory.model import Node, StackPin
from console.model.findings import Finding, Status
from console.model.framework import StageStatus
from console.probes import Tool, parse_output
from console.probes.ids import ProbeId
from console.probes.pytorch.command import torch_probe_argv
from console.sim.commands import context_for, run_program
from console.sim.faults import Fault, FaultKind
from console.sim.models import example_cluster
from console.sim.specs import GpuModel
from console.sweep.catalog import ProbeSet, probes_for
from console.sweep.engine import probe_problem

PROBLEMS = (Status.WARN, Status.FAIL, Status.UNKNOWN)


def _facts(model: str, *faults: Fault) -> NodeFacts:
    """A simulated node's quick probes and framework probe, parsed as a sweep parses them."""
    cluster = example_cluster(nodes_per_model={GpuModel(model): 1}, with_faults=False)
    name = cluster.nodes[0].name
    cluster = cluster.model_copy(update={"faults": [f.model_copy(update={"node": name}) for f in faults]})
    outcomes: dict[str, ProbeOutcome] = {}
    runs = [(p.id, p.argv, p.fallback, getattr(p.parse, "fresh", p.parse)) for p in probes_for(ProbeSet.QUICK)]
    runs.append((ProbeId.FRAMEWORK_TORCH, torch_probe_argv(), None, lambda t: parse_output(t, tool=Tool.TORCH)))
    for probe_id, argv, fallback, parse in runs:
        reply = run_program(context_for(cluster, name), list(argv))
        if reply.exit_status != 0 and fallback:
            reply = run_program(context_for(cluster, name), list(fallback))
        text = reply.stdout + reply.stderr
        spec = next((p for p in probes_for(ProbeSet.QUICK) if p.id == probe_id), None)
        problem = probe_problem(reply.exit_status, text.encode(), spec) if spec is not None else None
        if problem is not None:
            outcomes[probe_id] = ProbeOutcome(probe_id, None, problem, 1)
            continue
        try:
            outcomes[probe_id] = ProbeOutcome(probe_id, parse(text), None, 1)
        except Exception as exc:  # a quick probe the fault broke: as the engine keeps it
            outcomes[probe_id] = ProbeOutcome(probe_id, None, str(exc), 1)
    node = Node(name=name, pool="p", gpu_model=model, gpu_count=8, address="127.0.0.1")
    return build_facts(node, StackPin(), outcomes)


def _framework(model: str, facts: NodeFacts) -> list[Finding]:
    return [f for f in evaluate_node(load_packs()[model], facts) if f.family == "framework"]


MODELS = ["MI250X", "MI300X", "MI325X", "MI350X", "MI355X"]


@pytest.mark.parametrize("model", MODELS)
def test_a_healthy_node_of_each_model_passes_every_framework_check(model: str) -> None:
    facts = _facts(model)
    findings = _framework(model, facts)
    assert not [f.message for f in findings if f.status is not Status.PASS]
    ids = {f.check_id for f in findings}
    expected = {
        "framework.hip_build",
        "framework.devices_unseen",
        "framework.device_model",
        "framework.bf16_tflops",
        "framework.gemm_finite",
        "framework.all_reduce",
        "framework.stages",
    }
    assert ids == (expected if model == "MI250X" else expected | {"framework.fp8_tflops"})
    assert len([f for f in findings if f.check_id == "framework.bf16_tflops"]) == 8
    assert facts.stack["torch"].startswith("2.")


def test_no_framework_finding_without_the_framework_probe() -> None:
    facts = _facts("MI300X")
    del facts.outcomes[ProbeId.FRAMEWORK_TORCH]
    assert _framework("MI300X", facts) == []


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_each_models_gemm_floors_bite_at_their_own_values(model: str, dtype: str) -> None:
    variables = load_packs()[model].pack.values()
    if f"torch_{dtype}_fail_tflops" not in variables:
        assert model == "MI250X" and dtype == "fp8"
        return
    warn, fail = float(variables[f"torch_{dtype}_warn_tflops"]), float(variables[f"torch_{dtype}_fail_tflops"])
    facts = _facts(model)
    result = facts.parsed(ProbeId.FRAMEWORK_TORCH).data
    stage = getattr(result.devices[2], dtype)

    def judged() -> set[tuple[Status, int | None, str | None]]:
        return {
            (f.status, f.subject.gpu, f.evidence.expected)
            for f in _framework(model, facts)
            if f.check_id == f"framework.{dtype}_tflops" and f.status in PROBLEMS
        }

    stage.tflops = warn
    assert judged() == set()
    stage.tflops = warn - 0.01
    assert judged() == {(Status.WARN, 2, f"warn if < {warn:g}")}
    stage.tflops = fail - 0.01
    assert judged() == {(Status.FAIL, 2, f"fail if < {fail:g}")}


def _fault(kind: FaultKind, gpu: int | None = None, **params: str | int | float) -> Fault:
    return Fault(kind=kind, node="x", gpu=gpu, params=dict(params))


# fault -> the framework findings that FAIL or WARN (check, status, GPU or None), and words in one of their messages.
# The other checks are PASS, or UNKNOWN/SKIP saying why they could not judge (torch sees no GPU, ...).
FAULTS: dict[str, tuple[Fault, set[tuple[str, Status, int | None]], str]] = {
    "no torch": (
        _fault(FaultKind.TORCH_MISSING),
        {("framework.hip_build", Status.FAIL, None)},
        "No module named 'torch'",
    ),
    "CPU-only build": (
        _fault(FaultKind.TORCH_CPU_ONLY),
        {("framework.hip_build", Status.FAIL, None), ("framework.devices_unseen", Status.FAIL, None)},
        "CPU-only",
    ),
    "a device torch cannot see": (
        _fault(FaultKind.TORCH_DEVICE_COUNT),
        {("framework.devices_unseen", Status.FAIL, None)},
        "torch sees 7 of the 8 GPUs amd-smi lists",
    ),
    "slow GEMM": (
        _fault(FaultKind.TORCH_GEMM_SLOW, gpu=3),
        {("framework.bf16_tflops", Status.FAIL, 3), ("framework.fp8_tflops", Status.FAIL, 3)},
        "TFLOPS (fail if <",
    ),
    "NaN in a GEMM": (
        _fault(FaultKind.TORCH_GEMM_NAN, gpu=3),
        {("framework.gemm_finite", Status.FAIL, 3)},
        "bf16 4096, fp8 4096",
    ),
    "wrong all-reduce": (
        _fault(FaultKind.TORCH_ALLREDUCE_WRONG),
        {("framework.all_reduce", Status.FAIL, None)},
        "nccl, 8 ranks, max error 8",
    ),
    "hung all-reduce": (
        _fault(FaultKind.TORCH_ALLREDUCE_HANG),
        {("framework.stages", Status.FAIL, None)},
        "all-reduce: did not finish within 120 s",
    ),
    "driver not loaded": (
        _fault(FaultKind.DRIVER_NOT_LOADED),
        {("framework.hip_build", Status.FAIL, None)},
        "torch.cuda.is_available() = False",
    ),
}


@pytest.mark.parametrize("case", sorted(FAULTS))
def test_each_torch_fault_is_named_by_its_check(case: str) -> None:
    fault, expected, words = FAULTS[case]
    findings = [f for f in _framework("MI300X", _facts("MI300X", fault)) if f.status is not Status.PASS]
    judged = [f for f in findings if f.status in (Status.FAIL, Status.WARN)]
    assert {(f.check_id, f.status, f.subject.gpu) for f in judged} == expected, [f.message for f in findings]
    assert any(words in f.message for f in judged), [f.message for f in judged]
    unjudged = [f.message for f in findings if f not in judged]
    assert not [m for m in unjudged if "not reported" in m], "an unjudged check says why, in the probe's words"


def test_a_missing_gpu_is_not_a_framework_fault() -> None:
    findings = _framework("MI300X", _facts("MI300X", _fault(FaultKind.GPU_MISSING, gpu=2)))
    assert not [f.message for f in findings if f.status is not Status.PASS], "amd-smi and torch agree on 7"


def test_a_device_of_another_model_fails_on_its_gpu() -> None:
    facts = _facts("MI300X")
    facts.parsed(ProbeId.FRAMEWORK_TORCH).data.devices[4].name = "AMD Instinct MI325X"
    [finding] = [f for f in _framework("MI300X", facts) if f.status is not Status.PASS]
    assert (finding.check_id, finding.status, finding.subject.gpu) == ("framework.device_model", Status.FAIL, 4)
    assert "torch: AMD Instinct MI325X; amd-smi: AMD Instinct MI300X" in finding.message


def test_fp8_a_torch_cannot_run_is_skip_with_why() -> None:
    facts = _facts("MI300X")
    for device in facts.parsed(ProbeId.FRAMEWORK_TORCH).data.devices:
        device.fp8 = device.fp8.model_copy(
            update={"status": StageStatus.UNSUPPORTED, "tflops": None, "error": "torch 2.1.2 has no _scaled_mm"}
        )
    fp8 = [f for f in _framework("MI300X", facts) if f.check_id == "framework.fp8_tflops"]
    assert {f.status for f in fp8} == {Status.SKIP} and "torch 2.1.2 has no _scaled_mm" in fp8[0].message


def test_a_pinned_torch_release_warns_when_the_node_imports_another() -> None:
    facts = _facts("MI300X")
    assert facts.stack["torch"] == "2.7.1+rocm6.4"
    pack = load_packs()["MI300X"]
    for pinned, status in (("2.7.1+rocm6.4", Status.PASS), ("2.6.0+rocm6.3", Status.WARN)):
        judged = evaluate_node(pack, replace(facts, pin=StackPin(torch=pinned)))
        [finding] = [f for f in judged if f.check_id == "stack.torch"]
        assert finding.status is status, finding.message
    assert "(pool pin 2.6.0+rocm6.3)" in finding.message
    quick = replace(facts, outcomes={k: v for k, v in facts.outcomes.items() if k != ProbeId.FRAMEWORK_TORCH})
    assert [f for f in evaluate_node(pack, quick) if f.check_id == "stack.torch"] == []


@pytest.mark.parametrize(
    ("fault", "check_id", "why"),
    [
        (_fault(FaultKind.TORCH_DEVICE_ENTRY_LOST), "framework.stages", "the probe reported none for gpu7"),
        (
            _fault(FaultKind.TORCH_DEVICE_ENTRY_LOST, repeat=True),
            "framework.stages",
            "device entries repeated for gpu6",
        ),
        (_fault(FaultKind.TORCH_ALLREDUCE_FEW_RANKS), "framework.all_reduce", "ran on 4 ranks of the 8 devices"),
        (_fault(FaultKind.TORCH_FP8_SKIPPED, gpu=3), "framework.stages", "gpu3 fp8 GEMM skipped"),
    ],
)
def test_a_document_that_is_no_verdict_on_every_device_is_unknown(fault: Fault, check_id: str, why: str) -> None:
    # Nothing failed and nothing raised, but some device was not tested: never PASS, with what is missing.
    findings = _framework("MI300X", _facts("MI300X", fault))
    assert not [f.message for f in findings if f.status in (Status.FAIL, Status.WARN)]
    [finding] = [f for f in findings if f.check_id == check_id]
    assert finding.status is Status.UNKNOWN and why in finding.message


def test_an_fp8_stage_skipped_without_reason_is_unknown_on_its_gpu_not_skip() -> None:
    # The MI300X pack holds the FP8 check (gfx942 has FP8 matrix cores): only 'unsupported' is its SKIP.
    findings = _framework("MI300X", _facts("MI300X", _fault(FaultKind.TORCH_FP8_SKIPPED, gpu=3)))
    fp8 = [f for f in findings if f.check_id == "framework.fp8_tflops"]
    assert {f.subject.gpu: f.status for f in fp8 if f.status is not Status.PASS} == {3: Status.UNKNOWN}
