"""The ``--via-slurm`` row of bench/sweep.py: ``sweep --via-slurm`` on a real Slurm lab of this host.

``tests/harness/slurm_lab.py`` starts ``slurmctld`` and one ``slurmd`` per node on loopback (root, Slurm
daemons); every node is this host, its tools the simulator's shims (``tests/multinode/localnodes.py``),
so each node's ``check-local`` runs here too. Two contenders, each ``instinct-console sweep`` as a child
process measured with ``wait4``:

- ``via-slurm``: the nodes judge themselves and send compact reports (PASS nodes no raw outputs);
- ``via-slurm raw``: ``--slurm-raw``, every node sends its raw outputs and the console judges them all
  (what ``--via-slurm`` did before node-side judging).

The console's CPU is its own process tree (``sweep`` and the ``srun`` client it starts); the nodes'
work runs under ``slurmd``, outside it. The shims start a Python interpreter per tool call, so the
nodes' side is far slower than real tools: the wall time says little, the console's CPU per node is
the figure.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
import tempfile
from contextlib import closing
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _measure import run_measured
from tests.harness import slurm_lab
from tests.multinode.localnodes import local_cluster, per_node_launcher

CONSOLE = str(Path(sys.executable).with_name("instinct-console"))


def bench_slurm(nodes: int, row: object) -> None:
    """Both contenders on a Slurm lab of ``nodes``; ``row`` is bench/sweep.py's ``Row`` (its ``add``)."""
    scratch = Path(tempfile.mkdtemp(prefix="ic-bench-slurm-"))
    try:
        names = [f"gpu{i:03d}" for i in range(1, nodes + 1)]
        inventory = local_cluster(scratch, names)
        launcher = per_node_launcher(scratch)
        with slurm_lab.SlurmLab(nodes) as lab:
            env = {**os.environ, "SLURM_CONF": str(lab.conf)}
            for name, extra in (("via-slurm", []), ("via-slurm raw", ["--slurm-raw"])):
                store = scratch / f"{name.replace(' ', '-')}.db"
                argv = [CONSOLE, "sweep", "-i", str(inventory), "--via-slurm", "--slurm-command", str(launcher)]
                run = run_measured([*argv, *extra, "--store", str(store)], env=env)
                row.add(  # type: ignore[attr-defined]
                    name,
                    run,
                    cpu_ms_per_node=run.cpu_s * 1000 / nodes,
                    max_rss_mib=run.max_rss_mib,
                    verdicts=_verdicts(store),
                )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _verdicts(store: Path) -> str:
    """``PASS 8`` and so on: the check that the row judged every node."""
    with closing(sqlite3.connect(store)) as conn:
        rows = conn.execute("SELECT status, count(*) FROM node_verdicts GROUP BY status ORDER BY status").fetchall()
    return " ".join(f"{status} {n}" for status, n in rows)
