"""Hostile text from inventories, tools and operators never reaches a shell unquoted nor a terminal alive.

Node names, pool names, labels, drain reasons and tool output may carry shell metacharacters, Rich
markup, ANSI/OSC escape sequences, bidirectional overrides, megabyte lines and bytes that are not
UTF-8. The nodes record the exact command lines they receive (sshd ForceCommand), so the tests see
what a node's shell was asked to run; the console's output is read as raw bytes, as a terminal would.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from console.actions.model import ActionKind
from console.actions.runner import TransportRunner
from console.actions.slurm import tag_reason, update_argv
from console.inventory import InventoryError, load_inventory
from console.sim.commands import SimReply
from console.transport.connect import transport_for
from tests.reliability.conftest import console
from tests.reliability.recording import RecordingFleet, classify
from tests.reliability.simfleet import SimOnSshd, install_node_tools

MARKERS = [Path(f"/tmp/ic-pwn-{tag}") for tag in ("pool", "label", "out", "out2", "reason")]
# What a malicious or broken node may print: OSC 52 (write the clipboard), OSC 0 (title), clear screen,
# a C1 CSI, BEL, Rich markup, command substitutions and a right-to-left override.
NASTY = (
    "\x1b]52;c;cHduZWQ=\x07\x1b]0;PWNED\x07\x1b[2J\x9b31m[bold red]PWNED[/]"
    "$(touch /tmp/ic-pwn-out)`touch /tmp/ic-pwn-out2`\u202e"
)
# Bytes a terminal acts on: ESC, BEL, and CSI/OSC/DCS/ST in their one-byte C1 forms (UTF-8 encoded).
LIVE = (b"\x1b", b"\x07", "\x9b".encode(), "\x9d".encode(), "\x90".encode(), "\x9c".encode(), "\u202e".encode())


@pytest.fixture(autouse=True)
def no_markers() -> None:
    for marker in MARKERS:
        marker.unlink(missing_ok=True)


def _assert_inert(output: bytes) -> None:
    live = [seq for seq in LIVE if seq in output]
    assert not live, f"terminal control sequences reached the output: {live}"


def _assert_no_marker() -> None:
    assert not [m for m in MARKERS if m.exists()], "a command substitution ran somewhere"


def _assert_only_console_commands(fleet: RecordingFleet, forbidden: tuple[str, ...]) -> None:
    for node in fleet.nodes:
        for command in fleet.commands(node):
            kind, _ = classify(command)
            assert kind in ("bundle", "kill"), f"{node.name} was asked to run: {command[:200]!r}"
            assert not any(word in command for word in forbidden), f"{node.name} received {command[:200]!r}"


def _hostile_inventory(sim: SimOnSshd, path: Path) -> Path:
    """The cluster's first two nodes in a pool and with labels full of shell and terminal syntax."""
    fleet = sim.fleet
    hosts = "".join(
        f'[hosts.{n.name}]\naddress = "{n.addr}"\nport = {n.port}\nlabels = {{ note = "`id`;$(id)|cat" }}\n'
        for n in fleet.nodes[:2]
    )
    path.write_text(
        'name = "hostile"\n'
        f'[ssh]\nuser = "{fleet.login_user}"\nidentity_file = "{fleet.client_key}"\n'
        f'known_hosts = "{fleet.known_hosts}"\nconnect_timeout_s = 3\n'
        "[[pools]]\n"
        'name = "p;$(touch /tmp/ic-pwn-pool)`id`\\u001b]0;PWNED\\u0007[bold]"\n'
        'gpu_model = "mi300x"\n'
        f'nodes = "{fleet.nodes[0].name},{fleet.nodes[1].name}"\n'
        'labels = { rack = "$(touch${IFS}/tmp/ic-pwn-label)", "we;ird key" = "\\u001b[31m[red]x[/]" }\n'
        f"{hosts}"
    )
    return path


@pytest.mark.root
def test_hostile_inventory_strings_never_reach_a_node(recorded: SimOnSshd, tmp_path: Path) -> None:
    inventory = _hostile_inventory(recorded, tmp_path / "hostile.toml")
    done = console(
        "sweep", "-i", inventory, "--nodes", "rack=$(touch${IFS}/tmp/ic-pwn-label)",
        "--store", tmp_path / "h.sqlite", "--json", tmp_path / "report.json", "--junit", tmp_path / "junit.xml",
    )  # fmt: skip
    assert done.returncode in (0, 1, 3), done.stderr.decode(errors="replace")
    _assert_inert(done.stdout + done.stderr)
    _assert_no_marker()
    assert isinstance(recorded.fleet, RecordingFleet)
    _assert_only_console_commands(recorded.fleet, ("touch", "$(", "`", "PWNED", "[bold]", "rack", "hostile"))
    report = json.loads((tmp_path / "report.json").read_text())
    assert {n["pool"] for n in report["nodes"]} == {"p;$(touch /tmp/ic-pwn-pool)`id`\x1b]0;PWNED\x07[bold]"}
    ET.fromstring((tmp_path / "junit.xml").read_bytes())


@pytest.mark.parametrize(
    "name",
    ["gpu$(id)", "g;reboot", "g`id`", "a|b", "two words", "n\x1bc", "n\u202eg", "x'y", 'x"y', "-oProxyCommand=x"],
)
def test_node_names_that_are_not_host_names_are_refused(tmp_path: Path, name: str) -> None:
    cluster = tmp_path / "cluster.toml"
    cluster.write_text(f"[[pools]]\nname = 'p'\ngpu_model = 'mi300x'\nnodes = {json.dumps(name)}\n")
    with pytest.raises(InventoryError, match=r"pools\[0\]\.nodes"):
        load_inventory(cluster)
    if " " not in name:  # a hostfile's first word is the host
        hostfile = tmp_path / "hosts"
        hostfile.write_text(name + "\n")
        with pytest.raises(InventoryError):
            load_inventory(hostfile)


def _hostile_replies() -> dict[tuple[str, ...], SimReply]:
    return {
        ("cat", "/opt/rocm/.info/version"): SimReply(stdout=f"6.4.9{NASTY}\n"),
        ("modinfo", "amdgpu"): SimReply(stdout=f"filename: /lib/modules/amdgpu.ko\nversion: 6.12.99{NASTY}\n"),
        ("uname", "-r"): SimReply(stdout="6.8.0-" + "A" * 1_000_000 + "\n"),
        ("cat", "/etc/os-release"): SimReply(
            stdout='ID=ubuntu\nVERSION_ID="22.04"\nPRETTY_NAME="Ubuntu \udcff\udcfe"\n'
        ),
    }


@pytest.mark.root
def test_hostile_tool_output_is_inert_on_the_terminal_and_in_reports(recorded: SimOnSshd, tmp_path: Path) -> None:
    install_node_tools(recorded.fleet, recorded.cluster, overrides={"sim002": _hostile_replies()})
    args = [
        "sweep", "-i", recorded.inventory_path, "--nodes", "sim[001-002]", "--store", tmp_path / "h.sqlite",
        "--json", tmp_path / "report.json", "--junit", tmp_path / "junit.xml", "--prom", tmp_path / "nodes.prom",
        "--verbose",  # every finding printed, so each hostile text reaches the terminal
    ]  # fmt: skip
    plain = console(*args)
    forced = console(*args, env={**os.environ, "FORCE_COLOR": "1", "COLUMNS": "160"})  # Rich colours on
    _assert_no_marker()
    # A release file with escape sequences in it is not a release, nor is an os-release that is not
    # UTF-8: those probes are UNKNOWN (exit 3), their text quoted in the reason, never obeyed.
    assert plain.returncode == 3 and forced.returncode == 3, plain.stderr.decode(errors="replace")
    _assert_inert(plain.stdout + plain.stderr)
    colours = forced.stdout + forced.stderr
    _assert_inert(colours.replace(b"\x1b[", b""))  # Rich's own SGR colours are the only escapes allowed
    assert b"\x1b[2J" not in colours and b"\x1b]" not in colours
    shown = plain.stdout.decode()
    # Parsers strip ANSI sequences from tool output; what is left (a C1 CSI, markup) is shown, not obeyed.
    assert "6.4.9\\x9b31m[bold red]P" in shown, "the text is shown, not obeyed"

    report = json.loads((tmp_path / "report.json").read_text())
    messages = [f["message"] for n in report["nodes"] for f in n["findings"]]
    assert any("not a ROCm release: '6.4.9\\x9b31m[bold red]P" in m for m in messages), "quoted, escaped"
    assert any("not UTF-8 text" in m for m in messages)
    ET.fromstring((tmp_path / "junit.xml").read_bytes())
    _assert_inert((tmp_path / "nodes.prom").read_bytes())
    history = console("history", "--store", tmp_path / "h.sqlite", "--node", "sim002")
    assert history.returncode == 0
    _assert_inert(history.stdout + history.stderr)


def test_parse_of_a_hostile_paste_is_inert(tmp_path: Path) -> None:
    paste = tmp_path / "paste.txt"
    paste.write_text(
        f"ERROR:root:Unable to get devices, driver not initialized{NASTY}\n"
        "ERROR:root:Unable to detect any GPU devices, check amdgpu version and module status (sudo modprobe amdgpu)\n"
    )
    done = console("parse", "--as", "amd-smi", paste)
    assert done.returncode in (1, 2)
    _assert_inert(done.stdout + done.stderr)


@pytest.mark.root
def test_drain_reason_reaches_scontrol_as_one_word(recorded: SimOnSshd) -> None:
    fleet = recorded.fleet
    assert isinstance(fleet, RecordingFleet)
    node = fleet.nodes[0]
    seen = node.dir / "scontrol-argv"
    fleet.install_tool(node, "scontrol", f"#!/bin/sh\nprintf '%s\\0' \"$@\" > {shlex.quote(str(seen))}\n")
    seen.touch()
    seen.chmod(0o666)
    reason = f"bad GPU; $(touch /tmp/ic-pwn-reason) `id` \"quoted\" 'single' {NASTY}\nsecond line"
    argv = update_argv(node.name, ActionKind.DRAIN, tag_reason(reason, 7))

    async def drain() -> None:
        runner = TransportRunner(lambda: transport_for(load_inventory(recorded.inventory_path)))
        try:
            done = await runner.run(node.name, argv)
        finally:
            await runner.close()
        assert done.ok, done.message()

    asyncio.run(drain())
    _assert_no_marker()
    assert seen.read_bytes().split(b"\0")[:-1] == [word.encode() for word in argv[1:]]
    (command,) = fleet.commands(node)
    assert classify(command) == ("run", [tuple(argv)])
