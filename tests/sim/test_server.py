"""The simulated cluster's SSH server, exercised with a real asyncssh client over loopback."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import asyncssh
import psutil
import pytest

from console.cli import main as cli_main
from console.inventory import load_inventory
from console.sim.faults import Fault, FaultKind
from console.sim.hostkeys import HostKeyStore, client_key, known_hosts_line
from console.sim.launcher import SimCluster, pick_address_base, start_sim_cluster
from console.sim.serve import ListenMode, ServedCluster, ServeOptions, plan_cluster, serve
from console.sim.server import INVOCATION_BLOCK, ConnectionFaults, SimNodeRuntime, SimServer

from .console_lines import console_wrapper

PGID = re.compile(r"@@ic-pgid (\d+)")


async def eventually(condition: Callable[[], bool], timeout_s: float = 3.0) -> None:
    """Wait until ``condition()`` holds (the server reacts to a client's action a moment later)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


@dataclass
class Fleet:
    """An in-process server plus what a client needs to reach it."""

    server: SimServer
    endpoints: dict[str, tuple[str, int]]
    known_hosts: asyncssh.SSHKnownHosts
    client_key: asyncssh.SSHKey

    async def connect(self, node: str, **options: object) -> asyncssh.SSHClientConnection:
        address, port = self.endpoints[node]
        settings: dict[str, object] = {
            "username": "node",
            "client_keys": [self.client_key],
            "known_hosts": self.known_hosts,
            "connect_timeout": 5,
        }
        settings.update(options)
        return await asyncssh.connect(address, port, **settings)  # type: ignore[arg-type]


FAULTS = [
    Fault(kind=FaultKind.SSH_REFUSED, node="sim002"),
    Fault(kind=FaultKind.AUTH_FAILURE, node="sim003"),
    Fault(kind=FaultKind.HOST_KEY_CHANGED, node="sim004"),
    Fault(kind=FaultKind.SSH_DROP_MID_COMMAND, node="sim005"),
    Fault(kind=FaultKind.COMMAND_HANG, node="sim006"),
]


@pytest.fixture
async def fleet(tmp_path: Path) -> AsyncIterator[Fleet]:
    options = ServeOptions(
        nodes=6, faults="none", time_factor=1000, state_dir=tmp_path, address_base=pick_address_base(6, 22022)
    )
    plan = plan_cluster(options)
    plan.cluster.faults = FAULTS
    keys = HostKeyStore(tmp_path)
    _, key = client_key(tmp_path)
    server = SimServer(plan.cluster, keys, key, state_dir=tmp_path)
    endpoints = await server.start(plan.endpoints)
    lines = [known_hosts_line(address, port, keys.host_key(name)) for name, (address, port) in endpoints.items()]
    try:
        yield Fleet(server, endpoints, asyncssh.import_known_hosts("\n".join(lines) + "\n"), key)
    finally:
        await server.stop()


async def test_runs_the_console_wrapper_and_the_output_parses(fleet: Fleet) -> None:
    probes = pytest.importorskip("console.probes")
    async with await fleet.connect("sim001") as conn:
        result = await conn.run(console_wrapper(["amd-smi", "static", "--json"]), timeout=10)
    assert result.exit_status == 0 and PGID.fullmatch(str(result.stderr).strip())
    parsed = probes.parse_output(str(result.stdout), tool=probes.Tool("amd-smi"))
    assert (parsed.tool.value, parsed.kind, parsed.ok, parsed.summary["gpu_count"]) == ("amd-smi", "static", True, 8)


@pytest.mark.parametrize(
    ("command", "status", "stderr"), [("false", 1, ""), ("nosuch", 127, "sh: 1: nosuch: not found\n")]
)
async def test_exit_status_and_stderr_reach_the_client(fleet: Fleet, command: str, status: int, stderr: str) -> None:
    async with await fleet.connect("sim001") as conn:
        result = await conn.run(command, timeout=10)
    assert (result.exit_status, result.stderr) == (status, stderr)


async def test_a_renderer_bug_answers_like_a_crashing_tool(fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(ctx: object, argv: list[str]) -> None:
        raise KeyError("gpu_data")

    monkeypatch.setattr("console.sim.server.run_program", broken)
    async with await fleet.connect("sim001") as conn:
        result = await conn.run("amd-smi list; echo still here", timeout=10)
    assert result.stdout == "still here\n" and result.stderr == "amd-smi: simulator error: KeyError('gpu_data')\n"


async def test_each_program_run_is_a_new_invocation_from_a_reserved_block(fleet: Fleet, tmp_path: Path) -> None:
    async with await fleet.connect("sim001") as conn:
        first, second = [(await conn.run("amd-smi metric --json", timeout=10)).stdout for _ in range(2)]
    assert first != second  # readings are jittered per invocation: the numbers differ
    # One locked rewrite of the counter for a block, not one per program run; a restarted server
    # sharing the state dir starts after the block.
    assert (tmp_path / "sim001.invocations").read_text() == str(INVOCATION_BLOCK)
    restarted = SimNodeRuntime(fleet.server.cluster, "sim001", tmp_path, ConnectionFaults())
    assert restarted.run_program(["uname", "-r"]).exit_status == 0
    assert (tmp_path / "sim001.invocations").read_text() == str(2 * INVOCATION_BLOCK)


async def test_every_node_has_its_own_host_key(fleet: Fleet) -> None:
    keys = fleet.server.keys
    fingerprints = {keys.host_key(name).get_fingerprint() for name in fleet.server.nodes}
    assert len(fingerprints) == len(fleet.server.nodes)
    address, port = fleet.endpoints["sim005"]
    only_sim001 = asyncssh.import_known_hosts(known_hosts_line(address, port, keys.host_key("sim001")) + "\n")
    with pytest.raises(asyncssh.HostKeyNotVerifiable):
        await fleet.connect("sim005", known_hosts=only_sim001)


async def test_ssh_refused_node_does_not_listen(fleet: Fleet) -> None:
    with pytest.raises(ConnectionRefusedError):
        await fleet.connect("sim002")


async def test_auth_failure_node_rejects_the_client_key(fleet: Fleet) -> None:
    with pytest.raises(asyncssh.PermissionDenied):
        await fleet.connect("sim003")


async def test_only_the_cluster_user_and_key_get_in(fleet: Fleet) -> None:
    with pytest.raises(asyncssh.PermissionDenied):
        await fleet.connect("sim001", username="root")
    stranger = asyncssh.generate_private_key("ssh-ed25519")
    with pytest.raises(asyncssh.PermissionDenied):
        await fleet.connect("sim001", client_keys=[stranger])


async def test_host_key_changed_node_serves_another_key(fleet: Fleet) -> None:
    with pytest.raises(asyncssh.HostKeyNotVerifiable):
        await fleet.connect("sim004")
    async with await fleet.connect("sim004", known_hosts=None) as conn:
        served = conn.get_server_host_key()
        assert served is not None
        assert served.public_data != fleet.server.keys.host_key("sim004").public_data
        assert (await conn.run("true", timeout=5)).exit_status == 0


async def test_drop_mid_command_cuts_the_connection_after_partial_output(fleet: Fleet) -> None:
    async with await fleet.connect("sim005") as conn:
        result = await conn.run("amd-smi static --json", timeout=10)
        assert result.exit_status is None and result.returncode is None  # connection lost, not an exit
        assert len(str(result.stdout)) > 0 and not str(result.stdout).rstrip().endswith("]")
        with pytest.raises((asyncssh.ChannelOpenError, ConnectionError, asyncssh.DisconnectError)):
            await conn.run("true", timeout=5)


async def test_hung_probe_is_killed_through_its_process_group(fleet: Fleet) -> None:
    runtime = fleet.server.nodes["sim006"]
    async with await fleet.connect("sim006") as conn:
        hung = await conn.create_process(console_wrapper(["amd-smi", "metric", "--json"]))
        line = await asyncio.wait_for(hung.stderr.readline(), timeout=5)
        pgid = int(PGID.search(str(line)).group(1))  # type: ignore[union-attr]
        await asyncio.sleep(0.1)
        assert {proc.pgid for proc in runtime.processes} == {pgid}
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.shield(hung.wait_closed()), timeout=0.3)
        kill = await conn.run(f"kill -TERM -- -{pgid}", timeout=5)
        assert kill.exit_status == 0
        result = await asyncio.wait_for(hung.wait(), timeout=5)
        assert result.exit_signal is not None and result.exit_signal[0] == "TERM"
        assert len(runtime.processes) == 0


async def test_channel_limit_per_connection_like_maxsessions(fleet: Fleet) -> None:
    async with await fleet.connect("sim001") as conn:
        sleepers = [await conn.create_process("sleep 30") for _ in range(10)]
        with pytest.raises(asyncssh.ChannelOpenError) as refused:
            await conn.create_process("true")
        assert refused.value.code == asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED
        sleepers[0].close()
        await sleepers[0].wait_closed()
        assert (await conn.run("echo again", timeout=5)).stdout == "again\n"
    # As under sshd, closing the channels signals nothing: a session without a terminal gets no SIGHUP,
    # and a sleep that writes nothing never meets SIGPIPE. Only a kill aimed at their sessions ends them.
    runtime = fleet.server.nodes["sim001"]
    await eventually(lambda: not runtime.connections)
    sessions = {proc.sid for proc in runtime.processes}
    assert len(sessions) == 10 and all(proc.argv == ["sleep", "30"] for proc in runtime.processes)
    async with await fleet.connect("sim001") as conn:
        for sid in sessions:
            assert (await conn.run(f"pkill -KILL -s {sid}", timeout=5)).exit_status == 0
        assert (await conn.run(f"pgrep -s {min(sessions)}", timeout=5)).exit_status == 1
    await eventually(lambda: len(runtime.processes) == 0)


async def test_interactive_shell_runs_lines(fleet: Fleet) -> None:
    async with await fleet.connect("sim001") as conn:
        proc = await conn.create_process()  # no command: a shell session, one line at a time
        proc.stdin.write("echo one; echo two\nfalse\nexit\n")
        result = await asyncio.wait_for(proc.wait(), timeout=5)
    assert result.stdout == "$ one\ntwo\n$ $ " and result.exit_status == 1


async def test_serve_writes_an_inventory_the_console_loads(tmp_path: Path) -> None:
    options = ServeOptions(
        nodes=5,
        models=["MI300X", "MI355X"],  # type: ignore[list-item]
        pools=3,
        faults="none",
        state_dir=tmp_path / "state",
        inventory_out=tmp_path / "cluster.toml",
        address_base=pick_address_base(5, 22022),
    )
    served: list[ServedCluster] = []
    stop = asyncio.Event()
    task = asyncio.create_task(serve(options, served.append, stop))
    while not served and not task.done():
        await asyncio.sleep(0.01)
    try:
        [info] = served
        inventory = load_inventory(info.inventory_path)
        assert info.inventory_path == tmp_path / "cluster.toml"
        assert [node.name for node in inventory.nodes] == ["sim001", "sim002", "sim003", "sim004", "sim005"]
        assert [(n.address, n.port) for n in inventory.nodes] == [info.endpoints[n.name] for n in inventory.nodes]
        assert {name: (pool.gpu_model, pool.pin.rocm) for name, pool in inventory.pools.items()} == {
            "mi300x-a": ("MI300X", "6.4.1"),
            "mi355x-a": ("MI355X", "7.0.2"),
            "mi300x-b": ("MI300X", "6.4.1"),
        }
        assert inventory.slurm.controller == "sim001"
        assert inventory.ssh.user == "node" and inventory.ssh.max_channels_per_node == 8
        assert Path(inventory.ssh.identity_file or "").is_absolute()
        assert info.ready_line().startswith("ready: 5 nodes at ")
        address, port = info.endpoints["sim003"]
        async with asyncssh.connect(
            address,
            port,
            username=inventory.ssh.user,
            client_keys=[inventory.ssh.identity_file],
            known_hosts=inventory.ssh.known_hosts,
        ) as conn:
            assert (await conn.run("hostname", timeout=10)).stdout == "sim003\n"
    finally:
        stop.set()
        await task


async def test_port_mode_gives_each_node_its_own_port(tmp_path: Path) -> None:
    options = ServeOptions(
        nodes=3, faults="none", state_dir=tmp_path, listen=ListenMode.PORTS, address_base="127.0.0.1", port=0
    )
    served: list[ServedCluster] = []
    stop = asyncio.Event()
    task = asyncio.create_task(serve(options, served.append, stop))
    while not served and not task.done():
        await asyncio.sleep(0.01)
    try:
        [info] = served
        ports = [port for _, port in info.endpoints.values()]
        assert {address for address, _ in info.endpoints.values()} == {"127.0.0.1"} and len(set(ports)) == 3
        inventory = load_inventory(info.inventory_path)
        assert [node.port for node in inventory.nodes] == ports
        assert [node.port for node in info.cluster.nodes] == ports  # cluster.json carries the bound ports
        async with asyncssh.connect(
            "127.0.0.1",
            ports[1],
            username="node",
            client_keys=[str(info.client_key_path)],
            known_hosts=str(info.known_hosts_path),
        ) as conn:
            assert (await conn.run("hostname", timeout=10)).stdout == "sim002\n"
    finally:
        stop.set()
        await task


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--faults", "sometimes"], "--faults"),
        (["--model", "mi999x"], "unknown GPU model 'mi999x'"),
        (["--nodes", "300", "--address-base", "127.255.255.0"], "leave the loopback network"),
        (["--port", "0"], "needs --listen ports"),
    ],
)
def test_serve_rejects_bad_options(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["sim", "serve", *args]) == 2
    assert message in capsys.readouterr().err


def _ssh(sim: SimCluster, address: str, port: int, command: str) -> subprocess.CompletedProcess[str]:
    """The plain OpenSSH client, strict about host keys, with the files the simulator wrote."""
    return subprocess.run(
        [
            "ssh", "-p", str(port), "-i", str(sim.client_key_path),
            "-o", f"UserKnownHostsFile={sim.known_hosts_path}",
            "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
            f"node@{address}", command,
        ],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip


def test_sim_serve_process_with_plain_openssh_client(tmp_path: Path) -> None:
    """The CLI in its own process, reached by the OpenSSH client; stopping it leaves nothing behind."""
    if shutil.which("ssh") is None:
        pytest.skip("needs the OpenSSH client")
    probes = pytest.importorskip("console.probes")
    with start_sim_cluster(4, "mi355x", faults="none", state_dir=tmp_path) as sim:
        assert re.fullmatch(
            r"ready: 4 nodes at 127\.2\.\d+\.1-127\.2\.\d+\.4:22022 inventory at \S+ \(\d+\.\d\d s\)", sim.ready_line
        )
        node = sim.cluster().nodes[2]
        result = _ssh(sim, node.address, node.port, "amd-smi static --json")
        assert result.returncode == 0, result.stderr
        parsed = probes.parse_output(result.stdout, tool=probes.Tool("amd-smi"))
        assert parsed.ok and parsed.summary["gpu_count"] == 8
        pid = sim.proc.pid
    assert sim.proc.returncode == 0 and not psutil.pid_exists(pid)


@pytest.mark.slow
def test_1024_nodes_ready_within_10_seconds(tmp_path: Path) -> None:
    start = time.perf_counter()
    with start_sim_cluster(1024, "mi300x,mi355x", pools=8, faults="demo", state_dir=tmp_path) as sim:
        ready_s = time.perf_counter() - start
        cluster = sim.cluster()
        assert len(cluster.nodes) == 1024 and ready_s < 10, sim.ready_line
        refused = {fault.node for fault in cluster.faults if fault.kind is FaultKind.SSH_REFUSED}
        last = next(node for node in reversed(cluster.nodes) if node.name not in refused)
        assert _ssh(sim, last.address, last.port, "hostname").stdout == f"{last.name}\n"
    print(f"1024 nodes ready in {ready_s:.2f} s wall ({sim.ready_line})", file=sys.stderr)
