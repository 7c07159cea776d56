# instinct-console torch probe: run on a node by `python3 -c <this file> [options]`, never imported by the console.
"""PyTorch-on-ROCm framework probe: what one node's own Python and torch can do with its GPUs.

Prints ONE JSON document on stdout (schema 1, read by ``console.probes.pytorch``): torch's version and
build (``torch.version.hip`` is None on a CPU or CUDA build), the devices it sees, per device a BF16
GEMM and, where the GPU has FP8 matrix cores and torch has ``torch._scaled_mm``, an FP8 GEMM (each
timed with a warm-up and synchronisation, its result checked for NaN/Inf), then a one-node
``torch.distributed`` all-reduce over every device, checked against the exact sum.

Every stage records its own status (ok, error, unsupported, skipped) and error text, so a partial
failure is evidence rather than a crash. The exit status is 0 when no stage raised, 1 otherwise.
Written for Python 3.8 and later and any torch since 2.0: the node's Python is not the console's.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import platform
import socket
import subprocess
import sys
import time
from typing import Any

SCHEMA = 1
PROBE = "instinct-console/torch"

# One rank of the all-reduce, started as its own interpreter (``python3 -c`` has no file a
# multiprocessing spawn could re-import, and a fork after HIP is initialised is not safe).
WORKER = r"""
import datetime, json, os, sys, time
import torch
import torch.distributed as dist
rank, world, mib, timeout_s = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
backend = sys.argv[5]
out = {"rank": rank}
try:
    if backend == "nccl":
        torch.cuda.set_device(rank)
        device = torch.device("cuda", rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group(backend, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=timeout_s))
    count = mib * (1 << 20) // 4
    data = torch.full((count,), float(rank + 1), dtype=torch.float32, device=device)
    dist.all_reduce(data)  # warm-up: rings and buffers are set up here
    data.fill_(float(rank + 1))
    if backend == "nccl":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    dist.all_reduce(data)
    if backend == "nccl":
        torch.cuda.synchronize(device)
    out["seconds"] = time.perf_counter() - start
    expected = world * (world + 1) / 2.0
    out["max_abs_error"] = float((data - expected).abs().max().item())
    out["nonfinite"] = int((~torch.isfinite(data)).sum().item())
    dist.destroy_process_group()
except Exception as exc:
    out["error"] = "%s: %s" % (type(exc).__name__, " ".join(str(exc).split())[:400])
print(json.dumps(out), flush=True)
"""


def _error(exc: BaseException) -> str:
    """One line: the exception's type and its first 400 characters."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:400]}"


def _options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="torch-probe")
    parser.add_argument("--size", type=int, default=8192, help="M = N = K of each GEMM")
    parser.add_argument("--iters", type=int, default=20, help="timed GEMMs per device")
    parser.add_argument("--warmup", type=int, default=3, help="GEMMs before timing (kernel selection, clocks)")
    parser.add_argument("--allreduce-mib", type=int, default=64, help="all-reduce message per rank, MiB")
    parser.add_argument("--allreduce-timeout", type=float, default=120.0, help="seconds before the ranks are killed")
    # What the console started this script in (echoed in ``params``); ``container_seen`` is what the
    # script itself finds, so a document says both what was asked and what it ran in.
    parser.add_argument("--container-runtime", default=None, help="docker, podman or apptainer")
    parser.add_argument("--container-image", default=None, help="the image, as the console named it")
    return parser.parse_args(argv)


def _container_seen() -> Any:
    """The container runtime this process finds itself in, from the marks each leaves, else None:
    podman sets ``container=podman``, docker creates ``/.dockerenv``, apptainer sets ``APPTAINER_CONTAINER``."""
    podman = os.environ.get("container")  # noqa: SIM112 (podman's variable is lower-case)
    if podman:
        return podman
    if os.path.exists("/.dockerenv"):
        return "docker"
    if os.environ.get("APPTAINER_CONTAINER") or os.environ.get("SINGULARITY_CONTAINER"):
        return "apptainer"
    if os.path.exists("/run/.containerenv"):
        return "podman"
    return None


def _gemm(torch: Any, device: Any, operands: tuple[Any, Any], run: Any, opts: argparse.Namespace) -> dict[str, Any]:
    """Time ``run(a, b)``: warm-up, then ``iters`` runs between two synchronisations; check the result."""
    a, b = operands
    result: Any = None
    for _ in range(opts.warmup):
        result = run(a, b)
    torch.cuda.synchronize(device)
    start = time.perf_counter()
    for _ in range(opts.iters):
        result = run(a, b)
    torch.cuda.synchronize(device)
    seconds = time.perf_counter() - start
    flops = 2.0 * opts.size**3 * opts.iters
    nonfinite = int((~torch.isfinite(result.float())).sum().item())
    return {"status": "ok", "tflops": flops / seconds / 1e12, "seconds": seconds, "nonfinite": nonfinite}


# FP8 formats of the GPUs with FP8 matrix cores: MI300-series (gfx942) uses the FNUZ variant,
# MI350-series (gfx950) the OCP one.
FP8_BY_ARCH = {"gfx942": "float8_e4m3fnuz", "gfx950": "float8_e4m3fn"}


def _bf16(torch: Any, device: Any, opts: argparse.Namespace) -> dict[str, Any]:
    a = torch.randn(opts.size, opts.size, device=device, dtype=torch.bfloat16)
    b = torch.randn(opts.size, opts.size, device=device, dtype=torch.bfloat16)
    return _gemm(torch, device, (a, b), lambda x, y: x @ y, opts)


def _fp8(torch: Any, device: Any, arch: str, opts: argparse.Namespace) -> dict[str, Any]:
    name = FP8_BY_ARCH.get(arch)
    if name is None:
        return {"status": "unsupported", "error": f"{arch or 'this GPU'} has no FP8 matrix cores"}
    if not hasattr(torch, "_scaled_mm") or not hasattr(torch, name):
        return {"status": "unsupported", "dtype": name, "error": f"torch {torch.__version__} has no _scaled_mm/{name}"}
    dtype = getattr(torch, name)
    a = torch.randn(opts.size, opts.size, device=device).to(dtype)
    b = torch.randn(opts.size, opts.size, device=device).to(dtype).t()  # _scaled_mm wants B column-major
    one = torch.tensor(1.0, device=device)

    def run(x: Any, y: Any) -> Any:
        out = torch._scaled_mm(x, y, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        return out[0] if isinstance(out, tuple) else out  # torch < 2.4 also returns amax

    stage = _gemm(torch, device, (a, b), run, opts)
    stage["dtype"] = name
    return stage


def _device(torch: Any, index: int, opts: argparse.Namespace) -> dict[str, Any]:
    entry: dict[str, Any] = {"index": index, "status": "ok"}
    try:
        props = torch.cuda.get_device_properties(index)
        entry["name"] = torch.cuda.get_device_name(index)
        entry["arch"] = str(getattr(props, "gcnArchName", "") or "").split(":")[0] or None
        entry["memory_bytes"] = int(props.total_memory)
        bus = getattr(props, "pci_bus_id", None)
        if bus is not None:
            domain, dev = getattr(props, "pci_domain_id", 0), getattr(props, "pci_device_id", 0)
            entry["pci_bus_id"] = f"{domain:04x}:{bus:02x}:{dev:02x}.0"
    except Exception as exc:
        entry.update(status="error", error=_error(exc))
        entry["bf16"] = {"status": "skipped", "error": "device properties could not be read"}
        entry["fp8"] = {"status": "skipped", "error": "device properties could not be read"}
        return entry
    device = torch.device("cuda", index)
    arch = entry["arch"] or ""
    for stage in ("bf16", "fp8"):
        try:
            entry[stage] = _bf16(torch, device, opts) if stage == "bf16" else _fp8(torch, device, arch, opts)
        except Exception as exc:
            entry[stage] = {"status": "error", "error": _error(exc)}
        finally:
            with contextlib.suppress(Exception):
                torch.cuda.empty_cache()
    return entry


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _all_reduce(torch: Any, world: int, opts: argparse.Namespace) -> dict[str, Any]:
    """Every device one rank, one process each, over RCCL (gloo when torch has no nccl backend)."""
    dist = importlib.import_module("torch.distributed")
    backend = "nccl" if dist.is_nccl_available() else "gloo"
    stage: dict[str, Any] = {"backend": backend, "world_size": world, "mib": opts.allreduce_mib}
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()))
    started = time.perf_counter()
    ranks = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WORKER,
                *map(str, (rank, world, opts.allreduce_mib, opts.allreduce_timeout, backend)),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        for rank in range(world)
    ]
    answers: list[dict[str, Any]] = []
    stuck: list[int] = []
    for rank, proc in enumerate(ranks):
        left = max(0.1, opts.allreduce_timeout - (time.perf_counter() - started))
        try:
            out, err = proc.communicate(timeout=left)
        except subprocess.TimeoutExpired:
            stuck.append(rank)
            continue
        lines = [line for line in out.splitlines() if line.startswith("{")]
        try:
            answers.append(json.loads(lines[-1]))
        except (IndexError, ValueError):
            last = (err.strip().splitlines() or ["no output"])[-1]
            answers.append({"rank": rank, "error": f"exited with status {proc.returncode}: {last[:400]}"})
    for proc in ranks:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stage["seconds"] = time.perf_counter() - started
    errors = [f"rank {a['rank']}: {a['error']}" for a in answers if a.get("error")]
    if stuck:
        errors.insert(0, f"did not finish within {opts.allreduce_timeout:g} s (ranks {', '.join(map(str, stuck))})")
    if errors:
        stage.update(status="error", error="; ".join(errors)[:1000])
        return stage
    stage["status"] = "ok"
    stage["max_abs_error"] = max(float(a["max_abs_error"]) for a in answers)
    stage["nonfinite"] = sum(int(a["nonfinite"]) for a in answers)
    stage["correct"] = stage["max_abs_error"] == 0.0 and stage["nonfinite"] == 0
    stage["rank_seconds"] = max(float(a["seconds"]) for a in answers)
    return stage


def main(argv: list[str]) -> int:
    opts = _options(argv)
    started = time.perf_counter()
    doc: dict[str, Any] = {"probe": PROBE, "schema": SCHEMA, "python": platform.python_version(), "params": vars(opts)}
    doc["container_seen"] = _container_seen()
    skipped = {"status": "skipped", "error": "torch could not be imported"}
    try:
        torch = importlib.import_module("torch")
    except Exception as exc:
        doc["torch"] = {"status": "error", "error": _error(exc)}
        doc["devices"] = []
        doc["all_reduce"] = skipped
        doc["seconds"] = time.perf_counter() - started
        print(json.dumps(doc), flush=True)
        print(_error(exc), file=sys.stderr)
        return 1
    info: dict[str, Any] = {"status": "ok", "version": str(torch.__version__)}
    info["hip"] = getattr(torch.version, "hip", None)
    info["cuda"] = getattr(torch.version, "cuda", None)
    try:
        info["cuda_available"] = bool(torch.cuda.is_available())
        info["device_count"] = int(torch.cuda.device_count()) if info["cuda_available"] else 0
    except Exception as exc:
        info.update(status="error", error=_error(exc), cuda_available=False, device_count=0)
    doc["torch"] = info
    doc["devices"] = [_device(torch, index, opts) for index in range(info["device_count"])]
    if info["device_count"] == 0:
        doc["all_reduce"] = {"status": "skipped", "error": "torch sees no GPU"}
    else:
        try:
            doc["all_reduce"] = _all_reduce(torch, info["device_count"], opts)
        except Exception as exc:
            doc["all_reduce"] = {"status": "error", "error": _error(exc)}
    doc["seconds"] = time.perf_counter() - started
    print(json.dumps(doc), flush=True)
    stages = [info, doc["all_reduce"]] + [s for d in doc["devices"] for s in (d, d["bf16"], d["fp8"])]
    return 1 if any(stage.get("status") == "error" for stage in stages) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
