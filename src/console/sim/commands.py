"""Run one program on a simulated node: dispatch by program name, then apply the node's behaviour faults.

``run_program(ctx, argv)`` looks the basename of ``argv[0]`` up in ``PROGRAMS`` and calls the handler
with the *full* argv (``argv[0]`` as typed, so one handler can serve several programs). A handler is
``Callable[[SimContext, list[str]], SimReply]``.

Handlers live in ``console.sim.render.<module>``; each module exposes ``handle(ctx, argv) -> SimReply``
and dispatches on ``program_name(argv)`` itself when it serves several programs. The table imports
them lazily (``_lazy``) so render modules may import this module without an import cycle, and a
module that does not exist yet answers like a missing program.

Behaviour faults are applied here, after the handler ran, so every program gets them the same way,
to the whole program or to the subcommands a fault names: missing tool (``sh: 1: X: not found``,
exit 127), hang (optionally ignoring SIGTERM), death by a signal, dropped connection, trickled,
garbled, empty, cut, huge or non-UTF-8 output, and a non-zero exit status.

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
import resource
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import Any

from console.sim.faults import FaultKind
from console.sim.models import ClusterSpec, SimBehaviour, SimNode, build_node, jitter_rng


class Delivery(StrEnum):
    """How the output reaches the client."""

    NORMAL = "normal"
    HANG = "hang"  # never finishes; the client must time out and kill it
    DROP = "drop"  # the connection drops after part of the output
    TRICKLE = "trickle"  # output arrives slowly in small chunks over duration_s
    GARBAGE = "garbage"  # output is corrupted bytes
    KILLED = "killed"  # the program dies by ``kill_signal`` after printing ``stdout``


@dataclass(frozen=True)
class SimReply:
    """What a program printed and how it ended. ``duration_s`` is already divided by the time factor.

    Text may carry bytes that are not UTF-8 as lone surrogates (``surrogateescape``); they reach the
    client as those bytes. ``filler_bytes`` more bytes of output follow ``stdout``, made as they are
    sent (a 200 MB answer is never held in memory). ``ignores_term``: the program ignores SIGTERM,
    SIGINT and SIGHUP, as tools that trap them do; only SIGKILL ends it.
    """

    stdout: str
    stderr: str = ""
    exit_status: int = 0
    duration_s: float = 0.0
    delivery: Delivery = Delivery.NORMAL
    filler_bytes: int = 0
    ignores_term: bool = False
    kill_signal: int = signal.SIGSEGV


@dataclass
class SimContext:
    """Where a command runs: the node's state, its cluster, shared state and this invocation's number."""

    node: SimNode
    cluster: ClusterSpec
    state_dir: Path | None = None
    invocation: int = 0
    env: dict[str, str] = field(default_factory=dict)
    as_root: bool = False  # run through sudo: root-only reads (CPER records) answer

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


def _sudo(ctx: SimContext, argv: list[str]) -> SimReply:
    """``sudo [-n] program...``: the program as root, or sudo's refusal when the node denies it."""
    args = argv[1:]
    while args and args[0].startswith("-"):
        args = args[1:]
    if not args:
        return SimReply("", "usage: sudo -h | -K | -k | -V\n", 1)
    if ctx.node.sudo_denied:
        return SimReply("", "sudo: a password is required\n", 1)
    return run_program(replace(ctx, as_root=True), args)


PROGRAMS: dict[str, Handler] = {
    "amd-smi": _lazy(_RENDER + "amdsmi"),
    "rocm-smi": _lazy(_RENDER + "rocm"),
    "rocminfo": _lazy(_RENDER + "rocm"),
    "rvs": _lazy(_RENDER + "rvs"),
    "TransferBench": _lazy(_RENDER + "transferbench"),
    "python3": _lazy(_RENDER + "pytorch"),
    **{name: _lazy(_RENDER + "workloads") for name in ("docker", "podman", "apptainer", "vllm")},
    **{name: _lazy(_RENDER + "rccl") for name in (*_RCCL_TESTS, "mpirun", "mpiexec", "srun")},
    **{name: _lazy(_RENDER + "host") for name in _HOST},
    "sinfo": _lazy(_RENDER + "slurm"),
    "scontrol": _lazy(_RENDER + "slurm"),
    "sudo": _sudo,
}

# Simulated seconds a trickled output takes to arrive in full.
TRICKLE_SIMULATED_S = 90.0


# Signals a behaviour fault may name for command_killed (``signal = "SEGV"``).
_SIGNALS = {s.name.removeprefix("SIG"): s for s in signal.Signals}
FILLER_LINE = "0123456789abcdef" * 4 + "\n"


def run_program(ctx: SimContext, argv: list[str]) -> SimReply:
    """Run ``argv`` on ``ctx.node`` and return what the client would receive."""
    if not argv:
        return SimReply(stdout="")
    program = program_name(argv)
    node = ctx.node
    handler = PROGRAMS.get(program)
    behaviour = node.behaviour_for(program, argv)
    if handler is None or (behaviour is not None and behaviour.kind is FaultKind.TOOL_MISSING):
        return not_found(argv)
    reply = handler(ctx, argv)
    return misbehave(reply, behaviour, ctx) if behaviour is not None else reply


def misbehave(reply: SimReply, behaviour: SimBehaviour, ctx: SimContext) -> SimReply:
    """``reply`` as the behaviour fault makes the program deliver it."""
    kind, params = behaviour.kind, behaviour.params
    text = reply.stdout
    if kind in (FaultKind.COMMAND_HANG, FaultKind.IGNORES_SIGTERM):
        ignores = kind is FaultKind.IGNORES_SIGTERM or bool(params.get("ignore_term", False))
        shown = text[: len(text) // 2] if params.get("partial", False) else ""
        return replace(reply, stdout=shown, stderr="", delivery=Delivery.HANG, ignores_term=ignores)
    if kind is FaultKind.SSH_DROP_MID_COMMAND:
        lines = text.splitlines(keepends=True)
        return replace(reply, stdout="".join(lines[: len(lines) // 2]), exit_status=255, delivery=Delivery.DROP)
    if kind is FaultKind.GARBAGE_OUTPUT:
        return replace(reply, stdout=garble(text, ctx.rng), delivery=Delivery.GARBAGE)
    if kind is FaultKind.SLOW_TRICKLE:
        slow = max(reply.duration_s, ctx.duration(float(params.get("seconds", TRICKLE_SIMULATED_S))))
        return replace(reply, duration_s=slow, delivery=Delivery.TRICKLE)
    if kind is FaultKind.COMMAND_KILLED:
        sig = _SIGNALS.get(str(params.get("signal", "SEGV")).upper().removeprefix("SIG"), signal.SIGSEGV)
        return replace(reply, stdout=text[: len(text) // 2], delivery=Delivery.KILLED, kill_signal=sig)
    if kind is FaultKind.EMPTY_OUTPUT:
        return replace(reply, stdout="", stderr="")
    if kind is FaultKind.TRUNCATED_OUTPUT:
        # Cut mid-line, as a tool that died or a full disk leaves it, but with a clean exit.
        return replace(reply, stdout=text[: max(1, len(text) // 2 - 3)])
    if kind is FaultKind.HUGE_OUTPUT:
        size = int(float(params.get("mb", 200)) * 2**20)
        return replace(reply, filler_bytes=size)
    if kind is FaultKind.NON_UTF8_OUTPUT:
        return replace(reply, stdout=not_utf8(text))
    if kind is FaultKind.EXIT_CODE:
        status = int(params.get("status", 1))
        return replace(
            reply, exit_status=status, stderr=reply.stderr + f"{behaviour.program}: failed (status {status})\n"
        )
    return reply


def not_utf8(text: str) -> str:
    """``text`` with bytes that are not UTF-8 in it (a wrong locale, a corrupted file): every 11th character
    becomes a lone 0xff byte, which the client receives as such."""
    if not text:
        return "\udcff\udcfe"
    return "".join("\udcff" if i % 11 == 5 else char for i, char in enumerate(text))


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
    out, err = sys.stdout.buffer, sys.stderr.buffer

    def write(stream: Any, text: str) -> None:
        stream.write(text.encode("utf-8", "surrogateescape"))
        stream.flush()

    if reply.ignores_term:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
    if reply.delivery is Delivery.HANG:
        # What a hung tool printed before it stopped (a table without its footer) still reaches the client.
        write(out, reply.stdout)
        write(err, reply.stderr)
        while True:
            time.sleep(3600)
    if reply.delivery is Delivery.TRICKLE:
        lines = reply.stdout.splitlines(keepends=True) or [""]
        pause = reply.duration_s / len(lines)
        for line in lines:
            write(out, line)
            time.sleep(pause)
    else:
        time.sleep(reply.duration_s)
        write(out, reply.stdout)
    chunk = (FILLER_LINE * 1024).encode()
    for offset in range(0, reply.filler_bytes, len(chunk)):
        out.write(chunk[: reply.filler_bytes - offset])
    write(err, reply.stderr)
    if reply.delivery is Delivery.KILLED:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file left behind on the node
        signal.signal(reply.kill_signal, signal.SIG_DFL)
        os.kill(os.getpid(), reply.kill_signal)
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
