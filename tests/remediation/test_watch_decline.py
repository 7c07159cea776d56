"""Every decision of ``watch --auto`` is audited, the ones it did not carry out too (issue 33, item 6): a drain
the cap refuses becomes an audit row, a proposal and an open case, and the FAIL node stays in service, said.

On the simulator (real SSH; sim001 plays Slurm's scontrol): an administrator has two nodes of the pool out by
hand, so the cap (max(2, 10% of 5) = 2 nodes out at once) leaves no room for the console's drain, while the
breaker (which counts only what the console holds out) stays clear.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from console.cli import main
from console.inventory import load_inventory
from console.sim.faults import Fault, FaultKind
from console.sim.launcher import start_sim_cluster
from console.sim.scenario import write_live_faults
from console.store import Store
from console.store.lifecycle import Stage
from console.transport.connect import transport_for


def _admin_drains(inventory: str, node: str, reason: str) -> None:
    """An administrator's drain, straight through the (simulated) controller: not the console's."""

    async def run() -> None:
        transport = transport_for(load_inventory(inventory))
        try:
            argv = ["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}"]
            result = await transport.run("sim001", argv, timeout_s=30)
            assert result.exit_status == 0, result.stderr
        finally:
            await transport.close()

    asyncio.run(run())


def test_a_drain_the_cap_refuses_is_audited_proposed_and_opened_as_a_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text('time_factor = 400\n[[nodes]]\nnames = "sim[001-005]"\nrocm = "7.0.2"\n')
    db = str(tmp_path / "h.sqlite")
    with start_sim_cluster(scenario=scenario) as sim:
        inv = str(sim.inventory_path)
        write_live_faults(sim.state_dir, [Fault(kind=FaultKind.CPER_RECORD, node="sim002", gpu=1, params={"afid": 30})])
        sim.wait_for_generation(2)
        _admin_drains(inv, "sim004", "admin: riser swap")
        _admin_drains(inv, "sim005", "admin: psu")
        watch = ["watch", "-i", inv, "--store", db, "--every", "3600", "--rounds", "1", "--auto"]
        assert main(watch) == 0
        line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("round 1:"))
        assert "sim002 FAIL" in line and "BREAKER" not in line, line
        assert "drain sim002 (sweep " in line and ": not carried out: " in line, line
        assert "the node stays in service" in line, line

        store = Store(db)
        try:
            [declined] = [r for r in store.audit_log(20) if r["action"] == "watch-decline"]
            assert json.loads(declined["targets"]) == ["sim002"] and declined["finished_at"] is not None
            assert "cap 2" in declined["outcome"] and "proposed as #1" in declined["outcome"], declined["outcome"]
            assert json.loads(declined["inputs"])["sweep_id"] is not None
            [proposal] = store.proposals()
            assert (proposal.kind, proposal.node) == ("drain", "sim002")
            case = store.case("sim002")
            assert case is not None and case.stage is Stage.PROPOSED
            assert store.case_steps(case.id)[0].audit_id == declined["id"]
            assert store.drains() == [], "nothing was drained"
        finally:
            store.close()
        assert main(["cases", "--store", db, "-i", inv]) == 0
        assert "sim002" in capsys.readouterr().out
