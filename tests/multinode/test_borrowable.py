"""Which baseline nodes a second pass may borrow: PASS in the accepted baseline is not enough once
something newer is known against a node (review finding on ``console.sweep.multinode.borrowable``).

A node that FAILed or was UNKNOWN in a later sweep, has an open remediation case, or is held drained by
the console is never lent as a known-good partner; a later PASS or WARN keeps it eligible.
"""

from __future__ import annotations

from pathlib import Path

from console.inventory import Inventory, load_inventory
from console.model.findings import NodeVerdict, Remedy, Status
from console.remediation.cases import close_case, open_case
from console.store import Store
from console.store.lifecycle import Stage
from console.sweep.multinode import borrowable

CLUSTER = """
name = "lab"

[[pools]]
name = "mi300x"
gpu_model = "MI300X"
nodes = "gpu[001-008]"
"""


def _inventory(tmp_path: Path) -> Inventory:
    path = tmp_path / "cluster.toml"
    path.write_text(CLUSTER)
    return load_inventory(path)


def _sweep(store: Store, verdicts: dict[str, Status], level: str = "standard") -> int:
    sweep_id = store.start_sweep(level, "lab", ",".join(verdicts))
    for node, status in verdicts.items():
        store.record_node(sweep_id, "mi300x", NodeVerdict(node=node, status=status), {})
    store.finish_sweep(sweep_id, "done", {})
    return sweep_id


def test_a_baseline_node_with_newer_bad_news_is_never_borrowed(tmp_path: Path) -> None:
    inventory = _inventory(tmp_path)
    store = Store(tmp_path / "h.sqlite")
    base = _sweep(store, {f"gpu00{i}": Status.PASS for i in range(1, 9)})
    store.accept("mi300x", base, "ops")
    assert borrowable(store, inventory, "mi300x", swept=["gpu001"]) == (base, [f"gpu00{i}" for i in range(2, 9)])

    _sweep(store, {"gpu002": Status.FAIL, "gpu003": Status.UNKNOWN, "gpu004": Status.WARN, "gpu005": Status.PASS})
    open_case(store, "gpu006", user="ops", action=Remedy.REBOOT, sweep_id=None, findings=[], audit_id=None)
    store.record_drains(["gpu007"], "console: FAIL", user="ops", sweep_id=None, audit_id=None)

    # Later FAIL, later UNKNOWN, open case, console drain: out. Later WARN or PASS: still known-good.
    assert borrowable(store, inventory, "mi300x", swept=["gpu001"]) == (base, ["gpu004", "gpu005", "gpu008"])

    # A closed case and an ended drain no longer count against a node, and a newer PASS supersedes a FAIL.
    close_case(store, "gpu006", Stage.RETURNED, user="ops", note="fixed", audit_id=None)
    store.end_drains(["gpu007"], "resumed")
    _sweep(store, {"gpu002": Status.PASS})
    assert borrowable(store, inventory, "mi300x", swept=["gpu001"]) == (
        base,
        ["gpu002", "gpu004", "gpu005", "gpu006", "gpu007", "gpu008"],
    )
