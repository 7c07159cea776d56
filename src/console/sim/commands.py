"""Run one program on a simulated node: dispatch by program name, then apply the node's behaviour faults.

``run_program(ctx, argv)`` looks the basename of ``argv[0]`` up in ``PROGRAMS`` and calls the handler
with the *full* argv (``argv[0]`` as typed, so one handler can serve several programs). A handler is
``Callable[[SimContext, list[str]], SimReply]``.

Handlers live in ``console.sim.render.<module>``; each module exposes ``handle(ctx, argv) -> SimReply``
and dispatches on ``program_name(argv)`` itself when it serves several programs. The table imports
them lazily (``_lazy``) so render modules may import this module without an import cycle, and a
module that does not exist yet answers like a missing program.

Behaviour faults are applied here, after the handler ran, so every program gets them the same way:
missing tool (``sh: 1: X: not found``, exit 127), hang, dropped connection, trickled or garbled output.

Also a small entry point for shims: ``python -m console.sim.commands <cluster.json> <node> [--state-dir D]
[--json] -- <argv...>`` runs the program and behaves like it (prints, sleeps, hangs, exits with its status).
"""

from __future__ import annotations

import argparse
import fcntl
import importlib
import json
import os
import random
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from functools import cached_property
from pathlib import Path

from console.sim.models import ClusterSpec, SimNode, build_node, jitter_rng


class Delivery(StrEnum):
    """How the output reaches the client."""

    NORMAL = "normal"
    HANG = "hang"  # never finishes; the client must time out and kill it
    DROP = "drop"  # the connection drops after part of the output
    TRICKLE = "trickle"  # output arrives slowly in small chunks over duration_s
    GARBAGE = "garbage"  # output is corrupted bytes


@dataclass(frozen=True)
class SimReply:
    """What a program printed and how it ended. ``duration_s`` is already divided by the time factor."""

    stdout: str
    stderr: str = ""
    exit_status: int = 0
    duration_s: float = 0.0
    delivery: Delivery = Delivery.NORMAL


@dataclass
class SimContext:
    """Where a command runs: the node's state, its cluster, shared state and this invocation's number."""

    node: SimNode
    cluster: ClusterSpec
    state_dir: Path | None = None
    invocation: int = 0
    env: dict[str, str] = field(default_factory=dict)

    @cached_property
    def rng(self) -> random.Random:
        """Jitter RNG of this invocation (readings vary per run, reproducibly per invocation number)."""
        return jitter_rng(self.cluster.seed, self.node.name, self.invocation)

    def duration(self, simulated_s: float) -> float:
        """Wall-clock seconds for ``simulated_s`` of real tool time, scaled by the cluster's time factor."""
        return simulated_s / self.cluster.time_factor


Handler = Callable[[SimContext, list[str]], SimReply]


def program_name(argv: list[str]) -> str:
    """Basename of the program in ``argv`` ('' for an empty argv)."""
    return os.path.basename(argv[0]) if argv else ""


def not_found(argv: list[str]) -> SimReply:
    """What ``sh`` prints for a program that is not installed."""
    return SimReply(stdout="", stderr=f"sh: 1: {argv[0]}: not found\n", exit_status=127)


def _lazy(module: str) -> Handler:
    """Handler that imports ``module`` on first use and calls its ``handle``."""

    def handler(ctx: SimContext, argv: list[str]) -> SimReply:
        try:
            loaded = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            return not_found(argv)
        reply: SimReply = loaded.handle(ctx, argv)
        return reply

    return handler


_RENDER = "console.sim.render."
_RCCL_TESTS = (
    "all_reduce_perf",
    "all_gather_perf",
    "alltoall_perf",
    "alltoallv_perf",
    "broadcast_perf",
    "gather_perf",
    "hypercube_perf",
    "reduce_perf",
    "reduce_scatter_perf",
    "scatter_perf",
    "sendrecv_perf",
)
_HOST = ("uname", "hostname", "cat", "stat", "modinfo", "dkms", "ibv_devinfo", "rdma", "lspci")

PROGRAMS: dict[str, Handler] = {
    "amd-smi": _lazy(_RENDER + "amdsmi"),
    "rocm-smi": _lazy(_RENDER + "rocm"),
    "rocminfo": _lazy(_RENDER + "rocm"),
    "rvs": _lazy(_RENDER + "rvs"),
    "TransferBench": _lazy(_RENDER + "transferbench"),
    **{name: _lazy(_RENDER + "rccl") for name in (*_RCCL_TESTS, "mpirun", "mpiexec", "srun")},
    **{name: _lazy(_RENDER + "host") for name in _HOST},
    "sinfo": _lazy(_RENDER + "slurm"),
    "scontrol": _lazy(_RENDER + "slurm"),
}

# Simulated seconds a trickled output takes to arrive in full.
TRICKLE_SIMULATED_S = 90.0


def run_program(ctx: SimContext, argv: list[str]) -> SimReply:
    """Run ``argv`` on ``ctx.node`` and return what the client would receive."""
    if not argv:
        return SimReply(stdout="")
    program = program_name(argv)
    node = ctx.node
    handler = PROGRAMS.get(program)
    if handler is None or program in node.missing_tools:
        return not_found(argv)
    reply = handler(ctx, argv)
    if program in node.hang_programs:
        return replace(reply, stdout="", stderr="", delivery=Delivery.HANG)
    if program in node.drop_programs:
        lines = reply.stdout.splitlines(keepends=True)
        return replace(reply, stdout="".join(lines[: len(lines) // 2]), exit_status=255, delivery=Delivery.DROP)
    if program in node.garbage_programs:
        return replace(reply, stdout=garble(reply.stdout, ctx.rng), delivery=Delivery.GARBAGE)
    if program in node.trickle_programs:
        slow = max(reply.duration_s, ctx.duration(TRICKLE_SIMULATED_S))
        return replace(reply, duration_s=slow, delivery=Delivery.TRICKLE)
    return reply


_NOISE = "\x00\x1b\x7f\ufffd\u00ff\u2592#@%&\t"


def garble(text: str, rng: random.Random) -> str:
    """Corrupt ``text`` the way a broken pipe or a wrong encoding does: shuffled chunks and binary noise."""
    if not text:
        return "".join(rng.choice(_NOISE) for _ in range(64))
    chunks = [text[i : i + rng.randrange(8, 48)] for i in range(0, len(text), 32)]
    rng.shuffle(chunks)
    noisy = []
    for chunk in chunks:
        cut = rng.randrange(len(chunk) + 1)
        noisy.append(chunk[:cut] + "".join(rng.choice(_NOISE) for _ in range(rng.randrange(1, 6))))
    return "".join(noisy)


def next_invocation(state_dir: Path | None, node: str, reserve: int = 1) -> int:
    """A per-node invocation number shared by every process using ``state_dir`` (time-based without one).

    ``reserve`` numbers are taken at once and the first is returned: a long-lived process hands out the
    rest itself instead of locking and rewriting the counter file for every program it runs.
    """
    if state_dir is None:
        return time.time_ns() // 1000
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / f"{node}.invocations"
    with path.open("a+", encoding="ascii") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        text = handle.read().strip()
        first = int(text) + 1 if text.isdigit() else 1
        handle.seek(0)
        handle.truncate()
        handle.write(str(first + reserve - 1))
    return first


def context_for(cluster: ClusterSpec, node: str, state_dir: Path | None = None) -> SimContext:
    """A fresh context for one invocation on ``node`` (builds the node state from the cluster)."""
    return SimContext(
        node=build_node(cluster, node),
        cluster=cluster,
        state_dir=state_dir,
        invocation=next_invocation(state_dir, node),
    )


def _deliver(reply: SimReply) -> int:
    """Act out ``reply`` on this process's stdout/stderr; returns the exit status."""
    out, err = sys.stdout, sys.stderr
    if reply.delivery is Delivery.HANG:
        # What a hung tool printed before it stopped (a table without its footer) still reaches the client.
        out.write(reply.stdout)
        err.write(reply.stderr)
        out.flush()
        err.flush()
        while True:
            time.sleep(3600)
    if reply.delivery is Delivery.TRICKLE:
        lines = reply.stdout.splitlines(keepends=True) or [""]
        pause = reply.duration_s / len(lines)
        for line in lines:
            out.write(line)
            out.flush()
            time.sleep(pause)
    else:
        time.sleep(reply.duration_s)
        out.write(reply.stdout)
    err.write(reply.stderr)
    out.flush()
    err.flush()
    return reply.exit_status


def main(args: list[str] | None = None) -> int:
    """Entry point: ``python -m console.sim.commands <cluster.json> <node> [--state-dir D] [--json] -- argv...``."""
    parser = argparse.ArgumentParser(prog="python -m console.sim.commands", description=__doc__.splitlines()[0])
    parser.add_argument("cluster", type=Path, help="cluster JSON written by ClusterSpec.save")
    parser.add_argument("node", help="node name")
    parser.add_argument("--state-dir", type=Path, default=None, help="shared state (invocation counters, Slurm)")
    parser.add_argument("--json", action="store_true", help="print the reply as JSON instead of acting it out")
    given = sys.argv[1:] if args is None else args
    # Everything after the first "--" is the program's own argv, options included.
    split = given.index("--") if "--" in given else len(given)
    ns = parser.parse_args(given[:split])
    argv = given[split + 1 :]
    ctx = context_for(ClusterSpec.load(ns.cluster), ns.node, ns.state_dir)
    reply = run_program(ctx, argv)
    if ns.json:
        print(json.dumps(asdict(reply)))
        return 0
    return _deliver(reply)


if __name__ == "__main__":
    # Run the imported module's main, not this __main__ copy: renderers return console.sim.commands.Delivery,
    # which is a different class from __main__.Delivery, so `is` comparisons here would never match.
    from console.sim.commands import main as _main

    raise SystemExit(_main())
