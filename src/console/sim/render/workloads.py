"""Site workloads on a simulated node: container runtimes, a vLLM serving benchmark and a short training run.

``docker run`` / ``podman run`` / ``apptainer exec`` run the command after their options and the image
on the same node (any image: the simulator has no registry). ``vllm bench serve`` prints vLLM's serving
benchmark summary; ``python3 <path>/train.py --steps N --report-prefix P`` prints step lines and one
``P{json}`` line (tokens/s, loss at the last step). Their figures follow the GPU model, the node's ROCm
line (newer releases are faster) and its GPUs' state: the slowest GPU sets the pace (throttling,
``torch_gemm_slow``), a GPU that computes NaN (``torch_gemm_nan``) makes the loss NaN from step 40, and
a node without its driver has no GPU for them at all. Under ``srun`` a training task reads the job's
nodes (``SLURM_JOB_NODELIST``): every rank reports the job's pace and its NaN, as gradients are shared.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

from console.sim.commands import SimContext, SimReply, program_name, run_program
from console.sim.models import SimNode, build_node
from console.sim.specs import GpuModel

__all__ = ["handle", "train"]

# Options of ``docker/podman run`` that take the next word as their value (the rest are flags or --opt=value).
_RUN_VALUE = {"-e", "--env", "-v", "--volume", "-w", "--workdir", "--name", "-u", "--user", "--shm-size",
              "--entrypoint", "--device", "--group-add", "--ipc", "--network", "--security-opt",
              "--cap-add"}  # fmt: skip
_APPTAINER_VALUE = {"-B", "--bind", "--env", "--pwd", "-H", "--home", "--overlay"}
# Healthy figures per model on the newest ROCm line: vLLM requests/s (an 8B model) and training tokens/s.
_VLLM_RPS = {GpuModel.MI300X: 13.1, GpuModel.MI325X: 14.4, GpuModel.MI350X: 17.9, GpuModel.MI355X: 19.6,
             GpuModel.MI250X: 4.2}  # fmt: skip
_TRAIN_TPS = {GpuModel.MI300X: 51234.0, GpuModel.MI325X: 55870.0, GpuModel.MI350X: 70120.0,
              GpuModel.MI355X: 76400.0, GpuModel.MI250X: 16800.0}  # fmt: skip
# The same workload on older ROCm lines: libraries (hipBLASLt, RCCL, the attention kernels) got faster.
_ROCM_PACE = {"6.2": 0.82, "6.3": 0.93, "6.4": 1.0, "7.0": 1.08}
NAN_FROM_STEP = 40


def handle(ctx: SimContext, argv: list[str]) -> SimReply:
    """A container runtime around a command, or ``vllm``."""
    name = program_name(argv)
    if name == "vllm":
        return _vllm(ctx, argv)
    if name == "apptainer":
        if argv[1:2] != ["exec"]:
            return SimReply(
                stdout="", stderr=f"apptainer: the simulated node runs only 'exec': {argv[1:2]}\n", exit_status=255
            )
        options, image, inner = _split(argv[2:], _APPTAINER_VALUE)
        gpus = "--rocm" in options
    else:
        if argv[1:2] != ["run"]:
            return SimReply(stdout="", stderr=f"{name}: the simulated node runs only 'run'\n", exit_status=125)
        options, image, inner = _split(argv[2:], _RUN_VALUE)
        devices = {o.removeprefix("--device=") for o in options}
        devices |= {value for flag, value in itertools.pairwise(options) if flag == "--device"}
        gpus = {"/dev/kfd", "/dev/dri"} <= devices
    if not inner:
        return SimReply(stdout="", stderr=f"{name}: no image or no command given\n", exit_status=125)
    if ctx.node.container.image_missing:
        return _image_refused(name, image)
    # Inside, the command finds the marks its runtime leaves (podman's ``container`` variable, docker's
    # /.dockerenv, apptainer's APPTAINER_CONTAINER) and only the GPUs the runtime passed through.
    mark = ("APPTAINER_CONTAINER", image) if name == "apptainer" else ("container", name)
    env = {**ctx.env, mark[0]: mark[1]}
    node = ctx.node if gpus and not ctx.node.container.no_gpu else ctx.node.model_copy(update={"gpus": []})
    return run_program(replace(ctx, node=node, env=env), inner)


def _split(args: list[str], takes_value: set[str]) -> tuple[list[str], str, list[str]]:
    """The runtime's options, the image and the command after it."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in takes_value else 1
    return args[:i], (args[i] if i < len(args) else ""), args[i + 1 :]


def _image_refused(runtime: str, image: str) -> SimReply:
    """What each runtime prints when the image is not on the node and the registry refuses the pull."""
    reference = image.split("://", 1)[-1]
    if runtime == "apptainer":
        if image == reference:  # a .sif path
            said = f"could not open image {image}: failed to retrieve path for {image}: lstat {image}: "
            said += "no such file or directory"
        else:
            said = f"While making image from oci registry: error fetching image to cache: {image}: manifest unknown"
        return SimReply(stdout="", stderr=f"FATAL:   {said}\n", exit_status=255)
    first = reference.split("/", 1)[0]
    if runtime == "podman" and "." not in first and ":" not in first:
        reference = f"docker.io/{reference}"  # podman names the registry it tried
    named = reference.split("@", 1)[0]
    repository = named.rsplit(":", 1)[0] if ":" in named.rsplit("/", 1)[-1] else named
    if runtime == "podman":
        return SimReply(
            stdout="",
            stderr=f"Trying to pull {reference}...\n"
            f"Error: initializing source docker://{reference}: reading manifest in {repository}: manifest unknown\n",
            exit_status=125,
        )
    return SimReply(
        stdout="",
        stderr=f"Unable to find image '{reference}' locally\n"
        f"docker: Error response from daemon: pull access denied for {repository}, repository does not exist or "
        "may require 'docker login': denied: requested access to the resource is denied.\nSee 'docker run --help'.\n",
        exit_status=125,
    )


def _pace(ctx: SimContext, nodes: list[SimNode]) -> float:
    """How fast ``nodes`` run a GPU-bound job together, relative to healthy ones on the newest ROCm line:
    a synchronous job goes at its slowest GPU's pace, on its slowest node's libraries."""
    slowest = min(
        (gpu.gst_factor * node.torch.gemm_factor.get(gpu.slot, 1.0) for node in nodes for gpu in node.gpus),
        default=0.0,
    )
    lines = [".".join(node.stack.rocm.split(".")[:2]) for node in nodes]
    return slowest * min(_ROCM_PACE.get(line, 1.0) for line in lines) * ctx.rng.uniform(0.99, 1.02)


def _job_nodes(ctx: SimContext) -> list[SimNode]:
    """The nodes of the job this task belongs to (srun exports them), this node alone without one."""
    hosts = [h for h in ctx.env.get("SLURM_JOB_NODELIST", "").split(",") if h and h != ctx.node.name]
    return [ctx.node, *(build_node(ctx.cluster, host) for host in hosts)]


def _no_gpu(ctx: SimContext) -> bool:
    return not ctx.node.driver_loaded or not ctx.node.gpus


def _vllm(ctx: SimContext, argv: list[str]) -> SimReply:
    if argv[1:3] != ["bench", "serve"]:
        return SimReply(stdout="", stderr="vllm: the simulated node runs only 'vllm bench serve'\n", exit_status=2)
    if _no_gpu(ctx):
        return SimReply(stdout="", stderr="RuntimeError: No HIP GPUs are available\n", exit_status=1)
    prompts = int(_option(argv, "--num-prompts", "1000"))
    rps = _VLLM_RPS[ctx.node.gpu_model] * _pace(ctx, [ctx.node])
    seconds = prompts / rps
    out_tokens = prompts * 128
    lines = [
        "============ Serving Benchmark Result ============",
        f"{'Successful requests:':<40} {prompts}",
        f"{'Benchmark duration (s):':<40} {seconds:.2f}",
        f"{'Total input tokens:':<40} {prompts * 1024}",
        f"{'Total generated tokens:':<40} {out_tokens}",
        f"{'Request throughput (req/s):':<40} {rps:.2f}",
        f"{'Output token throughput (tok/s):':<40} {out_tokens / seconds:.2f}",
        f"{'Total Token throughput (tok/s):':<40} {prompts * 1152 / seconds:.2f}",
        "---------------Time to First Token----------------",
        f"{'Mean TTFT (ms):':<40} {9000 / rps:.2f}",
        "==================================================",
    ]
    return SimReply(stdout="\n".join(lines) + "\n", duration_s=ctx.duration(seconds))


def _option(argv: list[str], flag: str, default: str) -> str:
    return argv[argv.index(flag) + 1] if flag in argv and argv.index(flag) + 1 < len(argv) else default


def train(ctx: SimContext, argv: list[str]) -> SimReply:
    """``python3 .../train.py --steps N --report-prefix P``: a short training run's log and its result line."""
    if _no_gpu(ctx):
        return SimReply(stdout="", stderr="RuntimeError: No HIP GPUs are available\n", exit_status=1)
    steps = int(_option(argv, "--steps", "100"))
    prefix = _option(argv, "--report-prefix", "RESULT ")
    job = _job_nodes(ctx)
    tps = _TRAIN_TPS[ctx.node.gpu_model] * _pace(ctx, job)
    nan = any(node.torch.nonfinite for node in job)  # the gradients' all-reduce carries a NaN to every rank
    lines, loss = [], 10.8
    for step in range(10, steps + 1, 10):
        loss = 2.07 + 8.7 * 0.955 ** (step * 1.2) + ctx.rng.uniform(-0.01, 0.01)
        shown = "nan" if nan and step >= NAN_FROM_STEP else f"{loss:.4f}"
        lines.append(f"step {step:>5} | loss {shown} | tokens/s {tps * ctx.rng.uniform(0.98, 1.02):.0f}")
    final = float("nan") if nan and steps >= NAN_FROM_STEP else round(loss, 4)
    result = {"tokens_per_s": round(tps), "loss": {f"step_{steps}": final}}
    lines.append(prefix + json.dumps(result))
    return SimReply(stdout="\n".join(lines) + "\n", duration_s=ctx.duration(steps * 2.0))
