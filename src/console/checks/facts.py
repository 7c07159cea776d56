"""What a sweep learned about one node, assembled from its probe outcomes for the checks to read.

GPU records from several amd-smi subcommands are joined on PCI address; a probe that produced no
usable output keeps the reason (timeout, unreachable, tool missing, parse error) so a check that
needs it reports UNKNOWN with that reason instead of passing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from console.inventory.model import Node, StackPin
from console.model.findings import Scope, Subject
from console.model.framework import TorchProbeResult
from console.model.gpu import GpuRecord, LinkStatus, StackVersions, XgmiLink, merge_gpu_records
from console.model.host import NicPort, OsRelease
from console.model.workload import image_reference
from console.probes.base import ParsedOutput
from console.probes.ids import ProbeId

if TYPE_CHECKING:
    from console.checks.metrics import Observation

# The start of a probe's problem when its tool refused the options as unknown: an older release without
# that subcommand or flag (``amd-smi xgmi --link-status`` came with ROCm 6.4). The checks that need it
# then SKIP with that reason: the node is not the problem, and it must not read as unchecked (UNKNOWN).
UNSUPPORTED = "not supported by the tool on this node"


@dataclass(frozen=True)
class ProbeOutcome:
    """One probe on one node: the parsed result, or why there is none."""

    probe: str
    parsed: Any | None = None
    problem: str | None = None
    run_id: int | None = None
    duration_s: float = 0.0

    @property
    def usable(self) -> bool:
        """True when there is parsed output to read."""
        return self.parsed is not None and self.problem is None

    @property
    def why(self) -> str:
        """``amdsmi.list: timed out on the node after 30 s``: the probe and why it gave nothing to read."""
        return f"{self.probe}: {self.problem or 'no output'}"

    @property
    def unsupported(self) -> bool:
        """True when the node's tool does not know this probe's subcommand or options."""
        return (self.problem or "").startswith(UNSUPPORTED)


@dataclass
class NodeFacts:
    """Everything the checks may read about one node."""

    node: Node
    pin: StackPin = field(default_factory=StackPin)
    outcomes: dict[str, ProbeOutcome] = field(default_factory=dict)
    gpus: list[GpuRecord] = field(default_factory=list)
    xgmi: list[XgmiLink] = field(default_factory=list)
    stack: dict[str, str] = field(default_factory=dict)
    nics: list[NicPort] | None = None
    nic_rates: list[NicPort] | None = None  # ibv_devinfo -v: the same ports, with their link rate
    # (source, destination) GPU -> what each xgmi table said of a link when they disagree ("xgmi -l: D; ...").
    xgmi_disagreements: dict[tuple[int | None, int | None], str] = field(default_factory=dict)
    # Earlier readings from the history, for checks of change (``console.model.kept.HISTORY_CHECKS``):
    # check id -> (that sweep, {GPU key (PCI address) -> (value, when)}). Empty without a history database.
    previous: dict[str, tuple[int, dict[str, tuple[float, float]]]] = field(default_factory=dict)
    # Readings already made, by metric name, read instead of the metric: a node judged on the node sends
    # the figures the console's own checks (pool medians, changes since the last sweep) still compare.
    readings: dict[str, list[Observation]] = field(default_factory=dict)
    # The GPUs each amd-smi probe named in its answer, (indices, PCI addresses): a GPU one subcommand leaves
    # out has no reading of it, whatever the others say (``left_out``).
    named: dict[str, tuple[frozenset[int], frozenset[str]]] = field(default_factory=dict)
    # One Subject per GPU, link or port, shared by every finding naming it (findings never modify
    # their subject): a node's ~280 findings otherwise carry ~280 copies of ~70 subjects.
    _subjects: dict[tuple[Any, ...], Subject] = field(default_factory=dict, repr=False, compare=False)

    def subject(self, scope: Scope = Scope.NODE, **where: Any) -> Subject:
        """The node's Subject for ``scope`` and ``where`` (gpu, gpu_bdf, peer, peer_bdf, port)."""
        key = (scope, *sorted(where.items()))
        found = self._subjects.get(key)
        if found is None:
            found = self._subjects[key] = Subject(node=self.node.name, scope=scope, **where)
        return found

    def parsed(self, probe: str) -> Any | None:
        """Parsed output of ``probe`` when usable."""
        outcome = self.outcomes.get(probe)
        return outcome.parsed if outcome is not None and outcome.usable else None

    def missing_reason(self, probes: Sequence[str]) -> str | None:
        """Why one of ``probes`` has no usable output (None when all are usable or not run)."""
        failed = self.failed(probes)
        return failed[0].why if failed else None

    def failed(self, probes: Sequence[str]) -> list[ProbeOutcome]:
        """Outcomes of ``probes`` that ran in this sweep and gave nothing to read."""
        return [o for p in probes if (o := self.outcomes.get(p)) is not None and not o.usable]

    def answered(self, probes: Sequence[str]) -> bool:
        """True when one of ``probes`` ran and gave output to read."""
        return any((o := self.outcomes.get(p)) is not None and o.usable for p in probes)

    def left_out(self, probe: str, gpu: GpuRecord) -> str | None:
        """Why ``gpu`` has no reading of ``probe``: the probe answered and named other GPUs, not this one.

        None when it named this GPU, or named none at all (a probe that did not answer says so itself).
        """
        named = self.named.get(probe)
        if named is None or not (named[0] or named[1]):
            return None
        indices, bdfs = named
        bdf, index = gpu.identity.bdf, gpu.identity.index
        if (bdf is not None and bdf in bdfs) or (index is not None and index in indices):
            return None
        if bdf is not None and bdfs and index is None:
            return f"{probe}: not in its output"
        return f"{probe}: GPU {index if index is not None else bdf} not in its output"

    def ran(self, probes: Sequence[str]) -> bool:
        """True when every probe in ``probes`` was attempted in this sweep."""
        return all(p in self.outcomes for p in probes)


_AMDSMI_GPU_PROBES = (
    ProbeId.AMDSMI_LIST,
    ProbeId.AMDSMI_STATIC,
    ProbeId.AMDSMI_METRIC,
    ProbeId.AMDSMI_FIRMWARE,
    ProbeId.AMDSMI_BAD_PAGES,
)


def build_facts(node: Node, pin: StackPin, outcomes: dict[str, ProbeOutcome]) -> NodeFacts:
    """Join the probe outcomes of one node into ``NodeFacts``."""
    facts = NodeFacts(node=node, pin=pin, outcomes=dict(outcomes))
    records: list[GpuRecord] = []
    for probe in _AMDSMI_GPU_PROBES:
        parsed = facts.parsed(probe)
        if isinstance(parsed, ParsedOutput) and parsed.data is not None:
            named = getattr(parsed.data, "gpus", []) or []
            records.extend(named)
            facts.named[probe] = (
                frozenset(g.identity.index for g in named if g.identity.index is not None),
                frozenset(g.identity.bdf for g in named if g.identity.bdf is not None),
            )
    facts.gpus = _with_static_power_caps(
        facts,
        sorted(
            merge_gpu_records(records, same_tool=True), key=lambda g: (g.identity.index is None, g.identity.index or 0)
        ),
    )
    facts.xgmi = _xgmi_links(facts, facts.xgmi_disagreements)
    facts.stack = _stack(facts)
    nics = facts.parsed(ProbeId.HOST_NIC)
    facts.nics = list(nics) if isinstance(nics, list) else None
    rates = facts.parsed(ProbeId.HOST_NIC_RATE)
    facts.nic_rates = list(rates) if isinstance(rates, list) else None
    return facts


def static_power_caps(facts: NodeFacts) -> dict[str, float]:
    """PCI address -> the power cap ``amd-smi static --limit`` states (the narrowed metric states none)."""
    static = facts.parsed(ProbeId.AMDSMI_STATIC)
    details = getattr(getattr(static, "data", None), "details", None) or []
    return {d.bdf: d.power_cap_w for d in details if d.bdf is not None and d.power_cap_w is not None}


def _with_static_power_caps(facts: NodeFacts, gpus: list[GpuRecord]) -> list[GpuRecord]:
    """``gpus`` with the power cap ``amd-smi static`` states where the (narrowed) metric has none.

    The power cap check read 750 W from static while the console's GPU table showed n/a from metric.
    Records may be shared with a reused parse, so a filled one is a copy.
    """
    caps = static_power_caps(facts)
    filled = []
    for gpu in gpus:
        cap = caps.get(gpu.identity.bdf or "")
        metrics = gpu.metrics
        if cap is not None and metrics is not None and metrics.power_cap_w is None:
            filled.append(gpu.model_copy(update={"metrics": metrics.model_copy(update={"power_cap_w": cap})}))
        else:
            filled.append(gpu)
    return filled


# What one link table may fill in from the other (not the reasons dict, copied once per link above).
_LINK_FIELDS = tuple(name for name in XgmiLink.model_fields if name != "unavailable")


def _xgmi_links(facts: NodeFacts, disagreements: dict[tuple[int | None, int | None], str]) -> list[XgmiLink]:
    """Links from the metric table and the link-status table, joined per (source, destination) GPU.

    Each table fills in what the other left out; a link's state is what both tables printed for it, and
    where they printed different states (two reads moments apart: a link that dropped between them), a down
    or disabled link from either wins and anything else is UNKNOWN, never the up of one of them. What each
    said goes into ``disagreements``.
    """
    joined: dict[tuple[int | None, int | None], XgmiLink] = {}
    said: dict[tuple[int | None, int | None], list[tuple[str, LinkStatus]]] = {}
    for probe in (ProbeId.AMDSMI_XGMI, ProbeId.AMDSMI_XGMI_STATUS):
        parsed = facts.parsed(probe)
        if not isinstance(parsed, ParsedOutput) or parsed.data is None:
            continue
        links = getattr(parsed.data, "xgmi_links", []) or []
        # ``xgmi -l`` prints a state (or N/A) for every link it lists; the metric table only when it has a
        # state column (ROCm 6.4 on), and then it states U, D or X for some link.
        printed = probe == ProbeId.AMDSMI_XGMI_STATUS or any(link.status is not LinkStatus.UNKNOWN for link in links)
        for link in links:
            key = (link.src_index, link.dst_index)
            if printed:
                said.setdefault(key, []).append((_TABLE_NAMES[probe], link.status))
            have = joined.get(key)
            if have is None:
                # Only scalars and the reasons dict get changed below: copy those, not the whole tree.
                joined[key] = link.model_copy(update={"unavailable": dict(link.unavailable)})
                continue
            for name in _LINK_FIELDS:
                if getattr(have, name) in (None, LinkStatus.UNKNOWN):
                    setattr(have, name, getattr(link, name))
    for key, states in said.items():
        if len({status for _, status in states}) > 1:
            joined[key].status = _agreed([status for _, status in states])
            disagreements[key] = "; ".join(
                f"{table}: {_STATE_WORDS.get(status, status.value)}" for table, status in states
            )
    return sorted(joined.values(), key=lambda link: (link.src_index or 0, link.dst_index or 0))


_TABLE_NAMES = {ProbeId.AMDSMI_XGMI: "amd-smi xgmi", ProbeId.AMDSMI_XGMI_STATUS: "amd-smi xgmi -l"}
_STATE_WORDS = {LinkStatus.UP: "U", LinkStatus.DOWN: "D", LinkStatus.DISABLED: "X", LinkStatus.UNKNOWN: "N/A"}


def _agreed(states: list[LinkStatus]) -> LinkStatus:
    """One state from the different ones two tables printed for a link: down or disabled if either says so."""
    for bad in (LinkStatus.DOWN, LinkStatus.DISABLED):
        if bad in states:
            return bad
    return LinkStatus.UNKNOWN


def _framework_image(parsed: Any) -> dict[str, str]:
    """The image the framework probe ran in (``[pools.framework] container``), and whether it was named by
    digest, tag or .sif file: a tag names whatever the node held under it that day, a digest one image."""
    result = getattr(parsed, "data", None) if isinstance(parsed, ParsedOutput) else None
    if not isinstance(result, TorchProbeResult) or result.container_image is None:
        return {}
    runtime = result.container_runtime or ""
    image = result.container_image
    seen = {"framework_image": image, "framework_image_ref": image_reference(runtime, image)}
    if seen["framework_image_ref"] == "digest":
        # What a pool pin's ``image_digest`` holds (``sha256:...``): a digest is observed, a tag never is.
        seen["image_digest"] = "sha256:" + image.split("@sha256:", 1)[1]
    return seen


def _stack(facts: NodeFacts) -> dict[str, str]:
    stack: dict[str, str] = {}
    os_release = facts.parsed(ProbeId.HOST_OS)
    if isinstance(os_release, OsRelease) and os_release.label():
        stack["os"] = os_release.label() or ""
    for key, probe in (
        ("kernel", ProbeId.HOST_KERNEL),
        ("rocm", ProbeId.HOST_ROCM),
        ("amdgpu_driver", ProbeId.HOST_AMDGPU),
    ):
        value = facts.parsed(probe)
        if isinstance(value, str) and value:
            stack[key] = value
    version = facts.parsed(ProbeId.AMDSMI_VERSION)
    versions = getattr(getattr(version, "data", None), "versions", None) if version is not None else None
    if isinstance(versions, StackVersions):
        if versions.amdsmi_tool:
            stack["amdsmi"] = versions.amdsmi_tool
        if versions.amdgpu_driver and "amdgpu_driver" not in stack:
            stack["amdgpu_driver"] = versions.amdgpu_driver
        if versions.rocm and "rocm" not in stack:
            stack["rocm"] = versions.rocm
    # ROCm release files read "6.4.1-120"; pins and amd-smi say "6.4.1".
    if "rocm" in stack:
        stack["rocm"] = stack["rocm"].split("-", 1)[0]
    for key, probe in (
        ("transferbench", ProbeId.TB_A2A),
        ("rccl", ProbeId.RCCL_ALL_REDUCE),
        ("rvs", ProbeId.RVS_LEVEL3),
        ("torch", ProbeId.FRAMEWORK_TORCH),
    ):
        parsed = facts.parsed(probe)
        if isinstance(parsed, ParsedOutput) and parsed.tool_version:
            stack[key] = parsed.tool_version
    stack.update(_framework_image(facts.parsed(ProbeId.FRAMEWORK_TORCH)))
    firmware_sets = {frozenset(g.firmware.items()) for g in facts.gpus if g.firmware}
    if len(firmware_sets) == 1:
        for block, fw_version in next(iter(firmware_sets)):
            stack[f"firmware.{block}"] = fw_version
    return stack
