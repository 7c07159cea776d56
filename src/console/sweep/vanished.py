"""Which GPU fell off: a node that lists fewer GPUs than expected is compared with its last good list.

The count check says "7 (fail if != 8)"; the operator needs the slot to reseat or RMA. The history
database holds every earlier ``amd-smi list`` of the node, so the GPUs it listed then and does not now
are named, with their PCI address and a link to the output that still showed them.
"""

from __future__ import annotations

from console.checks import NodeFacts
from console.inventory.model import Node
from console.model.family import Family
from console.model.findings import Evidence, Finding, Remedy, Scope, Status
from console.probes.base import ParsedOutput, ParseError
from console.probes.ids import ProbeId
from console.store import Store
from console.sweep.catalog import PROBES_BY_ID

PROBE = ProbeId.AMDSMI_LIST


def vanished_gpus(store: Store | None, node: Node, facts: NodeFacts, sweep_id: int) -> list[Finding]:
    """One FAIL per GPU the node's last good ``amd-smi list`` before ``sweep_id`` showed and this one lacks."""
    listed = facts.parsed(PROBE)
    if store is None or not isinstance(listed, ParsedOutput) or len(facts.gpus) >= node.gpu_count:
        return []  # the common case answers without reading the database
    row = store.previous_good_run(node.name, PROBE, before_sweep=sweep_id)
    if row is None:
        return []
    stored = store.probe_output(int(row["id"]))
    if stored is None:
        return []
    try:
        before = PROBES_BY_ID[PROBE].parse(stored[0].decode("utf-8", errors="replace"))
    except ParseError:
        return []
    now = {gpu.identity.bdf for gpu in facts.gpus if gpu.identity.bdf}
    findings = []
    for gpu in getattr(before.data, "gpus", []) or []:
        bdf, index = gpu.identity.bdf, gpu.identity.index
        if bdf is None or bdf in now:
            continue
        findings.append(
            Finding(
                check_id="inventory.gpu_missing",
                family=Family.INVENTORY,
                status=Status.FAIL,
                subject=facts.subject(Scope.GPU, gpu=index, gpu_bdf=bdf),
                message=f"GPU {index} ({bdf}) was listed in sweep {row['sweep_id']} and is gone now",
                evidence=Evidence(
                    action=Remedy.REBOOT,
                    action_source="estimate: a GPU gone from the bus often returns at a cold reboot; if not, reseat"
                    " it (docs/sources/actions.md#inventory-and-driver)",
                    observed="absent",
                    expected="present",
                    source=f"amd-smi list of sweep {row['sweep_id']}",
                    probe=PROBE,
                    probe_run_id=int(row["id"]),
                ),
            )
        )
    return findings
