"""The simulated cluster's specs, node state and the program dispatcher (console.sim.models / commands)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from console.sim import commands
from console.sim.commands import Delivery, SimContext, context_for, garble, next_invocation, run_program
from console.sim.faults import FaultKind
from console.sim.models import ClusterSpec, build_node, example_cluster, jitter_rng
from console.sim.specs import GPU_SPECS, STACK_PRESETS, GpuModel, stack_preset
from tests.sim.simcore_helpers import NODE, cluster, fault, run

# Vendor values from thresholds.md A.1 (device id, gfx target, CUs, TBP, PCIe gen).
SPEC_TABLE = [
    (GpuModel.MI300X, "74a1", "gfx942", 304, 750, 5, 192),
    (GpuModel.MI325X, "74a5", "gfx942", 304, 1000, 5, 256),
    (GpuModel.MI350X, "75a0", "gfx950", 256, 1000, 5, 288),
    (GpuModel.MI355X, "75a3", "gfx950", 256, 1400, 5, 288),
    (GpuModel.MI250X, "740c", "gfx90a", 110, 560, 4, 64),
]


@pytest.mark.parametrize("row", SPEC_TABLE, ids=lambda row: row[0].value)
def test_gpu_specs_carry_vendor_values(row: tuple[GpuModel, str, str, int, int, int, int]) -> None:
    model, device, gfx, cus, tbp, gen, vram_gib = row
    spec = GPU_SPECS[model]
    assert (spec.device_id, spec.gfx_target, spec.compute_units) == (device, gfx, cus)
    assert spec.power_cap_w == tbp == spec.iet_target_w
    assert spec.pcie_gen == gen and spec.pcie_width == 16
    assert spec.vram_bytes == vram_gib * 1024**3
    assert len(spec.bus_numbers) == spec.gpus_per_node == 8


def test_stack_presets_follow_the_rocm_lines() -> None:
    assert set(STACK_PRESETS) == {"6.2.2", "6.4.1", "7.0.2"}
    assert stack_preset("7.0.2").amdsmi_tool.startswith("26.0.2")
    assert stack_preset("6.4.1").rocm_major == 6
    assert stack_preset("7.0.2").rocm_tuple == (7, 0, 2)
    with pytest.raises(KeyError, match="known"):
        stack_preset("5.7.0")


def test_cluster_spec_round_trips_through_json(tmp_path: Path) -> None:
    spec = example_cluster(seed=11)
    path = tmp_path / "cluster.json"
    spec.save(path)
    again = ClusterSpec.load(path)
    assert again == spec
    assert json.loads(path.read_text())["faults"], "the example cluster carries demo faults"
    assert spec.node("mi355x-02").gpu_model is GpuModel.MI355X
    with pytest.raises(KeyError):
        spec.node("nope")


def test_build_node_is_deterministic_and_seed_dependent() -> None:
    first, second = build_node(cluster(seed=1), NODE), build_node(cluster(seed=1), NODE)
    other = build_node(cluster(seed=2), NODE)
    assert first == second
    assert [gpu.serial for gpu in first.gpus] != [gpu.serial for gpu in other.gpus]


@pytest.mark.parametrize("model", list(GpuModel))
def test_node_identity_is_consistent(model: GpuModel) -> None:
    node = build_node(cluster(model), NODE)
    spec = GPU_SPECS[model]
    assert [gpu.bdf for gpu in node.gpus] == [f"0000:{bus:02x}:00.0" for bus in spec.bus_numbers]
    assert sorted(gpu.kfd_node for gpu in node.gpus) == list(range(2, 10))
    assert len({gpu.kfd_gpu_id for gpu in node.gpus}) == 8
    assert all(gpu.uuid[4:8] == spec.device_id for gpu in node.gpus)
    assert all(len(gpu.xgmi) == 7 for gpu in node.gpus)
    assert node.stack == node.expected_stack


def test_mi250x_topology_mixes_link_counts() -> None:
    gpu0 = build_node(cluster(GpuModel.MI250X), NODE).gpus[0]
    assert gpu0.xgmi[1].links == 4, "the two GCDs of one OAM"
    assert gpu0.xgmi[2].links == 1
    assert gpu0.xgmi[3].links == 0 and gpu0.xgmi[3].hops == 2


def test_missing_gpu_renumbers_the_rest() -> None:
    node = build_node(cluster(faults=[fault(FaultKind.GPU_MISSING, gpu=2)]), NODE)
    assert node.missing_slots == [2]
    assert [gpu.index for gpu in node.gpus] == list(range(7))
    assert [gpu.slot for gpu in node.gpus] == [0, 1, 3, 4, 5, 6, 7]
    assert node.gpu_by_slot(2) is None


def test_jitter_rng_is_reproducible_per_invocation() -> None:
    assert jitter_rng(1, "a", 5).random() == jitter_rng(1, "a", 5).random()
    assert jitter_rng(1, "a", 5).random() != jitter_rng(1, "a", 6).random()


def test_readings_vary_between_invocations_but_not_within_one() -> None:
    spec = cluster()
    assert run(spec, "amd-smi", "metric", "--json", invocation=1) == run(
        spec, "amd-smi", "metric", "--json", invocation=1
    )
    assert run(spec, "amd-smi", "metric", "--json", invocation=1) != run(
        spec, "amd-smi", "metric", "--json", invocation=2
    )


def test_unknown_program_answers_like_sh() -> None:
    reply = run(cluster(), "/usr/bin/frobnicate", "-x")
    assert (reply.stdout, reply.stderr, reply.exit_status) == ("", "sh: 1: /usr/bin/frobnicate: not found\n", 127)
    assert run(cluster()).stdout == ""


def test_tool_missing_hides_the_program() -> None:
    spec = cluster(faults=[fault(FaultKind.TOOL_MISSING, program="amd-smi")])
    assert run(spec, "amd-smi", "version").exit_status == 127
    assert run(spec, "rocm-smi").exit_status == 0


def test_module_that_does_not_exist_yet_answers_not_found(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(commands.PROGRAMS, "future", commands._lazy("console.sim.render.no_such_module"))
    assert run(cluster(), "future").exit_status == 127


@pytest.mark.parametrize(
    ("kind", "delivery"),
    [
        (FaultKind.COMMAND_HANG, Delivery.HANG),
        (FaultKind.SSH_DROP_MID_COMMAND, Delivery.DROP),
        (FaultKind.GARBAGE_OUTPUT, Delivery.GARBAGE),
        (FaultKind.SLOW_TRICKLE, Delivery.TRICKLE),
    ],
)
def test_behaviour_faults_change_delivery(kind: FaultKind, delivery: Delivery) -> None:
    spec = cluster(faults=[fault(kind, program="amd-smi")])
    clean = run(cluster(), "amd-smi", "static")
    reply = run(spec, "amd-smi", "static")
    assert reply.delivery is delivery
    assert run(spec, "rocm-smi").delivery is Delivery.NORMAL
    if delivery is Delivery.HANG:
        assert reply.stdout == ""
    elif delivery is Delivery.DROP:
        assert 0 < len(reply.stdout) < len(clean.stdout) and clean.stdout.startswith(reply.stdout)
        assert reply.exit_status == 255
    elif delivery is Delivery.GARBAGE:
        assert reply.stdout != clean.stdout
        assert any(char in reply.stdout for char in "\x00\x1b\x7f\ufffd")
    else:
        assert reply.stdout == clean.stdout and reply.duration_s >= commands.TRICKLE_SIMULATED_S / 20


def test_garble_is_deterministic_and_never_empty() -> None:
    assert garble("abc", random.Random(1)) == garble("abc", random.Random(1))
    assert garble("", random.Random(1))


def test_durations_are_divided_by_the_time_factor() -> None:
    spec = cluster()
    ctx = SimContext(node=build_node(spec, NODE), cluster=spec)
    assert ctx.duration(40.0) == 40.0 / spec.time_factor


def test_invocation_counter_is_shared_through_the_state_dir(tmp_path: Path) -> None:
    assert [next_invocation(tmp_path, "n") for _ in range(3)] == [1, 2, 3]
    assert next_invocation(tmp_path, "m") == 1
    assert context_for(cluster(), NODE, tmp_path).invocation == 1


def test_a_reserved_block_of_invocations_is_skipped_by_the_next_caller(tmp_path: Path) -> None:
    assert next_invocation(tmp_path, "n", reserve=100) == 1
    assert next_invocation(tmp_path, "n") == 101


def test_entry_point_prints_a_reply_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.json"
    cluster().save(path)
    assert commands.main([str(path), NODE, "--json", "--", "amd-smi", "version"]) == 0
    reply = json.loads(capsys.readouterr().out)
    assert reply["stdout"].startswith("AMDSMI Tool: 25.4.2") and reply["exit_status"] == 0


def test_entry_point_acts_out_the_reply(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.json"
    cluster(faults=[fault(FaultKind.DRIVER_NOT_LOADED)]).save(path)
    assert commands.main([str(path), NODE, "--state-dir", str(tmp_path), "--", "rocminfo"]) == 1
    assert capsys.readouterr().out == "ROCk module is NOT loaded, possibly no GPU devices\n"


def test_run_program_passes_the_full_argv(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def handler(ctx: SimContext, argv: list[str]) -> commands.SimReply:
        seen.append(argv)
        return commands.SimReply("ok\n")

    monkeypatch.setitem(commands.PROGRAMS, "probe", handler)
    spec = cluster()
    assert run_program(SimContext(node=build_node(spec, NODE), cluster=spec), ["/opt/x/probe", "-a"]).stdout == "ok\n"
    assert seen == [["/opt/x/probe", "-a"]]
