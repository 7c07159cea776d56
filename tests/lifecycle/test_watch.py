"""``watch`` on the simulator (real SSH; sim001 plays Slurm's scontrol/sinfo): a round sweeps only the
idle nodes not checked lately, proposes a drain for a FAIL node by default, drains it with a case under
``--auto``, and after the repair revalidates it round by round and resumes it once it passed twice.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from console.cli import main
from console.exitcodes import ExitCode
from console.inventory import load_inventory
from console.sim.faults import Fault, FaultKind
from console.sim.launcher import start_sim_cluster
from console.sim.scenario import write_live_faults
from console.store import Store
from console.store.lifecycle import Stage
from console.store.watch import Breaker
from console.transport.connect import transport_for


def _with_lifecycle(inventory: Path, tmp_path: Path, **policy: float) -> str:
    """A copy of the sim's cluster file with a ``[lifecycle]`` table (TOML allows it after the hosts)."""
    copy = tmp_path / "cluster.toml"
    table = "".join(f"{k} = {v}\n" for k, v in policy.items())
    copy.write_text(inventory.read_text() + "\n[lifecycle]\n" + table)
    return str(copy)


def _round_line(out: str, number: int) -> str:
    return next(line for line in out.splitlines() if line.startswith(f"round {number}:"))


def test_a_round_sweeps_only_idle_stale_nodes_and_proposes_the_drain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text('time_factor = 400\n[[nodes]]\nnames = "sim[001-004]"\nrocm = "7.0.2"\n')
    db = str(tmp_path / "h.sqlite")
    with start_sim_cluster(scenario=scenario) as sim:
        # Room for two nodes out: the operator's drain of sim004 below is the console's too.
        inv = _with_lifecycle(sim.inventory_path, tmp_path, breaker_pool_fraction=0.5, breaker_fleet_fraction=0.5)
        write_live_faults(sim.state_dir, [Fault(kind=FaultKind.CPER_RECORD, node="sim003", gpu=1, params={"afid": 30})])
        sim.wait_for_generation(2)
        assert main(["sweep", "-i", inv, "--store", db, "--nodes", "sim001", "--probes", "quick"]) == 0
        assert main(["drain", "sim004", "-i", inv, "--store", db, "--reason", "ops: riser", "--yes"]) == 0
        capsys.readouterr()

        assert main(["watch", "-i", inv, "--store", db, "--every", "3600", "--rounds", "1"]) == 0
        line = _round_line(capsys.readouterr().out, 1)
        # sim001 was checked a moment ago, sim004 is drained: only sim002 and sim003 are swept.
        assert "swept sim[002-003]" in line and "sim003 FAIL" in line and "sim002 PASS" in line, line
        # One clause per thing done, "; " between: "... sim003 FAIL); 1 fresh, 1 left alone; proposed: #1 ..."
        assert "FAIL); 1 fresh, 1 left alone; proposed: #1 drain sim003 (sweep" in line, line

        # Approve-to-run: nothing was drained and no case opened; the proposal waits for an operator.
        store = Store(db)
        assert store.case("sim003") is None
        assert [row["action"] for row in store.audit_log(limit=10)] == ["drain"]
        store.close()
        assert main(["watch", "-i", inv, "--store", db, "--proposals"]) == 0
        listed = capsys.readouterr().out
        assert "breaker: clear" in listed and "#1 drain sim003 (sweep" in listed, listed

        assert main(["watch", "-i", inv, "--store", db, "--freshness"]) == 0
        fresh = capsys.readouterr().out.splitlines()
        assert fresh[0].startswith("sim001: PASS, last active check ") and fresh[0].endswith(", quick)"), fresh
        assert fresh[2].startswith("sim003: FAIL, last active check ") and fresh[3] == "sim004: never checked", fresh

        # No terminal here: as every action from the shell, it shows the plan and asks, or needs --yes.
        assert main(["watch", "-i", inv, "--store", db, "--approve", "1"]) == 2
        assert "add --yes" in capsys.readouterr().err
        assert main(["watch", "-i", inv, "--store", db, "--approve", "1", "--yes"]) == 0
        assert "#1 drain sim003: " in capsys.readouterr().out
        store = Store(db)
        case = store.case("sim003")
        assert case is not None and case.stage is Stage.AWAITING_REPAIR
        assert store.proposals() == [] and store.proposals(open_only=False)[0].decided_by
        store.close()
        assert main(["watch", "-i", inv, "--store", db, "--approve", "all", "--yes"]) == 1  # nothing left to approve
        capsys.readouterr()

        # A dry run shows the round and touches nothing: the FAIL node's last check is fresh now.
        assert main(["watch", "-i", inv, "--store", db, "--every", "3600", "--rounds", "1", "--dry-run"]) == 0
        line = _round_line(capsys.readouterr().out, 1)
        assert "swept nothing" in line and "2 fresh, 2 left alone" in line, line


def test_the_breaker_trips_at_the_limit_and_holds_every_action_until_cleared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text('time_factor = 400\n[[nodes]]\nnames = "sim[001-005]"\nrocm = "7.0.2"\n')
    db = str(tmp_path / "h.sqlite")
    with start_sim_cluster(scenario=scenario) as sim:
        inv = str(sim.inventory_path)  # default limits: 20 % of 5 nodes is one node
        faults = [Fault(kind=FaultKind.CPER_RECORD, node=n, gpu=0, params={"afid": 30}) for n in ("sim002", "sim004")]
        write_live_faults(sim.state_dir, faults)
        sim.wait_for_generation(2)
        watch = ["watch", "-i", inv, "--store", db, "--every", "3600", "--rounds", "1"]
        assert main([*watch, "--auto"]) == ExitCode.BREAKER_TRIPPED  # the breaker is tripped as watch ends (issue 33)
        line = _round_line(capsys.readouterr().out, 1)
        assert "sim002 FAIL" in line and "sim004 FAIL" in line, line
        assert "left alone; BREAKER TRIPPED (pool " in line, line  # it ran into "left alone BREAKER"
        # It counts only what it holds: none drained yet, two it would drain.
        assert "2 nodes: none held out, 2 to drain (" in line and "over its limit 1" in line, line
        assert "done:" not in line and "proposed:" not in line, line

        store = Store(db)
        assert store.drains() == [] and store.cases() == [] and store.breaker().tripped
        store.close()
        assert main(["watch", "-i", inv, "--store", db, "--proposals"]) == 0
        assert "breaker: tripped: pool " in capsys.readouterr().out
        assert main(["watch", "-i", inv, "--store", db, "--approve", "all", "--yes"]) == 1
        assert "refused: the breaker is tripped (pool " in capsys.readouterr().out

        # Still tripped on the next run: said at the start and on the round, and nothing is done.
        assert main([*watch, "--auto"]) == ExitCode.BREAKER_TRIPPED
        out = capsys.readouterr().out
        assert "breaker tripped: pool " in out and "BREAKER TRIPPED" in _round_line(out, 1), out

        assert main(["watch", "-i", inv, "--store", db, "--clear-breaker"]) == 2  # a reason is required
        assert main(["watch", "-i", inv, "--store", db, "--clear-breaker", "--reason", "two bad boards, checked"]) == 0
        assert "breaker cleared (it had tripped: pool " in capsys.readouterr().out
        store = Store(db)
        assert not store.breaker().tripped and store.drains() == []
        assert [row["action"] for row in store.audit_log(limit=10)][::-1] == ["breaker-trip", "clear-breaker"]
        store.close()


def test_auto_drains_with_a_case_then_revalidates_and_resumes_after_two_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text('time_factor = 400\n[[nodes]]\nnames = "sim[001-003]"\nrocm = "7.0.2"\n')
    db = str(tmp_path / "h.sqlite")
    with start_sim_cluster(scenario=scenario) as sim:
        inv = str(sim.inventory_path)
        write_live_faults(sim.state_dir, [Fault(kind=FaultKind.CPER_RECORD, node="sim002", gpu=3, params={"afid": 30})])
        sim.wait_for_generation(2)
        watch = ["watch", "-i", inv, "--store", db, "--every", "3600", "--rounds", "1", "--auto"]
        assert main(watch) == 0
        line = _round_line(capsys.readouterr().out, 1)
        assert "done: drain sim002 (sweep" in line, line
        assert main(["cases", "--store", db, "-i", inv, "--json"]) == 0
        [case] = json.loads(capsys.readouterr().out)
        assert (case["node"], case["stage"]) == ("sim002", "awaiting-repair")

        # Awaiting the technician: a round leaves the node alone.
        assert main(watch) == 0
        line = _round_line(capsys.readouterr().out, 1)
        assert "swept nothing" in line and "done:" not in line, line

        write_live_faults(sim.state_dir, [])  # the OAM is replaced
        sim.wait_for_generation(3)
        assert main(["repaired", "sim002", "-i", inv, "--store", db, "--reason", "replaced OAM 3", "--yes"]) == 0
        capsys.readouterr()
        assert main(watch) == 0
        line = _round_line(capsys.readouterr().out, 1)
        assert "revalidate sim002: pass" in line and "resume" not in line, line  # one pass is not enough

        # A tripped breaker (another pool's wave, say) holds the revalidation and the resume too.
        store = Store(db)
        store.set_breaker(Breaker(time.time(), "pool other: 3 nodes held out, over its limit 1 (20% of 5)"))
        store.close()
        assert main(watch) == ExitCode.BREAKER_TRIPPED
        line = _round_line(capsys.readouterr().out, 1)
        assert "BREAKER TRIPPED (pool other" in line and "revalidate" not in line and "resume" not in line, line
        store = Store(db)
        case_now = store.case("sim002")
        assert case_now is not None and case_now.passes == 1
        store.close()
        assert main(["watch", "-i", inv, "--store", db, "--clear-breaker", "--reason", "other pool fixed"]) == 0
        capsys.readouterr()

        assert main(watch) == 0
        line = _round_line(capsys.readouterr().out, 1)
        assert "revalidate sim002: pass" in line and "resume sim002: " in line, line

    store = Store(db)
    [closed] = store.cases("sim002")
    assert closed.stage is Stage.RETURNED and store.case("sim002") is None
    audited = [row["action"] for row in store.audit_log(limit=20)][::-1]
    assert audited == ["drain", "repaired", "revalidate", "clear-breaker", "revalidate", "resume"]
    store.close()


def _someone_else_drains(inventory: str, node: str, reason: str) -> None:
    """An administrator's drain, straight through the (simulated) controller: no record of the console's."""

    async def run() -> None:
        transport = transport_for(load_inventory(inventory))
        try:
            argv = ["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}"]
            result = await transport.run("sim001", argv, timeout_s=30)
            assert result.exit_status == 0, result.stderr
        finally:
            await transport.close()

    asyncio.run(run())


def test_proposals_are_withdrawn_when_they_no_longer_apply_and_an_operator_may_reject_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text('time_factor = 400\n[[nodes]]\nnames = "sim[001-004]"\n')
    db = str(tmp_path / "h.sqlite")
    cper = {"afid": 30}
    with start_sim_cluster(scenario=scenario) as sim:
        inv = _with_lifecycle(sim.inventory_path, tmp_path, breaker_pool_fraction=1.0, breaker_fleet_fraction=1.0)
        faulty = [Fault(kind=FaultKind.CPER_RECORD, node=n, gpu=1, params=cper) for n in ("sim002", "sim003", "sim004")]
        write_live_faults(sim.state_dir, faulty)
        sim.wait_for_generation(2)
        # --every 0.001: every node is stale again by the next round, so each round sweeps the idle ones.
        watch = ["watch", "-i", inv, "--store", db, "--every", "0.001", "--rounds", "1"]
        assert main(watch) == 0
        line = _round_line(capsys.readouterr().out, 1)
        assert "#1 drain sim002" in line and "#2 drain sim003" in line and "#3 drain sim004" in line, line
        # Each proposal says why: the node's worst finding and the action it calls for (not only "FAIL").
        assert main(["watch", "-i", inv, "--store", db, "--proposals"]) == 0
        listed = capsys.readouterr().out
        assert "#3 drain sim004 (sweep " in listed and ": watch: FAIL ras.cper_fatal: gpu1 " in listed, listed
        assert "; calls for " in listed and "CPER" in listed, listed

        # The operator turns #3 down: a reason is required, and the audit log keeps it.
        assert main(["watch", "-i", inv, "--store", db, "--reject", "3"]) == 2
        assert "--reject needs --reason" in capsys.readouterr().err
        assert main(["watch", "-i", inv, "--store", db, "--reject", "3", "--reason", "known: vendor ticket 42"]) == 0
        assert "rejected #3 drain sim004: nothing was done" in capsys.readouterr().out
        assert main(["watch", "-i", inv, "--store", db, "--reject", "3", "--reason", "again"]) == 1
        assert "no open proposal 3" in capsys.readouterr().out

        # sim002 is repaired; an administrator drains sim003 by hand meanwhile.
        write_live_faults(sim.state_dir, faulty[1:])
        sim.wait_for_generation(3)
        _someone_else_drains(inv, "sim003", "admin: riser swap")
        assert main(watch) == 0
        line = _round_line(capsys.readouterr().out, 1)
        assert "withdrew #2 drain sim003: out of service by someone else: " in line, line
        assert "admin: riser swap" in line, line
        assert "sim002 PASS" in line and "withdrew #1 drain sim002: passed since (sweep " in line, line
        # sim004 fails as it did when #3 was rejected: not proposed again, and the line says why.
        assert "held back drain sim004: rejected #3 (known: vendor ticket 42), same failures" in line, line
        assert "drain sim004 (sweep" not in line, line
        # A different failure on sim004 (a second GPU's record) is a new fault: proposed again.
        write_live_faults(
            sim.state_dir, [*faulty[1:], Fault(kind=FaultKind.CPER_RECORD, node="sim004", gpu=2, params=cper)]
        )
        sim.wait_for_generation(4)
        assert main(watch) == 0
        line = _round_line(capsys.readouterr().out, 1)
        assert "#4 drain sim004" in line and "held back" not in line, line

    store = Store(db)
    decided = {p.id: p.outcome for p in store.proposals(open_only=False)}
    assert decided[1] is not None and decided[1].startswith("withdrawn: passed since (sweep ")
    assert decided[2] is not None and decided[2].startswith("withdrawn: out of service by someone else")
    assert decided[3] == "rejected: known: vendor ticket 42" and decided[4] is None
    audited = [row["action"] for row in store.audit_log(limit=20)][::-1]
    assert audited == ["reject-proposal", "withdraw-proposal", "withdraw-proposal"], audited
    store.close()


def _scontrol(inventory: str, *argv: str) -> str:
    """``scontrol`` on the simulated controller (sim001), as an administrator would run it; its stdout."""

    async def run() -> str:
        transport = transport_for(load_inventory(inventory))
        try:
            result = await transport.run("sim001", ["scontrol", *argv], timeout_s=30)
            assert result.exit_status == 0, result.stderr
            return result.stdout.decode() if isinstance(result.stdout, bytes) else str(result.stdout)
        finally:
            await transport.close()

    return asyncio.run(run())


def test_a_reservation_is_rehearsed_on_the_simulator_and_a_refused_one_fails_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A trial could not rehearse ``watch --reservation`` (the sim's scontrol said 'invalid keyword: create'),
    and a round that could not sweep because Slurm refused the reservation still exited 0."""
    scenario = tmp_path / "s.toml"
    scenario.write_text('time_factor = 400\n[[nodes]]\nnames = "sim[001-002]"\n')
    db = str(tmp_path / "h.sqlite")
    with start_sim_cluster(scenario=scenario) as sim:
        inv = _with_lifecycle(sim.inventory_path, tmp_path)
        watch = ["watch", "-i", inv, "--store", db, "--every", "0.001", "--rounds", "1"]
        assert main([*watch, "--reservation", "ic-watch"]) == 0
        line = _round_line(capsys.readouterr().out, 1)
        assert "swept sim[001-002]" in line and "(released ic-watch)" in line, line
        assert _scontrol(inv, "show", "reservation") == "No reservations in the system\n"
        # Someone holds the name: Slurm refuses it, the round sweeps nothing, and the run says so by its exit.
        _scontrol(inv, "create", "reservation", "ReservationName=taken", "StartTime=now", "Duration=10",
                  "Users=root", "Flags=MAINT", "Nodes=sim002")  # fmt: skip
        assert main([*watch, "--reservation", "taken"]) == 1
        line = _round_line(capsys.readouterr().out, 1)
        assert "did not sweep sim[001-002]" in line, line
        assert "reservation taken not created: " in line and "Duplicate reservation name" in line, line
        assert "Nodes=sim002 NodeCnt=1" in _scontrol(inv, "show", "reservation", "taken"), "not released: not ours"
    store = Store(db)
    audited = [(row["action"], row["outcome"]) for row in store.audit_log(limit=10)][::-1]
    store.close()
    assert [a for a, _ in audited] == ["reserve", "release", "reserve"], audited
    assert audited[2][1].startswith("reservation taken not created: "), audited
