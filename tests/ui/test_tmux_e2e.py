"""End to end: the real ``instinct-console demo`` in tmux (private socket), read back with capture-pane.

The demo starts the simulated cluster in its own process and opens the console on it over SSH; the
test waits for the sweep, checks the faulty nodes are shown failing, reruns one with its key, quits
with ``q`` and checks that no process it started is left behind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from console.sim.faults import FaultKind, demo_faults

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")

NODES = 8
SEED = 7
# What the quick probe set shows for the faults the 8-node demo gets.
EXPECTED = {
    FaultKind.XGMI_LINK_DOWN: "✗ FAIL",
    FaultKind.ECC_UNCORRECTABLE: "✗ FAIL",
    FaultKind.GPU_MISSING: "✗ FAIL",
    FaultKind.THERMAL_THROTTLE: "✗ FAIL",
    FaultKind.ROCM_DRIFT: "! WARN",
}


class Tmux:
    """One tmux server on a private socket, one session."""

    def __init__(self) -> None:
        self.socket = f"ic-e2e-{uuid.uuid4().hex[:10]}"

    def run(self, *args: str) -> str:
        argv = ["tmux", "-L", self.socket, *args]
        return subprocess.run(argv, check=False, capture_output=True, text=True, timeout=30).stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "e2e")

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "e2e", *keys)

    def wait_for(self, check: Callable[[str], bool], timeout_s: float, what: str) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            text = self.screen()
            if check(text):
                return text
            time.sleep(0.25)
        raise AssertionError(f"timed out waiting for {what}; screen:\n{self.screen()}")


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    server = Tmux()
    yield server
    server.run("kill-server")
    # tmux leaves the socket file of a killed server behind.
    folder = Path(os.environ.get("TMUX_TMPDIR", "/tmp")) / f"tmux-{os.getuid()}"
    (folder / server.socket).unlink(missing_ok=True)


def node_line(screen: str, node: str) -> str:
    return next((line for line in screen.splitlines() if line.strip().startswith(node)), "")


def test_demo_sweeps_reruns_and_quits_cleanly(tmux: Tmux, tmp_path: Path) -> None:
    command = (
        f"{sys.executable} -m console demo --nodes {NODES} --seed {SEED} --probes quick --time-factor 400 "
        f"--store {tmp_path / 'history.sqlite'}; echo EXITED:$?; sleep 60"
    )
    # The pane's size, not LINES/COLUMNS: pytest-xdist workers export LINES=24 COLUMNS=80, which Textual
    # would take over the 180x50 window (the table then showed 5 of 8 nodes).
    env = {**{k: v for k, v in os.environ.items() if k not in ("LINES", "COLUMNS")}, "TERM": "xterm-256color"}
    session = ["new-session", "-d", "-s", "e2e", "-x", "180", "-y", "50", command]
    subprocess.run(["tmux", "-L", tmux.socket, *session], check=True, env=env, cwd=tmp_path)
    names = [f"sim{i:03d}" for i in range(1, NODES + 1)]
    # The detail pane can open a moment after "done in": wait until every node's row is on screen too.
    screen = tmux.wait_for(
        lambda s: "done in" in s and all(node_line(s, n) for n in names), 180, "the first sweep to finish"
    )

    faults = {f.node: f.kind for f in demo_faults(names, SEED)}
    assert set(faults.values()) == set(EXPECTED)
    for node, kind in faults.items():
        assert EXPECTED[kind] in node_line(screen, node), (node, kind, node_line(screen, node))
    healthy = [n for n in names if n not in faults]
    assert all("✓ PASS" in node_line(screen, n) for n in healthy)

    pane_pid = int(tmux.run("display-message", "-p", "-t", "e2e", "#{pane_pid}").strip())
    started = [p for p in psutil.Process(pane_pid).children(recursive=True) if "sleep" not in p.name()]
    assert any("sim" in " ".join(p.cmdline()) for p in started), "the simulator runs under the demo"
    engines = [p for p in started if "console.service.host" in p.cmdline()]
    assert len(engines) == 1, "the console's sweep engine runs in one process of its own"

    failing = next(n for n, k in faults.items() if k is FaultKind.XGMI_LINK_DOWN)
    tmux.keys("/")
    tmux.keys("-l", failing)
    tmux.keys("Enter")
    tmux.wait_for(lambda s: f"filter {failing}" in s, 20, "the filter")
    tmux.keys("r")
    screen = tmux.wait_for(
        lambda s: "rerun #" in s and "done in" in s and node_line(s, failing) != "", 120, "the rerun to finish"
    )
    assert "✗ FAIL" in node_line(screen, failing)

    tmux.keys("q")
    screen = tmux.wait_for(lambda s: "EXITED:" in s, 60, "the console to exit")
    assert "EXITED:0" in screen
    # The demo's last word points at the next step: a simulator that stays up, and the sweep of it.
    assert "instinct-console sim serve" in screen, screen
    _gone, alive = psutil.wait_procs(started, timeout=20)
    assert not alive, [p.cmdline() for p in alive]  # the engine process and the simulator with it
