"""Framework metrics: what the PyTorch probe (``console.probes.pytorch``) says of the node's torch, the
devices it sees, its GEMMs and its one-node all-reduce (framework family), whose GEMM figures acceptance
averages over a pool's nodes (``console.model.kept``). A declared workload's own runs are judged in
``console.checks.workload``."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from console.checks.metrics.gpu import listed_gpus
from console.checks.metrics.reading import node_subject
from console.checks.metrics.registry import Metric, Observation, Variables, metric, register
from console.model.findings import Scope, Subject
from console.model.gpu import GpuRecord
from console.probes.ids import ProbeId

if TYPE_CHECKING:
    from console.checks.facts import NodeFacts

_MODEL_TOKEN = re.compile(r"\bMI\d{3}[A-Z]*\b", re.IGNORECASE)


def _torch_result(facts: NodeFacts) -> tuple[Any, Observation | None]:
    """The framework probe's result, or the one node observation saying why there is none."""
    parsed = facts.parsed(ProbeId.FRAMEWORK_TORCH)
    data = getattr(parsed, "data", None)
    if data is None:
        missing = facts.missing_reason([ProbeId.FRAMEWORK_TORCH]) or "framework.torch not run"
        return None, Observation(node_subject(facts), None, missing, ProbeId.FRAMEWORK_TORCH)
    return data, None


def _torch_gpu(facts: NodeFacts, device: Any) -> tuple[Subject, GpuRecord | None]:
    """The GPU a torch device is: by PCI address when torch reports it, else by enumeration index (HIP and
    amd-smi both enumerate in PCI order)."""
    record = None
    if device.pci_bus_id:
        record = next((g for g in facts.gpus if g.identity.bdf == device.pci_bus_id.lower()), None)
    elif device.index < len(facts.gpus):
        record = facts.gpus[device.index]
    bdf = record.identity.bdf if record is not None else device.pci_bus_id
    return facts.subject(Scope.GPU, gpu=device.index, gpu_bdf=bdf), record


def _no_devices(facts: NodeFacts, data: Any) -> list[Observation]:
    """The node observation of a per-GPU framework metric when torch has no device to report on: why."""
    if data.devices:
        return []
    why = _torch_not_imported(data) or f"torch sees no GPU (torch.cuda.is_available() = {data.torch.cuda_available})"
    return [Observation(node_subject(facts), None, why, ProbeId.FRAMEWORK_TORCH)]


def _torch_not_imported(data: Any) -> str | None:
    build = data.torch
    if build.status.value != "ok":
        return f"torch could not be imported: {build.error or build.status.value}"
    return None


@metric("framework.hip_build")
def torch_hip_build(facts: NodeFacts, _: Variables) -> list[Observation]:
    """True when the node's torch imports and is a ROCm (HIP) build that sees a GPU."""
    data, missing = _torch_result(facts)
    if missing is not None:
        return [missing]
    build = data.torch
    if (why := _torch_not_imported(data)) is not None:
        return [Observation(node_subject(facts), False, None, ProbeId.FRAMEWORK_TORCH, detail=why)]
    detail = f"torch {build.version or '?'}, {build.build_label()}, torch.cuda.is_available() = {build.cuda_available}"
    value = build.is_hip and bool(build.cuda_available)
    return [Observation(node_subject(facts), value, None, ProbeId.FRAMEWORK_TORCH, detail=detail)]


@metric("framework.devices_unseen")
def torch_devices_unseen(facts: NodeFacts, _: Variables) -> list[Observation]:
    """GPUs amd-smi lists that torch does not see (negative: torch sees more than amd-smi lists)."""
    data, missing = _torch_result(facts)
    if missing is not None:
        return [missing]
    listed = listed_gpus(facts)
    if listed is None:
        unlisted = facts.missing_reason([ProbeId.AMDSMI_LIST]) or "amd-smi did not say how many GPUs the node has"
        return [Observation(node_subject(facts), None, unlisted, ProbeId.FRAMEWORK_TORCH)]
    if (why := _torch_not_imported(data)) is not None:
        return [Observation(node_subject(facts), None, why, ProbeId.FRAMEWORK_TORCH)]
    seen = data.torch.device_count
    if seen is None:
        return [Observation(node_subject(facts), None, "torch did not report a device count", ProbeId.FRAMEWORK_TORCH)]
    detail = f"torch sees {seen} of the {listed} GPUs amd-smi lists"
    return [Observation(node_subject(facts), listed - seen, None, ProbeId.FRAMEWORK_TORCH, detail=detail)]


def _model_of(name: str) -> str:
    token = _MODEL_TOKEN.search(name)
    return token.group(0).upper() if token else " ".join(name.lower().split())


def _per_torch_device(
    facts: NodeFacts, read: Callable[[Any, GpuRecord | None], tuple[Any, str | None, str | None]]
) -> list[Observation]:
    """One observation per device torch sees: ``read(device, its amd-smi record)`` gives the value, why it
    is missing and a detail; the node's one observation saying why when torch gave nothing to read."""
    data, missing = _torch_result(facts)
    if missing is not None:
        return [missing]
    if unseen := _no_devices(facts, data):
        return unseen
    observations = []
    for device in data.devices:
        subject, record = _torch_gpu(facts, device)
        value, why, detail = read(device, record)
        observations.append(Observation(subject, value, why, ProbeId.FRAMEWORK_TORCH, detail=detail))
    return observations


@metric("framework.device_model_matches")
def torch_device_model(facts: NodeFacts, _: Variables) -> list[Observation]:
    """Per torch device: whether the model torch names is the one amd-smi names for that GPU."""

    def read(device: Any, record: GpuRecord | None) -> tuple[Any, str | None, str | None]:
        smi = record.identity.market_name if record is not None else None
        if not device.name or not smi:
            return (
                None,
                "torch did not name the device" if not device.name else "amd-smi names no model for this GPU",
                None,
            )
        return _model_of(device.name) == _model_of(smi), None, f"torch: {device.name}; amd-smi: {smi}"

    return _per_torch_device(facts, read)


def _gemm_metric(stage_name: str) -> Metric:
    def read(device: Any, _: GpuRecord | None) -> tuple[Any, str | None, str | None]:
        stage = getattr(device, stage_name)
        if stage.tflops is not None:
            return stage.tflops, None, None
        said = f": {stage.error}" if stage.error else ""
        return None, f"{stage_name} GEMM {stage.status.value}{said}", None

    def extract(facts: NodeFacts, _: Variables) -> list[Observation]:
        observations = _per_torch_device(facts, read)
        data, _missing = _torch_result(facts)
        # A stage skipped or absent with no reason is not a GPU that cannot run it (``unsupported``, the
        # check's SKIP): UNKNOWN on that GPU.
        unrun = {
            d.index for d in (data.devices if data is not None else []) if getattr(d, stage_name).status.value in _UNRUN
        }
        return [replace(o, unread=True) if o.value is None and o.subject.gpu in unrun else o for o in observations]

    return extract


_UNRUN = ("skipped", "missing")
register("framework.bf16_tflops", _gemm_metric("bf16"))
register("framework.fp8_tflops", _gemm_metric("fp8"))


@metric("framework.gemm_nonfinite")
def torch_gemm_nonfinite(facts: NodeFacts, _: Variables) -> list[Observation]:
    """NaN or Inf elements in a device's GEMM results (BF16 and FP8 added up)."""

    def read(device: Any, _: GpuRecord | None) -> tuple[Any, str | None, str | None]:
        checked = [s for s in (device.bf16, device.fp8) if s.nonfinite is not None]
        if not checked:
            return None, "no GEMM result was checked", None
        counts = {name: s.nonfinite for name, s in (("bf16", device.bf16), ("fp8", device.fp8)) if s.nonfinite}
        detail = ", ".join(f"{name} {count}" for name, count in counts.items()) or None
        return float(sum(s.nonfinite for s in checked)), None, detail

    return _per_torch_device(facts, read)


@metric("framework.all_reduce_correct")
def torch_all_reduce(facts: NodeFacts, _: Variables) -> list[Observation]:
    """Whether the one-node torch.distributed all-reduce gave the exact sum on every rank."""
    data, missing = _torch_result(facts)
    if missing is not None:
        return [missing]
    stage = data.all_reduce
    if stage.correct is None:
        said = f": {stage.error}" if stage.error else ""
        return [
            Observation(node_subject(facts), None, f"all-reduce {stage.status.value}{said}", ProbeId.FRAMEWORK_TORCH)
        ]
    detail = (
        f"{stage.backend}, {stage.world_size} ranks, max error {stage.max_abs_error:g}, {stage.nonfinite} NaN/Inf"
        if stage.max_abs_error is not None
        else None
    )
    count = data.torch.device_count
    if stage.correct and count is not None and stage.world_size != count:
        # A correct sum over fewer ranks than devices said nothing of the others.
        ranks = "an unreported number of" if stage.world_size is None else str(stage.world_size)
        why = f"all-reduce ran on {ranks} ranks of the {count} devices torch counts"
        return [Observation(node_subject(facts), None, why, ProbeId.FRAMEWORK_TORCH, detail=detail)]
    return [Observation(node_subject(facts), stage.correct, None, ProbeId.FRAMEWORK_TORCH, detail=detail)]


@metric("framework.stages_ok")
def torch_stages(facts: NodeFacts, _: Variables) -> list[Observation]:
    """False when a stage after the import raised (its error text is the detail)."""
    data, missing = _torch_result(facts)
    if missing is not None:
        return [missing]
    if (why := _torch_not_imported(data)) is not None:
        return [Observation(node_subject(facts), None, why, ProbeId.FRAMEWORK_TORCH)]
    errors = data.stage_errors()
    detail = "; ".join(errors[:3]) or None
    if not errors and (unrun := _torch_unrun(data)):
        # Nothing raised, but not every device torch counts ran every stage: no verdict on those.
        return [Observation(node_subject(facts), None, "; ".join(unrun[:3]), ProbeId.FRAMEWORK_TORCH)]
    return [Observation(node_subject(facts), not errors, None, ProbeId.FRAMEWORK_TORCH, detail=detail)]


def _torch_unrun(data: Any) -> list[str]:
    """What the probe left out on the devices torch counts: a device without its entry, one reported twice,
    a GEMM stage skipped or absent with no error (``unsupported`` is a reason, said by the fp8 check)."""
    said = []
    indexes = [device.index for device in data.devices]
    count = data.torch.device_count
    if count is not None:
        absent = [i for i in range(count) if i not in indexes]
        if absent:
            said.append(
                f"torch counts {count} devices, the probe reported none for gpu{', gpu'.join(map(str, absent))}"
            )
    twice = sorted({i for i in indexes if indexes.count(i) > 1})
    if twice:
        said.append(f"device entries repeated for gpu{', gpu'.join(map(str, twice))}")
    for device in data.devices:
        for name in ("bf16", "fp8"):
            stage = getattr(device, name)
            if stage.status.value in _UNRUN:
                reason = f": {stage.error}" if stage.error else ""
                said.append(f"gpu{device.index} {name} GEMM {stage.status.value}{reason}")
    return said
