"""drift is bounded like sweep: --probe-timeout caps every probe, and a hung one is UNKNOWN, not a wait.

The walk-through found drift with no timeout or deadline option: a hung amd-smi held it as long as
the probe's own timeout.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from console.sim.launcher import start_sim_cluster

SCENARIO = """time_factor = 400
[[nodes]]
names = "sim[001-002]"
pool = "p"
rocm = "6.4.1"
[[faults]]
nodes = "sim002"
kind = "ignores_sigterm"
args = "firmware"
"""


def test_drift_with_a_probe_timeout_answers_within_it(tmp_path: Path) -> None:
    scenario = tmp_path / "hung.toml"
    scenario.write_text(SCENARIO)
    with start_sim_cluster(scenario=scenario) as sim:
        done = subprocess.run(
            [sys.executable, "-m", "console", "drift", "-i", str(sim.inventory_path), "--store",
             str(tmp_path / "h.sqlite"), "--probe-timeout", "3", "--json"],
            capture_output=True, text=True, check=False, timeout=120,
        )  # fmt: skip
    assert done.returncode == 3, done.stderr  # no drift seen, but sim002's firmware could not be checked
    rows = json.loads(done.stdout)
    firmware = [r for r in rows if r["node"] == "sim002" and r["status"] == "UNKNOWN"]
    assert firmware, rows
    # The probe was given up at the cap, not at amd-smi firmware's own 30 s (the message says which).
    assert "no answer within 3.15 s (probe timeout" in firmware[0]["message"], firmware
