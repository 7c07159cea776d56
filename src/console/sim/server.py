"""The SSH side of the simulated cluster: one asyncssh listener per node, all in one process.

Each node listens on its own endpoint with its own host key, accepts only the cluster's client key
for one user, caps concurrent channels per connection like OpenSSH's ``MaxSessions`` and runs every
command through the node's mini shell (``console.sim.shell``). Connection faults act here:
``ssh_refused`` (no listener), ``auth_failure`` (every key rejected), ``host_key_changed`` (a key other
than the one in known_hosts); ``ssh_drop_mid_command`` reaches the connection through the shell when
the faulted program runs.

Startup does only cheap work per node (a key and a listening socket); a node's state is built from
the cluster file on its first command, so 1,024 nodes listen within a few seconds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import asyncssh

from console.sim.commands import SimContext, SimReply, next_invocation, run_program
from console.sim.faults import FaultKind
from console.sim.hostkeys import HostKeyStore
from console.sim.models import ClusterSpec, SimNode, build_node
from console.sim.processes import ProcessTable
from console.sim.shell import NodeShell, SessionEnd

log = logging.getLogger(__name__)

DEFAULT_USER = "node"
DEFAULT_MAX_SESSIONS = 10  # OpenSSH's MaxSessions default
EX_SOFTWARE = 70  # sysexits: internal software error
# Invocation numbers a hosted node takes from its counter file at a time (one locked file rewrite per
# program run was a fifth of the simulator's CPU in a quick sweep).
INVOCATION_BLOCK = 1024
PROMPT = "$ "
# Lines that end an interactive session (other commands run one by one, each as its own ``sh -c``).
_LOGOUT = frozenset({"exit", "logout"})

Endpoint = tuple[str, int]


@dataclass(frozen=True)
class ConnectionFaults:
    """The faults of one node that act on SSH itself rather than on a program's output."""

    refused: bool = False
    auth_failure: bool = False
    host_key_changed: bool = False

    @classmethod
    def of(cls, cluster: ClusterSpec) -> dict[str, ConnectionFaults]:
        """Connection faults per node name (nodes without any are absent)."""
        kinds: dict[str, set[FaultKind]] = {}
        for fault in cluster.faults:
            kinds.setdefault(fault.node, set()).add(fault.kind)
        return {
            node: cls(
                refused=FaultKind.SSH_REFUSED in found,
                auth_failure=FaultKind.AUTH_FAILURE in found,
                host_key_changed=FaultKind.HOST_KEY_CHANGED in found,
            )
            for node, found in kinds.items()
        }


class SimNodeRuntime:
    """One hosted node: its shell and processes now, its simulated state on the first command."""

    def __init__(self, cluster: ClusterSpec, name: str, state_dir: Path | None, faults: ConnectionFaults) -> None:
        self.cluster = cluster
        self.name = name
        self.state_dir = state_dir
        self.faults = faults
        self.processes = ProcessTable(f"{cluster.seed}:{name}")
        self.shell = NodeShell(self.run_program, self.processes)
        self.connections: set[asyncssh.SSHServerConnection] = set()
        self._node: SimNode | None = None
        self._invocations: Iterator[int] = iter(())

    def forget_state(self) -> None:
        """Build the node's state again from the cluster at its next command (faults changed live)."""
        self._node = None

    @property
    def node(self) -> SimNode:
        """The node's simulated state, built once from the cluster file."""
        if self._node is None:
            self._node = build_node(self.cluster, self.name)
        return self._node

    def run_program(self, argv: list[str]) -> SimReply:
        """One program invocation on this node (a renderer bug answers like a crashing tool)."""
        try:
            ctx = SimContext(
                node=self.node,
                cluster=self.cluster,
                state_dir=self.state_dir,
                invocation=self._next_invocation(),
            )
            return run_program(ctx, argv)
        except Exception as exc:
            log.exception("%s: simulating %r failed", self.name, argv)
            return SimReply(stdout="", stderr=f"{argv[0]}: simulator error: {exc!r}\n", exit_status=EX_SOFTWARE)

    def _next_invocation(self) -> int:
        number = next(self._invocations, None)
        if number is None:
            first = next_invocation(self.state_dir, self.name, INVOCATION_BLOCK)
            self._invocations = iter(range(first + 1, first + INVOCATION_BLOCK))
            number = first
        return number


class _Session(asyncssh.SSHServerSession[str]):
    """One channel: an exec request runs once; a shell request reads commands line by line."""

    def __init__(self, owner: _Connection) -> None:
        self._owner = owner
        self._chan: asyncssh.SSHServerChannel[str] | None = None
        self._command: str | None = None
        self._lines: asyncio.Queue[str | None] = asyncio.Queue()
        self._partial = ""
        self._task: asyncio.Task[None] | None = None
        # Output written in one turn of the loop leaves as one SSH packet, as a pipe read by sshd
        # gathers a process's quick successive writes: a bundle's 30 echo lines are not 30 packets.
        self._pending: list[str] = []
        self._pending_fd = 1
        self._flush_due = False
        self._writable = asyncio.Event()  # cleared while asyncssh's send buffer is over its high mark
        self._writable.set()

    # asyncssh callbacks ----------------------------------------------------------
    def connection_made(self, chan: asyncssh.SSHServerChannel[str]) -> None:
        self._chan = chan

    def pty_requested(self, term_type: str, term_size: tuple[int, int, int, int], term_modes: object) -> bool:
        return False  # no terminal: the OpenSSH client warns and goes on line by line

    def shell_requested(self) -> bool:
        return True

    def exec_requested(self, command: str) -> bool:
        self._command = command
        return True

    def subsystem_requested(self, subsystem: str) -> bool:
        return False

    def session_started(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"sim-session-{self._owner.runtime.name}")

    def data_received(self, data: str, datatype: asyncssh.DataType) -> None:
        self._partial += data.replace("\r", "\n")
        *lines, self._partial = self._partial.split("\n")
        for line in lines:
            self._lines.put_nowait(line)

    def eof_received(self) -> bool:
        if self._partial:
            self._lines.put_nowait(self._partial)
        self._lines.put_nowait(None)
        self._partial = ""
        return True  # keep the channel open for output after the client's stdin ends

    def connection_lost(self, exc: Exception | None) -> None:
        if self._task is not None:
            self._task.cancel()
        self._writable.set()  # nobody reads any more: writers learn it from the closed channel
        self._owner.session_closed()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    # ShellOutput -----------------------------------------------------------------
    def write(self, fd: int, text: str) -> None:
        """Send ``text`` on stdout (1) or stderr (2); output after the channel closed is lost, as on a pipe."""
        chan = self._chan
        if chan is None or chan.is_closing():
            return
        if self._pending and fd != self._pending_fd:
            self._flush()  # stdout and stderr keep their relative order
        self._pending_fd = fd
        self._pending.append(text)
        if not self._flush_due:
            self._flush_due = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_due = False
        if not self._pending:
            return
        text = "".join(self._pending)
        self._pending.clear()
        chan = self._chan
        if chan is None or chan.is_closing():
            return
        try:
            if self._pending_fd == 2:
                chan.write_stderr(text)
            else:
                chan.write(text)
        except BrokenPipeError:
            pass

    async def drain(self) -> None:
        """Send what is pending and wait while the client is behind (a huge output costs a window, not
        all of it in memory)."""
        self._flush()
        await self._writable.wait()

    def drop_connection(self) -> None:
        """The ssh_drop_mid_command fault: the TCP connection dies under the running command."""
        self._flush()  # what the command printed before the drop was on its way
        self._owner.conn.abort()

    # running -----------------------------------------------------------------------
    async def _run(self) -> None:
        shell = self._owner.runtime.shell
        try:
            if self._command is None:
                end = await self._interactive(shell)
            else:
                end = await shell.run_session(self._command, self)
        except Exception:
            log.exception("%s: session failed", self._owner.runtime.name)
            end = SessionEnd(status=EX_SOFTWARE)
        self._flush()
        chan = self._chan
        if chan is None or chan.is_closing():
            return
        if end.signal is not None:
            chan.exit_with_signal(end.signal.name.removeprefix("SIG"))
        else:
            chan.exit(end.status if end.status is not None else EX_SOFTWARE)

    async def _interactive(self, shell: NodeShell) -> SessionEnd:
        status = 0
        while True:
            self.write(1, PROMPT)
            line = await self._lines.get()
            if line is None or line.strip() in _LOGOUT:
                return SessionEnd(status=status)
            if line.strip():
                end = await shell.run_session(line, self)
                status = end.status if end.status is not None else 128 + int(end.signal or 0)


class _Connection(asyncssh.SSHServer):
    """Server side of one client connection to one node: authentication and the channel cap."""

    def __init__(self, server: SimServer, runtime: SimNodeRuntime) -> None:
        self.server = server
        self.runtime = runtime
        self.open_sessions = 0
        self._conn: asyncssh.SSHServerConnection | None = None

    @property
    def conn(self) -> asyncssh.SSHServerConnection:
        assert self._conn is not None
        return self._conn

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self._conn = conn
        self.runtime.connections.add(conn)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._conn is not None:
            self.runtime.connections.discard(self._conn)

    def begin_auth(self, username: str) -> bool:
        return True

    def password_auth_supported(self) -> bool:
        return False

    def public_key_auth_supported(self) -> bool:
        return True

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        if self.runtime.faults.auth_failure or username != self.server.user:
            return False
        return bool(key.public_data == self.server.client_key.public_data)

    def session_requested(self) -> _Session:
        if self.open_sessions >= self.server.max_sessions:
            # What OpenSSH answers beyond MaxSessions.
            raise asyncssh.ChannelOpenError(asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED, "open failed")
        self.open_sessions += 1
        return _Session(self)

    def session_closed(self) -> None:
        self.open_sessions -= 1


class SimServer:
    """Every node of a simulated cluster behind its own SSH endpoint, in the current event loop."""

    def __init__(
        self,
        cluster: ClusterSpec,
        keys: HostKeyStore,
        client_key: asyncssh.SSHKey,
        *,
        state_dir: Path | None = None,
        user: str = DEFAULT_USER,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
    ) -> None:
        self.cluster = cluster
        self.keys = keys
        self.client_key = client_key
        self.user = user
        self.max_sessions = max_sessions
        faults = ConnectionFaults.of(cluster)
        self.nodes = {
            spec.name: SimNodeRuntime(cluster, spec.name, state_dir, faults.get(spec.name, ConnectionFaults()))
            for spec in cluster.nodes
        }
        self._acceptors: dict[str, asyncssh.SSHAcceptor] = {}
        self._endpoints: dict[str, Endpoint] = {}

    async def start(self, endpoints: Mapping[str, Endpoint]) -> dict[str, Endpoint]:
        """Listen for every node on its endpoint (port 0: any free port); returns where each one listens.

        A node with the ssh_refused fault gets no listener; its endpoint is returned unchanged.
        """
        refused = {name for name, node in self.nodes.items() if node.faults.refused}
        rotated = [name for name, node in self.nodes.items() if node.faults.host_key_changed]
        self.keys.load(self.nodes, rotated)
        names = [name for name in self.nodes if name not in refused]
        acceptors = await asyncio.gather(*(self._listen(name, endpoints[name]) for name in names))
        self._acceptors = dict(zip(names, acceptors, strict=True))
        bound = dict(endpoints)
        for name, acceptor in self._acceptors.items():
            bound[name] = (endpoints[name][0], acceptor.get_port())
        self._endpoints = bound  # where a node listens again after a live change
        return bound

    def apply(self, cluster: ClusterSpec) -> None:
        """Serve ``cluster``'s faults and stacks from now on (same nodes): each node's state is rebuilt at
        its next command, and connection faults change what its listener does."""
        self.cluster = cluster
        faults = ConnectionFaults.of(cluster)
        for name, runtime in self.nodes.items():
            runtime.cluster = cluster
            runtime.forget_state()
            before, after = runtime.faults, faults.get(name, ConnectionFaults())
            runtime.faults = after
            if (before.refused, before.host_key_changed) != (after.refused, after.host_key_changed):
                asyncio.get_running_loop().create_task(self._relisten(name))

    async def _relisten(self, name: str) -> None:
        """The node's sshd went down, came back, or came back with another host key."""
        runtime = self.nodes[name]
        acceptor = self._acceptors.pop(name, None)
        if acceptor is not None:
            acceptor.close()
            await acceptor.wait_closed()
        for conn in list(runtime.connections):
            conn.abort()
        if not runtime.faults.refused and name in self._endpoints:
            if runtime.faults.host_key_changed:
                self.keys.load(self.nodes, [name])
            self._acceptors[name] = await self._listen(name, self._endpoints[name])

    async def _listen(self, name: str, endpoint: Endpoint) -> asyncssh.SSHAcceptor:
        runtime = self.nodes[name]
        key = self.keys.rotated_key(name) if runtime.faults.host_key_changed else self.keys.host_key(name)
        address, port = endpoint
        return await asyncssh.create_server(
            lambda: _Connection(self, runtime),
            address,
            port,
            server_host_keys=[key],
            reuse_address=True,
            encoding="utf-8",
            # Output that is not UTF-8 (a garbled tool, a wrong locale) travels as lone surrogates inside
            # the simulator and leaves as the very bytes a real node would send.
            errors="surrogateescape",
            allow_scp=False,
            agent_forwarding=False,
            x11_forwarding=False,
        )

    async def stop(self) -> None:
        """Stop listening and cut every open connection (their sessions and processes end with them)."""
        acceptors = list(self._acceptors.values())
        self._acceptors = {}
        for acceptor in acceptors:
            acceptor.close()
        for runtime in self.nodes.values():
            for conn in list(runtime.connections):
                conn.abort()
            runtime.processes.end_all()  # the simulated machines go off with the simulator
        await asyncio.gather(*(acceptor.wait_closed() for acceptor in acceptors))
