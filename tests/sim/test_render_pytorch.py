"""The framework probe on a simulated node: the real script's document, drawn from the node's state."""

from __future__ import annotations

import json

import pytest

from console.model.framework import StageStatus, TorchProbeResult
from console.probes import Tool, parse_output
from console.probes.pytorch.command import torch_probe_argv
from console.sim.faults import FaultKind
from console.sim.specs import GPU_SPECS, GpuModel
from tests.sim.simcore_helpers import cluster, fault, run

ARGV = torch_probe_argv()


def _result(*faults: object, model: GpuModel = GpuModel.MI300X) -> tuple[int, TorchProbeResult]:
    reply = run(cluster(model, faults=list(faults)), *ARGV)  # type: ignore[arg-type]
    parsed = parse_output(reply.stdout + reply.stderr, tool=Tool.TORCH)
    assert isinstance(parsed.data, TorchProbeResult)
    return reply.exit_status, parsed.data


@pytest.mark.parametrize("model", list(GpuModel), ids=lambda m: m.value)
def test_a_healthy_node_answers_with_its_model_and_stack(model: GpuModel) -> None:
    status, result = _result(model=model)
    spec = GPU_SPECS[model]
    assert status == 0 and result.torch.is_hip and result.torch.cuda_available
    assert result.torch.device_count == len(result.devices) == spec.gpus_per_node
    assert {d.name for d in result.devices} == {spec.market_name} and {d.arch for d in result.devices} == {
        spec.gfx_target
    }
    bf16_target = spec.gst_targets_gflops["bf16"] / 1000
    assert all(bf16_target <= (d.bf16.tflops or 0) <= bf16_target * 1.06 for d in result.devices)
    fp8 = {d.fp8.status for d in result.devices}
    assert fp8 == ({StageStatus.UNSUPPORTED} if model is GpuModel.MI250X else {StageStatus.OK})
    assert result.all_reduce.correct is True and result.all_reduce.world_size == spec.gpus_per_node


def test_the_params_are_the_scripts_own() -> None:
    _, result = _result()
    assert result.params == {"size": 8192, "iters": 20, "warmup": 3, "allreduce_mib": 64, "allreduce_timeout": 120.0}


def test_torch_follows_the_nodes_rocm_line() -> None:
    reply = run(cluster(GpuModel.MI300X, rocm="6.2.2"), *ARGV)
    assert json.loads(reply.stdout)["torch"]["version"] == "2.5.1+rocm6.2"


def test_no_torch_prints_the_import_error_and_exits_1() -> None:
    reply = run(cluster(faults=[fault(FaultKind.TORCH_MISSING)]), *ARGV)
    assert reply.exit_status == 1 and reply.stderr == "ModuleNotFoundError: No module named 'torch'\n"
    assert json.loads(reply.stdout)["torch"] == {
        "status": "error",
        "error": "ModuleNotFoundError: No module named 'torch'",
    }


def test_a_cpu_only_build_sees_no_gpu() -> None:
    status, result = _result(fault(FaultKind.TORCH_CPU_ONLY))
    assert status == 0 and result.torch.hip is None and result.torch.version == "2.7.1+cpu"
    assert result.torch.device_count == 0 and result.devices == []
    assert result.all_reduce.status is StageStatus.SKIPPED


def test_a_node_without_its_driver_has_a_rocm_torch_that_sees_nothing() -> None:
    _, result = _result(fault(FaultKind.DRIVER_NOT_LOADED))
    assert result.torch.hip and result.torch.cuda_available is False and result.torch.device_count == 0


def test_devices_torch_cannot_see() -> None:
    _, result = _result(fault(FaultKind.TORCH_DEVICE_COUNT, visible=6))
    assert result.torch.device_count == len(result.devices) == 6 and result.all_reduce.world_size == 6


def test_a_missing_gpu_is_missing_for_torch_too() -> None:
    _, result = _result(fault(FaultKind.GPU_MISSING, gpu=2))
    assert result.torch.device_count == 7 and "0000:38:00.0" not in {d.pci_bus_id for d in result.devices}


def test_slow_and_nan_gemms_land_on_their_gpu_only() -> None:
    _, healthy = _result()
    _, slow = _result(fault(FaultKind.TORCH_GEMM_SLOW, gpu=3, factor=0.5))
    _, nan = _result(fault(FaultKind.TORCH_GEMM_NAN, gpu=3))
    assert [d.index for d in slow.devices if (d.bf16.tflops or 0) < 400] == [3]
    assert (slow.devices[3].fp8.tflops or 0) < 0.55 * (healthy.devices[3].fp8.tflops or 0)
    assert [(d.index, d.bf16.nonfinite, d.fp8.nonfinite) for d in nan.devices if d.bf16.nonfinite] == [(3, 4096, 4096)]


def test_a_throttled_gpu_is_slower_in_torch_too() -> None:
    _, result = _result(fault(FaultKind.THERMAL_THROTTLE, gpu=5))
    assert (result.devices[5].bf16.tflops or 0) < min(
        d.bf16.tflops or 0 for i, d in enumerate(result.devices) if i != 5
    )


def test_a_wrong_and_a_hung_all_reduce() -> None:
    status, wrong = _result(fault(FaultKind.TORCH_ALLREDUCE_WRONG))
    assert status == 0 and wrong.all_reduce.correct is False and (wrong.all_reduce.max_abs_error or 0) > 0
    status, hung = _result(fault(FaultKind.TORCH_ALLREDUCE_HANG))
    assert status == 1 and hung.all_reduce.status is StageStatus.ERROR
    assert hung.all_reduce.error == "did not finish within 120 s (ranks 0, 1, 2, 3, 4, 5, 6, 7)"


def test_other_python_scripts_are_refused() -> None:
    reply = run(cluster(), "python3", "-c", "print(1)")
    assert reply.exit_status == 2 and "only the console's probe scripts" in reply.stderr


def test_behaviour_faults_reach_python3_by_name() -> None:
    """The generic faults act on the probe with no work of its own: hang, cut output, missing python3."""
    hang = run(cluster(faults=[fault(FaultKind.COMMAND_HANG, program="python3")]), *ARGV)
    assert hang.delivery.value == "hang"
    cut = run(cluster(faults=[fault(FaultKind.TRUNCATED_OUTPUT, program="python3")]), *ARGV)
    assert not cut.stdout.endswith("\n")
    missing = run(cluster(faults=[fault(FaultKind.TOOL_MISSING, program="python3")]), *ARGV)
    assert missing.exit_status == 127 and "python3: not found" in missing.stderr
