"""Start a simulated cluster in its own process from Python (tests, the demo, benchmarks).

``start_sim_cluster(...)`` runs ``instinct-console sim serve`` as a child process, waits for its
``ready:`` line and returns a handle with the paths the console needs (``inventory_path`` first of
all). The simulator must be a separate process: the console measures only itself, and a server in
the console's own event loop would compete with it for the CPU.
"""

from __future__ import annotations

import ipaddress
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

from console.sim.faults import Fault
from console.sim.models import ClusterSpec
from console.sim.scenario import load_scenario, read_injected

READY_PREFIX = "ready: "
ASYNCSSH_BLOCK = "127.2"  # loopback block of the address plan for asyncssh simulators


class SimClusterError(RuntimeError):
    """The simulator did not come up (its log tail is in the message)."""


def _address_free(address: str, port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((address, port))
        except OSError:
            return False
    return True


def pick_address_base(nodes: int, port: int) -> str:
    """A ``127.2.B.0`` base whose next ``nodes`` addresses are free on ``port``, searched from our pid.

    Several test runs share this machine; a fixed block would make them collide.
    """
    blocks = math.ceil((nodes + 1) / 256)
    start = os.getpid() % 200
    for step in range(200):
        block = 16 + (start + step) % (240 - blocks)
        base = ipaddress.IPv4Address(f"{ASYNCSSH_BLOCK}.{block}.0")
        if all(_address_free(str(base + i), port) for i in range(1, nodes + 1)):
            return str(base)
    raise SimClusterError(f"no free block of {nodes} addresses in {ASYNCSSH_BLOCK}.0.0/16 on port {port}")


class SimCluster:
    """A running ``sim serve`` process and the files it wrote."""

    def __init__(self, proc: subprocess.Popen[bytes], state_dir: Path, ready_line: str, *, owns_state: bool) -> None:
        self.proc = proc
        self.state_dir = state_dir
        self.ready_line = ready_line
        self._owns_state = owns_state
        self.inventory_path = Path(ready_line.split(" inventory at ", 1)[1].rsplit(" (", 1)[0])
        self.cluster_path = state_dir / "cluster.json"
        self.known_hosts_path = state_dir / "known_hosts"
        self.client_key_path = state_dir / "client_ed25519"
        self.log_path = state_dir / "serve.log"

    def cluster(self) -> ClusterSpec:
        """The served cluster, with the address and port every node listens on."""
        return ClusterSpec.load(self.cluster_path)

    def injected(self) -> tuple[int, list[Fault]]:
        """The generation and the faults the simulator serves now (what it recorded last)."""
        return read_injected(self.state_dir)

    def wait_for_generation(self, generation: int, timeout_s: float = 10.0) -> list[Fault]:
        """Wait until the simulator has applied a change (its generation reached ``generation``)."""
        deadline = time.monotonic() + timeout_s
        while (current := self.injected())[0] < generation:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise SimClusterError(f"the simulator is at generation {current[0]}, not {generation}")
            time.sleep(0.05)
        return current[1]

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM the simulator and wait for it (SIGKILL after ``timeout_s``); removes a temporary state dir."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout_s)
        if self._owns_state:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def __enter__(self) -> SimCluster:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def start_sim_cluster(
    nodes: int = 8,
    models: str = "mi300x",
    *,
    faults: str = "demo",
    seed: int = 0,
    time_factor: float = 20.0,
    pools: int | None = None,
    state_dir: Path | None = None,
    listen: str = "addresses",
    address_base: str | None = None,
    port: int = 22022,
    max_sessions: int = 10,
    timeout_s: float = 60.0,
    scenario: Path | None = None,
) -> SimCluster:
    """Start ``instinct-console sim serve`` with these options and return once every node listens.

    Without ``state_dir`` a temporary directory is used (removed by ``stop``); without ``address_base``
    a free ``127.2.B.0`` block is picked (address mode) or ``127.0.0.1`` is used (port mode). With a
    ``scenario`` file, it gives the nodes and faults (``nodes``, ``models``, ``faults`` are not used).
    """
    if scenario is not None:
        nodes = len(load_scenario(scenario).node_names())
    owns_state = state_dir is None
    state = Path(tempfile.mkdtemp(prefix="ic-sim-")) if state_dir is None else state_dir
    state.mkdir(parents=True, exist_ok=True)
    if address_base is None:
        address_base = "127.0.0.1" if listen == "ports" else pick_address_base(nodes, port)
    argv = [
        sys.executable, "-m", "console", "sim", "serve",
        "--nodes", str(nodes), "--model", models, "--faults", faults, "--seed", str(seed),
        "--time-factor", str(time_factor), "--state-dir", str(state), "--listen", listen,
        "--address-base", address_base, "--port", str(port), "--max-sessions", str(max_sessions),
        "--parent-pid", str(os.getpid()),
    ]  # fmt: skip
    if pools is not None:
        argv += ["--pools", str(pools)]
    if scenario is not None:
        argv += ["--scenario", str(scenario)]
    out_path, log_path = state / "serve.out", state / "serve.log"
    with out_path.open("wb") as out, log_path.open("wb") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=log)
    deadline = time.monotonic() + timeout_s
    while True:
        text = out_path.read_text(encoding="utf-8", errors="replace")
        if text.startswith(READY_PREFIX) and text.endswith("\n"):
            return SimCluster(proc, state, text.strip(), owns_state=owns_state)
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            tail = log_path.read_text(encoding="utf-8", errors="replace")[-2000:]
            if owns_state:
                shutil.rmtree(state, ignore_errors=True)
            raise SimClusterError(f"sim serve did not become ready (exit {proc.returncode}): {tail.strip()}")
        time.sleep(0.02)
