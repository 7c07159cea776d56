"""PATH shims that make a real host (e.g. a test sshd node) answer like a simulated node.

``install_shims`` writes one executable per simulated program (amd-smi, rocm-smi, rocminfo, rvs,
the rccl-tests binaries, TransferBench, host and Slurm tools) into a directory meant to be first on
the node's PATH. Each shim ``exec``s ``python -m console.sim.commands <cluster.json> <node> -- <argv>``,
which prints the rendered output, sleeps the simulated duration, exits with the tool's status and,
for a hang fault, sleeps until killed, so real ``timeout`` and ``kill -- -<pgid>`` are exercised
against real processes. The ``cat`` shim answers for the paths a simulated node owns (``/proc``,
``/sys``, ``/opt/rocm*`` and the identity files in ``/etc``) and runs the real ``cat`` otherwise.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterable
from pathlib import Path

from console.sim.commands import PROGRAMS

REAL_CAT = "/bin/cat"
# Paths whose content comes from the simulated node rather than from the host running the shims.
SIM_OWNED_PATHS = (
    "/proc/*",
    "/sys/*",
    "/opt/rocm/*",
    "/opt/rocm-*",
    "/etc/os-release",
    "/usr/lib/os-release",
    "/etc/hostname",
)


def _runner(python: str, cluster_json: Path, node: str, state_dir: Path) -> str:
    """The command line prefix that runs one program on the simulated node."""
    args = [python, "-m", "console.sim.commands", str(cluster_json), node, "--state-dir", str(state_dir), "--"]
    return shlex.join(args)


def program_shim(program: str, runner: str) -> str:
    """A ``/bin/sh`` script that replaces itself with the simulator running ``program``."""
    return f'#!/bin/sh\n# instinct-console sim shim\nexec {runner} {shlex.quote(program)} "$@"\n'


def cat_shim(runner: str) -> str:
    """A ``cat`` that asks the simulator for simulated paths and the real ``cat`` for everything else."""
    owned = "|".join(SIM_OWNED_PATHS)
    return (
        "#!/bin/sh\n"
        "# instinct-console sim shim: simulated files from the simulator, the rest from the real cat\n"
        "for arg do\n"
        '  case "$arg" in\n'
        f'    {owned}) exec {runner} cat "$@" ;;\n'
        "  esac\n"
        "done\n"
        f'exec {REAL_CAT} "$@"\n'
    )


def install_shims(
    bin_dir: Path,
    cluster_json: Path,
    node_name: str,
    state_dir: Path,
    *,
    python: str = sys.executable,
    programs: Iterable[str] | None = None,
) -> list[Path]:
    """Write the shims for ``node_name`` of the cluster in ``cluster_json`` into ``bin_dir``.

    ``programs`` defaults to every program the simulator knows (``console.sim.commands.PROGRAMS``);
    ``python`` must be an interpreter that can import ``console`` as the user who runs the shims.
    Returns the files written.
    """
    bin_dir.mkdir(parents=True, exist_ok=True)
    runner = _runner(python, cluster_json.resolve(), node_name, state_dir.resolve())
    written = []
    for program in sorted(PROGRAMS if programs is None else programs):
        path = bin_dir / program
        path.write_text(cat_shim(runner) if program == "cat" else program_shim(program, runner), encoding="utf-8")
        path.chmod(0o755)
        written.append(path)
    return written
