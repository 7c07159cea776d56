"""Named metrics the check packs refer to: each reads a node's ``NodeFacts`` and its pack's variables and
yields observations.

An observation names its subject (node, GPU, link or NIC port), the value, and when the value is None,
why (the tool's own ``N/A`` reason or the missing probe). Metrics never judge; checks do.

One module per family of what they read, each registering its metrics in ``METRICS`` by the name packs
use: ``gpu`` (amd-smi per GPU: inventory, memory, PCIe, thermal, power), ``ras`` (ECC, retired pages,
CPER), ``links`` (XGMI and NICs), ``benchmarks`` (RCCL, TransferBench, RVS), ``framework`` (PyTorch) and
``stack`` (software and firmware versions). A metric is ``(facts, variables) -> list[Observation]``: the
pack's variables are passed to it, never written into the facts.
"""

from console.checks.metrics import benchmarks, framework, gpu, links, ras, stack
from console.checks.metrics.ras import CHANGE_METRICS
from console.checks.metrics.registry import (
    METRICS,
    NO_VARIABLES,
    Absent,
    Metric,
    Observation,
    Unread,
    Variables,
    metric,
)

# The family modules register their metrics when imported; named here so that importing the package
# always loads every one of them.
FAMILY_MODULES = (gpu, ras, links, benchmarks, framework, stack)

__all__ = [
    "CHANGE_METRICS",
    "FAMILY_MODULES",
    "METRICS",
    "NO_VARIABLES",
    "Absent",
    "Metric",
    "Observation",
    "Unread",
    "Variables",
    "metric",
]
