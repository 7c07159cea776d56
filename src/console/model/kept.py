"""Which PASS findings are kept whole, with their evidence, and which are only counted per check.

A node passes ~300 checks per GPU, link and port; kept whole, each PASS is a finding with its evidence
in memory, in the store and on the engine's wire, ~1 KB apiece for a 1,024-node sweep's ~300 MB. Every
engine mode (in the console's process, in a worker, on the node through Slurm) counts them instead
(``NodeVerdict.passed``), except those whose figure something reads again:

* the history's checks of change (``HISTORY_CHECKS``: the correctable ECC count a later sweep compares);
* an error counter that is not 0, so ``diff`` shows it move (one at 0, by far the most common PASS, is
  counted: ``diff`` then shows no change of it);
* a PASS whose message remarks on something (a CPER record ignored as older than the window);
* a performance test's node-wide figure (RCCL, TransferBench, RVS), which ``diff`` compares;
* the framework's figures per GPU (GEMM TFLOPS), which acceptance averages over a pool's nodes to accept
  a run or call it regressed.
"""

from __future__ import annotations

from typing import Any

from console.model.family import Family
from console.model.findings import Scope

# Checks whose earlier figures a check of change reads (the engine loads them from the history).
HISTORY_CHECKS = ("ecc.correctable",)

# Families whose figures are measured performance. Telemetry (temperatures, power, clocks) moves between
# any two sweeps; it matters only when it crosses a limit, and then the finding's status changed.
FIGURE_FAMILIES: frozenset[str] = frozenset({Family.RCCL, Family.TRANSFERBENCH, Family.RVS})
# Families whose every finding is a workload's run that acceptance reads (``pool_run``), at any scope.
RUN_FAMILIES: frozenset[str] = frozenset({Family.FRAMEWORK})
# Error counters only grow: any change is shown, with no noise band (30 -> 95 correctable ECC errors
# between two sweeps stayed PASS and diff showed nothing). A counter that went down was reset.
COUNTER_CHECKS = frozenset(
    {
        "ecc.correctable",
        "ecc.uncorrectable",
        "ecc.deferred",
        "ras.bad_pages_retired",
        "ras.bad_pages_pending",
        "pcie.replay",
        "pcie.l0_to_recovery",
        "pcie.nak_sent",
        "pcie.nak_received",
    }
)


def kept_whole(check_id: str, family: str, observed: Any, scope: Scope, *, remarked: bool) -> bool:
    """Whether a PASS of ``check_id`` that observed ``observed`` on a subject of ``scope`` is kept whole;
    ``remarked``: its message says something besides the value (a CPER record ignored as too old).

    Decided from what the check is about to record, so a counted PASS is never built at all."""
    if remarked or check_id in HISTORY_CHECKS or family in RUN_FAMILIES:
        return True
    if check_id in COUNTER_CHECKS:
        return observed not in (0, 0.0, None)
    return family in FIGURE_FAMILIES and scope is Scope.NODE
