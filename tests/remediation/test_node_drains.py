"""A drain made on the node by docs/slurm/check-local-health.sh is audited by the console (issue 33, item 5).

The script runs under slurmd and cannot write the console's history database (operator guide, section 7):
its reason, which Slurm keeps with who set it and when, stands for its intent. The console writes the
audit row the first time it reads that drain, once, and nothing else: no drain record, no case, and
another operator's drain or the console's own are not taken for one.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from console.actions import ActionKind, ActionRequest, ActionService
from console.inventory import from_mapping
from console.sim.commands import run_program
from console.store import Store
from tests.remediation.sim_slurm import SimSlurm, sim_cluster


def test_a_health_check_drain_is_audited_once_when_the_console_first_reads_it(tmp_path: Path) -> None:
    data = {"name": "lab", "pools": [{"name": "gpu", "gpu_model": "MI300X", "nodes": "gpu[001-003]"}]}
    inventory = from_mapping(data, str(tmp_path / "lab.toml"))
    store = Store(tmp_path / "h.sqlite", inventory)
    runner = SimSlurm(sim_cluster("lab"), tmp_path / "slurm", tmp_path / "h.sqlite", tmp_path / "witness.jsonl")
    service = ActionService(inventory, store, runner, user="ops")
    try:
        # What the script runs on gpu002, and an operator's drain of gpu003 (as scontrol on the controller).
        reason = "instinct-console: check-local: a check failed"
        for node, why in (("gpu002", reason), ("gpu003", "hw ticket 42")):
            said = run_program(runner.ctx, ["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={why}"])
            assert said.exit_status == 0, said.stderr
        request = ActionRequest(ActionKind.DRAIN, ("gpu001",), reason="maintenance")
        asyncio.run(service.refresh(request))
        asyncio.run(service.execute(service.plan(request)))  # the console's own drain: not the node's
        asyncio.run(service.node_states())  # read again: recorded once

        rows = [r for r in store.audit_log(20) if r["action"] == "node-drain"]
        assert len(rows) == 1, [dict(r) for r in store.audit_log(20)]
        [row] = rows
        assert json.loads(row["targets"]) == ["gpu002"] and row["finished_at"] is not None
        inputs = json.loads(row["inputs"])
        assert inputs["reason"] == reason and inputs["set_by"] and inputs["set_at"], inputs
        assert "health check" in row["outcome"] and "a resume needs --force" in row["outcome"], row["outcome"]
        assert store.drains("gpu002") == [] and store.cases("gpu002") == []
    finally:
        store.close()
