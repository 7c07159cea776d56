"""Issue 22's story on the simulator, over real SSH, as its "Done when" tells it: a pool accepts both
documented example workloads on stack A; the scenario moves both nodes to stack B (a new amdgpu driver
whose GEMM puts NaN in GPU 1's results) and the console shows both workloads due on the pool; the rerun
regresses the training run (NaN on every task) while vLLM is accepted again; the rollback of the
training run to A, dry run then for real, is audited; the site puts driver A back and the rerun is
accepted again. The audit log and the acceptance view tell it in order."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from textual.widgets import Static

from console.checks import load_packs
from console.cli import main
from console.inventory import load_inventory
from console.sim.faults import Fault, FaultKind
from console.sim.launcher import start_sim_cluster
from console.sim.scenario import write_live_faults
from console.store import Store
from console.ui.app import ConsoleApp
from console.ui.screens.acceptance import AcceptanceScreen
from tests.acceptance.test_acceptance_story import SCENARIO
from tests.documented import workload_examples
from tests.ui.helpers import acceptance_shown, wait_until

VLLM, TRAIN, POOL = "vllm-llama3-8b-serving", "llama-pretrain-smoke", "mi300x-a"
NODES = ("sim001", "sim002")


def _view(cluster: Path, store_path: Path) -> tuple[dict[str, list[str]], dict[str, str]]:
    """The acceptance view (W) of a console opened on the history: workload -> its row's cells, and its detail."""

    async def look() -> tuple[dict[str, list[str]], dict[str, str]]:
        store = Store(store_path)
        app = ConsoleApp(
            load_inventory(cluster), load_packs(), store=store, start_sweep=False, export_dir=cluster.parent
        )
        try:
            async with app.run_test(size=(170, 50)) as pilot:
                await pilot.press("W")
                await wait_until(pilot, lambda: acceptance_shown(app))
                screen = app.screen
                assert isinstance(screen, AcceptanceScreen)
                rows, details = {}, {}
                for index in range(screen.table.row_count):
                    cells = [str(c) for c in screen.table.get_row_at(index)]
                    screen.table.move_cursor(row=index)
                    await pilot.pause()
                    rows[cells[0]] = cells
                    details[cells[0]] = str(screen.query_one("#acceptance-detail", Static).render())
                return rows, details
        finally:
            store.close()

    return asyncio.run(look())


def _not_json(token: str) -> object:
    raise AssertionError(f"acceptance --json printed {token}: strict JSON has no such token")


def test_accepted_on_a_then_due_regressed_rolled_back_and_accepted_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO)
    store_path = tmp_path / "h.sqlite"
    # The training run takes both nodes of the pool: one run per sweep. This story is about the stack, not
    # repeatability (tests/acceptance/test_relative.py): it declares that one run accepts it.
    examples = workload_examples().replace(
        '[workloads.results]\njson_prefix = "RESULT "',
        '[workloads.acceptance]\nruns = 1\n\n[workloads.results]\njson_prefix = "RESULT "',
    )
    assert "runs = 1" in examples
    with start_sim_cluster(scenario=scenario) as sim:
        cluster = tmp_path / "cluster.toml"
        cluster.write_text(sim.inventory_path.read_text() + "\n" + examples)
        where = ["-i", str(cluster), "--store", str(store_path)]

        def sweep(probes: str, *more: str) -> int:
            # --force: the training run needs both nodes of the pool at once, past the drains' cap.
            return main(["sweep", *where, "--probes", probes, *(["--force"] if probes == "workload" else []), *more])

        def states(*args: str) -> tuple[int, dict[str, dict[str, object]]]:
            capsys.readouterr()
            code = main(["acceptance", *where, "--pool", POOL, "--json", *args])
            shown = json.loads(capsys.readouterr().out, parse_constant=_not_json)
            return code, {s["workload"]: s for s in shown["states"]}

        # Stack A: both examples pass on both nodes, and an operator accepts each, with the reason.
        assert sweep("workload") == 0
        for name in (VLLM, TRAIN):
            assert main(["accept", *where, "--workload", name, "--pool", POOL, "--reason", "validation of A"]) == 0
        code, accepted = states()
        assert code == 0 and {n: accepted[n]["state"] for n in (VLLM, TRAIN)} == {VLLM: "accepted", TRAIN: "accepted"}
        assert sorted(accepted[TRAIN]["accepted"]["nodes"]) == list(NODES), "the record names the nodes that ran it"  # type: ignore[index]
        driver_a = accepted[TRAIN]["accepted"]["stack"]["amdgpu_driver"]  # type: ignore[index]

        # Stack B on both nodes: a new amdgpu driver, whose GEMM puts NaN in GPU 1's results.
        stack_b = [(FaultKind.DRIVER_DRIFT, {"amdgpu": "6.14.4"}, None), (FaultKind.TORCH_GEMM_NAN, {}, 1)]
        write_live_faults(sim.state_dir, [Fault(node=n, kind=k, params=p, gpu=g) for k, p, g in stack_b for n in NODES])
        sim.wait_for_generation(2)
        assert sweep("quick") == 0
        code, due = states()
        change = {"amdgpu_driver": {"accepted": driver_a, "current": "6.14.4"}}
        assert all(due[n]["state"] == "due" and due[n]["changes"] == change for n in (VLLM, TRAIN))
        rows, _ = _view(cluster, store_path)
        assert rows[VLLM][2] == rows[TRAIN][2] == "due", "the console shows both due on the pool"
        assert rows[TRAIN][4] == f"amdgpu_driver {driver_a}->6.14.4"

        # The rerun on B: vLLM is accepted again; the training run regresses, each task's NaN named.
        report = tmp_path / "b.json"
        assert sweep("workload", "--json", str(report)) == 1
        code, rerun = states()
        assert code == 1 and rerun[VLLM]["state"] == "accepted-again" and rerun[TRAIN]["state"] == "regressed"
        [sim001] = [n for n in json.loads(report.read_text())["nodes"] if n["node"] == "sim001"]
        nan = sorted(f["message"] for f in sim001["findings"] if f["status"] == "FAIL")
        assert [m.split(": loss")[0] for m in nan] == [f"{TRAIN}: task 0 on sim001", f"{TRAIN}: task 1 on sim002"]
        # What regressed is in the regressed run's figures: its NaN loss, as the text "nan" (strict JSON).
        figures = rerun[TRAIN]["regressed"]["figures"]  # type: ignore[index]
        assert figures["loss.step_100"] == "nan" and isinstance(figures["tokens_per_s"], float)

        # The way back for the training run: the dry run holds the pool to stack A's pin (both nodes are off
        # it, on driver 6.14.4: the console installs no packages, so nothing is held yet), then for real, audited.
        back = ["rollback", *where, "--pool", POOL, "--workload", TRAIN, "--reason", "NaN in training on 6.14.4"]
        capsys.readouterr()
        assert main([*back, "--json"]) == 0
        plan = json.loads(capsys.readouterr().out)["plan"]
        assert plan["commands"] == [] and all(plan["decisions"][n].startswith("skip: off its pin") for n in NODES)
        assert all("6.14.4" in plan["decisions"][n] for n in NODES), "each node's plan says what to put back"
        assert plan["notes"][0].startswith(f"back to the stack {TRAIN} was accepted on: record #")
        assert main([*back, "--apply", "--yes"]) == 0
        # The site puts driver A back: the training run is on its accepted stack again, vLLM on one it passed on.
        write_live_faults(sim.state_dir, [])
        sim.wait_for_generation(3)
        assert sweep("quick") == 0
        assert sweep("workload") == 0
        code, again = states()
        assert code == 0 and again[TRAIN]["state"] == "accepted-again" and again[VLLM]["state"] == "accepted-again"
        for name in (VLLM, TRAIN):  # a CI gate on the upgrade passes again
            assert main(["acceptance", *where, "--pool", POOL, "--workload", name, "--require-accepted"]) == 0
        rows, details = _view(cluster, store_path)

    assert rows[TRAIN][2] == rows[VLLM][2] == "accepted-again"
    # The view tells the training run's story in order: its kept runs, PASS on A, FAIL on B, PASS on A again.
    [runs] = [line for line in details[TRAIN].splitlines() if line.strip().startswith("runs")]
    assert re.fullmatch(r"\s*runs\s+#\d+ PASS #\d+ FAIL #\d+ PASS", runs), runs
    assert "ran on    sim[001-002]" in details[TRAIN]
    store = Store(store_path)
    try:
        rows_audit = store.conn.execute("SELECT action, inputs, outcome FROM audit ORDER BY id").fetchall()
        regressed = [r for r in store.acceptance_history(TRAIN, POOL) if r.outcome == "regressed"]
    finally:
        store.close()
    told = []
    for row in rows_audit:
        inputs = json.loads(row["inputs"])
        if row["action"] == "accept":
            told.append(("accept", inputs["workload"], inputs.get("outcome", "")))
        elif row["action"] == "rollback":  # its plan's first note: back to the stack <workload> was accepted on
            told.append(("rollback", inputs["notes"][0].split()[4], ""))
    assert told == [
        ("accept", VLLM, ""),
        ("accept", TRAIN, ""),
        ("accept", VLLM, "accepted-again"),
        ("accept", TRAIN, "regressed"),
        ("rollback", TRAIN, ""),
        ("accept", TRAIN, "accepted-again"),
    ], "the audit log tells it in order"
    assert regressed and "amdgpu_driver" in regressed[0].reason
