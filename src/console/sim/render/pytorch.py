"""The framework probe on a simulated node: ``python3 -c <the console's torch script> [options]``.

The reply is the document the real script prints (``console.probes.pytorch.node_script``), drawn from
the node's state: torch's version follows the node's ROCm release, GEMM throughput the GPU model's RVS
GEMM targets scaled by the GPU's own state (a throttled GPU is slower in torch too) and by the torch
faults (``node.torch``: not installed, a CPU-only build, devices torch cannot see, a slow GEMM, in every
run or only in one container image, NaN in a result, a wrong or hung all-reduce; and a document that
is no verdict on every device: an entry lost or repeated, an all-reduce over fewer ranks, an FP8 stage
skipped). A site's training
script (``.../train.py``) is the workloads renderer's; any other ``python3`` command is refused.
"""

from __future__ import annotations

import json
from typing import Any

from console.sim.commands import SimContext, SimReply
from console.sim.models import SimGpu, SimNode

__all__ = ["handle"]

# What the console's script says of itself, as the node sees it (the simulator does not import the console's
# probes: it answers as the node would): its first line, its document's name, its options' defaults.
SCRIPT_MARK = "# instinct-console torch probe"
PROBE_NAME = "instinct-console/torch"
GEMM_SIZE, GEMM_ITERS, GEMM_WARMUP, ALLREDUCE_MIB, ALLREDUCE_TIMEOUT_S = 8192, 20, 3, 64, 120.0
SCHEMA = 1
NO_TORCH = "ModuleNotFoundError: No module named 'torch'"
FP8_BY_ARCH = {"gfx942": "float8_e4m3fnuz", "gfx950": "float8_e4m3fn"}
# torch wheels AMD and PyTorch publish per ROCm line (the newest for each).
TORCH_FOR_ROCM = {"6.2": "2.5.1", "6.3": "2.6.0", "6.4": "2.7.1", "7.0": "2.8.0"}
# Simulated seconds: import torch, each device's two GEMMs with their set-up, the all-reduce's ranks.
IMPORT_S, DEVICE_S, ALLREDUCE_S = 6.0, 2.0, 25.0


def handle(ctx: SimContext, argv: list[str]) -> SimReply:
    """Answer ``python3 -c SCRIPT ...`` as the node's torch would, a site's ``train.py`` as it runs; refuse the rest."""
    if len(argv) >= 2 and argv[1].endswith("/train.py"):
        from console.sim.render.workloads import train

        return train(ctx, argv)
    if len(argv) < 3 or argv[1] != "-c" or not argv[2].startswith(SCRIPT_MARK):
        return SimReply(
            stdout="", stderr="python3: the simulated node runs only the console's probe scripts\n", exit_status=2
        )
    options = _options(argv[3:])
    node = ctx.node
    started: dict[str, Any] = {"probe": PROBE_NAME, "schema": SCHEMA, "python": _python(node), "params": options,
                               "container_seen": _container_seen(ctx)}  # fmt: skip
    if not node.torch.installed:
        doc = {
            **started,
            "torch": {"status": "error", "error": NO_TORCH},
            "devices": [],
            "all_reduce": {"status": "skipped", "error": "torch could not be imported"},
            "seconds": 0.05,
        }
        return SimReply(
            stdout=json.dumps(doc) + "\n", stderr=NO_TORCH + "\n", exit_status=1, duration_s=ctx.duration(1)
        )
    build = _build(node)
    devices = [_device(ctx, gpu, options) for gpu in _visible(node)] if build["device_count"] else []
    reduce = _all_reduce(
        ctx, len(devices) if node.torch.all_reduce_world is None else node.torch.all_reduce_world, options
    )
    if node.torch.entry_lost and len(devices) >= 2:
        # The document lists fewer entries than torch counts devices: the last dropped, or the one before twice.
        devices[-1:] = [] if node.torch.entry_lost == "drop" else [dict(devices[-2])]
    seconds = IMPORT_S + DEVICE_S * len(devices) + float(reduce.get("seconds", 0.0))
    doc = {**started, "torch": build, "devices": devices, "all_reduce": reduce, "seconds": round(seconds, 3)}
    stages = [build, reduce, *(s for d in devices for s in (d, d["bf16"], d["fp8"]))]
    failed = any(stage.get("status") == "error" for stage in stages)
    return SimReply(stdout=json.dumps(doc) + "\n", exit_status=1 if failed else 0, duration_s=ctx.duration(seconds))


def _options(args: list[str]) -> dict[str, Any]:
    """The script's options as it would echo them in ``params`` (its defaults for those not given)."""
    given = dict(zip(args[::2], args[1::2], strict=False))

    def number(flag: str, default: float) -> float:
        try:
            return float(given.get(flag, default))
        except ValueError:
            return default

    return {
        "size": int(number("--size", GEMM_SIZE)),
        "iters": int(number("--iters", GEMM_ITERS)),
        "warmup": int(number("--warmup", GEMM_WARMUP)),
        "allreduce_mib": int(number("--allreduce-mib", ALLREDUCE_MIB)),
        "allreduce_timeout": number("--allreduce-timeout", ALLREDUCE_TIMEOUT_S),
        "container_runtime": given.get("--container-runtime"),
        "container_image": given.get("--container-image"),
    }


def _container_seen(ctx: SimContext) -> str | None:
    """The runtime whose mark the script finds (the simulated runtimes set podman's and apptainer's
    variables; docker's /.dockerenv is read as the variable the simulated docker sets in its place)."""
    if ctx.env.get("container"):
        return ctx.env["container"]
    return "apptainer" if ctx.env.get("APPTAINER_CONTAINER") else None


def _python(node: SimNode) -> str:
    return "3.10.12" if node.stack.os_version.startswith("22") else "3.12.3"


def _build(node: SimNode) -> dict[str, Any]:
    line = ".".join(node.stack.rocm.split(".")[:2])
    release = TORCH_FOR_ROCM.get(line, "2.7.1")
    if not node.torch.hip_build:
        return {"status": "ok", "version": f"{release}+cpu", "hip": None, "cuda": None, "cuda_available": False,
                "device_count": 0}  # fmt: skip
    # A ROCm build on a node whose driver is not loaded: HIP finds no device.
    usable = node.driver_loaded and bool(node.gpus)
    count = len(_visible(node)) if usable else 0
    return {"status": "ok", "version": f"{release}+rocm{line}", "hip": node.stack.hip, "cuda": None,
            "cuda_available": usable and count > 0, "device_count": count}  # fmt: skip


def _visible(node: SimNode) -> list[SimGpu]:
    limit = node.torch.visible_devices
    return node.gpus if limit is None else node.gpus[: max(0, limit)]


def _device(ctx: SimContext, gpu: SimGpu, options: dict[str, Any]) -> dict[str, Any]:
    node, spec = ctx.node, ctx.node.spec
    slowed = node.torch.gemm_image in (None, options["container_image"])  # a slow image slows only its runs
    scale = gpu.gst_factor * (node.torch.gemm_factor.get(gpu.slot, 1.0) if slowed else 1.0)
    nonfinite = node.torch.nonfinite.get(gpu.slot, 0)
    entry: dict[str, Any] = {
        "index": gpu.index,
        "status": "ok",
        "name": spec.market_name,
        "arch": spec.gfx_target,
        "memory_bytes": spec.vram_bytes,
        "pci_bus_id": gpu.bdf,
    }
    entry["bf16"] = _gemm(ctx, spec.gst_targets_gflops["bf16"] / 1000 * scale, nonfinite, options)
    fp8 = FP8_BY_ARCH.get(spec.gfx_target)
    if gpu.slot in node.torch.fp8_skipped:
        entry["fp8"] = {"status": "skipped"}
    elif fp8 is None or "fp8" not in spec.gst_targets_gflops:
        entry["fp8"] = {"status": "unsupported", "error": f"{spec.gfx_target} has no FP8 matrix cores"}
    else:
        entry["fp8"] = {
            **_gemm(ctx, spec.gst_targets_gflops["fp8"] / 1000 * scale, nonfinite, options),
            "dtype": fp8,
        }
    return entry


def _gemm(ctx: SimContext, tflops: float, nonfinite: int, options: dict[str, Any]) -> dict[str, Any]:
    measured = tflops * ctx.rng.uniform(1.0, 1.06)
    seconds = 2.0 * options["size"] ** 3 * options["iters"] / (measured * 1e12)
    return {"status": "ok", "tflops": round(measured, 2), "seconds": round(seconds, 5), "nonfinite": nonfinite}


def _all_reduce(ctx: SimContext, world: int, options: dict[str, Any]) -> dict[str, Any]:
    if world == 0:
        return {"status": "skipped", "error": "torch sees no GPU"}
    outcome = ctx.node.torch.all_reduce
    stage: dict[str, Any] = {"backend": "nccl", "world_size": world, "mib": options["allreduce_mib"]}
    if outcome == "hang":
        limit = options["allreduce_timeout"]
        ranks = ", ".join(str(r) for r in range(world))
        return {
            **stage,
            "status": "error",
            "seconds": limit,
            "error": f"did not finish within {limit:g} s (ranks {ranks})",
        }
    wrong = outcome == "wrong"
    return {
        **stage,
        "status": "ok",
        "seconds": round(ALLREDUCE_S * ctx.rng.uniform(0.9, 1.1), 3),
        "max_abs_error": 8.0 if wrong else 0.0,
        "nonfinite": 0,
        "correct": not wrong,
        "rank_seconds": round(0.0031 * ctx.rng.uniform(0.95, 1.1), 5),
    }
