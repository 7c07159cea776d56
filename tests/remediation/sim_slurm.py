"""The parts the remediation state-machine tests share: the simulator's Slurm in process, witnessed, and a FAIL."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from console.actions import RunOutput
from console.model.findings import Evidence, Finding, Remedy, Scope, Status, Subject
from console.sim.commands import SimContext, run_program
from console.sim.models import ClusterSpec, NodeSpec, build_node
from console.sim.specs import GpuModel, stack_preset
from console.store.owner import ProcessOwner

NODES = ("gpu001", "gpu002", "gpu003")
CHECK = "xgmi.link_state"


def sim_cluster(name: str) -> ClusterSpec:
    """The simulated cluster behind ``SimSlurm``: ``NODES`` in pool ``gpu``."""
    stack = stack_preset("6.4.1")
    specs = [NodeSpec(name=n, gpu_model=GpuModel.MI300X, pool="gpu", stack=stack) for n in NODES]
    return ClusterSpec(name=name, seed=1, nodes=specs)


def failing(node: str) -> Finding:
    """The FAIL a flapping XGMI link gives (``CHECK``), calling for a reboot."""
    return Finding(
        check_id=CHECK,
        family="xgmi",
        status=Status.FAIL,
        subject=Subject(node=node, scope=Scope.NODE),
        message="XGMI link 3 down",
        evidence=Evidence(action=Remedy.REBOOT),
    )


class SimSlurm:
    """The simulator's Slurm, in process; each ``scontrol update`` is witnessed just before it takes effect.

    The witness (one JSON line per effect, appended to a file, so a killed child's are kept) notes the
    unfinished intent rows naming the node and the lease's holder, read on a connection of its own.
    ``crash`` ("before" or "after" the effect) SIGKILLs this process there: a console killed mid-action.
    """

    def __init__(self, spec: ClusterSpec, state: Path, db: Path, witness: Path, crash: str | None = None) -> None:
        self.spec, self.state, self.db, self.witness, self.crash = spec, state, db, witness, crash
        self.ctx = SimContext(node=build_node(spec, NODES[0]), cluster=spec, state_dir=state, invocation=1)

    def _witness(self, argv: Sequence[str]) -> None:
        node = next(a.split("=", 1)[1] for a in argv if a.startswith("NodeName="))
        conn = sqlite3.connect(self.db)
        conn.row_factory = sqlite3.Row
        try:
            intents = [
                dict(r)
                for r in conn.execute("SELECT id, action, targets, inputs, owner FROM audit WHERE finished_at IS NULL")
                if node in json.loads(r["targets"])
            ]
            lease = conn.execute("SELECT owner FROM leases").fetchall()
        finally:
            conn.close()
        me = os.getpid()
        mine = [i for i in intents if (o := ProcessOwner.from_text(i["owner"])) is not None and o.pid == me]
        holders = [o.pid for r in lease if (o := ProcessOwner.from_text(r["owner"])) is not None]
        record = {
            "pid": me,
            "node": node,
            "state": next(a.split("=", 1)[1] for a in argv if a.startswith("State=")),
            "intents": [{"action": i["action"], "inputs": json.loads(i["inputs"])} for i in mine],
            "lease": holders,
        }
        with self.witness.open("a") as out:
            out.write(json.dumps(record) + "\n")

    async def run(self, where: str, argv: Sequence[str], *, timeout_s: float = 60.0) -> RunOutput:
        effect = tuple(argv[:2]) == ("scontrol", "update")
        if effect:
            self._witness(argv)
            if self.crash == "before":
                os.kill(os.getpid(), signal.SIGKILL)
        reply = run_program(self.ctx, list(argv))
        if effect and self.crash == "after":
            os.kill(os.getpid(), signal.SIGKILL)
        return RunOutput(where, tuple(argv), reply.exit_status, reply.stdout, reply.stderr)

    async def close(self) -> None:
        """Nothing to release."""
