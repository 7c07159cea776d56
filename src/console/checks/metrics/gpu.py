"""GPU metrics: what amd-smi says of each GPU and of the node's GPUs (count, memory, temperatures, PCIe,
power, throttling, identity) for the inventory, memory, pcie, thermal and power families."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from console.checks.facts import static_power_caps
from console.checks.metrics.reading import gpu_field_metric, node_subject, per_gpu, read_field
from console.checks.metrics.registry import NO_VARIABLES, Absent, Observation, Unread, Variables, metric, register
from console.model.gpu import GpuRecord
from console.probes.base import ParsedOutput
from console.probes.ids import ProbeId
from console.probes.values import said_no_value

if TYPE_CHECKING:
    from console.checks.facts import NodeFacts

for _name, _source, _attr in (
    ("gpu.vram_total_bytes", "metrics", "vram_total_bytes"),
    ("gpu.hotspot_temp_c", "metrics", "hotspot_temp_c"),
    ("gpu.mem_temp_c", "metrics", "mem_temp_c"),
    ("gpu.pcie_speed_gts", "pcie", "speed_gts"),
    ("gpu.pcie_width", "pcie", "width"),
    ("gpu.pcie_l0_to_recovery", "pcie", "l0_to_recovery_count"),
    ("gpu.pcie_nak_sent", "pcie", "nak_sent_count"),
    ("gpu.pcie_nak_received", "pcie", "nak_received_count"),
    ("gpu.pcie_replay", "pcie", "replay_count"),
):
    register(_name, gpu_field_metric(_source, _attr, ProbeId.AMDSMI_METRIC))


@metric("gpu.power_cap_w")
def power_cap(facts: NodeFacts, _: Variables) -> list[Observation]:
    """Configured power cap per GPU: ``static --limit`` states it (the narrowed metric does not), else metric's."""
    caps = static_power_caps(facts)

    def read(gpu: GpuRecord) -> tuple[Any, str | None]:
        cap = caps.get(gpu.identity.bdf or "")
        return (cap, None) if cap is not None else read_field(gpu.metrics, "power_cap_w", "no power limits reported")

    return per_gpu(facts, ProbeId.AMDSMI_STATIC, read)


@metric("node.gpu_count")
def gpu_count(facts: NodeFacts, _: Variables) -> list[Observation]:
    """GPUs amd-smi enumerates (list, else static); physical GPUs, or logical partitions when partitioned."""
    for probe in (ProbeId.AMDSMI_LIST, ProbeId.AMDSMI_STATIC):
        parsed = facts.parsed(probe)
        if isinstance(parsed, ParsedOutput):
            count = parsed.summary.get("gpu_count")
            if isinstance(count, int):
                detail = "; ".join(parsed.errors[:2]) or None
                return [Observation(node_subject(facts), count, None, probe, detail=detail)]
    missing = facts.missing_reason([ProbeId.AMDSMI_LIST]) or "amd-smi list not run"
    return [Observation(node_subject(facts), None, missing)]


def listed_gpus(facts: NodeFacts) -> int | None:
    """How many GPUs amd-smi lists on the node, None when it did not say (what a test's coverage is told from)."""
    return next((o.value for o in gpu_count(facts, NO_VARIABLES) if isinstance(o.value, int)), None)


@metric("node.amdsmi_ok")
def amdsmi_ok(facts: NodeFacts, _: Variables) -> list[Observation]:
    """False when any amd-smi output shows the tool failed (driver not loaded, no GPU, errors)."""
    seen = False
    for probe, outcome in facts.outcomes.items():
        # The CPER listing runs under sudo: its refusal says nothing about amd-smi, and its checks say it.
        if not probe.startswith("amdsmi.") or probe == ProbeId.AMDSMI_CPER or not outcome.usable:
            continue
        parsed = outcome.parsed
        if isinstance(parsed, ParsedOutput):
            seen = True
            if not parsed.ok:
                detail = "; ".join(parsed.errors[:3]) or "amd-smi reported a failure"
                return [Observation(node_subject(facts), False, None, probe, detail=detail)]
    if not seen:
        missing = facts.missing_reason([ProbeId.AMDSMI_LIST]) or "amd-smi not run"
        return [Observation(node_subject(facts), None, missing)]
    return [Observation(node_subject(facts), True, None, ProbeId.AMDSMI_LIST)]


# PHOT_TVIOL is PROCHOT as the parser names it (``amd-smi monitor --violation``'s name, from ``prochot_*``).
_THERMAL = (
    "TVIOL",
    "HBM_TVIOL",
    "VR_TVIOL",
    "PHOT_TVIOL",
    "PROCHOT",
    "THERMAL",
    "SOCKET_THERMAL",
    "HBM_THERMAL",
    "VR_THERMAL",
)
_POWER = ("PVIOL", "PPT", "POWER", "SOCKET_POWER")


def _violation(gpu: GpuRecord, names: Iterable[str]) -> tuple[Any, str | None]:
    if gpu.metrics is None:
        return None, Absent("no metric data")
    wanted = {n.upper() for n in names}
    lost = [
        f"{key.removeprefix('violation.')}: {why}"
        for key, why in gpu.metrics.unavailable.items()
        if key.startswith("violation.") and key.removeprefix("violation.").upper() in wanted and not said_no_value(why)
    ]
    if lost:
        # One counter garbled is a share unknown: the highest of the others is no maximum.
        return None, Unread("; ".join(lost))
    values = [v.percent for v in gpu.metrics.violations if v.name.upper() in wanted and v.percent is not None]
    if not values:
        return None, gpu.metrics.unavailable.get("violations", Absent("violation counters not reported"))
    return max(values), None


@metric("gpu.thermal_violation_pct")
def thermal_violation(facts: NodeFacts, _: Variables) -> list[Observation]:
    """Highest thermal throttle residency (socket, HBM, VR, PROCHOT) in percent of the window."""
    return per_gpu(facts, ProbeId.AMDSMI_METRIC, lambda g: _violation(g, _THERMAL))


@metric("gpu.power_violation_pct")
def power_violation(facts: NodeFacts, _: Variables) -> list[Observation]:
    """Power-cap throttle residency (PVIOL/PPT) in percent of the window."""
    return per_gpu(facts, ProbeId.AMDSMI_METRIC, lambda g: _violation(g, _POWER))


@metric("gpu.device_id")
def device_id(facts: NodeFacts, _: Variables) -> list[Observation]:
    """PCI device id as lower-case hex (``0x74a1``)."""

    def read(gpu: GpuRecord) -> tuple[Any, str | None]:
        value, missing = read_field(gpu.identity, "device_id", "no identity")
        return (value.lower() if isinstance(value, str) else value), missing

    return per_gpu(facts, ProbeId.AMDSMI_STATIC, read)
