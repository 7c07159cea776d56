"""A fleet of real OpenSSH ``sshd`` processes on loopback, standing in for cluster nodes in tests.

Each node is one ``sshd -D`` on its own address ``127.1.B.N:22022`` (the real-sshd block of the
address plan: asyncssh simulators use 127.2.0.0/16, proxies 127.3.0.0/16) with its own host key.
It runs inside ``unshare --uts --pid --fork --kill-child --mount-proc``: ``hostname`` answers the
node's name, ``ps`` on the node sees only the node's processes, and sshd is the init of a private
PID namespace, so when it dies the kernel kills every session process it left behind.
``setpriv --pdeathsig KILL`` ties the whole node to the test process: nodes die even when pytest
is killed. Each fleet picks a free third octet B, so several test runs can share the machine.

Login is key-only for a dedicated account (``icfleet``, created once, password ``*``: with
``UsePAM no`` a locked ``!`` password refuses even valid keys). Sessions get a per-node ``PATH``
through ``SetEnv`` whose first entry is the node's ``bin`` dir, where tests drop fake tools.

The fleet writes a ``known_hosts`` with every node's original key and an ``ssh_config`` mapping
node names to addresses, and offers the faults the transport must survive: a stopped node
(connection refused), a frozen one (SIGSTOP: TCP connects, SSH never answers), a swapped host key,
a revoked client key. :meth:`SshdFleet.stop` fails if any node process is left behind.

Call the fleet from the main thread: the death signal follows the thread that spawned the node.
"""

from __future__ import annotations

import ipaddress
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import pytest

SSHD = "/usr/sbin/sshd"
LOGIN_USER = "icfleet"
PORT = 22022
ADDRESS_BLOCK = "127.1"  # real sshd fleets live in 127.1.0.0/16


def skip_unless_possible() -> None:
    """Skip the calling test unless this machine can run a real sshd fleet (root + OpenSSH + unshare)."""
    if os.geteuid() != 0:
        pytest.skip("real sshd fleet needs root")
    for tool in (SSHD, "ssh-keygen", "unshare", "setpriv", "useradd"):
        if shutil.which(tool) is None:
            pytest.skip(f"real sshd fleet needs {tool} (Debian: openssh-server, util-linux, passwd)")


def _openssh_version() -> tuple[int, int]:
    banner = subprocess.run(["ssh", "-V"], capture_output=True, text=True, check=False).stderr
    found = re.search(r"OpenSSH_(\d+)\.(\d+)", banner)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def _keygen(path: Path, comment: str) -> None:
    path.unlink(missing_ok=True)
    path.with_suffix(".pub").unlink(missing_ok=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)], check=True)


def fingerprint(public_key_file: Path) -> str:
    """SHA256 fingerprint of a public key as OpenSSH prints it (``SHA256:...``), from ``ssh-keygen -l``."""
    out = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", str(public_key_file)], capture_output=True, text=True, check=True
    ).stdout
    return out.split()[1]


def _ensure_login_user(name: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        pass
    # Another test process may create it at the same moment; only a still-missing user is an error.
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--home-dir", "/", "--shell", "/bin/sh", "--password", "*", name],
        capture_output=True,
        check=False,
    )
    return pwd.getpwnam(name)


def _address_free(addr: str, port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((addr, port))
        except OSError:
            return False
    return True


def node_address(block: int, i: int) -> str:
    """Node ``i`` (from 1) of the fleet in block ``block``: 127.1.B.i, running on into B+1 past .255."""
    return str(ipaddress.IPv4Address(f"{ADDRESS_BLOCK}.{block}.0") + i)


def _pick_block(count: int, port: int) -> int:
    """A third octet B whose 127.1.B.1..count are all free, starting from one derived from our pid.

    Several engineers run test suites on the same machine; a fixed block would collide.
    """
    start = os.getpid() % 250
    blocks = (count + 1) // 256 + 1  # address blocks one fleet spans
    for step in range(250):
        block = (start + step) % (251 - blocks) + 1
        if all(_address_free(node_address(block, i), port) for i in range(1, count + 1)):
            return block
    raise RuntimeError(f"no free address block in {ADDRESS_BLOCK}.0.0/16 for {count} nodes on port {port}")


def _pid_namespace(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _start_time(pid: int) -> str | None:
    """When ``pid`` started (clock ticks since boot), to tell it from a later process with the same pid."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


@dataclass
class FleetNode:
    """One fake node: where it listens, its files, and the processes that make it up."""

    name: str
    addr: str
    port: int
    dir: Path
    proc: subprocess.Popen[bytes] | None = None
    namespace: str | None = None  # "pid:[inode]" of the node's PID namespace, set once it runs
    frozen: bool = False

    @property
    def bin_dir(self) -> Path:
        """First entry of the sessions' PATH: tests put fake tools here."""
        return self.dir / "bin"

    @property
    def host_key(self) -> Path:
        return self.dir / "host_ed25519"

    @property
    def original_host_key(self) -> Path:
        return self.dir / "host_ed25519.orig"

    @property
    def authorized_keys(self) -> Path:
        return self.dir / "authorized_keys"

    @property
    def log(self) -> Path:
        return self.dir / "sshd.log"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def known_hosts_patterns(self) -> str:
        # known_hosts writes a non-22 port as "[host]:port"; asyncssh will not match a bare host.
        if self.port == 22:
            return f"{self.addr},{self.name}"
        return f"[{self.addr}]:{self.port},[{self.name}]:{self.port}"


class SshdFleet:
    """``count`` real sshd nodes named ``<prefix>01``.. on 127.1.B.1.., with fault controls."""

    def __init__(
        self,
        count: int = 4,
        *,
        prefix: str = "node",
        block: int | None = None,
        port: int = PORT,
        max_sessions: int = 10,
        max_startups: str = "100:30:200",
        login_user: str = LOGIN_USER,
    ) -> None:
        self.count = count
        self.prefix = prefix
        self.port = port
        self.block = block
        self.max_sessions = max_sessions  # OpenSSH's default is 10: keep it so channel caps are tested for real
        self.max_startups = max_startups
        self.login_user = login_user
        self._base: Path | None = None  # a fresh temporary directory once started
        self.nodes: list[FleetNode] = []
        self._survivors: list[tuple[int, str]] = []  # (pid, start time) that outlived their node

    # -- paths the client side uses ------------------------------------------------------------
    @property
    def base(self) -> Path:
        """The fleet's temporary directory (keys, configs, one directory per node)."""
        if self._base is None:
            raise RuntimeError("the sshd fleet is not started")
        return self._base

    @property
    def ssh_config(self) -> Path:
        return self.base / "ssh_config"

    @property
    def known_hosts(self) -> Path:
        return self.base / "known_hosts"

    @property
    def client_key(self) -> Path:
        return self.base / "client_ed25519"

    def node(self, name: str) -> FleetNode:
        """The node called ``name``."""
        for candidate in self.nodes:
            if candidate.name == name:
                return candidate
        raise KeyError(name)

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self, timeout_s: float = 30.0) -> SshdFleet:
        """Create keys, configs and the login user, start every node and wait for its SSH banner."""
        skip_unless_possible()
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation directory
        user = _ensure_login_user(self.login_user)
        self._base = Path(tempfile.mkdtemp(prefix="ic-sshd-fleet-"))
        self.base.chmod(0o755)  # the login user must traverse to its PATH and authorized_keys
        block = self.block if self.block is not None else _pick_block(self.count, self.port)
        _keygen(self.client_key, "ic-fleet-client")
        extra = "PerSourcePenalties no\n" if _openssh_version() >= (9, 8) else ""
        for i in range(1, self.count + 1):
            name = f"{self.prefix}{i:02d}"
            node = FleetNode(name, node_address(block, i), self.port, self.base / "nodes" / name)
            node.bin_dir.mkdir(parents=True)
            os.chown(node.dir, user.pw_uid, user.pw_gid)  # fake tools may write state next to themselves
            _keygen(node.host_key, f"ic-fleet-{node.name}")
            shutil.copy(node.host_key, node.original_host_key)
            shutil.copy(node.host_key.with_suffix(".pub"), node.original_host_key.with_suffix(".orig.pub"))
            self.restore_client_key(node)
            (node.dir / "sshd_config").write_text(self._sshd_config(node, extra))
            self.nodes.append(node)
        self._write_client_files()
        for node in self.nodes:
            self._spawn(node)
        self._wait_ready(self.nodes, timeout_s)
        return self

    def stop(self) -> None:
        """Stop every node, then fail if any process of any node outlived it."""
        for node in self.nodes:
            self.stop_node(node)
        leftover = self.leftover_processes()
        if self._base is not None:
            shutil.rmtree(self._base, ignore_errors=True)
        if leftover:
            raise AssertionError(f"sshd fleet left processes behind: {leftover}")

    def __enter__(self) -> SshdFleet:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def leftover_processes(self) -> list[int]:
        """Pids of running nodes (wrapper and namespace), plus any process that outlived a stopped node.

        Processes are followed by pid *and* start time: a dead namespace's id, and a dead process's
        pid, may be reused at once by someone else's test run on the same machine.
        """
        running = [
            pid for n in self.nodes if n.running and n.proc is not None for pid in (n.proc.pid, *self.processes(n))
        ]
        return running + [pid for pid, started in self._survivors if _start_time(pid) == started]

    def processes(self, node: FleetNode | str) -> list[int]:
        """Pids inside the node's PID namespace (its sshd and every session process)."""
        node = self._resolve(node)
        if node.namespace is None or not node.running:
            return []
        return [pid for pid in _all_pids() if _pid_namespace(pid) == node.namespace]

    # -- faults ---------------------------------------------------------------------------------
    def stop_node(self, node: FleetNode | str) -> None:
        """The node goes away: listener and sessions die, connects are refused."""
        node = self._resolve(node)
        if node.proc is None:
            return
        members = [(pid, started) for pid in self.processes(node) if (started := _start_time(pid)) is not None]
        init = _children(node.proc.pid)
        # unshare --fork ignores SIGTERM; killing the namespace init takes every session with it.
        for pid in init or [node.proc.pid]:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        try:
            node.proc.wait(10)
        except subprocess.TimeoutExpired:
            node.proc.kill()
            node.proc.wait(10)
        node.proc = None
        node.frozen = False
        self._survivors += [(pid, started) for pid, started in members if _start_time(pid) == started]

    def start_node(self, node: FleetNode | str, timeout_s: float = 10.0) -> None:
        """Bring a stopped node back (a no-op for a running one)."""
        node = self._resolve(node)
        if not node.running:
            self._spawn(node)
            self._wait_ready([node], timeout_s)

    def restart_node(self, node: FleetNode | str) -> None:
        node = self._resolve(node)
        self.stop_node(node)
        self.start_node(node)

    def freeze_node(self, node: FleetNode | str) -> None:
        """SIGSTOP every process of the node: the kernel still accepts TCP, sshd never answers."""
        node = self._resolve(node)
        self._signal_all(node, signal.SIGSTOP)
        node.frozen = True

    def thaw_node(self, node: FleetNode | str) -> None:
        node = self._resolve(node)
        self._signal_all(node, signal.SIGCONT)
        node.frozen = False

    def swap_host_key(self, node: FleetNode | str) -> None:
        """Give the node a new host key (as a reinstall would) and restart it; known_hosts keeps the old one."""
        node = self._resolve(node)
        _keygen(node.host_key, f"ic-fleet-{node.name}-reinstalled")
        self.restart_node(node)

    def restore_host_key(self, node: FleetNode | str) -> None:
        node = self._resolve(node)
        if node.host_key.read_bytes() != node.original_host_key.read_bytes():
            shutil.copy(node.original_host_key, node.host_key)
            shutil.copy(node.original_host_key.with_suffix(".orig.pub"), node.host_key.with_suffix(".pub"))
            self.restart_node(node)

    def revoke_client_key(self, node: FleetNode | str) -> None:
        """Remove the client key from the node's authorized_keys: logins fail from now on."""
        self._resolve(node).authorized_keys.write_text("")

    def restore_client_key(self, node: FleetNode | str) -> None:
        node = self._resolve(node)
        shutil.copy(self.client_key.with_suffix(".pub"), node.authorized_keys)
        node.authorized_keys.chmod(0o644)  # sshd reads it as the login user

    def install_tool(self, node: FleetNode | str, name: str, script: str) -> Path:
        """Put an executable ``name`` first on the node's PATH."""
        path = self._resolve(node).bin_dir / name
        path.write_text(script)
        path.chmod(0o755)
        return path

    def reset(self) -> None:
        """Undo every fault and tool so the next test sees the fleet as started."""
        for node in self.nodes:
            if node.frozen:
                self.thaw_node(node)
            self.restore_client_key(node)
            self.restore_host_key(node)
            self.start_node(node)
            for tool in node.bin_dir.iterdir():
                tool.unlink()

    # -- observation ----------------------------------------------------------------------------
    def logins(self, node: FleetNode | str) -> int:
        """How many SSH logins the node accepted so far (one per connection), from its sshd log."""
        node = self._resolve(node)
        return node.log.read_text(errors="replace").count("Accepted publickey for ") if node.log.exists() else 0

    def cpu_s(self, node: FleetNode | str) -> float:
        """CPU seconds the node has used so far: its sshd and every process that sshd (the namespace init) reaped.

        Sessions are waited for by sshd and orphans by the init, so with no session running this is the
        node's whole cost; a session still running is not counted yet.
        """
        node = self._resolve(node)
        init = _children(node.proc.pid) if node.running and node.proc is not None else []
        try:
            fields = Path(f"/proc/{init[0]}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return 0.0
        # utime, stime, cutime, cstime: fields 14-17 of stat(5), 12-15 after the command name.
        return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")

    def host_key_fingerprint(self, node: FleetNode | str) -> str:
        """The SHA256 fingerprint of the key the node presents now."""
        return fingerprint(self._resolve(node).host_key.with_suffix(".pub"))

    # -- internals ------------------------------------------------------------------------------
    def _resolve(self, node: FleetNode | str) -> FleetNode:
        return self.node(node) if isinstance(node, str) else node

    def _sshd_config(self, node: FleetNode, extra: str) -> str:
        path = f"{node.bin_dir}:/usr/local/bin:/usr/bin:/bin"
        return (
            f"ListenAddress {node.addr}:{node.port}\n"
            f"HostKey {node.host_key}\n"
            "PidFile none\n"
            f"AuthorizedKeysFile {node.authorized_keys}\n"
            "StrictModes no\n"  # everything lives under /tmp, which StrictModes rejects
            "UsePAM no\n"
            "PubkeyAuthentication yes\n"
            "PasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\n"
            f"AllowUsers {self.login_user}\n"
            "AllowTcpForwarding yes\n"  # nodes double as ProxyJump hosts
            "UseDNS no\n"
            "PrintMotd no\n"
            f"MaxSessions {self.max_sessions}\n"
            f"MaxStartups {self.max_startups}\n"
            "LoginGraceTime 30\n"
            "LogLevel INFO\n"  # INFO logs each accepted login: tests count connections with it
            f"SetEnv IC_NODE={node.name} IC_NODE_DIR={node.dir} PATH={path}\n"
            f"{extra}"
        )

    def _write_client_files(self) -> None:
        lines = []
        for node in self.nodes:
            key_type, key_data = node.original_host_key.with_suffix(".orig.pub").read_text().split()[:2]
            lines.append(f"{node.known_hosts_patterns} {key_type} {key_data}\n")
        self.known_hosts.write_text("".join(lines))
        blocks = [f"Host {n.name}\n  HostName {n.addr}\n  Port {n.port}\n" for n in self.nodes]
        blocks.append(
            f"Host *\n  User {self.login_user}\n  IdentityFile {self.client_key}\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {self.known_hosts}\n  StrictHostKeyChecking yes\n  BatchMode yes\n"
        )
        self.ssh_config.write_text("\n".join(blocks))

    def _spawn(self, node: FleetNode) -> None:
        argv = [
            "setpriv", "--pdeathsig", "KILL", "--",
            "unshare", "--uts", "--pid", "--fork", "--kill-child", "--mount-proc", "--",
            "sh", "-c", 'hostname "$1" && shift && exec "$@"', "sh", node.name,
            SSHD, "-D", "-e", "-f", str(node.dir / "sshd_config"),
        ]  # fmt: skip
        with node.log.open("ab") as log:
            node.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        node.namespace = None

    def _wait_ready(self, nodes: list[FleetNode], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        pending = list(nodes)
        while pending:
            pending = [node for node in pending if not self._ready(node)]
            if pending and time.monotonic() > deadline:
                raise TimeoutError(f"sshd not ready on {[n.name for n in pending]} after {timeout_s} s")
            if pending:
                time.sleep(0.02)

    def _ready(self, node: FleetNode) -> bool:
        assert node.proc is not None
        if node.proc.poll() is not None:
            raise RuntimeError(f"{node.name}: sshd exited with {node.proc.returncode}: {node.log.read_text()[-2000:]}")
        if node.namespace is None:
            init = _children(node.proc.pid)
            namespace = _pid_namespace(init[0]) if init else None
            if namespace is None or namespace == _pid_namespace(node.proc.pid):
                return False  # unshare has not forked into the new namespace yet
            node.namespace = namespace
        try:
            with socket.create_connection((node.addr, node.port), timeout=1.0) as conn:
                conn.settimeout(2.0)
                return conn.recv(8).startswith(b"SSH-")
        except OSError:
            return False

    def _signal_all(self, node: FleetNode, signum: int) -> None:
        for pid in self.processes(node):
            with suppress(ProcessLookupError):
                os.kill(pid, signum)


def _all_pids() -> Iterator[int]:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            yield int(entry)
