"""Site workloads on a simulated node: container runtimes, vLLM's serving benchmark, a training script."""

from __future__ import annotations

import json
import re

from console.sim.faults import FaultKind
from console.sim.specs import GpuModel
from tests.sim.simcore_helpers import cluster, fault, run

VLLM = ("vllm", "bench", "serve", "--model", "m", "--num-prompts", "500")
TRAIN = ("python3", "/shared/smoke/train.py", "--steps", "100", "--report-prefix", "RESULT ")


def _rps(stdout: str) -> float:
    return float(re.findall(r"Request throughput \(req/s\):\s+(\S+)", stdout)[-1])


def _result(stdout: str) -> dict[str, object]:
    return json.loads(stdout.splitlines()[-1].removeprefix("RESULT "))  # type: ignore[no-any-return]


def test_a_container_runs_its_command_on_the_node() -> None:
    docker = run(cluster(), "docker", "run", "--rm", "--device=/dev/kfd", "-e", "X=1", "rocm/vllm@sha256:ab", *VLLM)
    bare = run(cluster(), *VLLM)
    assert docker.exit_status == 0 and "Serving Benchmark Result" in docker.stdout
    assert abs(_rps(docker.stdout) - _rps(bare.stdout)) < 0.5
    apptainer = run(cluster(), "apptainer", "exec", "--rocm", "-B", "/shared", "/img/x.sif", *TRAIN)
    assert apptainer.exit_status == 0 and apptainer.stdout.splitlines()[-1].startswith("RESULT {")
    assert run(cluster(), "docker", "pull", "x").exit_status == 125


def test_figures_follow_the_model_the_rocm_line_and_the_gpus() -> None:
    mi300x, mi355x = _rps(run(cluster(), *VLLM).stdout), _rps(run(cluster(GpuModel.MI355X), *VLLM).stdout)
    old = _rps(run(cluster(rocm="6.2.2"), *VLLM).stdout)
    throttled = _rps(run(cluster(faults=[fault(FaultKind.THERMAL_THROTTLE, gpu=2)]), *VLLM).stdout)
    assert 12.9 < mi300x < 13.5 and mi355x > 19 and old < 11 and throttled < 12
    healthy = _result(run(cluster(), *TRAIN).stdout)
    assert healthy["tokens_per_s"] > 50000 and 2.0 < healthy["loss"]["step_100"] < 2.2  # type: ignore[index,operator]


def test_a_gpu_computing_nan_makes_the_loss_nan_from_step_40() -> None:
    reply = run(cluster(faults=[fault(FaultKind.TORCH_GEMM_NAN, gpu=5)]), *TRAIN)
    assert "step    30 | loss nan" not in reply.stdout and "step    40 | loss nan" in reply.stdout
    assert (
        reply.stdout.splitlines()[-1]
        == 'RESULT {"tokens_per_s": ' + str(_result(reply.stdout)["tokens_per_s"]) + ', "loss": {"step_100": NaN}}'
    )


def test_without_a_driver_there_is_no_gpu() -> None:
    reply = run(cluster(faults=[fault(FaultKind.DRIVER_NOT_LOADED)]), *VLLM)
    assert reply.exit_status == 1 and "No HIP GPUs are available" in reply.stderr
