"""The fault catalogue (console.sim.faults) and what each fault does to a node (console.sim.effects)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pydantic import ValidationError

from console.sim.effects import EFFECTS
from console.sim.faults import (
    DEMO_ORDER,
    PLACED_KINDS,
    Fault,
    FaultKind,
    FaultScope,
    demo_faults,
    fault_scope,
    random_faults,
)
from console.sim.models import LinkState, SimNode, build_node
from console.sim.specs import GpuModel
from tests.sim.simcore_helpers import NODE, cluster, fault

NAMES = [f"n{i:02d}" for i in range(1, 25)]


def _acts(node: SimNode, kind: FaultKind, program: str = "amd-smi") -> bool:
    """Whether a behaviour fault of ``kind`` acts on ``program`` on ``node``."""
    return [(b.kind, b.program) for b in node.behaviours] == [(kind, program)]


def test_every_kind_has_an_effect_and_a_demo_slot() -> None:
    assert set(EFFECTS) == set(FaultKind)
    # Fabric and container faults need a scenario placing them (beside a multi-node run, a container pool);
    # a demo node gets faults it shows alone.
    assert sorted(DEMO_ORDER) == sorted(set(FaultKind) - PLACED_KINDS)
    assert len(FaultKind) == 81


def test_random_draws_never_place_a_fabric_or_container_fault() -> None:
    kinds = {f.kind for seed in range(40) for f in random_faults(NAMES, 1.0, seed)}
    assert not kinds & PLACED_KINDS and len(kinds) > 30


@pytest.mark.parametrize(
    ("kind", "gpu", "peer"),
    [
        (FaultKind.XGMI_LINK_DOWN, 1, None),
        (FaultKind.XGMI_LINK_DOWN, 1, 1),
        (FaultKind.ECC_UNCORRECTABLE, None, None),
        (FaultKind.ECC_UNCORRECTABLE, 1, 2),
        (FaultKind.ROCM_DRIFT, None, 3),
    ],
)
def test_fault_targets_must_match_the_scope(kind: FaultKind, gpu: int | None, peer: int | None) -> None:
    with pytest.raises(ValidationError):
        Fault(kind=kind, node="n", gpu=gpu, peer=peer)


def test_scopes_and_description() -> None:
    assert fault_scope(FaultKind.TRANSFERBENCH_PAIR_SLOW) is FaultScope.LINK
    assert fault_scope(FaultKind.THERMAL_THROTTLE) is FaultScope.GPU
    assert fault_scope(FaultKind.SSH_REFUSED) is FaultScope.NODE
    described = Fault(kind=FaultKind.XGMI_LINK_DOWN, node="n3", gpu=2, peer=5, params={"errors": 4}).describe()
    assert described == "xgmi_link_down on n3 GPU 2<->5 errors=4"


def test_demo_faults_are_fixed_varied_and_leave_healthy_nodes() -> None:
    faults = demo_faults(NAMES, seed=7)
    assert faults == demo_faults(NAMES, seed=7)
    assert faults != demo_faults(NAMES, seed=8)
    assert len(faults) == 16 and len({f.kind for f in faults}) == 16
    assert [f.kind for f in faults] == list(DEMO_ORDER[:16])
    assert len({f.node for f in faults}) == 16 and NAMES[0] not in {f.node for f in faults}


def test_demo_faults_on_a_small_cluster_keep_the_most_telling_kinds() -> None:
    faults = demo_faults(NAMES[:3], seed=1)
    assert [f.kind for f in faults] == [FaultKind.XGMI_LINK_DOWN, FaultKind.ECC_UNCORRECTABLE]


def test_random_faults_hit_the_requested_fraction() -> None:
    faults = random_faults(NAMES, 0.25, seed=5)
    assert faults == random_faults(NAMES, 0.25, seed=5)
    assert len(faults) == 6 and len({f.node for f in faults}) == 6
    assert random_faults(NAMES, 0.0, seed=5) == []
    with pytest.raises(ValueError, match="fraction"):
        random_faults(NAMES, 1.5, seed=5)


def _gpu(node: SimNode, slot: int = 3) -> object:
    return node.gpu_by_slot(slot)


def _link(node: SimNode) -> tuple[LinkState, int, float]:
    gpu = node.gpu_by_slot(1)
    assert gpu is not None
    link = gpu.xgmi[4]
    return link.state, link.error_count, link.bw_factor


# kind -> (gpu, peer, params, check on the built node)
EVIDENCE: dict[FaultKind, tuple[int | None, int | None, dict[str, str], Callable[[SimNode], bool]]] = {
    FaultKind.XGMI_LINK_DOWN: (1, 4, {}, lambda n: _link(n)[0] is LinkState.DOWN and _link(n)[1] > 0),
    FaultKind.XGMI_LINK_DEGRADED: (
        1,
        4,
        {},
        lambda n: _link(n)[0] is LinkState.DEGRADED and n.gpus[1].xgmi[4].bit_rate_gbps == 16,
    ),
    FaultKind.XGMI_LINK_STATE_NA: (
        1,
        4,
        {},
        lambda n: not n.gpus[1].xgmi[4].state_reported and _link(n)[0] is LinkState.UP,
    ),
    FaultKind.XGMI_STATUS_ROW_MISSING: (
        3,
        None,
        {},
        lambda n: [gpu.slot for gpu in n.gpus if not gpu.xgmi_status_row] == [3],
    ),
    FaultKind.AMDSMI_VALUE_UNREAD: (
        3,
        None,
        {},
        lambda n: n.gpus[3].unread == {"metric:ecc.total_deferred_count": "N/A"} and not n.gpus[2].unread,
    ),
    FaultKind.BAD_PAGES_UNREAD: (
        3,
        None,
        {"text": "Error reading bad pages"},
        lambda n: set(n.gpus[3].unread.values()) == {"Error reading bad pages"} and len(n.gpus[3].unread) == 2,
    ),
    FaultKind.AMDSMI_GPU_LEFT_OUT: (
        3,
        None,
        {"args": "static"},
        lambda n: [(gpu.slot, gpu.left_out_of) for gpu in n.gpus if gpu.left_out_of] == [(3, ["static"])],
    ),
    FaultKind.XGMI_GPU_UNLISTED: (3, None, {}, lambda n: [gpu.slot for gpu in n.gpus if not gpu.xgmi_listed] == [3]),
    FaultKind.XGMI_LINK_FLAP: (
        1,
        4,
        {},
        lambda n: n.gpus[1].xgmi[4].link_status_word == "D" and _link(n)[0] is LinkState.UP,
    ),
    FaultKind.XGMI_STATUS_ROW_REPEATED: (1, 4, {}, lambda n: n.gpus[1].xgmi_row_repeated == 4),
    FaultKind.ECC_UNCORRECTABLE: (3, None, {}, lambda n: n.gpus[3].ecc["UMC"].uncorrectable == 2),
    FaultKind.ECC_CORRECTABLE_STORM: (3, None, {}, lambda n: n.gpus[3].ecc["UMC"].correctable >= 2400),
    FaultKind.BAD_PAGES_OVER_THRESHOLD: (3, None, {}, lambda n: len(n.gpus[3].bad_pages) > 128),
    FaultKind.GPU_MISSING: (3, None, {}, lambda n: len(n.gpus) == 7 and n.missing_slots == [3]),
    FaultKind.HBM_BANDWIDTH_LOW: (3, None, {}, lambda n: n.gpus[3].hbm_factor == 0.7),
    FaultKind.THERMAL_THROTTLE: (
        3,
        None,
        {},
        lambda n: n.gpus[3].hotspot_c >= 98 and n.gpus[3].violations_pct["TVIOL"] > 0,
    ),
    FaultKind.POWER_THROTTLE: (
        3,
        None,
        {},
        lambda n: n.gpus[3].power_cap_w == 525 and n.gpus[3].violations_pct["PVIOL"] > 0,
    ),
    FaultKind.PCIE_DOWNTRAINED_GEN: (3, None, {}, lambda n: n.gpus[3].pcie_gen == 3),
    FaultKind.PCIE_DOWNTRAINED_WIDTH: (3, None, {}, lambda n: n.gpus[3].pcie_width == 8),
    FaultKind.ROCM_DRIFT: (None, None, {}, lambda n: n.stack.rocm == "6.4.0" and n.expected_stack.rocm == "6.4.1"),
    FaultKind.DRIVER_DRIFT: (None, None, {"amdgpu": "6.10.5"}, lambda n: n.stack.amdgpu_driver == "6.10.5"),
    FaultKind.FIRMWARE_DRIFT: (3, None, {}, lambda n: n.gpus[3].firmware["PM"] == "85.108.0"),
    FaultKind.RVS_GST_LOW: (3, None, {}, lambda n: n.gpus[3].gst_factor == 0.8),
    FaultKind.CPER_RECORD: (
        3,
        None,
        {"afid": "19"},
        lambda n: [(r.severity, r.afids) for r in n.gpus[3].cper] == [("fatal", [19])],
    ),
    FaultKind.CPER_NOT_ENABLED: (None, None, {}, lambda n: not n.cper_enabled),
    FaultKind.CPER_UNDECODABLE: (
        3,
        None,
        {},
        lambda n: [(r.severity, r.afids, r.undecodable) for r in n.gpus[3].cper] == [("fatal", [], True)],
    ),
    FaultKind.CPER_FLOOD: (
        3,
        None,
        {"count": "20"},
        lambda n: (
            [r.severity for r in sorted(n.gpus[3].cper, key=lambda r: -r.age_s)] == ["corrected"] * 20 + ["fatal"]
        ),
    ),
    FaultKind.SUDO_DENIED: (None, None, {}, lambda n: n.sudo_denied),
    FaultKind.RCCL_WRONG: (None, None, {}, lambda n: n.rccl_wrong),
    FaultKind.RCCL_LOW_BUSBW: (None, None, {}, lambda n: n.rccl_busbw_factor < 0.9),
    FaultKind.RCCL_HANG: (None, None, {}, lambda n: n.rccl_hang),
    FaultKind.RCCL_LATENCY_HIGH: (None, None, {}, lambda n: n.rccl_latency_us == 150.0),
    FaultKind.TRANSFERBENCH_PAIR_SLOW: (1, 4, {}, lambda n: _link(n) == (LinkState.UP, 0, 0.6)),
    FaultKind.TRANSFERBENCH_PAIR_NA: (
        1,
        4,
        {},
        lambda n: not n.gpus[1].xgmi[4].tb_measured and not n.gpus[4].xgmi[1].tb_measured,
    ),
    FaultKind.TRANSFERBENCH_GPU_UNSEEN: (3, None, {}, lambda n: [g.slot for g in n.gpus if not g.hip_visible] == [3]),
    FaultKind.TRANSFERBENCH_HEALTHCHECK_SHORT: (None, None, {}, lambda n: n.tb_healthcheck_ends_early),
    FaultKind.TRANSFERBENCH_P2P_ROW_LOST: (3, None, {}, lambda n: n.tb_p2p_row_lost == 3),
    FaultKind.NIC_PORT_DOWN: (None, None, {"nic": "2"}, lambda n: [nic.up for nic in n.nics].count(False) == 1),
    FaultKind.NIC_MISSING: (None, None, {}, lambda n: len(n.nics) == 7),
    FaultKind.NIC_SLOW: (None, None, {"nic": "1"}, lambda n: [nic.rate_gbps for nic in n.nics].count(200) == 1),
    FaultKind.NIC_LISTED_TWICE: (
        None,
        None,
        {"nic": "0"},
        lambda n: [nic.rdma_lines for nic in n.nics] == [2] + [1] * 7,
    ),
    FaultKind.NIC_PHYS_DISABLED: (
        None,
        None,
        {"nic": "3"},
        lambda n: [nic.rdma_physical_state for nic in n.nics].count("DISABLED") == 1 and n.nics[3].up,
    ),
    FaultKind.NIC_PORT_FLAP: (None, None, {"nic": "3"}, lambda n: [nic.ibv_down for nic in n.nics].count(True) == 1),
    FaultKind.UPLINK_SLOW: (None, None, {"uplink": "r02"}, lambda n: n.uplink == "r02" and n.uplink_factor < 1),
    FaultKind.RCCL_FLAKY: (None, None, {}, lambda n: (n.rccl_flaky_every, n.rccl_flaky_first) == (3, 3)),
    FaultKind.TOOL_MISSING: (None, None, {"program": "rvs"}, lambda n: _acts(n, FaultKind.TOOL_MISSING, "rvs")),
    FaultKind.DRIVER_NOT_LOADED: (None, None, {}, lambda n: not n.driver_loaded),
    FaultKind.COMMAND_HANG: (None, None, {}, lambda n: _acts(n, FaultKind.COMMAND_HANG)),
    FaultKind.IGNORES_SIGTERM: (None, None, {"args": "list"}, lambda n: _acts(n, FaultKind.IGNORES_SIGTERM)),
    FaultKind.COMMAND_KILLED: (None, None, {}, lambda n: _acts(n, FaultKind.COMMAND_KILLED)),
    FaultKind.GARBAGE_OUTPUT: (None, None, {}, lambda n: _acts(n, FaultKind.GARBAGE_OUTPUT)),
    FaultKind.EMPTY_OUTPUT: (None, None, {}, lambda n: _acts(n, FaultKind.EMPTY_OUTPUT)),
    FaultKind.TRUNCATED_OUTPUT: (None, None, {}, lambda n: _acts(n, FaultKind.TRUNCATED_OUTPUT)),
    FaultKind.HUGE_OUTPUT: (None, None, {"mb": 1}, lambda n: _acts(n, FaultKind.HUGE_OUTPUT)),
    FaultKind.NON_UTF8_OUTPUT: (None, None, {}, lambda n: _acts(n, FaultKind.NON_UTF8_OUTPUT)),
    FaultKind.EXIT_CODE: (None, None, {"status": 3}, lambda n: _acts(n, FaultKind.EXIT_CODE)),
    FaultKind.SLOW_TRICKLE: (None, None, {}, lambda n: _acts(n, FaultKind.SLOW_TRICKLE)),
    FaultKind.SSH_REFUSED: (None, None, {}, lambda n: n.ssh_refused),
    FaultKind.SSH_DROP_MID_COMMAND: (None, None, {}, lambda n: _acts(n, FaultKind.SSH_DROP_MID_COMMAND)),
    FaultKind.AUTH_FAILURE: (None, None, {}, lambda n: n.auth_failure),
    FaultKind.HOST_KEY_CHANGED: (None, None, {}, lambda n: n.host_key_changed),
    FaultKind.TORCH_MISSING: (None, None, {}, lambda n: not n.torch.installed),
    FaultKind.TORCH_CPU_ONLY: (None, None, {}, lambda n: not n.torch.hip_build),
    FaultKind.TORCH_DEVICE_COUNT: (None, None, {}, lambda n: n.torch.visible_devices == 7),
    FaultKind.TORCH_GEMM_SLOW: (3, None, {}, lambda n: n.torch.gemm_factor == {3: 0.6}),
    FaultKind.TORCH_GEMM_NAN: (3, None, {}, lambda n: n.torch.nonfinite == {3: 4096}),
    FaultKind.TORCH_ALLREDUCE_WRONG: (None, None, {}, lambda n: n.torch.all_reduce == "wrong"),
    FaultKind.TORCH_ALLREDUCE_HANG: (None, None, {}, lambda n: n.torch.all_reduce == "hang"),
    FaultKind.CONTAINER_IMAGE_MISSING: (None, None, {}, lambda n: n.container.image_missing),
    FaultKind.CONTAINER_NO_GPU: (None, None, {}, lambda n: n.container.no_gpu),
    FaultKind.RCCL_UNVALIDATED: (None, None, {}, lambda n: n.rccl_unvalidated),
    FaultKind.RCCL_FEWER_RANKS: (None, None, {}, lambda n: n.rccl_gpus == 4),
    FaultKind.RVS_PEQT_WORD: (None, None, {}, lambda n: n.rvs_peqt_word == "FAILED"),
    FaultKind.RVS_GPU_UNSEEN: (3, None, {}, lambda n: n.rvs_unseen_slots == [3]),
    FaultKind.RVS_STOPS_EARLY: (None, None, {}, lambda n: n.rvs_stop_after == 1),
    FaultKind.TORCH_DEVICE_ENTRY_LOST: (None, None, {}, lambda n: n.torch.entry_lost == "drop"),
    FaultKind.TORCH_ALLREDUCE_FEW_RANKS: (None, None, {}, lambda n: n.torch.all_reduce_world == 4),
    FaultKind.TORCH_FP8_SKIPPED: (3, None, {}, lambda n: n.torch.fp8_skipped == [3]),
    FaultKind.RCCL_ROW_REPEATED: (None, None, {}, lambda n: n.rccl_repeat_factor == 0.04),
    FaultKind.AMDSMI_IMPOSSIBLE_READING: (3, None, {}, lambda n: n.gpus[3].impossible == "ecc"),
    FaultKind.RCCL_HEADER_LINE_LOST: (None, None, {}, lambda n: n.rccl_header_lost == 3),
}


@pytest.mark.parametrize("kind", list(FaultKind))
def test_each_fault_changes_the_node_state(kind: FaultKind) -> None:
    gpu, peer, params, check = EVIDENCE[kind]
    healthy = build_node(cluster(), NODE)
    faulted = build_node(cluster(faults=[fault(kind, gpu=gpu, peer=peer, **params)]), NODE)
    assert not check(healthy), "the check must fail on a healthy node"
    assert check(faulted)


def test_drift_to_a_preset_swaps_the_whole_rocm_userspace() -> None:
    node = build_node(cluster(GpuModel.MI300X, faults=[fault(FaultKind.ROCM_DRIFT, rocm="7.0.2")]), NODE)
    assert (node.stack.rocm, node.stack.amdsmi_tool, node.stack.rccl) == ("7.0.2", "26.0.2+2e9a2b2d", "2.26.6")
    assert node.stack.kernel == node.expected_stack.kernel, "drift leaves the OS alone"


def test_gpu_fault_on_a_missing_gpu_is_harmless() -> None:
    faults = [fault(FaultKind.GPU_MISSING, gpu=2), fault(FaultKind.ECC_UNCORRECTABLE, gpu=2)]
    node = build_node(cluster(faults=faults), NODE)
    assert all(gpu.ecc_total("uncorrectable") == 0 for gpu in node.gpus)


def test_fault_params_override_defaults() -> None:
    node = build_node(cluster(faults=[fault(FaultKind.POWER_THROTTLE, gpu=0, cap_w=600, percent=12)]), NODE)
    assert (node.gpus[0].power_cap_w, node.gpus[0].violations_pct["PVIOL"]) == (600, 12)


def test_mi250x_link_fault_on_an_indirect_pair_lands_on_a_direct_link() -> None:
    node = build_node(cluster(GpuModel.MI250X, faults=[fault(FaultKind.XGMI_LINK_DOWN, gpu=0, peer=3)]), NODE)
    assert node.gpus[0].xgmi[3].state is LinkState.UP, "0 and 3 are not directly linked"
    assert node.gpus[0].xgmi[2].state is LinkState.DOWN and node.gpus[2].xgmi[0].state is LinkState.DOWN


def test_mi250x_throttle_uses_throttle_status() -> None:
    node = build_node(cluster(GpuModel.MI250X, faults=[fault(FaultKind.THERMAL_THROTTLE, gpu=1)]), NODE)
    assert node.gpus[1].throttle_status == "THROTTLED" and node.gpus[1].violations_pct == {}
    assert node.gpus[1].edge_c is not None and node.gpus[1].edge_c > 85
