"""``instinct-console demo`` as an operator runs it: on the addresses asked for, and a pointer at the next step.

The demo's simulator and its state go away when it ends; its last line on stderr says how to keep one up
(``sim serve``) and sweep it, so the operator is not left at a bare prompt.
"""

from __future__ import annotations

import ipaddress
import subprocess
import sys
from pathlib import Path

from console.sim.launcher import pick_address_base
from console.sim.serve import default_state_dir

NODES = 3


def test_demo_serves_on_the_address_base_given_and_closes_with_the_next_step(tmp_path: Path) -> None:
    base = pick_address_base(NODES, 22022)
    first, last = (ipaddress.IPv4Address(base) + i for i in (1, NODES))
    done = subprocess.run(
        [sys.executable, "-m", "console", "demo", "--headless", "--nodes", str(NODES), "--probes", "quick",
         "--time-factor", "400", "--address-base", base, "--store", str(tmp_path / "history.sqlite")],
        capture_output=True, text=True, timeout=150, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert f"{first}-{last}:22022" in done.stderr, done.stderr
    closing = done.stderr.splitlines()[-1]
    assert "instinct-console sim serve" in closing and "instinct-console sweep -i " in closing, closing
    assert str(default_state_dir() / "inventory.toml") in closing, closing
    assert done.stdout.splitlines()[-1].startswith(f"exit {done.returncode} ("), done.stdout


def test_a_demo_address_base_off_loopback_is_refused_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "console", "demo", "--headless", "--nodes", "2", "--address-base", "10.0.0.0"],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "127.0.0.0/8" in done.stderr, done.stderr
