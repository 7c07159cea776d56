"""The remediation loop end to end, from the shell, on the simulator (real SSH, its scontrol):

a sweep finds a fatal CPER record, the console drains the node and opens its case; resume holds it;
the repair is acknowledged; a revalidation on the still-faulty node is a strike; the fault is repaired;
two passing revalidations later ("accepted twice") resume returns the node and the case closes.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from console.cli import main
from console.sim.faults import Fault, FaultKind
from console.sim.launcher import start_sim_cluster
from console.sim.scenario import write_live_faults
from console.store import Store
from console.store.lifecycle import Stage


def _json(capsys: pytest.CaptureFixture[str]) -> object:
    return json.loads(capsys.readouterr().out)


def test_drain_repair_revalidate_twice_and_return(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text('time_factor = 400\n[[nodes]]\nnames = "sim[001-003]"\nrocm = "7.0.2"\n')
    db = str(tmp_path / "h.sqlite")
    with start_sim_cluster(scenario=scenario) as sim:
        inv = str(sim.inventory_path)
        # AFID 30: a fatal device-internal error, which the vendor's map sends to RMA at once.
        cper = Fault(kind=FaultKind.CPER_RECORD, node="sim002", gpu=3, params={"afid": 30})
        write_live_faults(sim.state_dir, [cper])
        sim.wait_for_generation(2)
        assert main(["sweep", "-i", inv, "--store", db, "--json", "-"]) == 1
        report = _json(capsys)
        sweep_id = report["sweep_id"]  # type: ignore[index]

        # The drain cites the sweep: the node's case opens, waiting for the physical action its AFID names.
        assert (
            main(
                [
                    "drain",
                    "sim002",
                    "-i",
                    inv,
                    "--store",
                    db,
                    "--reason",
                    "fatal CPER",
                    "--sweep",
                    str(sweep_id),
                    "--yes",
                ]
            )
            == 0
        )
        capsys.readouterr()
        assert main(["cases", "--store", db, "-i", inv, "--json"]) == 0
        [case] = _json(capsys)  # type: ignore[misc]
        assert (case["node"], case["stage"], case["action"]) == ("sim002", "awaiting-repair", "rma")
        assert case["findings"] == ["ras.cper_fatal"] and case["next"] == "rma (physical), then: repaired"

        # Not back before it is revalidated.
        assert main(["resume", "sim002", "-i", inv, "--store", db, "--yes"]) == 1
        assert "is awaiting-repair" in capsys.readouterr().out
        assert main(["revalidate", "sim002", "-i", inv, "--store", db, "--level", "quick", "--yes"]) == 1
        assert "awaiting-repair" in capsys.readouterr().out

        assert main(["repaired", "sim002", "-i", inv, "--store", db, "--reason", "reseated OAM 3", "--yes"]) == 0
        capsys.readouterr()
        # As every action: the plan, then nothing without a terminal or --yes, and nothing in a dry run.
        revalidate = ["revalidate", "sim002", "-i", inv, "--store", db, "--level", "quick"]
        assert main(revalidate) == 2
        assert main([*revalidate, "--dry-run"]) == 0
        shown = capsys.readouterr().out
        assert "sweep --probes quick" in shown and "dry run: nothing was changed" in shown
        assert main(["cases", "--store", db, "-i", inv, "--json"]) == 0
        assert _json(capsys)[0]["stage"] == "revalidating"  # type: ignore[index]
        # Still faulty: a strike, and back to waiting for the technician.
        assert main(["revalidate", "sim002", "-i", inv, "--store", db, "--level", "quick", "--yes"]) == 1
        assert "strike (FAIL" in capsys.readouterr().out

        write_live_faults(sim.state_dir, [])  # the OAM is replaced
        sim.wait_for_generation(3)
        assert main(["repaired", "sim002", "-i", inv, "--store", db, "--reason", "replaced OAM 3", "--yes"]) == 0
        assert main(["revalidate", "sim002", "-i", inv, "--store", db, "--level", "quick", "--yes"]) == 0
        assert main(["resume", "sim002", "-i", inv, "--store", db, "--yes"]) == 1  # one pass is not enough
        assert main(["revalidate", "sim002", "-i", inv, "--store", db, "--level", "quick", "--yes"]) == 0
        capsys.readouterr()
        assert main(["resume", "sim002", "-i", inv, "--store", db, "--yes"]) == 0
        assert "resumed sim002" in capsys.readouterr().out

    store = Store(db)
    [closed] = store.cases("sim002")
    assert closed.stage is Stage.RETURNED and closed.strikes == 1 and store.case("sim002") is None
    steps = [(s.step, s.stage.value) for s in store.case_steps(closed.id)]
    assert steps == [
        ("drain", "awaiting-repair"),
        ("repaired", "revalidating"),
        ("strike", "awaiting-repair"),
        ("repaired", "revalidating"),
        ("pass", "revalidating"),
        ("pass", "revalidating"),
        ("return", "returned"),
    ]
    # The evidence bundle defaults to the newest sweep that found the fault (here the strike's), with the case.
    archive = tmp_path / "sim002.tar.gz"
    assert main(["bundle", "sim002", "--store", db, "-o", str(archive)]) == 0
    with tarfile.open(archive) as tar:
        verdict = json.load(tar.extractfile("sim002-evidence/verdict.json"))  # type: ignore[arg-type]
        [bundled] = json.load(tar.extractfile("sim002-evidence/cases.json"))  # type: ignore[arg-type]
    assert verdict["sweep_id"] > sweep_id and verdict["status"] == "FAIL"
    assert bundled["stage"] == "returned" and [s["step"] for s in bundled["steps"]][-1] == "return"
    audited = [row["action"] for row in store.audit_log(limit=20)][::-1]
    assert audited == [
        "drain",
        "resume",
        "repaired",
        "revalidate",
        "repaired",
        "revalidate",
        "resume",
        "revalidate",
        "resume",
    ]
    store.close()
