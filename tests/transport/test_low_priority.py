"""``LowPriorityTransport``: every command and script at nice 19 and in the idle I/O class, read back from the
real processes (``nice`` and ``ionice`` print the priority they run at), and still killed as one on a timeout."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.transport import LocalTransport, TransportError
from console.transport.errors import ErrorKind
from console.transport.priority import LowPriorityTransport


async def test_commands_and_scripts_run_at_the_lowest_priority() -> None:
    async with LocalTransport("here", kill_grace_s=1) as inner:
        low = LowPriorityTransport(inner)
        result = await low.run("here", ["sh", "-c", "nice; ionice"], timeout_s=10)
        assert (result.exit_status, result.stdout) == (0, b"19\nidle\n"), result.stderr
        # The command is shown as given, not with the priority words: findings name the probe.
        script = await low.run_script("here", "nice; ionice; echo $((6 * 7))", timeout_s=10)
        assert script.stdout == b"19\nidle\n42\n"
        plain = await inner.run("here", ["nice"], timeout_s=10)
        assert plain.stdout != b"19\n"  # the wrapper, not the test's own priority, lowered it


async def test_a_command_under_nice_still_times_out_and_leaves_nothing(tmp_path: Path) -> None:
    # nice and ionice exec the command: the session the transport kills on a timeout is still the command's.
    marker = tmp_path / "pids"
    async with LocalTransport("here", kill_grace_s=1) as inner:
        low = LowPriorityTransport(inner)
        with pytest.raises(TransportError) as caught:
            await low.run("here", ["sh", "-c", f"sleep 300 & echo $! >{marker}; sleep 300"], timeout_s=0.5)
        assert caught.value.kind is ErrorKind.TIMEOUT
    child = int(marker.read_text())
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]


def test_the_stored_evidence_says_the_probes_ran_at_low_priority(tmp_path: Path) -> None:
    """What the history keeps as each probe's command is what ran on the node: under nice and ionice."""
    import asyncio

    from console.checks import load_packs
    from console.inventory import load_inventory
    from console.service.assembly import EngineSpec, build_engine
    from console.sim.launcher import start_sim_cluster
    from console.store import Store
    from console.sweep import ProbeSet
    from console.transport.base import shown_command

    assert shown_command(object(), "amd-smi list --json") == "amd-smi list --json"
    scenario = tmp_path / "s.toml"
    scenario.write_text('time_factor = 400\n[[nodes]]\nnames = "sim001"\n')
    with start_sim_cluster(scenario=scenario) as sim:
        inventory = load_inventory(sim.inventory_path)
        store = Store(tmp_path / "h.sqlite")
        engine = build_engine(EngineSpec(inventory, load_packs(), store.path, low_priority=True), store)

        async def sweep() -> int:
            try:
                return (await engine.run(level=ProbeSet.QUICK)).sweep_id
            finally:
                await engine.close()

        sweep_id = asyncio.run(sweep())
        commands = [r[0] for r in store.conn.execute("SELECT command FROM probe_runs WHERE sweep_id = ?", (sweep_id,))]
        store.close()
    assert commands and all(c.startswith("nice -n 19 ionice -c 3 ") for c in commands), commands[:3]
