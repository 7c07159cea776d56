"""The mini shell of a simulated node: runs the command lines an SSH session receives.

It handles what the console sends (``sh -c 'echo "@@ic-pgid $$" >&2; exec timeout -k 5 T "$@"' sh argv...``
and bundles of ``echo``/``timeout``/``echo rc=$?`` lines) and what an operator types (``;``, ``&&``,
``||``, ``exec``, ``echo``, ``true``/``false``, ``sleep``, ``kill``, ``timeout``, ``sh -c``, ``>&2``,
``2>&1``, ``>/dev/null``). Every other program goes to the node's program runner, i.e.
``console.sim.commands.run_program``, and its ``SimReply`` is acted out: durations slept, output
trickled, a hang that lasts until killed, a connection dropped mid-output.

Process semantics follow Linux, OpenSSH, dash and GNU coreutils where the console depends on them:
each session is its own process group whose id is the shell's ``$$``; the last command of ``sh -c``
replaces the shell (dash's exec optimisation); ``timeout`` that is not a session leader moves to its
own process group, so a group kill aimed at the parent shell does not reach it, passes a signal it
receives on to its command's group, and SIGKILLs that group (itself included) ``-k`` later; the
channel closes only when every process still holding its output has ended. A channel the client
closes sends no signal (sshd gives a session without a terminal no SIGHUP): its processes live on,
and one that writes afterwards dies of SIGPIPE, so a hung probe stays until something kills it.
``pkill``/``pgrep -s`` reach every process of a session, whatever group it moved to.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol

from console.sim.commands import FILLER_LINE, Delivery, SimReply
from console.sim.processes import ProcessTable, SimProcess
from console.sim.shell_syntax import (
    AndOr,
    ParamLookup,
    Script,
    ShellSyntaxError,
    SimpleCommand,
    expand_plain,
    expand_words,
    parse_script,
)

ProgramRunner = Callable[[list[str]], SimReply]

SHELLS = frozenset({"sh", "dash", "bash"})
# Builtins that also exist as /bin programs, so ``/bin/kill`` behaves like ``kill``.
PATH_UTILITIES = frozenset({"echo", "true", "false", "kill", "pkill", "pgrep"})
# Programs that run their command in their own process at another priority (watch's probes); the options
# that take a value.
PRIORITY_WRAPPERS = {"nice": frozenset({"-n", "--adjustment"}), "ionice": frozenset({"-c", "-n", "--class"})}
# A trickled output arrives in at most this many chunks, whatever its length.
MAX_TRICKLE_CHUNKS = 40
DEFAULT_ENV = {
    "HOME": "/home/node",
    "USER": "node",
    "LOGNAME": "node",
    "SHELL": "/bin/sh",
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/rocm/bin",
}
EXIT_TIMEDOUT = 124
EXIT_TIMEOUT_FAILED = 125


class ShellOutput(Protocol):
    """Where a session's output goes (an SSH channel, or a buffer in tests)."""

    def write(self, fd: int, text: str) -> None:
        """Append ``text`` to stdout (fd 1) or stderr (fd 2)."""

    def drop_connection(self) -> None:
        """Abort the whole connection now, as a network failure would."""

    async def drain(self) -> None:
        """Wait until the client has taken what was written (flow control for big outputs)."""


class _BrokenPipe(Exception):
    """A write to a channel the client closed: the writer dies of SIGPIPE."""


class _Channel:
    """A session's channel as its processes see it: once the client closes it, a write is SIGPIPE."""

    def __init__(self, out: ShellOutput) -> None:
        self.out = out
        self.closed = False

    def write(self, fd: int, text: str) -> None:
        if self.closed:
            raise _BrokenPipe
        self.out.write(fd, text)

    def drop_connection(self) -> None:
        self.out.drop_connection()

    async def drain(self) -> None:
        if self.closed:
            raise _BrokenPipe
        await self.out.drain()


@dataclass(frozen=True)
class SessionEnd:
    """How a session's command ended: an exit status, or the signal that killed it."""

    status: int | None
    signal: signal.Signals | None = None


class _Exit(Exception):
    """The ``exit`` builtin (or the end of ``exec``) leaving the current shell."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Io:
    """A process's view of the channel: fd 1 and 2 mapped to the channel's stdout, stderr or nowhere."""

    def __init__(self, out: _Channel, fds: Mapping[int, int | None] | None = None) -> None:
        self.out = out
        self.fds: dict[int, int | None] = dict(fds or {1: 1, 2: 2})

    def write(self, fd: int, text: str) -> None:
        target = self.fds.get(fd)
        if target is not None and text:
            self.out.write(target, text)

    def copy(self) -> _Io:
        return _Io(self.out, self.fds)


class _RedirectError(Exception):
    """A redirection the simulated node refuses (message as dash prints it)."""


def _apply_redirects(cmd: SimpleCommand, io: _Io, lookup: ParamLookup) -> _Io:
    result = io.copy()
    for redirect in cmd.redirects:
        target = expand_plain(redirect.target, lookup)
        if redirect.op in (">&", "<&"):
            if target == "-":
                result.fds[redirect.fd] = None
            elif target in ("1", "2"):
                result.fds[redirect.fd] = result.fds.get(int(target))
            elif target == "0":
                result.fds[redirect.fd] = None  # stdin is not a place output can go
            else:
                raise _RedirectError(f"{target}: Bad file descriptor")
        elif target == "/dev/null":
            result.fds[redirect.fd] = None
        elif redirect.op == "<":
            raise _RedirectError(f"cannot open {target}: No such file")
        else:
            raise _RedirectError(f"cannot create {target}: Read-only file system")
    return result


@dataclass
class _Frame:
    """One running ``sh``: its process, parameters and file descriptors."""

    proc: SimProcess
    lookup: ParamLookup
    io: _Io

    @property
    def arg0(self) -> str:
        return self.lookup.arg0

    def error(self, message: str) -> None:
        self.io.write(2, f"{self.arg0}: 1: {message}\n")


class _Session:
    """The processes started on behalf of one SSH channel."""

    def __init__(self, table: ProcessTable) -> None:
        self.table = table
        self.tasks: set[asyncio.Task[int]] = set()

    def start(self, proc: SimProcess, body: Coroutine[Any, Any, int]) -> asyncio.Task[int]:
        task = self.table.start(proc, body)
        self.tasks.add(task)
        return task

    async def wait(self, proc: SimProcess, timeout: float | None = None) -> int | None:
        """Exit status of ``proc`` (128+signal when killed); None if still running after ``timeout``."""
        assert proc.task is not None
        done, _ = await asyncio.wait({proc.task}, timeout=timeout)
        if not done:
            return None
        return process_status(proc)

    async def wait_all(self) -> None:
        """Until every process of this session has ended (stragglers keep the channel open)."""
        while pending := {task for task in self.tasks if not task.done()}:
            await asyncio.wait(pending)

    def cancel_all(self) -> None:
        for task in self.tasks:
            task.cancel()


def process_status(proc: SimProcess) -> int:
    """The status a parent shell sees for an ended process (``$?``)."""
    task = proc.task
    assert task is not None and task.done()
    if task.cancelled():
        sig = proc.signal or signal.SIGKILL
        return 128 + int(sig)
    exc = task.exception()
    if exc is not None:
        raise exc
    return task.result()


def _die(proc: SimProcess, sig: signal.Signals) -> NoReturn:
    """The process ends by ``sig`` (like ``raise(sig)``)."""
    proc.signal = sig
    raise asyncio.CancelledError


def parse_duration(text: str) -> float:
    """``sleep``/``timeout`` durations: a number with an optional s/m/h/d suffix (ValueError otherwise)."""
    scale = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
    number, unit = (text[:-1], text[-1]) if text[-1:] in scale else (text, "s")
    value = float(number)  # ValueError for anything that is not a number
    if not 0 <= value < float("inf"):  # also rejects NaN
        raise ValueError(text)
    return value * scale[unit]


def parse_signal(text: str) -> signal.Signals:
    """A signal given as ``TERM``, ``SIGTERM`` or ``15`` (ValueError otherwise)."""
    if text.isdigit():
        return signal.Signals(int(text))
    name = text.upper()
    try:
        return signal.Signals[name if name.startswith("SIG") else "SIG" + name]
    except KeyError:
        raise ValueError(text) from None


def _echo_text(args: list[str]) -> str:
    """dash's ``echo``: ``-n`` and backslash escapes (``\\c`` stops output)."""
    newline = True
    if args[:1] == ["-n"]:
        newline, args = False, args[1:]
    escapes = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}
    out: list[str] = []
    text = " ".join(args)
    i = 0
    while i < len(text):
        char = text[i]
        nxt = text[i + 1 : i + 2]
        if char == "\\" and nxt == "c":
            return "".join(out)
        if char == "\\" and nxt in escapes:
            out.append(escapes[nxt])
            i += 2
        elif char == "\\" and nxt == "0":
            digits = text[i + 2 : i + 5]
            end = len(digits) - len(digits.lstrip("01234567"))
            out.append(chr(int(digits[:end] or "0", 8)))
            i += 2 + end
        else:
            out.append(char)
            i += 1
    return "".join(out) + ("\n" if newline else "")


class NodeShell:
    """Runs command lines on one simulated node; one instance per node, shared by its sessions."""

    def __init__(
        self,
        runner: ProgramRunner,
        processes: ProcessTable,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.runner = runner
        self.processes = processes
        self.env = dict(DEFAULT_ENV if env is None else env)

    async def run_session(self, command: str, out: ShellOutput) -> SessionEnd:
        """Run ``command`` as sshd would (``$SHELL -c command`` in a new session) and wait for it to end.

        Cancelling this coroutine (the client closed the channel) signals nothing: the session's
        processes run on, and the next one to write to the closed channel dies of SIGPIPE.
        """
        session = _Session(self.processes)
        channel = _Channel(out)
        leader = self.processes.spawn(["sh", "-c", command], parent=None)
        session.start(leader, self._program(session, leader, ["sh", "-c", command], _Io(channel), dict(self.env)))
        try:
            await session.wait_all()
        except asyncio.CancelledError:
            channel.closed = True
            raise
        task = leader.task
        assert task is not None
        if task.cancelled():
            return SessionEnd(status=None, signal=leader.signal or signal.SIGKILL)
        return SessionEnd(status=process_status(leader))

    # -- running programs -------------------------------------------------

    async def _program(self, session: _Session, proc: SimProcess, argv: list[str], io: _Io, env: dict[str, str]) -> int:
        """What process ``proc`` does when it runs ``argv`` (shells, timeout and sleep are simulated here)."""
        try:
            return await self._run_program(session, proc, argv, io, env)
        except _BrokenPipe:
            _die(proc, signal.SIGPIPE)

    async def _run_program(
        self, session: _Session, proc: SimProcess, argv: list[str], io: _Io, env: dict[str, str]
    ) -> int:
        name = os.path.basename(argv[0])
        if name in SHELLS:
            return await self._sh(session, proc, argv, io, env)
        if name == "timeout":
            return await self._timeout(session, proc, argv, io, env)
        if name == "sleep":
            return await self._sleep(argv, io)
        if name in PRIORITY_WRAPPERS:
            return await self._priority(session, proc, argv, io, env)
        if name in PATH_UTILITIES:
            frame = _Frame(proc, ParamLookup(name, [], proc.pid, env), io)
            return await self._builtins[name](self, session, frame, argv, io)
        return await self._deliver(proc, self.runner(argv), io)

    async def _run_child(self, session: _Session, frame: _Frame, argv: list[str], io: _Io, in_place: bool) -> int:
        """Run ``argv`` in a child process of the frame's shell, or in the shell's own process (exec)."""
        if in_place:
            frame.proc.argv = list(argv)
            return await self._program(session, frame.proc, argv, io, frame.lookup.variables)
        child = self.processes.spawn(argv, parent=frame.proc)
        session.start(child, self._program(session, child, argv, io, dict(frame.lookup.variables)))
        status = await session.wait(child)
        assert status is not None
        return status

    async def _deliver(self, proc: SimProcess, reply: SimReply, io: _Io) -> int:
        """Act out a program's reply on the channel."""
        if reply.ignores_term:
            proc.ignores.update({signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
        if reply.delivery is Delivery.TRICKLE:
            await self._trickle(reply, io)
        else:
            await asyncio.sleep(reply.duration_s)
            io.write(1, reply.stdout)
        await self._filler(reply.filler_bytes, io)
        io.write(2, reply.stderr)
        if reply.delivery is Delivery.HANG:
            await asyncio.Event().wait()
        if reply.delivery is Delivery.DROP:
            io.out.drop_connection()
            await asyncio.Event().wait()  # the connection teardown cancels this process
        if reply.delivery is Delivery.KILLED:
            _die(proc, signal.Signals(reply.kill_signal))
        return reply.exit_status

    @staticmethod
    async def _filler(size: int, io: _Io) -> None:
        """``size`` bytes of output, made and sent a chunk at a time, at the pace the client reads."""
        chunk = FILLER_LINE * 1024
        for offset in range(0, size, len(chunk)):
            io.write(1, chunk[: size - offset])
            await io.out.drain()

    @staticmethod
    async def _trickle(reply: SimReply, io: _Io) -> None:
        lines = reply.stdout.splitlines(keepends=True) or [""]
        per_chunk = -(-len(lines) // MAX_TRICKLE_CHUNKS)
        chunks = ["".join(lines[i : i + per_chunk]) for i in range(0, len(lines), per_chunk)]
        pause = reply.duration_s / len(chunks)
        for chunk in chunks:
            io.write(1, chunk)
            await asyncio.sleep(pause)

    async def _priority(
        self, session: _Session, proc: SimProcess, argv: list[str], io: _Io, env: dict[str, str]
    ) -> int:
        """``nice [-n N] CMD...`` and ``ionice [-c C] [-n N] [-t] CMD...``: both exec CMD in their own process.

        A simulated node has no scheduler to lower: what matters is that the command runs as itself,
        so a timeout or a kill reaches it as it would the real one. An option either does not take is
        refused as coreutils and util-linux refuse it (status 125 and 1).
        """
        name = os.path.basename(argv[0])
        with_value = PRIORITY_WRAPPERS[name]
        rest = argv[1:]
        while rest and rest[0].startswith("-") and rest[0] != "--":
            option = rest.pop(0)
            if option in with_value and rest:
                rest.pop(0)
            elif not (option in ("-t",) and name == "ionice") and not (name == "nice" and option[1:].isdigit()):
                io.write(2, f"{name}: invalid option -- '{option.lstrip('-')}'\n")
                return 125 if name == "nice" else 1
        if rest[:1] == ["--"]:
            rest = rest[1:]
        if not rest:
            io.write(2, f"{name}: a command is needed here\n")
            return 125 if name == "nice" else 1
        proc.argv = list(rest)
        return await self._program(session, proc, rest, io, env)

    @staticmethod
    async def _sleep(argv: list[str], io: _Io) -> int:
        if len(argv) < 2:
            io.write(2, "sleep: missing operand\n")
            return 1
        total = 0.0
        for arg in argv[1:]:
            try:
                total += parse_duration(arg)
            except ValueError:
                io.write(2, f"sleep: invalid time interval '{arg}'\n")
                return 1
        await asyncio.sleep(total)
        return 0

    async def _timeout(self, session: _Session, proc: SimProcess, argv: list[str], io: _Io, env: dict[str, str]) -> int:
        """GNU ``timeout [-k D] [-s SIG] [--foreground] [--preserve-status] DURATION CMD...``.

        As coreutils does it: at the timeout (or on a TERM, INT, HUP or QUIT of its own) it signals its
        command and, without ``--foreground``, its whole process group, then ignores that signal
        itself; with ``-k`` it sends SIGKILL the same way that much later, which without
        ``--foreground`` ends ``timeout`` too (its parent sees 137).
        """
        try:
            options, duration, command = _timeout_args(argv[1:])
        except ValueError as exc:
            io.write(2, f"timeout: {exc}\nTry 'timeout --help' for more information.\n")
            return EXIT_TIMEOUT_FAILED
        if not options.foreground:
            self.processes.new_group(proc)
        received: asyncio.Queue[signal.Signals] = asyncio.Queue()
        proc.catch = received.put_nowait
        child = self.processes.spawn(command, parent=proc)
        task = session.start(child, self._program(session, child, command, io, env))
        loop = asyncio.get_running_loop()
        alarm = loop.time() + duration if duration else None  # GNU's alarm; -k re-arms it for SIGKILL
        term_signal, kill_after, timed_out = options.signal, options.kill_after, False
        while not task.done():
            waiter = asyncio.ensure_future(received.get())
            left = None if alarm is None else max(0.0, alarm - loop.time())
            try:
                done, _ = await asyncio.wait({task, waiter}, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()
            if task in done:
                break
            if waiter in done:
                sig = waiter.result()
            else:
                timed_out, sig, alarm = True, term_signal, None
            if kill_after is not None:
                alarm, term_signal, kill_after = loop.time() + kill_after, signal.SIGKILL, None
            self._timeout_signal(proc, child, sig, options.foreground)
        status = process_status(child)
        if child.signal is not None and not timed_out:
            _die(proc, child.signal)
        if timed_out and child.signal is signal.SIGKILL:
            return status  # killed after ignoring the first signal: 137, whatever --preserve-status says
        if timed_out and not options.preserve_status:
            return EXIT_TIMEDOUT
        return status

    def _timeout_signal(self, proc: SimProcess, child: SimProcess, sig: signal.Signals, foreground: bool) -> None:
        """coreutils' ``cleanup``: the command, then (unless ``--foreground``) the whole group, itself included."""
        self.processes.kill(child.pid, sig)
        if not foreground:
            if sig is not signal.SIGKILL:
                proc.ignores.add(sig)  # what it sends its own group must not come back to it
            self.processes.kill(-proc.pgid, sig)

    # -- the shell language -----------------------------------------------

    async def _sh(self, session: _Session, proc: SimProcess, argv: list[str], io: _Io, env: dict[str, str]) -> int:
        """``sh -c SCRIPT [ARG0 [ARGS...]]``."""
        shell = os.path.basename(argv[0])
        if len(argv) < 2 or argv[1] != "-c":
            option = argv[1] if len(argv) > 1 else ""
            if option.startswith("-") and option != "-":
                io.write(2, f"{shell}: 0: Illegal option {option[:2]}\n")
            else:
                io.write(2, f"{shell}: reading commands from standard input is not simulated\n")
            return 2
        if len(argv) < 3:
            io.write(2, f"{shell}: 0: -c requires an argument\n")
            return 2
        arg0 = argv[3] if len(argv) > 3 else shell
        frame = _Frame(proc, ParamLookup(arg0, argv[4:], proc.pid, env), io.copy())
        try:
            script = parse_script(argv[2])
        except ShellSyntaxError as exc:
            frame.error(str(exc))
            return 2
        try:
            return await self._script(session, frame, script)
        except _Exit as done:
            return done.status

    async def _script(self, session: _Session, frame: _Frame, script: Script) -> int:
        for n, chain in enumerate(script):
            frame.lookup.status = await self._and_or(session, frame, chain, last=n == len(script) - 1)
        return frame.lookup.status

    async def _and_or(self, session: _Session, frame: _Frame, chain: AndOr, last: bool) -> int:
        steps = [("", chain.first), *chain.rest]
        status = 0
        for n, (op, cmd) in enumerate(steps):
            if (op == "&&" and status != 0) or (op == "||" and status == 0):
                continue
            status = await self._simple(session, frame, cmd, in_place=last and n == len(steps) - 1)
            frame.lookup.status = status
        return status

    async def _simple(self, session: _Session, frame: _Frame, cmd: SimpleCommand, in_place: bool) -> int:
        argv = expand_words(cmd.words, frame.lookup)
        assigned = {name: expand_plain(value, frame.lookup) for name, value in cmd.assignments}
        try:
            io = _apply_redirects(cmd, frame.io, frame.lookup)
        except _RedirectError as exc:
            frame.error(str(exc))
            return 2
        if not argv:
            frame.lookup.variables.update(assigned)
            return 0
        builtin = self._builtins.get(argv[0])
        if builtin is None and os.path.basename(argv[0]) in PATH_UTILITIES:
            builtin = self._builtins.get(os.path.basename(argv[0]))
        if builtin is not None:
            return await builtin(self, session, frame, argv, io)
        if assigned:
            frame = _Frame(frame.proc, _with_variables(frame.lookup, assigned), frame.io)
        return await self._run_child(session, frame, argv, io, in_place)

    # -- builtins -----------------------------------------------------------

    async def _b_true(self, session: _Session, frame: _Frame, argv: list[str], io: _Io) -> int:
        return 0

    async def _b_false(self, session: _Session, frame: _Frame, argv: list[str], io: _Io) -> int:
        return 1

    async def _b_echo(self, session: _Session, frame: _Frame, argv: list[str], io: _Io) -> int:
        io.write(1, _echo_text(argv[1:]))
        return 0

    async def _b_exit(self, session: _Session, frame: _Frame, argv: list[str], io: _Io) -> int:
        if len(argv) > 1 and not argv[1].isdigit():
            frame.error(f"exit: Illegal number: {argv[1]}")
            raise _Exit(2)
        raise _Exit(int(argv[1]) % 256 if len(argv) > 1 else frame.lookup.status)

    async def _b_exec(self, session: _Session, frame: _Frame, argv: list[str], io: _Io) -> int:
        if len(argv) == 1:  # exec with redirections only: they stay for the rest of the shell
            frame.io = io
            return 0
        raise _Exit(await self._run_child(session, frame, argv[1:], io, in_place=True))

    async def _b_export(self, session: _Session, frame: _Frame, argv: list[str], io: _Io) -> int:
        for arg in argv[1:]:
            name, sep, value = arg.partition("=")
            if sep:
                frame.lookup.variables[name] = value
        return 0

    async def _b_unset(self, session: _Session, frame: _Frame, argv: list[str], io: _Io) -> int:
        for name in argv[1:]:
            frame.lookup.variables.pop(name, None)
        return 0

    async def _b_kill(self, session: _Session, frame: _Frame, argv: list[str], io: _Io) -> int:
        """``kill [-s SIG | -SIG | -N] [--] pid|-pgid...`` against this node's simulated processes."""
        args = argv[1:]
        if args[:1] == ["-l"]:
            io.write(1, " ".join(s.name[3:] for s in signal.Signals if s.name.startswith("SIG")) + "\n")
            return 0
        sig = signal.SIGTERM
        try:
            if args[:1] == ["-s"] and len(args) > 1:
                sig, args = parse_signal(args[1]), args[2:]
            elif _is_signal_option(args):
                sig, args = parse_signal(args[0][1:]), args[1:]
        except ValueError as exc:
            frame.error(f"kill: invalid signal number or name: {exc}")
            return 2
        if args[:1] == ["--"]:
            args = args[1:]
        if not args:
            frame.error("kill: usage: kill [-s sigspec | -signum | -sigspec] [pid | job]... or kill -l [exitstatus]")
            return 2
        status = 0
        for arg in args:
            if not arg.lstrip("-").isdigit():
                frame.error(f"kill: Illegal number: {arg}")
                return 2
            target = int(arg)
            if target == 0:
                target = -frame.proc.pgid
            if not self.processes.kill(target, sig):
                frame.error("kill: No such process")
                status = 1
        await asyncio.sleep(0)  # let the victims see their cancellation before we report back
        return status

    async def _b_pkill(self, session: _Session, frame: _Frame, argv: list[str], io: _Io) -> int:
        """procps ``pkill [-SIG | --signal SIG] -s SID``: signal every process of a session (1: none)."""
        return await self._by_session(frame, argv, io, send=True)

    async def _b_pgrep(self, session: _Session, frame: _Frame, argv: list[str], io: _Io) -> int:
        """procps ``pgrep -s SID``: the pids of a session's processes, one a line (1: none)."""
        return await self._by_session(frame, argv, io, send=False)

    async def _by_session(self, frame: _Frame, argv: list[str], io: _Io, send: bool) -> int:
        name, args = os.path.basename(argv[0]), argv[1:]
        sig, sid = signal.SIGTERM, None
        try:
            while args:
                arg, args = args[0], args[1:]
                if arg in ("-s", "--session") and args:
                    sid, args = int(args[0]), args[1:]
                elif arg == "--signal" and args and send:
                    sig, args = parse_signal(args[0]), args[1:]
                elif arg.startswith("-") and send:
                    sig = parse_signal(arg[1:])
                else:
                    raise ValueError(arg)
        except ValueError as exc:
            io.write(2, f"{name}: bad argument: {exc}\n")
            return 2
        if sid is None:
            io.write(2, f"{name}: no matching criteria specified\n")
            return 2
        members = self.processes.session_members(sid if sid else frame.proc.sid)
        if send:
            self.processes.deliver(members, sig)
            await asyncio.sleep(0)  # let the victims see their cancellation before we report back
        else:
            io.write(1, "".join(f"{proc.pid}\n" for proc in members))
        return 0 if members else 1

    async def _b_cd(self, session: _Session, frame: _Frame, argv: list[str], io: _Io) -> int:
        return 0

    _builtins: Mapping[str, Callable[[NodeShell, _Session, _Frame, list[str], _Io], Awaitable[int]]] = {
        ":": _b_true,
        "true": _b_true,
        "false": _b_false,
        "echo": _b_echo,
        "exit": _b_exit,
        "exec": _b_exec,
        "export": _b_export,
        "unset": _b_unset,
        "kill": _b_kill,
        "pkill": _b_pkill,
        "pgrep": _b_pgrep,
        "cd": _b_cd,
    }


def _is_signal_option(args: list[str]) -> bool:
    """``-TERM`` or ``-9`` before the targets; a lone ``-1234`` is a process group, not a signal."""
    first = args[0] if args else ""
    if not first.startswith("-") or first == "--":
        return False
    return not first[1:].isdigit() or len(args) > 1


def _with_variables(lookup: ParamLookup, assigned: Mapping[str, str]) -> ParamLookup:
    """The lookup a ``NAME=value cmd`` command sees: the assignments apply to that command only."""
    scoped = ParamLookup(lookup.arg0, lookup.args, lookup.pid, {**lookup.variables, **assigned})
    scoped.status = lookup.status
    return scoped


@dataclass(frozen=True)
class _TimeoutOptions:
    signal: signal.Signals = signal.SIGTERM
    kill_after: float | None = None
    foreground: bool = False
    preserve_status: bool = False


def _timeout_args(args: list[str]) -> tuple[_TimeoutOptions, float, list[str]]:
    """Split GNU timeout's options, duration and command (ValueError with timeout's wording)."""
    sig, kill_after, foreground, preserve = signal.SIGTERM, None, False, False
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        opt = args[i]
        if opt == "--":
            i += 1
            break
        name, eq, inline = opt.partition("=")
        needs_value = name in ("-k", "--kill-after", "-s", "--signal")
        if needs_value and not eq and len(opt) > 2 and not opt.startswith("--"):
            name, inline, eq = opt[:2], opt[2:], "="  # -k5 form
        value = inline if eq else (args[i + 1] if needs_value and i + 1 < len(args) else "")
        i += 1 if eq or not needs_value else 2
        if needs_value and not value:
            raise ValueError(f"option requires an argument -- '{name.lstrip('-')[:1]}'")
        if name in ("-k", "--kill-after"):
            kill_after = _duration_or_raise(value)
        elif name in ("-s", "--signal"):
            try:
                sig = parse_signal(value)
            except ValueError:
                raise ValueError(f"{value}: invalid signal") from None
        elif name in ("--foreground",):
            foreground = True
        elif name in ("--preserve-status",):
            preserve = True
        elif name not in ("-v", "--verbose"):
            raise ValueError(f"invalid option -- '{opt.lstrip('-')}'")
    if i >= len(args):
        raise ValueError("missing operand")
    duration = _duration_or_raise(args[i])
    if i + 1 >= len(args):
        raise ValueError(f"missing operand after '{args[i]}'")
    return _TimeoutOptions(sig, kill_after, foreground, preserve), duration, args[i + 1 :]


def _duration_or_raise(text: str) -> float:
    try:
        return parse_duration(text)
    except (ValueError, IndexError):
        raise ValueError(f"invalid time interval '{text}'") from None
