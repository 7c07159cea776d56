"""A node given up at its probe-timeout budget is said to be stopped there only when it was seen running there.

Under ``--probe-timeout`` a dead node (its sshd hung: TCP accepted, no SSH banner ever) used its whole
budget connecting and was reported "no answer within 1.05 s (probe timeout; stopped on the node)", a
claim about a node the console never reached (issue 34).
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from console.checks import load_packs
from console.inventory import load_inventory
from console.model.findings import Status
from console.sweep import SweepEngine
from console.transport.connect import transport_for


def test_a_node_that_never_answers_is_not_reported_stopped_on_the_node(tmp_path: Path) -> None:
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(8)  # the kernel completes the handshake; nothing ever speaks SSH
        port = hung.getsockname()[1]
        inventory_path = tmp_path / "cluster.toml"
        inventory_path.write_text(
            f'name = "dead"\n[ssh]\nport = {port}\nconnect_timeout_s = 30\n'
            '[[pools]]\nname = "p"\ngpu_model = "MI300X"\nnodes = "127.0.0.1"\n'
        )
        inventory = load_inventory(inventory_path)

        async def sweep() -> str:
            engine = SweepEngine(inventory, transport_for(inventory), load_packs(), probe_timeout_cap_s=1.0)
            try:
                result = await engine.run(level="quick")
            finally:
                await engine.close()
            verdict = result.verdicts["127.0.0.1"]
            assert verdict.status is Status.UNKNOWN
            return verdict.reason

        reason = asyncio.run(sweep())
    assert "stopped on the node" not in reason, reason
    assert "unreachable or dead" in reason and "nothing was started there" in reason, reason
