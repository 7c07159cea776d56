"""The simulated node's mini shell, against a stub program runner (no SSH, no rendering)."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.sim.commands import Delivery, SimReply
from console.sim.processes import ProcessTable
from console.sim.shell import NodeShell, SessionEnd, parse_duration
from console.sim.shell_syntax import ShellSyntaxError, parse_script

from .console_lines import console_bundle, console_wrapper

PGID_LINE = re.compile(r"@@ic-pgid (\d+)")


@dataclass
class Capture:
    """A fake channel: what was written where, and when."""

    chunks: list[tuple[int, str, float]] = field(default_factory=list)
    dropped: bool = False

    def write(self, fd: int, text: str) -> None:
        self.chunks.append((fd, text, time.monotonic()))

    def drop_connection(self) -> None:
        self.dropped = True

    def text(self, fd: int) -> str:
        return "".join(text for f, text, _ in self.chunks if f == fd)

    @property
    def stdout(self) -> str:
        return self.text(1)

    @property
    def stderr(self) -> str:
        return self.text(2)


class StubPrograms:
    """Program runner stub: ``args`` prints its argv as JSON, others answer from a table."""

    def __init__(self, replies: dict[str, SimReply] | None = None) -> None:
        self.replies = replies or {}
        self.calls: list[list[str]] = []

    def __call__(self, argv: list[str]) -> SimReply:
        self.calls.append(list(argv))
        if argv[0] == "args":
            return SimReply(stdout=json.dumps(argv[1:]) + "\n")
        if argv[0] in self.replies:
            return self.replies[argv[0]]
        return SimReply(stdout="", stderr=f"sh: 1: {argv[0]}: not found\n", exit_status=127)


def make_shell(replies: dict[str, SimReply] | None = None) -> tuple[NodeShell, StubPrograms]:
    programs = StubPrograms(replies)
    return NodeShell(programs, ProcessTable("sim001")), programs


async def run(line: str, replies: dict[str, SimReply] | None = None) -> tuple[SessionEnd, Capture, StubPrograms]:
    shell, programs = make_shell(replies)
    out = Capture()
    end = await asyncio.wait_for(shell.run_session(line, out), timeout=10)
    return end, out, programs


HANG = SimReply(stdout="partial\n", delivery=Delivery.HANG)
FAIL = SimReply(stdout="", stderr="amd-smi: driver not loaded\n", exit_status=3)


@pytest.mark.parametrize(
    ("line", "stdout", "status"),
    [
        ("echo hello world", "hello world\n", 0),
        ("echo -n a; echo b", "ab\n", 0),
        ("echo 'a  b' \"c  d\"", "a  b c  d\n", 0),
        ("echo 'tab\\there'", "tab\there\n", 0),
        ("true && echo yes || echo no", "yes\n", 0),
        ("false && echo yes || echo no", "no\n", 0),
        ("false; echo $?", "1\n", 0),
        ("false || false", "", 1),
        ("sh -c 'exit 7'; echo rc=$?", "rc=7\n", 0),
        ("sh -c 'echo $0 $1 $#' zero one two", "zero one 2\n", 0),
        ("sh -c 'args \"$@\"' sh 'a b' '' c", '["a b", "", "c"]\n', 0),
        ("sh -c 'args $@' sh 'a b' '' c", '["a", "b", "c"]\n', 0),
        ("sh -c 'args \"x$@y\"' sh 1 2", '["x1", "2y"]\n', 0),
        ("sh -c 'args \"$@\"' sh", "[]\n", 0),
        ("X=1; echo $X ${X}", "1 1\n", 0),
        ("echo a >/dev/null; echo b 2>/dev/null", "b\n", 0),
        ("exec echo replaced; echo never", "replaced\n", 0),
        ("exit 3; echo never", "", 3),
        ("# a comment\necho after", "after\n", 0),
        ("echo one \\\n two", "one two\n", 0),
        ("/bin/echo full path", "full path\n", 0),
        ("FOO=bar args $FOO", "[]\n", 0),
    ],
)
async def test_shell_language(line: str, stdout: str, status: int) -> None:
    end, out, _ = await run(line)
    assert (out.stdout, end.status, end.signal) == (stdout, status, None)


async def test_console_wrapper_runs_argv_verbatim_and_reports_its_pgid() -> None:
    argv = ["amd-smi", "static", "--json", "--gpu", "0 1", "it's"]
    shell, programs = make_shell({"amd-smi": SimReply(stdout='{"ok": 1}\n')})
    out = Capture()
    end = await shell.run_session(console_wrapper(argv), out)
    assert programs.calls == [argv]
    assert out.stdout == '{"ok": 1}\n'
    assert end == SessionEnd(status=0)
    match = PGID_LINE.fullmatch(out.stderr.strip())
    assert match is not None and int(match.group(1)) > 0


async def test_console_bundle_reports_each_status() -> None:
    line = console_bundle([("a", ["args", "x"]), ("b", ["amd-smi", "list"]), ("c", ["nosuchtool"])])
    end, out, _ = await run(line, {"amd-smi": FAIL})
    assert (
        out.stdout
        == '@@ic-begin a\n["x"]\n@@ic-end a rc=0\n@@ic-begin b\n@@ic-end b rc=3\n@@ic-begin c\n@@ic-end c rc=127\n'
    )
    assert out.stderr == "amd-smi: driver not loaded\nsh: 1: nosuchtool: not found\n"
    assert end.status == 0


@pytest.mark.parametrize(
    ("line", "status", "stderr"),
    [
        ("echo a >&2", 0, "a\n"),
        ("sh -c 'echo a 1>&2'", 0, "a\n"),
        ("amd-smi 2>&1", 3, ""),
        ("echo x > /tmp/file", 2, "sh: 1: cannot create /tmp/file: Read-only file system\n"),
        ("amd-smi | head", 2, "sh: 1: pipelines are not simulated\n"),
        ("sleep 5 &", 2, "sh: 1: background jobs are not simulated\n"),
        ("echo 'unterminated", 2, "sh: 1: Syntax error: Unterminated quoted string\n"),
        ("echo $(hostname)", 2, "sh: 1: command substitution is not simulated\n"),
        ("; echo", 2, 'sh: 1: Syntax error: ";" unexpected\n'),
        ("kill -TERM -- -1", 1, "sh: 1: kill: No such process\n"),
        ("kill -BOGUS 5", 2, "sh: 1: kill: invalid signal number or name: BOGUS\n"),
        ("timeout", 125, "timeout: missing operand\nTry 'timeout --help' for more information.\n"),
        ("timeout abc true", 125, "timeout: invalid time interval 'abc'\nTry 'timeout --help' for more information.\n"),
        ("sleep soon", 1, "sleep: invalid time interval 'soon'\n"),
        ("sh -x", 2, "sh: 0: Illegal option -x\n"),
    ],
)
async def test_errors_and_redirections(line: str, status: int, stderr: str) -> None:
    end, out, _ = await run(line, {"amd-smi": FAIL})
    assert (end.status, out.stderr) == (status, stderr)


async def test_stderr_joins_stdout_with_2_to_1() -> None:
    _, out, _ = await run("amd-smi 2>&1", {"amd-smi": FAIL})
    assert out.stdout == "amd-smi: driver not loaded\n"


async def test_reply_duration_is_slept() -> None:
    start = time.monotonic()
    _, out, _ = await run("slow", {"slow": SimReply(stdout="done\n", duration_s=0.3)})
    assert out.stdout == "done\n" and time.monotonic() - start >= 0.3


async def test_timeout_expiry_exits_124_and_kills_the_program() -> None:
    shell, _ = make_shell({"amd-smi": HANG})
    out = Capture()
    start = time.monotonic()
    end = await asyncio.wait_for(shell.run_session("timeout 0.3 amd-smi; echo rc=$?", out), timeout=5)
    assert 0.3 <= time.monotonic() - start < 2
    assert out.stdout == "partial\nrc=124\n" and end.status == 0
    assert len(shell.processes) == 0


@pytest.mark.parametrize(
    ("options", "status"), [("-s KILL", 137), ("--preserve-status", 143), ("-k 1 --signal=INT", 124)]
)
async def test_timeout_status_follows_gnu(options: str, status: int) -> None:
    # Not the session's last command: timeout runs in a process group of its own, as coreutils' does.
    end, out, _ = await run(f"timeout {options} 0.1 amd-smi; echo rc=$?", {"amd-smi": HANG})
    assert out.stdout.endswith(f"rc={status}\n") and end.status == 0


async def test_timeout_leading_the_session_kills_itself_with_its_group_like_gnu() -> None:
    """`sh -c 'timeout -s KILL 0.1 sleep 10'` under setsid ends by SIGKILL: coreutils signals its group."""
    end, _, _ = await run("timeout -s KILL 0.1 amd-smi", {"amd-smi": HANG})
    assert end == SessionEnd(status=None, signal=signal.SIGKILL)


async def test_timeout_kills_a_probe_that_ignores_sigterm_after_its_grace() -> None:
    """`timeout -k 0.3 0.1 <ignores TERM>` exits 137 after 0.4 s, and the probe is gone (coreutils)."""
    stubborn = SimReply(stdout="partial\n", delivery=Delivery.HANG, ignores_term=True)
    shell, _ = make_shell({"amd-smi": stubborn})
    out = Capture()
    start = time.monotonic()
    end = await asyncio.wait_for(shell.run_session("timeout -k 0.3 0.1 amd-smi; echo rc=$?", out), timeout=5)
    assert 0.4 <= time.monotonic() - start < 2
    assert out.stdout == "partial\nrc=137\n" and end.status == 0
    assert len(shell.processes) == 0


async def test_a_probe_ignoring_sigterm_outlives_a_group_term_but_not_a_session_kill() -> None:
    """The console's kill path: SIGTERM to the whole session leaves the stubborn probe; SIGKILL ends it."""
    stubborn = SimReply(stdout="", delivery=Delivery.HANG, ignores_term=True)
    shell, _ = make_shell({"amd-smi": stubborn})
    hung = asyncio.create_task(shell.run_session(console_bundle([("amdsmi.list", ["amd-smi", "list"])]), Capture()))
    await eventually_true(lambda: any(p.argv == ["amd-smi", "list"] for p in shell.processes))
    sid = next(iter(shell.processes)).sid
    assert (await shell.run_session(f"pkill -TERM -s {sid}", Capture())).status == 0
    await asyncio.sleep(0.05)
    # sh is gone; timeout caught the TERM, passed it on and waits (its -k 5 armed); the probe ignored it.
    assert sorted(p.argv[0] for p in shell.processes) == ["amd-smi", "timeout"]
    assert (await shell.run_session(f"pgrep -s {sid}", Capture())).status == 0
    assert (await shell.run_session(f"pkill -KILL -s {sid}", Capture())).status == 0
    await asyncio.wait_for(hung, timeout=2)
    assert len(shell.processes) == 0
    assert (await shell.run_session(f"pgrep -s {sid}", Capture())).status == 1


async def eventually_true(condition: Callable[[], bool], timeout_s: float = 3.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


async def test_group_kill_ends_a_hung_wrapped_probe() -> None:
    """What the console does to a hung probe: read @@ic-pgid, then kill the group from another session."""
    shell, _ = make_shell({"amd-smi": HANG})
    hung_out = Capture()
    hung = asyncio.create_task(shell.run_session(console_wrapper(["amd-smi", "static"]), hung_out))
    await asyncio.sleep(0.05)
    pgid = int(PGID_LINE.search(hung_out.stderr).group(1))  # type: ignore[union-attr]
    assert {p.pgid for p in shell.processes} == {pgid} and len(shell.processes) == 2  # timeout + amd-smi
    killer = Capture()
    kill_end = await shell.run_session(f"kill -TERM -- -{pgid}", killer)
    assert kill_end.status == 0 and killer.stderr == ""
    end = await asyncio.wait_for(hung, timeout=2)
    assert end == SessionEnd(status=None, signal=signal.SIGTERM)
    assert hung_out.stdout == "partial\n"
    assert len(shell.processes) == 0


async def test_kill_by_pid_ends_only_that_program() -> None:
    shell, _ = make_shell({"amd-smi": HANG})
    out = Capture()
    session = asyncio.create_task(shell.run_session("amd-smi; echo rc=$?", out))
    await asyncio.sleep(0.05)
    [program] = [p for p in shell.processes if p.argv == ["amd-smi"]]
    await shell.run_session(f"kill -9 {program.pid}", Capture())
    end = await asyncio.wait_for(session, timeout=2)
    assert out.stdout == "partial\nrc=137\n" and end.status == 0


async def test_timeout_in_a_bundle_leads_its_own_group_like_gnu_timeout() -> None:
    """Killing the bundle shell's group leaves the probe (own group) running until its timeout fires."""
    shell, _ = make_shell({"amd-smi": HANG})
    out = Capture()
    script = 'echo "@@ic-pgid $$" >&2; echo begin; timeout 0.5 amd-smi; echo "end rc=$?"'
    session = asyncio.create_task(shell.run_session(f"sh -c {shlex.quote(script)}", out))
    await asyncio.sleep(0.05)
    pgid = int(PGID_LINE.search(out.stderr).group(1))  # type: ignore[union-attr]
    groups = {p.pgid for p in shell.processes}
    assert len(groups) == 2 and pgid in groups
    await shell.run_session(f"kill -TERM -- -{pgid}", Capture())
    await asyncio.sleep(0.05)
    assert not session.done()  # the channel stays open: timeout and amd-smi still hold its output
    end = await asyncio.wait_for(session, timeout=3)
    assert end.signal == signal.SIGTERM and "end rc" not in out.stdout
    assert len(shell.processes) == 0


async def test_closing_the_channel_signals_nothing_and_the_next_write_is_sigpipe() -> None:
    """sshd gives a session without a terminal no SIGHUP: its processes outlive the channel, and one
    that writes afterwards dies of SIGPIPE (here the shell, at its echo after the sleep)."""
    shell, _ = make_shell({"amd-smi": HANG})
    session = asyncio.create_task(shell.run_session("sleep 0.2; echo after; amd-smi", Capture()))
    await asyncio.sleep(0.05)
    assert len(shell.processes) == 2  # the shell and its sleep
    session.cancel()
    with pytest.raises(asyncio.CancelledError):
        await session
    await asyncio.sleep(0)
    assert len(shell.processes) == 2  # still there: nobody signalled them
    await eventually_true(lambda: len(shell.processes) == 0)  # echo met the closed channel: SIGPIPE


async def test_drop_writes_part_then_drops_the_connection() -> None:
    shell, _ = make_shell({"amd-smi": SimReply(stdout="half\n", exit_status=255, delivery=Delivery.DROP)})
    out = Capture()
    session = asyncio.create_task(shell.run_session("amd-smi", out))
    await asyncio.sleep(0.05)
    assert out.dropped and out.stdout == "half\n" and not session.done()
    session.cancel()


async def test_trickle_spreads_output_over_the_duration() -> None:
    text = "".join(f"line {i}\n" for i in range(100))
    reply = SimReply(stdout=text, duration_s=0.4, delivery=Delivery.TRICKLE)
    start = time.monotonic()
    end, out, _ = await run("amd-smi", {"amd-smi": reply})
    stamps = [t for fd, _, t in out.chunks if fd == 1]
    assert out.stdout == text and end.status == 0
    assert 10 <= len(stamps) <= 40
    assert stamps[-1] - stamps[0] >= 0.3 and time.monotonic() - start >= 0.4


async def test_pids_are_unique_and_children_share_the_group() -> None:
    _, out, _ = await run("sh -c 'echo $$' ; sh -c 'echo $$'")
    first, second = (int(x) for x in out.stdout.split())
    assert first != second


@pytest.mark.parametrize(("text", "seconds"), [("1", 1.0), ("0.5s", 0.5), ("2m", 120.0), ("1h", 3600.0)])
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=12)))
def test_any_argv_survives_the_console_wrapper(argv: list[str]) -> None:
    """shlex.join quoting round-trips through the simulated sh exactly, whatever the arguments hold."""
    shell, programs = make_shell()
    end = asyncio.run(shell.run_session(console_wrapper(["args", *argv]), Capture()))
    assert end.status == 0 and programs.calls == [["args", *argv]]


@settings(max_examples=1000, deadline=None)
@given(
    st.lists(st.sampled_from([*"ab $@#?'\"\\;&|<>()`{}=\n\t0123-", "&&", "||", "2>&1", "$$"]), max_size=60).map("".join)
)
def test_parser_is_total(text: str) -> None:
    """Any command line parses or raises ShellSyntaxError; nothing else escapes."""
    try:
        parse_script(text)
    except ShellSyntaxError as exc:
        assert str(exc) and "\n" not in str(exc)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([*"ab $@?'\"\\;&|<>=\n0123-", "&&", "||", "2>&1", "exit ", "kill "]), max_size=60).map(
        "".join
    )
)
def test_shell_is_total(text: str) -> None:
    """Any command line ends with a status and writes only strings; no exception escapes the shell."""
    shell, _ = make_shell()
    end = asyncio.run(asyncio.wait_for(shell.run_session(text, Capture()), timeout=5))
    assert end.status is not None or end.signal is not None


@pytest.mark.parametrize(
    ("line", "stdout", "status", "stderr"),
    [
        ("nice -n 19 ionice -c 3 args a 'b c'", '["a", "b c"]\n', 0, ""),
        ("nice -19 args x", '["x"]\n', 0, ""),
        ("ionice -c 3 -t -- args y", '["y"]\n', 0, ""),
        ("nice -n 19 ionice -c 3 sh -c 'args \"$@\"' sh 1", '["1"]\n', 0, ""),
        ("nice -q args", "", 125, "nice: invalid option -- 'q'\n"),
        ("ionice -c 3", "", 1, "ionice: a command is needed here\n"),
    ],
)
async def test_nice_and_ionice_run_their_command_as_itself(line: str, stdout: str, status: int, stderr: str) -> None:
    """watch's low priority words (console.transport.priority): the command runs in their own process."""
    end, out, programs = await run(line)
    assert (out.stdout, out.stderr, end.status) == (stdout, stderr, status)
    assert all(call[0] == "args" for call in programs.calls)


async def test_a_probe_under_nice_still_times_out_and_is_killed() -> None:
    shell, programs = make_shell({"amd-smi": HANG})
    out = Capture()
    line = console_wrapper(["nice", "-n", "19", "ionice", "-c", "3", "amd-smi", "list"], timeout_s=0.2)
    end = await asyncio.wait_for(shell.run_session(line, out), timeout=10)
    assert end.status == 124 and out.stdout == "partial\n" and programs.calls == [["amd-smi", "list"]]
