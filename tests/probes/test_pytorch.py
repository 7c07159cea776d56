"""The framework probe's parser on its (synthetic) outputs, on the real script run here, and on mangled input."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import given

from console.model.framework import StageStatus, TorchProbeResult
from console.model.workload import ContainerSpec
from console.probes import Tool, detect, parse_output
from console.probes import pytorch as torch_probe
from console.probes.base import ParsedOutput, ParseError, to_text
from console.probes.pytorch.command import node_script, torch_probe_argv, torch_probe_shown
from tests.probes.fuzz import FUZZ_SETTINGS, assert_total, mangled_outputs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "torch"
SAMPLES = sorted(FIXTURES.glob("*.txt"))


def _read(name: str) -> tuple[ParsedOutput, TorchProbeResult]:
    parsed = parse_output((FIXTURES / name).read_text(), tool=Tool.TORCH)
    assert isinstance(parsed.data, TorchProbeResult)
    return parsed, parsed.data


def test_a_healthy_mi300x_reads_whole() -> None:
    parsed, result = _read("mi300x-healthy.txt")
    assert parsed.ok and parsed.errors == [] and parsed.warnings == []
    assert parsed.tool_version == "2.7.1+rocm6.4" and result.torch.is_hip
    assert result.torch.device_count == len(result.devices) == 8
    assert {d.name for d in result.devices} == {"AMD Instinct MI300X"} and result.devices[0].arch == "gfx942"
    assert all(d.bf16.tflops and d.bf16.tflops > 500 and d.bf16.nonfinite == 0 for d in result.devices)
    assert {d.fp8.dtype for d in result.devices} == {"float8_e4m3fnuz"}
    assert result.devices[3].pci_bus_id == "0000:5c:00.0"
    assert result.all_reduce.correct is True and result.all_reduce.world_size == 8
    assert parsed.summary["bf16_min_tflops"] == min(d.bf16.tflops or 0 for d in result.devices)


def test_fp8_where_the_gpu_has_none_is_unsupported_not_failed() -> None:
    parsed, result = _read("mi250x-healthy-no-fp8.txt")
    assert parsed.ok
    assert {d.fp8.status for d in result.devices} == {StageStatus.UNSUPPORTED}
    assert "gfx90a has no FP8 matrix cores" in (result.devices[0].fp8.error or "")
    _, mi355x = _read("mi355x-healthy.txt")
    assert {d.fp8.dtype for d in mi355x.devices} == {"float8_e4m3fn"}


def test_a_cpu_only_build_is_read_as_such() -> None:
    parsed, result = _read("mi300x-cpu-only-build.txt")
    assert parsed.ok, "the probe ran; the checks judge the build"
    assert result.torch.hip is None and result.torch.cuda_available is False and not result.torch.is_hip
    assert result.torch.build_label() == "CPU-only" and result.devices == []
    assert result.all_reduce.status is StageStatus.SKIPPED


@pytest.mark.parametrize("name", ["mi300x-no-torch.txt", "no-torch-traceback.txt"])
def test_torch_that_does_not_import_is_a_failed_import(name: str) -> None:
    parsed, result = _read(name)
    assert not parsed.ok
    assert parsed.errors[0] == "import torch: ModuleNotFoundError: No module named 'torch'"
    assert result.torch.status is StageStatus.ERROR
    assert any("No module named 'torch'" in line for line in result.other_lines), "stderr is kept, not dropped"


def test_a_stage_that_raised_is_named_with_its_gpu_and_the_lines_around_are_kept() -> None:
    parsed, result = _read("mi300x-oom-on-gpu5-with-warnings.txt")
    assert not parsed.ok
    assert parsed.errors == [f"gpu5 bf16: {result.devices[5].bf16.error}"]
    assert "HIP out of memory" in parsed.errors[0]
    assert result.devices[5].fp8.status is StageStatus.OK, "one stage's failure leaves the others' evidence"
    assert len(result.other_lines) == 2 and any("UserWarning" in w for w in parsed.warnings)


def test_a_hung_all_reduce_is_reported_by_the_script() -> None:
    parsed, result = _read("mi300x-allreduce-hang.txt")
    assert not parsed.ok and result.all_reduce.status is StageStatus.ERROR
    assert parsed.errors == ["all-reduce: did not finish within 120 s (ranks 0, 1, 2, 3, 4, 5, 6, 7)"]
    assert result.all_reduce.correct is None


def _document(**changes: object) -> str:
    doc = json.loads((FIXTURES / "mi300x-healthy.txt").read_text())
    doc.update(changes)
    return json.dumps(doc)


def test_unknown_keys_and_wrong_types_are_reported_never_dropped() -> None:
    doc = json.loads(_document(extra=1))
    doc["devices"][0]["bf16"]["tflops"] = "fast"
    doc["devices"][1]["clock_mhz"] = 2100
    doc["torch"]["device_count"] = True
    parsed = torch_probe.parse(json.dumps(doc))
    assert isinstance(parsed.data, TorchProbeResult)
    assert parsed.data.unknown_keys == ["extra", "devices[1].clock_mhz"]
    assert "devices[0].bf16.tflops: 'fast' is not a number" in parsed.warnings
    assert "torch.device_count: 'True' is not a whole number" in parsed.warnings
    assert parsed.data.devices[0].bf16.tflops is None and parsed.data.torch.device_count is None


def test_missing_keys_and_nulls_are_not_reported_not_invented() -> None:
    parsed = torch_probe.parse(json.dumps({"probe": "instinct-console/torch", "torch": None, "devices": [{}]}))
    assert isinstance(parsed.data, TorchProbeResult)
    assert not parsed.ok and parsed.errors == ["import torch: missing"]
    assert parsed.data.devices[0].bf16.status is StageStatus.MISSING and parsed.data.devices[0].bf16.tflops is None
    assert "devices[0]: no device index" in parsed.warnings


def test_a_non_finite_figure_is_not_a_figure() -> None:
    doc = json.loads(_document())
    doc["devices"][2]["bf16"]["tflops"] = float("nan")
    parsed = torch_probe.parse(json.dumps(doc))
    assert isinstance(parsed.data, TorchProbeResult)
    assert parsed.data.devices[2].bf16.tflops is None
    assert "devices[2].bf16.tflops: 'nan' is not a finite number" in parsed.warnings


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "no torch probe document in the output: 'no output'"),
        ("Segmentation fault\n", "no torch probe document in the output: 'Segmentation fault'"),
        (_document()[:700], "torch probe JSON is truncated or malformed"),
    ],
)
def test_what_is_not_the_document_is_a_parse_error(text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        torch_probe.parse(text)


def test_detection() -> None:
    for sample in SAMPLES:
        found = detect(sample.read_text())
        assert found is not None and found.tool is Tool.TORCH and found.kind == "torch", sample.name
    assert torch_probe.detect("Traceback ...\nModuleNotFoundError: No module named 'numpy'\n") is None


def test_the_real_script_on_a_python_without_torch() -> None:
    """The script the console sends, run by this machine's python3 (which has no torch): its real answer."""
    argv = torch_probe_argv()
    assert argv[:2] == ("python3", "-c") and argv[2] == node_script()
    run = subprocess.run(list(argv), capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 1
    parsed = parse_output(run.stdout + run.stderr)
    assert parsed.tool is Tool.TORCH and not parsed.ok
    assert parsed.errors == ["import torch: ModuleNotFoundError: No module named 'torch'"]
    assert isinstance(parsed.data, TorchProbeResult)
    assert parsed.data.params == {
        "size": 8192,
        "iters": 20,
        "warmup": 3,
        "allreduce_mib": 64,
        "allreduce_timeout": 120.0,
    }


@FUZZ_SETTINGS
@given(data=mangled_outputs(SAMPLES))
def test_parse_is_total(data: bytes) -> None:
    assert_total(torch_probe.parse, to_text(data), None)


PODMAN = ContainerSpec(runtime="podman", image="rocm/pytorch@sha256:" + "0a" * 32, options=["--shm-size=16g"])
APPTAINER = ContainerSpec(runtime="apptainer", image="/shared/images/pytorch-rocm6.4.sif")


def test_in_a_container_the_same_script_runs_on_the_images_python() -> None:
    bare = torch_probe_argv()
    told = ("--container-runtime", "podman", "--container-image", PODMAN.image)
    gpus = ("--device=/dev/kfd", "--device=/dev/dri", "--group-add=video", "--group-add=render")
    assert torch_probe_argv(container=PODMAN) == (
        "podman", "run", "--rm", *gpus, "--ipc=host", "--network=host", "--shm-size=16g", PODMAN.image, *bare, *told
    )  # fmt: skip
    in_sif = torch_probe_argv(container=APPTAINER)
    assert in_sif[: in_sif.index("python3")] == ("apptainer", "exec", "--rocm", APPTAINER.image)
    assert torch_probe_shown(in_sif).startswith(
        "apptainer exec --rocm /shared/images/pytorch-rocm6.4.sif python3 -c '<instinct-console torch probe>' --size"
    )


def test_what_the_container_was_and_what_the_script_saw_are_read() -> None:
    params = {"size": 8192, "container_runtime": "podman", "container_image": PODMAN.image}
    inside = torch_probe.parse(_document(params=params, container_seen="podman"))
    assert isinstance(inside.data, TorchProbeResult) and inside.ok and inside.warnings == []
    assert (inside.data.container_runtime, inside.data.container_image) == ("podman", PODMAN.image)
    assert inside.summary["container_image"] == PODMAN.image
    # Started in a container the script does not see itself in: said, not hidden (the runtime did run it).
    unseen = torch_probe.parse(_document(params=params, container_seen=None))
    assert unseen.ok and unseen.warnings == [
        f"started in podman image {PODMAN.image}, but the script found no container"
    ]


@pytest.mark.parametrize(
    "stderr",
    [
        "Trying to pull docker.io/rocm/pytorch:x...\nError: initializing source docker://rocm/pytorch:x: "
        "manifest unknown\n",
        "Unable to find image 'rocm/pytorch:x' locally\ndocker: Error response from daemon: pull access denied for "
        "rocm/pytorch\nSee 'docker run --help'.\n",
        "FATAL:   could not open image /img/x.sif: no such file or directory\n",
    ],
    ids=["podman", "docker", "apptainer"],
)
def test_a_runtime_that_did_not_start_the_image_is_no_document(stderr: str) -> None:
    with pytest.raises(ParseError, match=r"the container runtime did not run the probe: (Error|docker|FATAL)"):
        torch_probe.parse(stderr)


def test_the_real_script_told_of_a_container() -> None:
    """The script run here with the container options: it echoes them, and says what container it finds
    itself in (this machine may itself be one: then no warning, else the warning)."""
    argv = torch_probe_argv(container=PODMAN)
    run = subprocess.run(list(argv[argv.index("python3") :]), capture_output=True, text=True, timeout=60, check=False)
    parsed = parse_output(run.stdout + run.stderr)
    assert isinstance(parsed.data, TorchProbeResult)
    assert (parsed.data.container_runtime, parsed.data.container_image) == ("podman", PODMAN.image)
    warned = any("the script found no container" in w for w in parsed.warnings)
    assert warned is (parsed.data.container_seen is None)
