"""A real, throw-away Slurm cluster on loopback: one ``slurmctld -D`` and one ``slurmd -D -N gpuNNN`` per node.

Everything runs as root with ``auth/none`` (still shipped in Debian 12's Slurm 22.05), on 127.0.0.1 with
ports probed free at start (several engineers run suites on one machine), with state, spool and logs in
a temporary directory. The daemons live in a private PID namespace (``unshare --pid --fork
--kill-child --mount-proc``) whose init is a small shell script: job steps (``slurmstepd``), which
slurmd detaches from itself, stay inside it, and killing the init kills every one of them. ``setpriv
--pdeathsig KILL`` ties the namespace to the test process, so nothing outlives a killed pytest.
:meth:`SlurmLab.stop` fails if any process of the namespace is left.

Clients (``scontrol``, ``sinfo``, ``sbatch``) need only ``SLURM_CONF``, given in :attr:`SlurmLab.env`.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import pytest

CLIENT_TOOLS = ("slurmctld", "slurmd", "scontrol", "sinfo", "sbatch", "scancel", "squeue")
NAMESPACE_TOOLS = ("unshare", "setpriv", "nsenter")
PORT_SEARCH_START = 26900  # the tests' block of the harness address plan (slurm_lab.sh uses 26817/27001)


def skip_unless_possible() -> None:
    """Skip the calling test unless this machine can run a Slurm lab (root, Slurm daemons, util-linux)."""
    if os.geteuid() != 0:
        pytest.skip("the Slurm lab needs root (auth/none daemons run as SlurmUser=root)")
    for tool in CLIENT_TOOLS + NAMESPACE_TOOLS:
        if shutil.which(tool) is None:
            pytest.skip(f"the Slurm lab needs {tool} (Debian: slurmctld, slurmd, slurm-client, util-linux)")


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("", port))
        except OSError:
            return False
    return True


def pick_ports(count: int) -> int:
    """First port of ``count`` consecutive free ports, searched from an offset derived from our pid."""
    span = count + 8
    start = PORT_SEARCH_START + (os.getpid() % 50) * span
    for attempt in range(200):
        first = PORT_SEARCH_START + (start - PORT_SEARCH_START + attempt * span) % (50 * span)
        if all(_port_free(first + i) for i in range(count)):
            return first
    raise RuntimeError(f"no {count} consecutive free ports from {PORT_SEARCH_START}")


def _pid_namespace(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _all_pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


class SlurmLab:
    """``count`` fake GPU nodes ``gpu001``.. served by real Slurm daemons; a context manager."""

    def __init__(
        self,
        count: int = 6,
        *,
        prefix: str = "gpu",
        conf_lines: str = "",
        message_timeout: int = 5,
        root: Path | None = None,
    ) -> None:
        self.count = count
        # Where the lab lives (a new temporary directory by default): given, its slurm.conf path is known
        # before the start, for scripts that must name it (a node's HealthCheckProgram's SLURM_CONF).
        self.root = root
        self.conf_lines = conf_lines  # more slurm.conf lines (Prolog=, HealthCheckProgram=, ...)
        # How long srun waits for slurmd: a Prolog that starts a Python program needs more on a busy machine.
        self.message_timeout = message_timeout
        self.nodes = [f"{prefix}{i:03d}" for i in range(1, count + 1)]
        self.dir = root if root is not None else Path()
        self.ctld_port = 0
        self._init: subprocess.Popen[bytes] | None = None
        self._entered: list[subprocess.Popen[bytes]] = []  # nsenter of restarted slurmds: gone with the namespace
        self._namespace: str | None = None

    # -- client side ----------------------------------------------------------------------------
    @property
    def conf(self) -> Path:
        """The lab's slurm.conf."""
        return self.dir / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        """Environment for Slurm clients: this process's, with ``SLURM_CONF`` pointing at the lab."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *argv: str, user: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client against the lab (as ``user`` through ``runuser`` when given)."""
        command = ["runuser", "-u", user, "--", *argv] if user else list(argv)
        # A client may wait out a whole message exchange (MessageTimeout) more than once on a busy machine,
        # as srun does behind a prolog: the bound follows the lab's MessageTimeout, never below 30 s.
        limit = max(30, 3 * self.message_timeout)
        return subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=limit, check=check)

    def state(self, node: str) -> str:
        """The node's state as ``sinfo %T`` prints it (``idle``, ``drained``, ``draining``, ``idle*``...)."""
        return self.run("sinfo", "-h", "-N", "-n", node, "-o", "%T").stdout.strip()

    def reason(self, node: str) -> str:
        """The node's full reason as ``sinfo -R`` keeps it (no 20-character cut)."""
        return self.run("sinfo", "-R", "-h", "-n", node, "-o", "%500E").stdout.strip()

    def wait_state(self, node: str, pattern: str, timeout_s: float = 30.0) -> str:
        """Wait until the node's state matches ``pattern`` (a full-match regex); returns it."""
        deadline = time.monotonic() + timeout_s
        while True:
            state = self.state(node)
            if re.fullmatch(pattern, state):
                return state
            if time.monotonic() > deadline:
                raise TimeoutError(f"{node} is {state!r} after {timeout_s} s, wanted {pattern!r}")
            time.sleep(0.1)

    def reset(self) -> None:
        """Cancel every job and bring every node back to idle with no reason, as started."""
        self.run("scancel", "--full", "--quiet", "-u", "root", check=False)
        deadline = time.monotonic() + 30
        while self.run("squeue", "-h", "-o", "%i").stdout.strip():
            if time.monotonic() > deadline:
                raise TimeoutError("jobs still queued after scancel")
            time.sleep(0.1)
        for node in self.nodes:
            if self.state(node).rstrip("*~#!%$@^-") != "idle":
                self.run("scontrol", "update", f"NodeName={node}", "State=RESUME", check=False)
        for node in self.nodes:
            self.wait_state(node, "idle")

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self, timeout_s: float = 60.0) -> SlurmLab:
        """Write slurm.conf, start the namespace with slurmctld and every slurmd, wait until all are idle."""
        skip_unless_possible()
        self.dir = self.root if self.root is not None else Path(tempfile.mkdtemp(prefix="ic-slurm-lab-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.dir.chmod(0o755)  # unprivileged clients (runuser -u nobody) must read slurm.conf
        for sub in ("state", "log", "run", *(f"spool/{n}" for n in self.nodes)):
            (self.dir / sub).mkdir(parents=True)
        first = pick_ports(self.count + 1)
        self.ctld_port = first
        self.conf.write_text(self._slurm_conf(first + 1))
        self.conf.chmod(0o644)
        (self.dir / "init.sh").write_text(self._init_script())
        argv = [
            "setpriv", "--pdeathsig", "KILL", "--",
            "unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "--",
            "sh", str(self.dir / "init.sh"),
        ]  # fmt: skip
        with (self.dir / "log" / "init.out").open("wb") as out:
            self._init = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                          env=self.env)  # fmt: skip
        try:
            self._wait_idle(timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Kill the namespace (and with it every daemon and job step), then fail if anything survived."""
        if self._init is None:
            return
        for pid in _children(self._init.pid) or [self._init.pid]:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)  # the namespace init: the kernel kills the rest with it
        try:
            self._init.wait(10)
        except subprocess.TimeoutExpired:
            self._init.kill()
            self._init.wait(10)
        self._init = None
        for entered in self._entered:
            entered.wait(10)
        self._entered.clear()
        deadline = time.monotonic() + 10
        while (left := self.leftover_processes()) and time.monotonic() < deadline:
            time.sleep(0.05)
        shutil.rmtree(self.dir, ignore_errors=True)
        if left:
            raise AssertionError(f"Slurm lab left processes behind: {left}")

    def kill_controller(self) -> None:
        """Kill slurmctld (SIGKILL) and leave the slurmds running: a controller that went away."""
        for pid in self.leftover_processes():
            with suppress(OSError):
                if Path(f"/proc/{pid}/comm").read_text().strip() == "slurmctld":
                    os.kill(pid, signal.SIGKILL)

    def restart_slurmd(self, node: str) -> None:
        """Kill ``node``'s slurmd and start a new one in the lab's namespace (it runs its health check first)."""
        assert self._init is not None and self._namespace is not None
        for pid in self.leftover_processes():
            with suppress(OSError):
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                if argv[0] == b"slurmd" and node.encode() in argv:
                    os.kill(pid, signal.SIGKILL)
        init = _children(self._init.pid)[0]  # the namespace's init: nsenter puts the new slurmd beside it
        argv = ["nsenter", "-t", str(init), "-p", "-m", "--", "slurmd", "-D", "-N", node, "-f", str(self.conf)]
        with (self.dir / "log" / f"slurmd-{node}.out").open("ab") as out:
            self._entered.append(subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT))

    def slurmd_log(self, node: str) -> str:
        """What ``node``'s slurmd has logged so far."""
        path = self.dir / "log" / f"slurmd-{node}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def leftover_processes(self) -> list[int]:
        """Pids still alive in the lab's PID namespace."""
        if self._namespace is None:
            return []
        return [pid for pid in _all_pids() if _pid_namespace(pid) == self._namespace]

    def __enter__(self) -> SlurmLab:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- internals ------------------------------------------------------------------------------
    def _slurm_conf(self, node_port: int) -> str:
        host = socket.gethostname().split(".")[0]  # SlurmctldHost must name this host (hostname -s)
        d = self.dir
        last = node_port + self.count - 1
        return (
            "# throw-away test cluster (tests/harness/slurm_lab.py): everything on 127.0.0.1\n"
            "ClusterName=iclab\n"
            f"SlurmctldHost={host}(127.0.0.1)\n"
            f"SlurmctldPort={self.ctld_port}\n"
            "SlurmUser=root\nSlurmdUser=root\n"
            "AuthType=auth/none\nCredType=cred/none\n"
            f"StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool/%n\n"
            f"SlurmctldPidFile={d}/run/slurmctld.pid\nSlurmdPidFile={d}/run/slurmd-%n.pid\n"
            f"SlurmctldLogFile={d}/log/slurmctld.log\nSlurmdLogFile={d}/log/slurmd-%n.log\n"
            "SlurmctldDebug=info\nSlurmdDebug=info\n"
            # no cgroups and no systemd here: track job processes through /proc, bind nothing
            "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nSelectType=select/linear\n"
            "MpiDefault=none\nJobCompType=jobcomp/none\nAccountingStorageType=accounting_storage/none\n"
            f"ReturnToService=2\nSlurmdTimeout=30\nSlurmctldTimeout=30\nMessageTimeout={self.message_timeout}\n"
            f"NodeName={self.nodes[0][:-3]}[{self.nodes[0][-3:]}-{self.nodes[-1][-3:]}] NodeHostname={host}"
            f" NodeAddr=127.0.0.1 Port=[{node_port}-{last}] CPUs=1 RealMemory=1000 State=UNKNOWN\n"
            "PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n" + self.conf_lines
        )

    def _init_script(self) -> str:
        conf, log = self.conf, self.dir / "log"
        slurmds = "\n".join(f"slurmd -D -N {n} -f {conf} >{log}/slurmd-{n}.out 2>&1 &" for n in self.nodes)
        # slurmd registers once at start: bring slurmctld up first so no node waits for the next ping.
        return (
            f"slurmctld -D -f {conf} >{log}/slurmctld.out 2>&1 &\n"
            "i=0\n"
            f"until scontrol ping 2>/dev/null | grep -q UP; do i=$((i+1)); [ $i -gt 600 ] && exit 1; sleep 0.05; done\n"
            f"{slurmds}\n"
            "wait\n"
        )

    def _wait_idle(self, timeout_s: float) -> None:
        assert self._init is not None
        deadline = time.monotonic() + timeout_s
        while True:
            if self._init.poll() is not None:
                raise RuntimeError(f"Slurm lab init exited {self._init.returncode}: {self._log_tail()}")
            if self._namespace is None:
                init = _children(self._init.pid)
                namespace = _pid_namespace(init[0]) if init else None
                if namespace is not None and namespace != _pid_namespace(self._init.pid):
                    self._namespace = namespace
            idle = self.run("sinfo", "-h", "-N", "-t", "idle", "-o", "%N", check=False).stdout.split()
            if self._namespace is not None and len(set(idle)) == self.count:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"Slurm lab: {len(set(idle))}/{self.count} nodes idle: {self._log_tail()}")
            time.sleep(0.05)

    def _log_tail(self) -> str:
        text = ""
        for name in ("init.out", "slurmctld.out", "slurmctld.log"):
            path = self.dir / "log" / name
            if path.exists():
                text += f"\n--- {name}\n" + path.read_text(errors="replace")[-1500:]
        return text


@pytest.fixture(scope="session")
def slurm_lab() -> Iterator[SlurmLab]:
    """Six real Slurm nodes gpu001..gpu006, idle; stopping them at the end asserts no process leaked."""
    skip_unless_possible()
    with SlurmLab(6) as lab:
        yield lab
