"""Time and memory are bounded whatever a node sends: deadlines, per-model timeouts of long tests, and a
200 MB output (issue 16). Measured on the simulator over real SSH; the slack is for a busy machine."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from console.checks import load_packs
from console.inventory import load_inventory
from console.model.findings import Status
from console.sim.launcher import start_sim_cluster
from console.sweep import SweepEngine
from console.sweep.catalog import PROBES_BY_ID
from console.sweep.events import Event, ProbeStarted
from console.transport.connect import transport_for

BUSY_SLACK_S = 2.0
NODES = '[[nodes]]\nnames = "sim[001-004]"\n'
STUCK = """
[[faults]]
nodes = "sim002"
kind = "ignores_sigterm"
args = "list"

[[faults]]
nodes = "sim003"
kind = "huge_output"
args = "static"
"""


def _scenario(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scenario.toml"
    path.write_text("time_factor = 400\n" + text)
    return path


def test_a_deadline_holds_within_ten_percent_with_a_stuck_node_and_a_huge_output(tmp_path: Path) -> None:
    """--deadline 15 ended at 32.9 s: parsing and storing came after it, and so did the kills."""
    with start_sim_cluster(scenario=_scenario(tmp_path, NODES + STUCK)) as sim:
        inventory = load_inventory(sim.inventory_path)

        async def sweep() -> tuple[str, float, float, dict[str, Status]]:
            engine = SweepEngine(inventory, transport_for(inventory), load_packs())
            started = time.monotonic()
            result = await engine.run(deadline_s=6.0)
            ended = time.monotonic() - started
            await engine.close()
            return result.outcome, ended, time.monotonic() - started, {n: v.status for n, v in result.verdicts.items()}

        outcome, ended, closed, verdicts = asyncio.run(sweep())
    assert outcome == "deadline"
    assert ended < 6.0 * 1.1 + BUSY_SLACK_S, f"the sweep ended {ended:.2f} s after its 6 s deadline began"
    assert closed - ended < BUSY_SLACK_S, "closing kills what is left at once, without another grace"
    assert verdicts == {
        "sim001": Status.PASS,
        "sim002": Status.UNKNOWN,
        "sim003": Status.UNKNOWN,
        "sim004": Status.PASS,
    }


def test_long_tests_time_out_at_their_models_pace_not_a_flat_fifteen_minutes(tmp_path: Path) -> None:
    scenario = NODES.replace("sim[001-004]", "sim001") + '\n[[nodes]]\nnames = "sim002"\nmodel = "MI250X"\n'
    with start_sim_cluster(scenario=_scenario(tmp_path, scenario)) as sim:
        inventory = load_inventory(sim.inventory_path)

        async def sweep() -> dict[tuple[str, str], float]:
            engine = SweepEngine(inventory, transport_for(inventory), load_packs())
            waits: dict[tuple[str, str], float] = {}

            def watch(event: Event) -> None:
                if isinstance(event, ProbeStarted) and event.timeout_s is not None:
                    waits[(event.node, event.probe)] = event.timeout_s

            engine.subscribe(watch)
            await engine.run(level="standard")
            await engine.close()
            return waits

        waits = asyncio.run(sweep())
    packs = load_packs()
    for node, model in (("sim001", "MI300X"), ("sim002", "MI250X")):
        for probe in ("rccl.all_reduce", "tb.a2a", "tb.p2p"):
            timeout = packs[model].pack.timeout_of(probe)
            assert timeout is not None
            assert waits[(node, probe)] == pytest.approx(timeout * 1.1), (node, probe)
    assert waits[("sim001", "rccl.all_reduce")] == pytest.approx(198.0)  # 180 s and 10 %, where 910 s was waited
    assert PROBES_BY_ID["rccl.all_reduce"].timeout_s == 900  # the catalogue's, for a model without a pack value


def _peak_rss_mib(argv: list[str]) -> tuple[int, float]:
    """Exit status and peak resident memory (MiB) of a command run as a child."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss / 1024


def test_a_200_mb_output_costs_at_most_64_mib_more_than_a_healthy_node(tmp_path: Path) -> None:
    """It cost 1.57 GB: every byte was kept, decoded and parsed. Now its section stops at 16 MiB."""
    one = '[[nodes]]\nnames = "sim[001-002]"\n[[faults]]\nnodes = "sim002"\nkind = "huge_output"\nargs = "static"\n'
    with start_sim_cluster(scenario=_scenario(tmp_path, one)) as sim:
        sweep = [sys.executable, "-m", "console", "sweep", "-i", str(sim.inventory_path), "--nodes"]
        healthy_status, healthy = _peak_rss_mib([*sweep, "sim001"])
        huge_status, huge = _peak_rss_mib([*sweep, "sim002"])
    assert (healthy_status, huge_status) == (0, 3)
    assert huge - healthy <= 64, f"a 200 MB output took {huge - healthy:.0f} MiB more ({huge:.0f} vs {healthy:.0f})"
