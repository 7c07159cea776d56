"""Engine worker processes (``--workers N``): the sweep's nodes checked on every core.

One engine (``console.sweep.engine``) still runs the sweep: its waves, deadlines, cancel, give-up,
reruns, the fleet pass, the store and the events. Its node checker (``console.sweep.checker_workers``)
sends each node to a ``WorkerPool``, which asks one of N worker processes (``python -m
console.service.worker``) to connect, run the probes, parse and judge, exactly as the engine does in
process, and takes back the node's compact report
(``console.sweep.node_report``: every finding not PASS whole, the PASS ones counted per check), what the
screens show of it, and its probe runs, which it stores itself: one store writer. A node always goes to
the same worker (its place in the inventory, modulo N), so its connection, its reused stack probes and
the probe forms its tools refused stay with it from sweep to sweep.
The first wave of a sweep whose workers are not running yet is the exception (``start``): those nodes
are checked in the console's engine process while the workers start, judged into the same report, and
stay there.

The probe events of a node come back through the same pipe, ahead of its report: one stream, in the
same order per node. A node cancelled, given up or past its budget is cancelled in its worker, whose
transport kills its commands on the node. One the sweep cuts short (its deadline, a cancel: ``cutting``)
is first judged there on the probes that finished, as the engine judges such a node in process, and
that report sent back (``cut_reports``). A worker that dies fails its nodes in flight (UNKNOWN, with
its exit status and the end of its stderr); the next node sent to it starts a new one.

Commands that are not a node's probes (multi-node tests, actions, workloads) go through the engine's
own transport, as without workers: the pool is no transport.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from console.inventory.model import Node, Pool, StackPin
from console.service.wire import HEADER, WireError, body_length, decode, encode
from console.sweep.catalog import ProbeSpec
from console.sweep.events import Event, ProbeFinished, ProbeStarted
from console.sweep.node_report import WorkerJudged
from console.transport import ErrorKind, TransportError

if TYPE_CHECKING:
    from console.service.assembly import EngineSpec
    from console.service.node_judge import NodeJudge

WORKER_MODULE = "console.service.worker"
# Below this many nodes a sweep stays in one process by default: a worker takes ~1 s of CPU to start
# (imports, check packs), about what 30 nodes cost to check (~33 ms each, bench/README.md).
AUTO_MIN_NODES = 64
STOP_WAIT_S = 15.0  # a stopping worker waits for its kills on the nodes (their grace) before it exits
# A worker says it is ready after ~1 s of CPU; one silent far longer (stuck importing, on a full disk, a
# wrong interpreter) is killed and its nodes are UNKNOWN, instead of the sweep waiting for it for ever:
# its nodes' budgets only start once it is ready.
START_WAIT_S = 120.0
_STDERR_LINES = 20
# What is kept of one stderr line: a reason quotes 200 characters of the last one. A worker may print
# anything (a traceback with a huge repr, a library dumping a buffer); the rest of a longer line is dropped.
_STDERR_LINE_BYTES = 1024
_STDERR_CHUNK = 1 << 16
# How much each pipe buffers ahead of its reader (twice this, then the pipe waits): frames are read with
# ``readexactly``, which takes frames longer than that too, and stderr in chunks, so no line needs to fit.
_PIPE_LIMIT = 1 << 20


# Below this many cores a sweep stays in one process by default: the engine itself (reports, store,
# events) needs a core, and on 2 cores workers were slower cold (1,024 nodes: 36.2 s alone against
# 42.4 s with one worker and 48.8 s with two; bench/README.md, "Engine worker processes").
AUTO_MIN_CORES = 4


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def default_workers(nodes: int, available: int | None = None) -> int:
    """Worker processes for a sweep of ``nodes`` by default: one per core but the engine's own, none
    for a small fleet or a small host."""
    available = cores() if available is None else available
    if nodes < AUTO_MIN_NODES or available < AUTO_MIN_CORES:
        return 0
    return available - 1


@dataclass
class _Pending:
    node: str
    done: asyncio.Future[WorkerJudged]
    relay: Callable[[Event], None]


@dataclass
class _Worker:
    """One worker process and the nodes it is checking now."""

    index: int
    proc: asyncio.subprocess.Process
    reader: asyncio.Task[None] | None = None
    stderr_reader: asyncio.Task[None] | None = None
    pending: dict[str, _Pending] = field(default_factory=dict)
    stderr: collections.deque[str] = field(default_factory=lambda: collections.deque(maxlen=_STDERR_LINES))
    stderr_line: bytearray = field(default_factory=bytearray)  # the line being written, cut to its bound
    ended: str | None = None  # why it is gone (None while it runs)

    def send(self, message: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(encode(message))


# What each message from a worker holds: its kind and node, then what that kind carries.
_MESSAGE_SIZES = {"event": 3, "judged": 3, "unreachable": 4, "failed": 3}


class WorkerPool:
    """Engine worker processes for worker mode: nodes are checked and judged in ``count`` processes."""

    def __init__(self, spec: EngineSpec, count: int, command: list[str] | None = None) -> None:
        # What each worker builds its engine from: the same spec, checking over SSH, without a store.
        self.spec = replace(spec, workers=0, store_path=None)
        self.count = max(1, count)
        self._command = command or [sys.executable, "-m", WORKER_MODULE]
        self._slots: list[_Worker | None] = [None] * self.count
        self._starting: list[asyncio.Lock] = []
        self._place = {n.name: i for i, n in enumerate(spec.inventory.nodes)}
        # The nodes checked in this process (``start``): they stay here, with their connection and reuse.
        self._here: set[str] = set()
        self._judge_here: NodeJudge | None = None
        self._relays_here: dict[str, Callable[[Event], None]] = {}
        self._tasks_here: dict[str, asyncio.Task[WorkerJudged]] = {}
        self._warming: set[asyncio.Task[_Worker]] = set()
        # While the sweep is cut short (``cutting``): its reason, and the nodes cut whose answers are awaited.
        self._cut_reason: str | None = None
        self._cut: dict[str, asyncio.Future[WorkerJudged]] = {}

    @property
    def pids(self) -> list[int]:
        """The process ids of the workers running now."""
        return [w.proc.pid for w in self._slots if w is not None and w.ended is None]

    def pid_for(self, node: str) -> int | None:
        """The process id of the worker that checks ``node``, while it runs (tests kill it)."""
        worker = self._slots[self._place.get(node, hash(node)) % self.count]
        return worker.proc.pid if worker is not None and worker.ended is None else None

    @property
    def here(self) -> frozenset[str]:
        """The nodes checked in this process rather than by a worker (``start``)."""
        return frozenset(self._here)

    def start(self, first: list[Node]) -> None:
        """Start every worker that is not running, in the background; meanwhile, and in later sweeps,
        the nodes of ``first`` whose worker was not running are checked in this process.

        A worker takes ~1 s of CPU to start (imports, check packs): the first wave waiting for it put the
        first verdict at 0.7-1.2 s cold, against ~0.2 s for the engine alone (bench/README.md). Those
        nodes stay here, with their connection and their reused stack probes, so a warm sweep's first
        wave is as quick as the engine alone's; a worker does not have to connect to them again.
        """
        self._here.update(n.name for n in first if self._running(n.name) is None)
        for index in range(self.count):
            worker = self._slots[index]
            if worker is None or worker.ended is not None:
                task = asyncio.ensure_future(self._slot(index))
                self._warming.add(task)
                task.add_done_callback(_warmed(self._warming))

    def _running(self, node: str) -> _Worker | None:
        worker = self._slots[self._place.get(node, hash(node)) % self.count]
        return worker if worker is not None and worker.ended is None else None

    async def ready(self, node: Node) -> None:
        """Start ``node``'s worker now if it is not running (a worker that died is replaced)."""
        if node.name not in self._here:
            await self._worker_for(node.name)

    async def judge(  # noqa: PLR0917
        self,
        node: Node,
        probes: list[ProbeSpec],
        refresh: bool,
        pin: StackPin,
        relay: Callable[[Event], None],
        deadline: float | None,
        pool: Pool | None = None,
    ) -> WorkerJudged:
        """Check and judge ``node`` in its worker (see the module's docstring), or here (``start``)."""
        if node.name in self._here:
            return await self._judged_here(node, probes, refresh, pin, relay, deadline, pool)
        worker = await self._worker_for(node.name)
        earlier = worker.pending.pop(node.name, None)
        if earlier is not None:  # a rerun of a node still in flight: the worker replaces it with this one
            earlier.done.cancel()
        pending = _Pending(node.name, asyncio.get_running_loop().create_future(), relay)
        worker.pending[node.name] = pending
        worker.send(("judge", node.name, [(p.id, p.timeout_s) for p in probes], refresh, pin, deadline, pool))
        try:
            return await asyncio.shield(pending.done)
        except asyncio.CancelledError:
            # Cancelled, given up or out of time here: the worker stops it and kills its commands on the node
            # (unless a rerun replaced it: then the worker already checks the node again). Cut short by the
            # sweep, it is judged there first on what came back, and its answer awaited (``cut_reports``).
            if self._cut_reason is not None and pending.done.done() and not pending.done.cancelled():
                self._cut[node.name] = pending.done  # answered as the sweep was cut: its answer stands
            elif worker.pending.get(node.name) is pending:
                if self._cut_reason is not None and worker.ended is None:
                    worker.send(("cut", node.name, self._cut_reason))
                    self._cut[node.name] = pending.done
                else:
                    self._forget(worker, node.name)
            raise

    async def _judged_here(  # noqa: PLR0917
        self,
        node: Node,
        probes: list[ProbeSpec],
        refresh: bool,
        pin: StackPin,
        relay: Callable[[Event], None],
        deadline: float | None,
        pool: Pool | None = None,
    ) -> WorkerJudged:
        """What a worker would answer of ``node``, made in this process by an engine built as a worker
        builds its own (the same spec, its own SSH transport, no store)."""
        if self._judge_here is None:
            from console.service.assembly import build_engine
            from console.service.node_judge import NodeJudge

            engine = build_engine(self.spec, None)  # in process over its own transport: ``workers`` is 0
            engine.subscribe(self._relay_here)
            self._judge_here = NodeJudge(engine)
        earlier = self._tasks_here.pop(node.name, None)
        if earlier is not None:  # a rerun of a node still in flight replaces it, as in a worker
            earlier.cancel()
        task = asyncio.ensure_future(self._judge_here.judged(node, probes, refresh, pin, deadline, pool))
        self._tasks_here[node.name] = task
        self._relays_here[node.name] = relay
        try:
            # Shielded: a cancel here must find the node's check still running, to judge what came back.
            return await asyncio.shield(task)
        except (asyncio.CancelledError, TransportError):
            if self._cut_reason is not None and task.done() and not task.cancelled():
                self._cut[node.name] = task  # it ended as the sweep was cut: its whole answer stands
            elif self._cut_reason is not None:
                # Cut short by the sweep: judged on what came back, as a worker does (``cut_reports``).
                judged = self._judge_here.cut(node, self._cut_reason)
                if judged is not None:
                    self._cut[node.name] = asyncio.get_running_loop().create_future()
                    self._cut[node.name].set_result(judged)
            task.cancel()  # cancelled here: its commands are killed on the node, as a worker's are
            raise
        except Exception as exc:  # what a worker says as "failed": the node is UNKNOWN with it
            raise TransportError(node.name, ErrorKind.PROTOCOL, f"checking it here failed: {exc}") from exc
        finally:
            if self._tasks_here.get(node.name) is task:
                del self._tasks_here[node.name]
                del self._relays_here[node.name]

    def cutting(self, reason: str | None) -> None:
        """From now on a node whose ``judge`` is cancelled is cut short by the sweep's ``reason`` (None: plain
        cancels again): judged on what came back, in its worker or here, and kept for ``cut_reports``."""
        self._cut_reason = reason

    async def cut_reports(self, wait_s: float) -> dict[str, WorkerJudged]:
        """The nodes cut short since ``cutting`` as their workers judged them, waiting at most ``wait_s``;
        one not back by then is cancelled in its worker. Ends the cutting."""
        awaited, self._cut, self._cut_reason = self._cut, {}, None
        if awaited:
            await asyncio.wait(awaited.values(), timeout=wait_s)
        judged = {}
        for node, done in awaited.items():
            if done.done() and not done.cancelled() and done.exception() is None:
                judged[node] = done.result()
            elif (worker := self._running(node)) is not None and worker.pending.get(node) is not None:
                self._forget(worker, node)
        return judged

    def _relay_here(self, event: Event) -> None:
        if isinstance(event, ProbeStarted | ProbeFinished) and (relay := self._relays_here.get(event.node)):
            relay(event)

    def _forget(self, worker: _Worker, node: str) -> None:
        pending = worker.pending.pop(node, None)
        if pending is not None and not pending.done.done():
            pending.done.cancel()
        if worker.ended is None:
            worker.send(("cancel", node))

    async def _worker_for(self, node: str) -> _Worker:
        return await self._slot(self._place.get(node, hash(node)) % self.count)

    async def _slot(self, index: int) -> _Worker:
        if not self._starting:
            self._starting = [asyncio.Lock() for _ in range(self.count)]
        async with self._starting[index]:
            worker = self._slots[index]
            if worker is None or worker.ended is not None:
                worker = self._slots[index] = await self._start(index)
            return worker

    async def _start(self, index: int) -> _Worker:
        try:
            proc = await asyncio.create_subprocess_exec(
                *self._command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                limit=_PIPE_LIMIT,
                start_new_session=True,  # the terminal's ctrl+c is the console's, as for the engine process
            )
        except OSError as exc:
            raise TransportError("", ErrorKind.PROTOCOL, f"engine worker {index} would not start: {exc}") from None
        worker = _Worker(index, proc)
        worker.send(self.spec)
        worker.stderr_reader = asyncio.ensure_future(self._read_stderr(worker))
        assert proc.stdout is not None
        try:  # it imports and builds its engine (~1 s of CPU) before it says so
            said = await asyncio.wait_for(_read_message(proc.stdout), START_WAIT_S)
        except WireError as exc:
            said = str(exc)
        except TimeoutError:
            said = f"not ready within {START_WAIT_S:g} s"
            worker.stderr.append(said)
        if said != ("ready",):
            # Silent, or it said something else: it is no worker of ours; kill it rather than wait for its end.
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            status = await proc.wait()
            with contextlib.suppress(BaseException):
                await worker.stderr_reader
            last = next((line for line in reversed(worker.stderr) if line.strip()), "")
            raise TransportError(
                "", ErrorKind.PROTOCOL, f"engine worker {index} would not start ({_exit_text(status)}): {last[:200]}"
            )
        worker.reader = asyncio.ensure_future(self._read(worker))
        return worker

    async def _read(self, worker: _Worker) -> None:
        assert worker.proc.stdout is not None
        why = "its pipe closed"
        try:
            while (message := await _read_message(worker.proc.stdout)) is not None:
                self._dispatch(worker, message)
        except (WireError, ValueError) as exc:
            why = str(exc)
            # Out of step: nothing more it says can be read, and it may run on for ever. Its nodes fail now;
            # it is asked to stop (its kills on the nodes), and killed if it does not.
            self._ended(worker, f"{why}; stopped")
            await self._stop(worker)
        status = await worker.proc.wait()
        self._ended(worker, f"{why}; {_exit_text(status)}")

    def _dispatch(self, worker: _Worker, message: Any) -> None:
        # A message of the wrong shape is as out of step as an unreadable one (``_read`` ends the worker):
        # reading on would raise here and leave its nodes waiting for answers that never come.
        size = _MESSAGE_SIZES.get(message[0], 0) if isinstance(message, tuple) and message else 0
        if not size or len(message) != size or not isinstance(message[1], str):
            raise WireError(f"a message that does not fit: {str(message)[:80]}")
        kind, node = message[0], message[1]
        pending = worker.pending.get(node)
        if pending is None:
            return  # a node cancelled here meanwhile: what its worker still said is of no use
        if kind == "event":
            pending.relay(message[2])
            return
        del worker.pending[node]
        if pending.done.done():
            return
        if kind == "judged":
            pending.done.set_result(message[2])
        elif kind == "unreachable":
            pending.done.set_exception(TransportError(node, ErrorKind(message[2]), message[3]))
        else:  # "failed": the worker's own error checking the node
            pending.done.set_exception(
                TransportError(node, ErrorKind.PROTOCOL, f"engine worker {worker.index} failed: {message[2]}")
            )

    async def _read_stderr(self, worker: _Worker) -> None:
        # In chunks, not lines: a line longer than the pipe's limit would end ``readline`` with an error, and
        # a worker whose stderr is no longer read blocks once the pipe is full, its nodes with it.
        assert worker.proc.stderr is not None
        with contextlib.suppress(Exception):
            while chunk := await worker.proc.stderr.read(_STDERR_CHUNK):
                _keep_stderr(worker, chunk)
        if worker.stderr_line:  # a last line without its newline
            _keep_stderr(worker, b"\n")

    def _ended(self, worker: _Worker, why: str) -> None:
        said = next((line for line in reversed(worker.stderr) if line.strip()), "")
        worker.ended = f"engine worker {worker.index} (pid {worker.proc.pid}) ended: {why}" + (
            f"; it said: {said[:200]}" if said else ""
        )
        for pending in worker.pending.values():
            if not pending.done.done():
                pending.done.set_exception(TransportError(pending.node, ErrorKind.DISCONNECTED, worker.ended))
        worker.pending.clear()

    async def _stop(self, worker: _Worker) -> None:
        """Ask ``worker`` to stop (it cancels its nodes and waits for their kills), and kill it if it has not
        exited within ``STOP_WAIT_S``."""
        if worker.proc.returncode is None and worker.proc.stdin is not None and not worker.proc.stdin.is_closing():
            with contextlib.suppress(Exception):
                worker.send(("stop",))
                worker.proc.stdin.close()
        try:
            await asyncio.wait_for(worker.proc.wait(), STOP_WAIT_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                worker.proc.kill()
            await worker.proc.wait()

    async def close(self) -> None:
        """Stop every worker (each cancels its nodes and waits for their kills on the nodes)."""
        # A worker still starting is waited for (bounded by ``START_WAIT_S``), then stopped with the others:
        # cancelled mid-start, its process would be left running with no slot to stop it from.
        await asyncio.gather(*self._warming, return_exceptions=True)
        workers = [w for w in self._slots if w is not None]
        await asyncio.gather(*(self._stop(worker) for worker in workers))
        if self._judge_here is not None:
            await self._judge_here.engine.close()  # cancels its nodes, waits for their kills, closes its SSH
            self._judge_here = None
        for worker in workers:
            for task in (worker.reader, worker.stderr_reader):
                if task is not None:
                    with contextlib.suppress(BaseException):
                        await task
        self._slots = [None] * self.count


async def _read_message(stream: asyncio.StreamReader) -> Any | None:
    try:
        header = await stream.readexactly(HEADER.size)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise WireError("the worker's stream ended inside a frame header") from None
        return None
    try:
        body = await stream.readexactly(body_length(header))
    except asyncio.IncompleteReadError:
        raise WireError("the worker's stream ended inside a frame") from None
    return decode(body)


def _warmed(tasks: set[asyncio.Task[_Worker]]) -> Callable[[asyncio.Task[_Worker]], None]:
    def done(task: asyncio.Task[_Worker]) -> None:
        tasks.discard(task)
        if not task.cancelled():
            # A worker that would not start is started again by its nodes, which then say why.
            task.exception()

    return done


def _keep_stderr(worker: _Worker, chunk: bytes) -> None:
    """Add ``chunk`` of ``worker``'s stderr to its last lines, each kept to ``_STDERR_LINE_BYTES``."""
    *ended, rest = chunk.split(b"\n")
    line = worker.stderr_line
    for piece in ended:
        line += piece[: max(0, _STDERR_LINE_BYTES - len(line))]
        worker.stderr.append(line.decode("utf-8", "replace").rstrip())
        line.clear()
    line += rest[: max(0, _STDERR_LINE_BYTES - len(line))]


def _exit_text(status: int) -> str:
    if status < 0:
        try:
            return f"killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"killed by signal {-status}"
    return f"exit status {status}"
