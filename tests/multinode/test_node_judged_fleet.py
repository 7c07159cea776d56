"""Pool medians when the nodes judge themselves: the console compares the readings their reports carry.

A node cannot judge ``rccl.busbw_fleet`` or ``tb.a2a_fleet`` alone (they compare it with its pool), so
its report carries the figures, and the console's fleet pass reads them as it reads parsed outputs.
At the standard level (RCCL and TransferBench on every node: ~5 s of check-local per node here).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.model.findings import Status
from console.sim.faults import Fault, FaultKind
from console.store import Store
from tests.multinode.localnodes import local_cluster
from tests.multinode.test_node_judged import comparable, node_line, pass_counts, srun_stdout, sweep, without_raw

NAMES = ["gpu001", "gpu002", "gpu003", "gpu004"]  # the fewest the pool checks compare (min_fleet 4)


def test_pool_medians_of_node_judged_nodes_are_those_judged_here(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    slow = Fault(kind=FaultKind.RCCL_LOW_BUSBW, node="gpu004", params={"factor": 0.8})
    inventory = local_cluster(tmp_path, NAMES, [slow])
    # One run per node (RCCL's figures vary from run to run): with every raw output, and as it would
    # have come without --raw (a PASS node sends none; the rest of the report is the same).
    raw = [node_line(tmp_path, inventory, n, capsys, "--probes", "standard", "--raw") for n in NAMES]
    lines = {"raw": raw, "compact": [without_raw(line) for line in raw]}
    healthy = json.loads(lines["compact"][0])
    assert healthy["status"] == "PASS" and healthy["raw"] is None
    assert set(healthy["readings"]) == {"rccl.busbw_inplace_max_gbps", "tb.a2a_min_gbps"}
    merged = sweep(inventory, Store(tmp_path / "m.db"), srun_stdout(lines["compact"]), level="standard")
    central = sweep(inventory, Store(tmp_path / "c.db"), srun_stdout(lines["raw"]), level="standard")
    assert merged["gpu004"].status is Status.FAIL and merged["gpu001"].status is Status.PASS
    for node in NAMES:
        a, b = central[node], merged[node]
        assert (a.status, a.families, a.reason) == (b.status, b.families, b.reason), node
        assert sorted(map(comparable, (f for f in a.findings if f.status is not Status.PASS))) == sorted(
            map(comparable, (f for f in b.findings if f.status is not Status.PASS))
        ), node
        assert pass_counts(a) == pass_counts(b), node
    # gpu004 is judged against the pool's median of the others' figures, read from their reports.
    fleet = next(f for f in merged["gpu004"].findings if f.check_id == "rccl.busbw_fleet")
    assert fleet.status is Status.FAIL and "of pool median" in fleet.message
    assert [f.status for f in merged["gpu001"].findings if f.check_id == "rccl.busbw_fleet"] == [Status.PASS]
