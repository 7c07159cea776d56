"""SshTransport: one asyncssh connection per node, shared by every probe, under global and per-node limits.

Order of the gates a command passes: the node's connection (opened under the global handshake
semaphore, paced by ``stagger_s``), then the node's channel semaphore, then the global command
semaphore. A command waiting for a busy node therefore holds no global slot.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shlex
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh

from console.transport.base import MAX_STDERR_BYTES, CappedOutput, CommandResult, OutputSink, Transport
from console.transport.cleanup import Cleanups
from console.transport.credentials import Credentials
from console.transport.errors import ErrorKind, TransportError
from console.transport.failures import handshake_failure, session_failure, tcp_failure
from console.transport.hostkeys import AcceptedHostKey, HostKeyCheck, KnownHosts
from console.transport.peer import Peer
from console.transport.settings import SshSettings, SshTarget
from console.transport.sshconfig import ConfigResolver, Endpoint
from console.transport.wrap import announced_pgid, checked_argv, remote_command, signal_session_command

log = logging.getLogger(__name__)

KILL_SLACK_S = 5.0  # the whole kill sequence's deadline beyond the grace
KILL_FIRST_POLL_S = 0.1  # then 0.2, 0.4, ... until the grace is used up
KILL_OPEN_PAUSES_S = (0.05, 0.2, 0.5)  # a kill channel refused (MaxSessions) is asked for again
OPEN_RETRY_PAUSES_S = (0.05, 0.1, 0.2, 0.4)
ANNOUNCE_WAIT_S = 5.0  # how long a cancelled command may take to announce its process group
_JUMP_CHANNELS = 1 << 16  # tunnels are direct-tcpip channels, which sshd's MaxSessions does not count
# AES-GCM first: asyncssh builds a new cipher object for every ChaCha20 call (four per packet), and a
# quick sweep receives ~250 KB per node; AES-GCM keeps one AEAD object per key. Every OpenSSH since
# 6.2 offers it; ChaCha20 and CTR stay as fallbacks for servers that do not.
_CIPHERS = (
    "aes128-gcm@openssh.com",
    "aes256-gcm@openssh.com",
    "chacha20-poly1305@openssh.com",
    "aes256-ctr",
    "aes192-ctr",
    "aes128-ctr",
)


class _VerifyingClient(asyncssh.SSHClient):
    """Hands every host key known_hosts does not vouch for to this attempt's ``HostKeyCheck``."""

    def __init__(self, check: HostKeyCheck) -> None:
        super().__init__()
        self._check = check

    def validate_host_public_key(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        return self._check.untrusted_key(host, addr, port, key)


class _Pacer:
    """Spaces handshake starts ``interval`` apart, so a burst of first connects is spread out."""

    def __init__(self, interval_s: float) -> None:
        self._interval_s = interval_s
        self._next = 0.0

    async def wait(self) -> None:
        now = time.monotonic()
        start = max(now, self._next)
        self._next = start + self._interval_s
        if start > now:
            await asyncio.sleep(start - now)


class SshTransport(Transport):
    """Runs commands on inventory nodes over SSH, with strict host keys and enforced timeouts.

    Use one instance from one event loop; it holds asyncio semaphores and connections bound to it.
    """

    def __init__(self, targets: Mapping[str, SshTarget], settings: SshSettings | None = None) -> None:
        self._settings = settings = settings or SshSettings()
        resolver = ConfigResolver(settings.ssh_config)
        self._endpoints = {name: resolver.endpoint(target) for name, target in targets.items()}
        self._known_hosts = KnownHosts(Path(settings.known_hosts or "~/.ssh/known_hosts").expanduser())
        self._credentials = Credentials()
        self._options: dict[tuple[object, ...], asyncssh.SSHClientConnectionOptions] = {}
        self._peers: dict[str, Peer] = {}
        self._jumps: dict[Endpoint, Peer] = {}
        self._handshakes = asyncio.Semaphore(settings.max_handshakes)
        self._commands = asyncio.Semaphore(settings.max_commands)
        self._pacer = _Pacer(settings.stagger_s / settings.max_handshakes)
        self._accepted: list[AcceptedHostKey] = []
        self._cleanups = Cleanups()
        # Commands that started and have not ended nor been killed: close() makes sure of each.
        self._running: set[_Session] = set()
        self._closed = False

    @property
    def accepted_host_keys(self) -> tuple[AcceptedHostKey, ...]:
        """Host keys written to known_hosts on first contact (``accept_new``), oldest first, for the audit log."""
        return tuple(self._accepted)

    async def __aenter__(self) -> SshTransport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- the Transport API ------------------------------------------------------------------------
    async def run(
        self,
        node: str,
        argv: Sequence[str],
        *,
        timeout_s: float,
        stdin: bytes | None = None,
        sink: OutputSink | None = None,
    ) -> CommandResult:
        """Run ``argv`` on ``node`` (each argument shell-quoted); see ``Transport.run``."""
        args = checked_argv(argv)
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        command, shown = remote_command(args, timeout_s, self._settings.kill_grace_s), shlex.join(args)
        peer, endpoint = self._peer(node)
        started_at, t0 = time.time(), time.monotonic()
        await self._connection(node, peer, endpoint)  # connect before taking slots: a slow handshake holds none
        output = sink if sink is not None else CappedOutput(self._settings.max_output_bytes)
        async with peer.channels, self._commands:
            session = await self._start(node, peer, endpoint, command, output)
            self._running.add(session)
            stdout, stderr = await self._finish(session, shown, timeout_s, stdin)
            self._running.discard(session)  # it ended by itself: nothing of it is left on the node
        status = session.process.returncode
        if status is None:  # asyncssh's way of saying the connection went away mid-command
            peer.forget(session.conn)
            raise TransportError(
                node,
                ErrorKind.DISCONNECTED,
                "connection lost while the command ran; the node's own timeout stops it if it still runs",
            )
        return CommandResult(
            node, shown, status, stdout, stderr, started_at, time.monotonic() - t0, output.dropped_bytes
        )

    async def run_script(
        self, node: str, script: str, *, timeout_s: float, sink: OutputSink | None = None
    ) -> CommandResult:
        """Run ``script`` with ``sh -c`` on ``node``, wrapped like ``run``."""
        return await self.run(node, ["sh", "-c", script], timeout_s=timeout_s, sink=sink)

    async def check_reachable(self, node: str, timeout_s: float = 3.0) -> None:
        """The node's SSH connection: the live one, else one opened now (its TCP part within ``timeout_s``).

        No connection of its own: a bare TCP connect that hangs up leaves ``kex_exchange_identification:
        Connection closed by remote host`` in the node's sshd log at every sweep, which fail2ban's
        aggressive and ddos sshd filters ban for, and costs the node a pre-auth sshd child. A live
        connection is kept honest by keepalives (dropped ~15 s after the node goes silent). A node that
        failed a moment ago is tried again: this starts a new sweep of it.
        """
        peer, endpoint = self._peer(node)
        if not peer.connected:
            await peer.connection(lambda: self._open(node, endpoint, tcp_timeout_s=timeout_s), fresh=True)

    async def close(self) -> None:
        """Finish pending kills at once (SIGKILL, no more grace; bounded), then close node connections
        before the jumps they ride on."""
        self._closed = True
        await self._cleanups.drain(KILL_SLACK_S)
        # Belt and braces: any command still not known to be gone (its kill could not open a channel, or
        # was cut short) gets one last SIGKILL to its whole session before the connections close.
        leftover = [s for s in self._running if s.pgid is not None and not s.conn.is_closed()]
        if leftover:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(KILL_SLACK_S):
                    await asyncio.gather(*(self._last_kill(s) for s in leftover), return_exceptions=True)
        await asyncio.gather(*(peer.close() for peer in self._peers.values()))
        await asyncio.gather(*(peer.close() for peer in self._jumps.values()))

    # -- connections ------------------------------------------------------------------------------
    def _peer(self, node: str) -> tuple[Peer, Endpoint]:
        if self._closed:
            raise RuntimeError("the SSH transport is closed")
        try:
            endpoint = self._endpoints[node]
        except KeyError:
            raise KeyError(f"{node!r} is not a target of this transport") from None
        if node not in self._peers:
            self._peers[node] = Peer(self._settings.max_channels_per_node)
        return self._peers[node], endpoint

    async def _connection(self, node: str, peer: Peer, endpoint: Endpoint) -> asyncssh.SSHClientConnection:
        return await peer.connection(lambda: self._open(node, endpoint))

    async def _jump_connection(self, node: str, jump: Endpoint) -> asyncssh.SSHClientConnection:
        """The shared connection to a ProxyJump host; its failure is reported against ``node``."""
        peer = self._jumps.setdefault(jump, Peer(_JUMP_CHANNELS))
        try:
            return await peer.connection(lambda: self._open(jump.label, jump))
        except TransportError as exc:
            raise TransportError(node, exc.kind, f"via jump host {jump.label}: {exc.detail}") from exc

    async def _open(
        self, label: str, endpoint: Endpoint, tcp_timeout_s: float | None = None
    ) -> asyncssh.SSHClientConnection:
        # The jump first, outside the handshake semaphore: it takes a slot of its own.
        tunnel = await self._jump_connection(label, endpoint.jump) if endpoint.jump else None
        async with self._handshakes:
            await self._pacer.wait()
            tcp_timeout = tcp_timeout_s or self._settings.connect_timeout_s
            sock = None if tunnel else await self._tcp_connect(label, endpoint, tcp_timeout)
            check = HostKeyCheck(label, self._known_hosts, self._settings.accept_new)
            try:
                return await asyncssh.connect(
                    endpoint.host,
                    endpoint.port,
                    tunnel=tunnel or (),
                    sock=sock,
                    config=None,
                    options=self._connection_options(endpoint),
                    client_factory=lambda: _VerifyingClient(check),
                )
            except Exception as exc:
                if sock is not None:
                    sock.close()
                failure = handshake_failure(label, endpoint.address, exc, check, self._settings.login_timeout_s)
                if failure is None:
                    raise
                raise failure from exc
            finally:
                if check.accepted is not None:
                    self._accepted.append(check.accepted)

    async def _tcp_connect(self, node: str, endpoint: Endpoint, timeout_s: float) -> socket.socket:
        """A connected socket to the node's SSH port: refused and unreachable nodes fail here, fast."""
        loop = asyncio.get_running_loop()
        where = f"{endpoint.host}:{endpoint.port}"
        try:
            async with asyncio.timeout(timeout_s):
                addresses = await loop.getaddrinfo(endpoint.host, endpoint.port, type=socket.SOCK_STREAM)
                last_error: OSError = OSError(f"{where} resolves to no address")
                for family, kind, proto, _, address in addresses:
                    sock = socket.socket(family, kind, proto)
                    sock.setblocking(False)
                    try:
                        await loop.sock_connect(sock, address)
                    except OSError as exc:
                        sock.close()
                        last_error = exc
                        continue
                    except BaseException:
                        sock.close()
                        raise
                    return sock
                raise last_error
        except OSError as exc:  # TimeoutError included
            raise tcp_failure(node, where, exc, timeout_s) from exc

    def _connection_options(self, endpoint: Endpoint) -> asyncssh.SSHClientConnectionOptions:
        """Options built once per distinct (user, port, keys) and reused for every connect."""
        key = (endpoint.user, endpoint.port, endpoint.identity_files, endpoint.identities_only, endpoint.host_key_alias)
        if key not in self._options:
            settings = self._settings
            agent: dict[str, object] = {}
            if not settings.use_agent:
                agent["agent_path"] = None
            elif endpoint.identities_only and endpoint.identity_files:
                agent["agent_identities"] = self._credentials.public_keys(endpoint.identity_files)
            else:
                agent["agent_identities"] = None  # every agent key, without reading ~/.ssh/*.pub per connect
            self._options[key] = asyncssh.SSHClientConnectionOptions(
                config=None,
                username=endpoint.user,
                port=endpoint.port,
                known_hosts=self._known_hosts.match,
                host_key_alias=endpoint.host_key_alias,
                client_keys=self._credentials.keypairs(endpoint.identity_files),
                password_auth=False,  # never prompt, never hold a password
                kbdint_auth=False,
                connect_timeout=settings.login_timeout_s,  # the TCP part is already done (or tunnelled)
                login_timeout=settings.login_timeout_s,
                keepalive_interval=settings.keepalive_interval_s,
                keepalive_count_max=settings.keepalive_count_max,
                encryption_algs=_CIPHERS,
                **agent,
            )
        return self._options[key]

    # -- commands ---------------------------------------------------------------------------------
    async def _start(self, node: str, peer: Peer, endpoint: Endpoint, command: str, output: OutputSink) -> _Session:
        """Open the session, retrying what is safe to retry because nothing has run yet.

        A connection that died while idle is replaced. A refused channel is retried after a pause:
        sshd frees a finished session's slot only after the close handshake, so a burst of new
        sessions right after a burst of finished ones can briefly exceed MaxSessions.
        """
        pauses = iter(OPEN_RETRY_PAUSES_S)
        while True:
            conn = await self._connection(node, peer, endpoint)
            try:
                return await self._open_session(_Session(node, conn, peer, output), command)
            except Exception as exc:
                dead = conn.is_closed()
                if dead:
                    peer.forget(conn)
                pause = next(pauses, None)
                if pause is None or not (dead or isinstance(exc, asyncssh.ChannelOpenError)):
                    raise _session_error(node, exc) from exc
            await asyncio.sleep(pause)

    async def _open_session(self, session: _Session, command: str) -> _Session:
        """Open the channel and start ``command``. Cancelled meanwhile, the command may start anyway
        (the request is on the wire), so the open completes in the background and what it started
        is killed as soon as it announces its process group."""
        opening = asyncio.ensure_future(session.conn.create_process(command, encoding=None))
        try:
            session.process = await asyncio.shield(opening)
        except asyncio.CancelledError:
            await self._cleanups.run(self._kill_once_open(session, opening))
            raise
        return session

    async def _kill_once_open(
        self, session: _Session, opening: asyncio.Future[asyncssh.SSHClientProcess[bytes]]
    ) -> None:
        try:
            session.process = await opening
        except Exception:
            return  # never opened: nothing runs
        self._running.add(session)  # from here on close() makes sure of it too
        with contextlib.suppress(TimeoutError, asyncssh.Error, ConnectionError):
            async with asyncio.timeout(ANNOUNCE_WAIT_S):
                await _read_announcement(session)
        session.process.close()
        await self._kill(session)

    async def _finish(
        self, session: _Session, command: str, timeout_s: float, stdin: bytes | None
    ) -> tuple[bytes, bytes]:
        """Collect the output; on timeout or cancellation, kill the command's session on the node.

        A timed-out command's kill goes on in the background: the caller has its answer (and what the
        command printed) at the timeout, not a grace period later; ``close`` finishes the kills.
        """
        try:
            async with asyncio.timeout(timeout_s):
                return await _collect(session, stdin)
        except TimeoutError:
            session.process.close()
            self._cleanups.start(self._kill(session))
            raise TransportError(
                session.node,
                ErrorKind.TIMEOUT,
                f"{_short(command)} did not finish within {timeout_s:g} s and was killed on the node",
                partial_stdout=session.stdout.value(),
            ) from None
        except asyncio.CancelledError:
            session.process.close()
            await self._cleanups.run(self._kill(session))
            raise
        except (asyncssh.Error, ConnectionError) as exc:
            session.peer.forget(session.conn)
            self._running.discard(session)  # the connection is gone: the node's own timeout ends it
            error = _session_error(session.node, exc)
            if isinstance(error, TransportError):
                # What the command printed before the link went: a bundle's probes that had finished.
                error.partial_stdout = session.stdout.value()
            raise error from exc

    async def _last_kill(self, session: _Session) -> None:
        assert session.pgid is not None
        try:
            await _signal_session(session.conn, session.pgid, "KILL")
        except (asyncssh.Error, OSError) as exc:
            log.warning("%s: could not kill session %d: %s", session.node, session.pgid, exc or type(exc).__name__)

    async def _kill(self, session: _Session) -> None:
        """SIGTERM every process of the command's session, then SIGKILL what outlives the grace.

        Each step is a short ``pkill`` on a new channel of the same connection, outside the node's
        channel semaphore (the cap leaves sshd room for it, and the timed-out session is closed
        already). Polls with growing pauses, so a command that honours SIGTERM costs no grace time;
        once the transport closes, the grace ends at once and SIGKILL follows.
        """
        node, sid = session.node, session.pgid
        if sid is None or session.conn.is_closed():
            self._running.discard(session)
            if sid is None:
                log.warning("%s: command stopped before announcing its session; the node's timeout ends it", node)
            else:
                log.warning("%s: connection lost; the node's own timeout stops session %d", node, sid)
            return
        grace = self._settings.kill_grace_s
        try:
            async with asyncio.timeout(grace + KILL_SLACK_S):
                await _signal_session(session.conn, sid, "TERM")
                waited, pause = 0.0, KILL_FIRST_POLL_S
                while waited < grace and not self._cleanups.hurried:
                    step = min(pause, grace - waited)
                    await self._cleanups.pause(step)
                    waited, pause = waited + step, pause * 2
                    if not await _signal_session(session.conn, sid, "0"):
                        self._running.discard(session)
                        return  # every process of the session is gone
                await _signal_session(session.conn, sid, "KILL")
            self._running.discard(session)
        except (asyncssh.Error, OSError) as exc:  # TimeoutError included
            log.warning("%s: could not kill session %d: %s", node, sid, exc or type(exc).__name__)


async def _signal_session(conn: asyncssh.SSHClientConnection, sid: int, signal_name: str) -> bool:
    """Send a signal to every process of a session on the node; whether some process was there.

    The channel is asked for again when refused: a burst of kills next to running commands can meet
    sshd's MaxSessions, and a kill that is never sent leaves the command running.
    """
    pauses = iter(KILL_OPEN_PAUSES_S)
    while True:
        try:
            done = await conn.run(signal_session_command(sid, signal_name), check=False)
            return done.exit_status == 0
        except asyncssh.ChannelOpenError:
            pause = next(pauses, None)
            if pause is None:
                raise
            await asyncio.sleep(pause)


@dataclass(eq=False)  # identity: kept in a set of running commands
class _Session:
    """One command's connection and channel, and the process group the node announced for it."""

    node: str
    conn: asyncssh.SSHClientConnection
    peer: Peer
    stdout: OutputSink  # as it arrives: what it keeps is returned when the command times out
    process: asyncssh.SSHClientProcess[bytes] = field(init=False)
    pgid: int | None = None  # the session id too: the wrapper runs as sshd's session leader


_CHUNK = 1 << 16


async def _collect(session: _Session, stdin: bytes | None) -> tuple[bytes, bytes]:
    """Feed stdin, read stdout and stderr to the end, and take the pgid announcement out of stderr."""
    process = session.process

    async def feed() -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionError, asyncssh.Error):  # the command ignored its stdin
            if stdin:
                process.stdin.write(stdin)
                await process.stdin.drain()
            process.stdin.write_eof()

    async def read_stderr() -> bytes:
        kept = CappedOutput(MAX_STDERR_BYTES)
        kept.feed(await _read_announcement(session))
        while chunk := await process.stderr.read(_CHUNK):
            kept.feed(chunk)
        return kept.value()

    async def read_stdout() -> bytes:
        while chunk := await process.stdout.read(_CHUNK):
            session.stdout.feed(chunk)
        return session.stdout.value()

    stdout = asyncio.ensure_future(read_stdout())
    stderr = asyncio.ensure_future(read_stderr())
    feeding = asyncio.ensure_future(feed())
    try:
        await asyncio.gather(stdout, stderr, feeding)
    finally:
        for task in (stdout, stderr, feeding):
            task.cancel()
    await process.wait_closed()
    return stdout.result(), stderr.result()


async def _read_announcement(session: _Session) -> bytes:
    """Read stderr up to the wrapper's pgid line (recorded in the session); return what came before it."""
    before = b""
    while line := await session.process.stderr.readline():
        session.pgid = announced_pgid(line)
        if session.pgid is not None:
            break
        if len(before) < MAX_STDERR_BYTES:
            before += line  # the login shell's own noise, if any
    return before


def _session_error(node: str, exc: Exception) -> Exception:
    return session_failure(node, exc) or exc


def _short(command: str, limit: int = 80) -> str:
    return command if len(command) <= limit else command[: limit - 3] + "..."
