"""Site workloads on a simulated node: container runtimes, vLLM's serving benchmark, a training script."""

from __future__ import annotations

import json
import re

import pytest

from console.model.workload import ContainerSpec
from console.probes.pytorch.command import torch_probe_argv
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
    gpus = ("--device=/dev/kfd", "--device", "/dev/dri")
    docker = run(cluster(), "docker", "run", "--rm", *gpus, "-e", "X=1", "rocm/vllm@sha256:ab", *VLLM)
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


PODMAN = ContainerSpec(runtime="podman", image="rocm/pytorch:rocm6.4.1_ubuntu22.04_py3.10_pytorch_release_2.7.1")
DOCKER = ContainerSpec(runtime="docker", image="registry.example.org/ml/pytorch@sha256:" + "ab" * 32)
APPTAINER = ContainerSpec(runtime="apptainer", image="/shared/images/pytorch.sif")


def _torch(reply_stdout: str) -> dict[str, object]:
    return json.loads(reply_stdout.splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.parametrize("container", [PODMAN, DOCKER, APPTAINER], ids=lambda c: c.runtime)
def test_the_framework_probe_runs_in_each_runtime_as_on_the_node(container: ContainerSpec) -> None:
    inside = run(cluster(), *torch_probe_argv(container=container))
    bare = run(cluster(), *torch_probe_argv())
    assert inside.exit_status == bare.exit_status == 0
    doc, plain = _torch(inside.stdout), _torch(bare.stdout)
    assert doc["torch"] == plain["torch"] and len(doc["devices"]) == 8  # type: ignore[arg-type]
    assert doc["container_seen"] == container.runtime and plain["container_seen"] is None
    assert doc["params"]["container_image"] == container.image  # type: ignore[index]
    # The node's torch faults reach the script through the container.
    nan = run(cluster(faults=[fault(FaultKind.TORCH_GEMM_NAN, gpu=2)]), *torch_probe_argv(container=container))
    assert _torch(nan.stdout)["devices"][2]["bf16"]["nonfinite"] == 4096  # type: ignore[index]


@pytest.mark.parametrize(
    ("container", "status", "words"),
    [
        (PODMAN, 125, "Error: initializing source docker://docker.io/rocm/pytorch:rocm6.4.1"),
        (DOCKER, 125, "docker: Error response from daemon: pull access denied for registry.example.org/ml/pytorch"),
        (APPTAINER, 255, "FATAL:   could not open image /shared/images/pytorch.sif"),
    ],
    ids=lambda v: v.runtime if isinstance(v, ContainerSpec) else str(v)[:8],
)
def test_an_image_that_cannot_be_had_is_the_runtimes_refusal(container: ContainerSpec, status: int, words: str) -> None:
    reply = run(cluster(faults=[fault(FaultKind.CONTAINER_IMAGE_MISSING)]), *torch_probe_argv(container=container))
    assert reply.exit_status == status and reply.stdout == "" and words in reply.stderr
    # The fault is the runtime's: the node's own python3 still runs the probe.
    assert run(cluster(faults=[fault(FaultKind.CONTAINER_IMAGE_MISSING)]), *torch_probe_argv()).exit_status == 0


def test_a_container_without_the_gpus_sees_none() -> None:
    faulted = run(cluster(faults=[fault(FaultKind.CONTAINER_NO_GPU)]), *torch_probe_argv(container=PODMAN))
    assert _torch(faulted.stdout)["torch"]["device_count"] == 0  # type: ignore[index]
    # The same without the faults, when the command does not pass /dev/kfd and /dev/dri (or --rocm) through.
    for argv in (
        ("podman", "run", "--rm", "--device=/dev/kfd", PODMAN.image, *torch_probe_argv()),
        ("apptainer", "exec", APPTAINER.image, *torch_probe_argv()),
    ):
        doc = _torch(run(cluster(), *argv).stdout)
        assert doc["torch"]["device_count"] == 0 and doc["devices"] == []  # type: ignore[index]
