"""A reading amd-smi lost on one GPU is UNKNOWN, never PASS and never SKIP.

A value printed N/A on one GPU while the others report it, printed and not read (garbled, NaN, a word of no
known meaning), a bad-page listing printed N/A or as an error sentence, a GPU one subcommand leaves out:
each was a PASS or a SKIP (a check's ``on_missing``) and passed the node. The simulator's MI300X node answers
the quick amd-smi probes as a sweep runs them, with the fault that loses the reading; its pack judges them.
"""

from __future__ import annotations

from typing import Any

import pytest

from console.checks import build_facts, evaluate_node, load_packs
from console.inventory.model import Node, StackPin
from console.model.findings import Finding, Status
from console.sim.faults import Fault, FaultKind
from console.sim.models import ClusterSpec, NodeSpec
from console.sim.specs import GpuModel, stack_preset
from console.sweep.catalog import ProbeSet, probes_for
from tests.engine.simulated import simulated_outcomes


def _findings(faults: list[Fault], pin: StackPin | None = None) -> list[Finding]:
    """Every finding of one simulated MI300X node with ``faults``, from its quick amd-smi outputs."""
    spec = NodeSpec(name="n1", gpu_model=GpuModel.MI300X, pool="p", stack=stack_preset("6.4.1"))
    cluster = ClusterSpec(name="c", seed=7, nodes=[spec], faults=faults)
    amdsmi = [p.id for p in probes_for(ProbeSet.QUICK) if p.id.startswith("amdsmi.") and p.id != "amdsmi.cper"]
    outcomes = simulated_outcomes(cluster, spec.name, amdsmi)
    node = Node(name=spec.name, pool=spec.pool, gpu_model="MI300X", gpu_count=8, address="127.0.0.1")
    return evaluate_node(load_packs()["MI300X"], build_facts(node, pin or StackPin(), outcomes))


def _not_passed(findings: list[Finding]) -> dict[tuple[str, int | None], Finding]:
    # A change since the last sweep has nothing to compare with here (SKIP on every GPU, rightly), and the
    # host probes that name the driver's version are not run here.
    return {
        (f.check_id, f.subject.gpu): f
        for f in findings
        if f.status is not Status.PASS and f.check_id not in ("ecc.correctable_increase", "stack.amdgpu")
    }


def test_a_healthy_node_passes_and_skips_nothing_per_gpu() -> None:
    assert _not_passed(_findings([])) == {}


BAD_PAGE_CHECKS = {"ras.bad_pages_retired", "ras.bad_pages_pending", "ras.bad_pages_fraction"}
CASES: list[tuple[FaultKind, dict[str, Any], set[str], str]] = [
    # (fault on GPU 3, its params, the checks that must be UNKNOWN on GPU 3, words the finding must say)
    (FaultKind.BAD_PAGES_UNREAD, {}, BAD_PAGE_CHECKS, "retired pages: N/A"),
    (FaultKind.BAD_PAGES_UNREAD, {"text": "Error reading bad pages"}, BAD_PAGE_CHECKS, "Error reading bad pages"),
    (FaultKind.AMDSMI_GPU_LEFT_OUT, {}, BAD_PAGE_CHECKS, "amdsmi.bad_pages: GPU 3 not in its output"),
    (FaultKind.AMDSMI_VALUE_UNREAD, {}, {"ecc.deferred"}, "N/A, while GPU 0, 1, 2, 4, 5, 6, 7 report it"),
    (FaultKind.AMDSMI_VALUE_UNREAD, {"text": "#@!"}, {"ecc.deferred"}, "not a number: #@!"),
    (FaultKind.AMDSMI_VALUE_UNREAD, {"text": "NaN"}, {"ecc.deferred"}, "not a number"),
    (FaultKind.AMDSMI_VALUE_UNREAD, {"field": "metric:temperature.mem", "text": "hot"}, {"thermal.memory"}, "hot"),
    (
        FaultKind.AMDSMI_VALUE_UNREAD,
        {"field": "metric:xgmi_err", "text": "AMDSMI_XGMI_STATUS_UNKNOWN"},
        {"xgmi.errors"},
        "AMDSMI_XGMI_STATUS_UNKNOWN",
    ),
    (
        FaultKind.AMDSMI_VALUE_UNREAD,
        {"field": "metric:throttle.socket_thermal_violation_activity", "text": "lots"},
        {"throttle.thermal"},
        "TVIOL: not a number: lots",
    ),
    (FaultKind.AMDSMI_VALUE_UNREAD, {"field": "metric:pcie.replay_count"}, {"pcie.replay"}, "N/A, while GPU 0"),
    (
        FaultKind.AMDSMI_VALUE_UNREAD,
        {"field": "static:ras.bad_page_threshold_exceeded", "text": "YES"},
        {"ras.bad_page_threshold"},
        "not true or false: YES",
    ),
    (
        FaultKind.AMDSMI_GPU_LEFT_OUT,
        {"args": "static"},
        {"inventory.device_id", "ras.bad_page_threshold", "ras.bad_pages_fraction", "power.cap"},
        "GPU 3 not in its output",
    ),
]


def _case_id(value: object) -> str:
    # The same id in every xdist worker: a set's order follows string hashing, which differs per process.
    return ",".join(sorted(value)) if isinstance(value, set) else str(value)[:40]


@pytest.mark.parametrize(("kind", "params", "checks", "said"), CASES, ids=_case_id)
def test_a_reading_lost_on_one_gpu_is_unknown_for_that_gpu_alone(
    kind: FaultKind, params: dict[str, Any], checks: set[str], said: str
) -> None:
    found = _not_passed(_findings([Fault(kind=kind, node="n1", gpu=3, params=params)]))
    assert {check for check, gpu in found if gpu == 3} == checks
    assert {gpu for _, gpu in found} == {3}
    assert {f.status for f in found.values()} == {Status.UNKNOWN}
    assert any(said in f.message for f in found.values()), [f.message for f in found.values()]
    # What was printed instead of a value is in the evidence, for whoever reruns it.
    assert all(isinstance(f.evidence.observed, str) and f.evidence.observed in f.message for f in found.values())


def test_a_counter_na_on_every_gpu_is_still_a_skip() -> None:
    # The same counter N/A on every GPU is the tool not reporting it on this model or release: SKIP stays.
    faults = [
        Fault(kind=FaultKind.AMDSMI_VALUE_UNREAD, node="n1", gpu=gpu, params={"field": "metric:pcie.replay_count"})
        for gpu in range(8)
    ]
    found = _not_passed(_findings(faults))
    assert set(found) == {("pcie.replay", gpu) for gpu in range(8)}
    assert {f.status for f in found.values()} == {Status.SKIP}


PSP_PIN = StackPin(firmware={"PSP_SOSDRV": "36.02.4C"})  # the simulated MI300X's own version: a healthy GPU passes


@pytest.mark.parametrize(
    ("kind", "params", "said"),
    [
        (FaultKind.AMDSMI_GPU_LEFT_OUT, {"args": "firmware"}, "amdsmi.firmware: GPU 3 not in its output"),
        (
            FaultKind.AMDSMI_VALUE_UNREAD,
            {"field": "firmware:fw_list.*.fw_version"},
            "PSP_SOSDRV: no version read, while GPU 0, 1, 2, 4, 5, 6, 7 report one",
        ),
        (FaultKind.AMDSMI_VALUE_UNREAD, {"field": "firmware:fw_list.*.fw_id", "text": ""}, "PSP_SOSDRV: no version"),
    ],
)
def test_a_gpu_whose_firmware_is_unread_is_unknown_for_the_pin_and_the_consistency(
    kind: FaultKind, params: dict[str, Any], said: str
) -> None:
    # Left out of ``amd-smi firmware``, its versions printed N/A, its blocks unnamed: the pinned block and the
    # node's consistency were judged on the seven GPUs read, and passed.
    found = _not_passed(_findings([Fault(kind=kind, node="n1", gpu=3, params=params)], PSP_PIN))
    assert set(found) == {("firmware.pin", 3), ("firmware.consistent", None)}
    assert {f.status for f in found.values()} == {Status.UNKNOWN}
    assert said in found["firmware.pin", 3].message


def test_a_pinned_firmware_block_passes_on_every_gpu_read() -> None:
    findings = _findings([], PSP_PIN)
    assert {f.subject.gpu for f in findings if f.check_id == "firmware.pin" and f.status is Status.PASS} == set(
        range(8)
    )
    assert _not_passed(findings) == {}


def test_a_gpu_the_cper_listing_has_no_section_for_is_unknown_for_every_cper_check() -> None:
    # amd-smi 6.4.1 titles each GPU's part of the listing: a GPU with no title had no record read, not none.
    spec = NodeSpec(name="n1", gpu_model=GpuModel.MI300X, pool="p", stack=stack_preset("6.4.1"))
    faults = [Fault(kind=FaultKind.AMDSMI_GPU_LEFT_OUT, node="n1", gpu=7, params={"args": "ras"})]
    cluster = ClusterSpec(name="c", seed=7, nodes=[spec], faults=faults)
    outcomes = simulated_outcomes(cluster, spec.name, ("amdsmi.list", "amdsmi.cper", "amdsmi.bad_pages"))
    node = Node(name="n1", pool="p", gpu_model="MI300X", gpu_count=8, address="127.0.0.1")
    findings = evaluate_node(load_packs()["MI300X"], build_facts(node, StackPin(), outcomes))
    cper = {(f.check_id, f.subject.gpu): f.status for f in findings if f.check_id.startswith("ras.cper_")}
    checks = ("ras.cper_fatal", "ras.cper_uncorrected", "ras.cper_unrecognised")
    assert {key for key, status in cper.items() if status is not Status.PASS} == {(check, 7) for check in checks}
    assert {cper[check, 7] for check in checks} == {Status.UNKNOWN}
    assert len(cper) == 24
