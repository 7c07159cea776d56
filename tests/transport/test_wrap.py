"""The command text sent to nodes: quoting survives any argv, the pgid line is recognised exactly."""

from __future__ import annotations

import re
import subprocess
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console.transport.wrap import (
    NODE_TIMEOUT_MARGIN_S,
    announced_pgid,
    checked_argv,
    node_timeout_argv,
    remote_command,
    seconds,
    signal_group_command,
)
from tests.transport.conftest import local_processes_matching

# Any text an argument can hold: everything but NUL (exec cannot carry it) and lone surrogates.
ARG_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=40)


def _as_login_shell(command: str) -> subprocess.CompletedProcess[bytes]:
    """Run ``command`` the way sshd does: ``sh -c <command>`` under the login shell."""
    return subprocess.run(["sh", "-c", command], capture_output=True, timeout=30, check=False)


@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ARG_TEXT, max_size=6))
def test_any_argv_reaches_the_command_unchanged(args: list[str]) -> None:
    # The leading "argv" keeps printf from printing one empty field when args is empty.
    done = _as_login_shell(remote_command(["printf", "%s\\0", "argv", *args], timeout_s=20, kill_grace_s=1))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split(b"\0")[:-1] == [b"argv", *(a.encode() for a in args)]
    assert re.fullmatch(rb"@@ic-pgid \d+\n", done.stderr)


def test_announced_pgid_is_the_group_of_the_command() -> None:
    done = _as_login_shell(remote_command(["sh", "-c", "ps -o pgid= -p $$"], timeout_s=20, kill_grace_s=1))
    line, _, rest = done.stderr.partition(b"\n")
    assert announced_pgid(line + b"\n") == int(done.stdout)
    assert rest == b""


def test_node_side_timeout_stops_the_command_without_the_console() -> None:
    done = _as_login_shell(remote_command(["sleep", "30"], timeout_s=0.2, kill_grace_s=1))
    assert done.returncode == 124  # GNU timeout's "timed out" status


def test_node_timeout_fires_after_the_console_timeout() -> None:
    assert node_timeout_argv(["amd-smi", "static"], 10, 5) == [
        "timeout", "-k", "5", seconds(10 + NODE_TIMEOUT_MARGIN_S), "amd-smi", "static",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("line", "pgid"),
    [
        (b"@@ic-pgid 4242\n", 4242),
        (b"@@ic-pgid 7\r\n", 7),
        (b"@@ic-pgid 4242", None),  # no newline: not a whole line yet
        (b"x @@ic-pgid 4242\n", None),
        (b"@@ic-pgid 4242 extra\n", None),
        (b"@@ic-pgid -1\n", None),
        (b"warning: locale not set\n", None),
    ],
)
def test_only_the_exact_announcement_line_counts(line: bytes, pgid: int | None) -> None:
    assert announced_pgid(line) == pgid


@pytest.mark.parametrize(
    ("value", "text"), [(10, "10"), (2.5, "2.5"), (0.25, "0.25"), (1e-4, "0"), (0.1234, "0.123"), (3600.0, "3600")]
)
def test_seconds_are_plain_decimals(value: float, text: str) -> None:
    assert seconds(value) == text


def test_seconds_reject_negative_durations() -> None:
    with pytest.raises(ValueError, match="negative"):
        seconds(-1)


def test_the_wrapper_has_the_agreed_shape() -> None:
    """Simulated nodes (console.sim) recognise this exact form; change both together."""
    assert remote_command(["amd-smi", "static", "--json"], timeout_s=30, kill_grace_s=5) == (
        'exec sh -c \'echo "@@ic-pgid $$" >&2; exec timeout -k 5 31 "$@"\' sh amd-smi static --json'
    )


def test_group_signals_reach_the_whole_group_under_dash() -> None:
    """``kill -SIG -pgid`` as the node's /bin/sh (dash here) runs it, against a real process group."""
    group = subprocess.Popen(["sh", "-c", "sleep 4242 & sleep 4243"], start_new_session=True)
    try:
        assert _as_login_shell(signal_group_command(group.pid, "0")).returncode == 0
        assert _as_login_shell(signal_group_command(group.pid, "TERM")).returncode == 0
        assert group.wait(5) == -15
        time.sleep(0.1)
        assert local_processes_matching("sleep 424") == []  # the background sleep got it too
    finally:
        group.kill()
        group.wait()


def test_group_signal_of_a_missing_group_fails() -> None:
    assert _as_login_shell(signal_group_command(2_000_000_000, "0")).returncode != 0


@pytest.mark.parametrize(("pgid", "name"), [(0, "TERM"), (1, "KILL"), (-5, "TERM"), (4242, "TERM; reboot")])
def test_group_signal_refuses_dangerous_targets(pgid: int, name: str) -> None:
    with pytest.raises(ValueError):
        signal_group_command(pgid, name)


@pytest.mark.parametrize(
    ("argv", "error"),
    [([], ValueError), ("ls -l", TypeError), (b"ls", TypeError), (["ls", 3], TypeError), (["a\0b"], ValueError)],
)
def test_argv_must_be_a_list_of_strings(argv: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        checked_argv(argv)  # type: ignore[arg-type]
