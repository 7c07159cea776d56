"""One multi-node rccl-tests run: the launcher command line and the verdict on what it printed.

The command follows the launch patterns of thresholds.md D.1: ``mpirun -np <ranks> -N <gpus> -H
a:<gpus>,b:<gpus> --bind-to numa -x ...`` (one rank per GPU, as the rccl-tests README recommends for
performance) or, inside Slurm, ``srun -N <n> -w a,b --ntasks-per-node=<gpus> --mpi=pmix``. ``-H``
lists the hosts with their slot counts, which is what a ``<host> slots=8`` hostfile says, without a
file to write and remove on the launching node. ``-T`` makes rccl-tests abort a collective that
stops completing; the console's own timeout (``-T`` plus a grace) kills the launcher if even that
does not end it, and srun's ``--time`` has Slurm end the step should the launcher die first.

Judging is pure: text in, ``Judgement`` out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from console.inventory.model import Node
from console.model.findings import SourceKind, Status
from console.probes.base import ParseError
from console.probes.rccl import parse as parse_rccl

COLLECTIVE = "all_reduce_perf"
Launcher = Literal["mpirun", "srun"]
# thresholds.md D.2: HSA_NO_SCRATCH_RECLAIM=1 is needed for full MI300 performance before ROCm 6.4
# (harmless after); NCCL_DEBUG=VERSION prints the RCCL version block into the stored output.
DEFAULT_ENV: tuple[tuple[str, str], ...] = (("NCCL_DEBUG", "VERSION"), ("HSA_NO_SCRATCH_RECLAIM", "1"))


@dataclass(frozen=True)
class LaunchSettings:
    """How every multi-node run is started; ``env`` adds site settings such as ``NCCL_IB_HCA``."""

    launcher: Launcher = "mpirun"
    min_bytes: str = "8"
    max_bytes: str = "8G"
    test_timeout_s: int = 900
    kill_grace_s: float = 120.0
    env: tuple[tuple[str, str], ...] = DEFAULT_ENV

    @property
    def timeout_s(self) -> float:
        """How long the console waits for a run before killing it."""
        return self.test_timeout_s + self.kill_grace_s


@dataclass(frozen=True)
class Floor:
    """The busbw a run must reach, and where that number comes from."""

    gbps: float
    source: str
    source_kind: SourceKind


@dataclass(frozen=True)
class Judgement:
    """The verdict on one run."""

    status: Status
    reason: str
    busbw_gbps: float | None = None
    wrong: int | None = None


def launch_argv(nodes: Sequence[Node], settings: LaunchSettings) -> list[str]:
    """The launcher command running ``all_reduce_perf`` over ``nodes``, one rank per GPU."""
    per_node = nodes[0].gpu_count
    test = [COLLECTIVE, "-b", settings.min_bytes, "-e", settings.max_bytes, "-f", "2", "-g", "1", "-c", "1"]
    test += ["-T", str(settings.test_timeout_s)]
    if settings.launcher == "srun":
        exports = ",".join(["ALL", *(f"{key}={value}" for key, value in settings.env)])
        minutes = math.ceil(settings.timeout_s / 60) + 1
        return [
            "srun", "-N", str(len(nodes)), "-w", ",".join(n.name for n in nodes),
            f"--ntasks-per-node={per_node}", "--mpi=pmix", f"--time={minutes}", f"--export={exports}", *test,
        ]  # fmt: skip
    hosts = ",".join(f"{n.name}:{n.gpu_count}" for n in nodes)
    env = [arg for key, value in settings.env for arg in ("-x", f"{key}={value}")]
    ranks = sum(n.gpu_count for n in nodes)
    return ["mpirun", "-np", str(ranks), "-N", str(per_node), "-H", hosts, "--bind-to", "numa", *env, *test]


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


# A clean run under its floor, and only such a run, FAILs with a reason starting so (``coverage.symptom``).
SLOW_REASON = "busbw "


def judge(
    stdout: str, stderr: str, exit_status: int | None, *, nodes: int, ranks: int, floor: Floor | None
) -> Judgement:
    """Judge a finished run over ``nodes`` nodes and ``ranks`` GPUs against ``floor`` (CVS rccl_lib rules)."""
    if exit_status == 127:
        return Judgement(Status.UNKNOWN, f"launcher or test not found: {_first_line(stderr) or 'exit 127'}")
    try:
        # Launchers print failures on stderr; the parser reads them among the table's noise.
        parsed = parse_rccl(f"{stdout}\n{stderr}", kind=COLLECTIVE)
    except ParseError as exc:
        return Judgement(Status.UNKNOWN, f"no rccl-tests output: {_first_line(stderr) or exc.reason}")
    summary = parsed.summary
    busbw = summary.get("inplace_busbw_at_max_size_gbps")
    wrong = summary.get("wrong_total")
    busbw = float(busbw) if isinstance(busbw, int | float) else None
    wrong = int(wrong) if isinstance(wrong, int) else None
    if not parsed.ok:
        return Judgement(Status.FAIL, "; ".join(parsed.errors[:2]) or "rccl-tests reported a failure", busbw, wrong)
    if exit_status not in (0, None):
        return Judgement(Status.FAIL, f"exit status {exit_status}: {_first_line(stderr)}".rstrip(": "), busbw, wrong)
    gpus = summary.get("gpu_count")
    hosts = {rank.host for rank in getattr(parsed.data, "ranks", []) if rank.host}
    if (isinstance(gpus, int) and gpus != ranks) or (hosts and len(hosts) < nodes):
        spread = f"{gpus} GPUs on {len(hosts) or '?'} hosts"
        return Judgement(Status.UNKNOWN, f"ran on {spread}, expected {ranks} on {nodes}: launch did not span", busbw)
    if busbw is None:
        return Judgement(Status.UNKNOWN, "no in-place busbw at the largest message size", None, wrong)
    if floor is None:
        return Judgement(
            Status.PASS, f"busbw {busbw:.1f} GB/s (no multi-node floor known for this model)", busbw, wrong
        )
    if busbw < floor.gbps:
        return Judgement(Status.FAIL, f"{SLOW_REASON}{busbw:.1f} GB/s < {floor.gbps:g} GB/s", busbw, wrong)
    return Judgement(Status.PASS, f"busbw {busbw:.1f} GB/s >= {floor.gbps:g} GB/s", busbw, wrong)
