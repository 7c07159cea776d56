"""The console's end of the engine process: start it, send commands, receive events and replies.

The engine parses and judges every node's output; in the console's own process that work held the
interpreter while the operator typed (measured: cursor keys p99 65-100 ms with verdicts streaming,
5-7 ms idle). In its own process it also gets a core of its own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from console.service.assembly import EngineSpec
from console.service.commands import Command
from console.service.wire import WireError, encode, read_frame
from console.sweep.events import Event

ENGINE_MODULE = "console.service.host"
STDERR_TAIL_BYTES = 4096


class EngineGone(Exception):
    """The engine process ended (or never started); the text says how, with the end of its stderr."""


class ProcessBridge:
    """Runs the engine in a child process until ``stop``; ``on_event`` gets its events on a reader thread."""

    def __init__(
        self,
        spec: EngineSpec,
        on_event: Callable[[Event], None],
        on_problem: Callable[[str], None] | None = None,
        command: list[str] | None = None,
        log_path: Path | None = None,
    ) -> None:
        self.spec = spec
        self._on_event = on_event
        self._on_problem = on_problem
        # Another program speaking the same wire (the UI benchmark's replaying engine) may stand in.
        self._command = command or [sys.executable, "-m", ENGINE_MODULE]
        # What the engine writes to stderr (warnings, a traceback) is kept there; the previous run's as
        # ``.1``. Without a path it goes to an unnamed file, read only to say why the engine ended.
        self.log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._reader: threading.Thread | None = None
        self._write_lock = threading.Lock()
        self._pending: dict[int, concurrent.futures.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._ready = threading.Event()
        self._startup_problem: str | None = None
        self._stopping = False
        self._gone: str | None = None
        self._event_failures = 0

    @property
    def running(self) -> bool:
        """True from ``start`` until the engine ends (or fails to start)."""
        return self._proc is not None and self._gone is None

    @property
    def pid(self) -> int | None:
        """The engine process's id (None before ``start``)."""
        return self._proc.pid if self._proc is not None else None

    def start(self) -> None:
        """Start the engine process and return at once: commands sent before it is ready wait in the pipe.

        It takes ~1 s to import and build the engine, which the console spends drawing, not waiting.
        A start that fails is reported like any other end (``on_problem``, and to every command).
        """
        self._stderr = self._open_log()
        self._proc = subprocess.Popen(
            self._command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            start_new_session=True,  # the terminal's signals are the console's to handle
        )
        self._reader = threading.Thread(target=self._read, name="console-engine-reader", daemon=True)
        self._reader.start()
        with contextlib.suppress(OSError):  # an engine that died at once is reported by the reader
            self._write(self.spec)

    def _open_log(self) -> IO[bytes]:
        if self.log_path is None:
            return tempfile.TemporaryFile(prefix="instinct-console-engine-")
        with contextlib.suppress(OSError):
            self.log_path.replace(self.log_path.with_name(self.log_path.name + ".1"))
        # Owner-only, and never through a link planted at the name after the rename (console.files' rule).
        try:
            fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        except OSError:
            return tempfile.TemporaryFile(prefix="instinct-console-engine-")
        return os.fdopen(fd, "w+b")

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        """Block until the engine exists; raises EngineGone if it could not start (or took too long)."""
        if not self._ready.wait(timeout_s):
            self._kill()
            raise EngineGone(f"the engine process did not start within {timeout_s:.0f} s")
        if self._startup_problem is not None:
            raise EngineGone(self._startup_problem)

    def request(self, command: Command) -> concurrent.futures.Future[Any]:
        """Send ``command``; the future gets its result, or EngineGone / the engine's error as EngineError."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        if not self.running:
            future.set_exception(EngineGone(self._gone or "the engine is not running"))
            return future
        call_id = next(self._ids)
        self._pending[call_id] = future
        try:
            self._write(("call", call_id, command))
        except OSError as exc:
            reader = self._reader
            if reader is None or not reader.is_alive():
                self._pending.pop(call_id, None)
                _fail(future, self._gone or f"the engine process cannot be reached: {exc}")
            # Else the engine closed its end because it is ending: its reader fails every pending call with
            # why (the engine's own words when it could not start), which a broken pipe does not say.
        if self._gone is not None and self._pending.pop(call_id, None) is not None:
            _fail(future, self._gone)  # it ended while the command was on its way
        return future

    async def ask(self, command: Command) -> Any:
        """``request`` for a caller on an asyncio loop (the UI): awaits without blocking that loop."""
        return await asyncio.wrap_future(self.request(command))

    def stop(self, timeout_s: float = 15.0) -> None:
        """Ask the engine to stop (it cancels the sweep and closes its connections); kill it if it will not."""
        proc = self._proc
        if proc is None or self._stopping:
            return
        self._stopping = True
        with contextlib.suppress(OSError):
            self._write(("stop",))
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self._kill()
        if self._reader is not None:
            self._reader.join(timeout_s)
        if proc.stdout is not None:
            proc.stdout.close()
        if self._stderr is not None:
            self._stderr.close()

    def _write(self, message: Any) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise OSError("the engine process is not running")
        frame = encode(message)
        with self._write_lock:
            try:
                proc.stdin.write(frame)
                proc.stdin.flush()
            except ValueError as exc:  # the pipe was closed by stop()
                raise OSError(str(exc)) from exc

    def _kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    def _read(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        problem = None
        try:
            while (message := read_frame(proc.stdout)) is not None:
                self._dispatch(message)
        except (WireError, OSError, ValueError) as exc:
            problem = str(exc)
        self._ended(problem)

    def _dispatch(self, message: Any) -> None:
        kind = message[0]
        if kind == "events":
            for event in message[1]:
                try:
                    self._on_event(event)
                except Exception as exc:  # the console's own bug: say so once, keep the events coming
                    self._event_failures += 1
                    if self._event_failures == 1 and self._on_problem is not None:
                        self._on_problem(f"an engine event could not be shown: {type(exc).__name__}: {exc}")
        elif kind == "reply":
            _, call_id, ok, value = message
            future = self._pending.pop(call_id, None)
            if future is not None and not future.done():
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(EngineError(value))
        elif kind == "ready":
            self._ready.set()
        elif kind == "failed":
            self._startup_problem = f"the engine could not start: {message[1]}"
            self._ready.set()
        else:
            raise WireError(f"not an engine message: {kind!r:.40}")

    def _ended(self, problem: str | None) -> None:
        proc = self._proc
        assert proc is not None
        try:
            status = proc.wait(5)
        except subprocess.TimeoutExpired:
            self._kill()
            status = proc.returncode
        text = f"the engine process ended (exit status {status})"
        if problem:
            text += f": {problem}"
        tail = self._stderr_tail()
        if tail:
            text += f"; it said: {tail}"
        if self.log_path is not None:
            text += f" (log: {self.log_path})"
        if not self._ready.is_set():
            self._startup_problem = text
            self._ready.set()
        if self._startup_problem is not None:
            text = self._startup_problem
        self._gone = text
        for future in list(self._pending.values()):
            _fail(future, text)
        self._pending.clear()
        if not self._stopping and self._on_problem is not None:
            self._on_problem(text)

    def _stderr_tail(self) -> str:
        if self._stderr is None or self._stderr.closed:
            return ""
        with contextlib.suppress(OSError, ValueError):
            size = self._stderr.seek(0, 2)
            self._stderr.seek(max(0, size - STDERR_TAIL_BYTES))
            lines = self._stderr.read().decode(errors="replace").strip().splitlines()
            return " | ".join(lines[-3:])
        return ""


class EngineError(Exception):
    """A command failed on the engine side; the text is the engine's ``Type: message``."""


def describe_error(error: BaseException) -> str:
    """``Type: message`` of a failed command, wherever it failed (the engine's errors carry their own)."""
    if isinstance(error, (EngineError, EngineGone)):
        return str(error)
    return f"{type(error).__name__}: {error}"


def _fail(future: concurrent.futures.Future[Any], text: str) -> None:
    """Fail ``future`` with EngineGone(``text``) unless it is done: the reader thread and a caller may both
    find a call pending when the engine ends."""
    with contextlib.suppress(concurrent.futures.InvalidStateError):
        future.set_exception(EngineGone(text))
