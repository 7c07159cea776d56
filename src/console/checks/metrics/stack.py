"""Stack and firmware metrics: the software each node runs (OS, kernel, ROCm, driver, test tools, the
framework and its image) and each GPU's firmware blocks, which the stack and firmware families compare
with the pool's pins and with each other (``drift``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from console.checks.metrics.reading import gpu_list, gpu_subject, node_subject
from console.checks.metrics.registry import Metric, Observation, Unread, Variables, metric, register
from console.probes.ids import ProbeId

if TYPE_CHECKING:
    from console.checks.facts import NodeFacts


def _stack_metric(key: str, probes: Sequence[str]) -> Metric:
    def extract(facts: NodeFacts, _: Variables) -> list[Observation]:
        value = facts.stack.get(key)
        missing = None if value else (facts.missing_reason(probes) or f"{key} not reported")
        return [Observation(node_subject(facts), value, missing, probes[0])]

    return extract


for _key, _probes in (
    ("os", [ProbeId.HOST_OS]),
    ("kernel", [ProbeId.HOST_KERNEL]),
    ("rocm", [ProbeId.HOST_ROCM, ProbeId.AMDSMI_VERSION]),
    ("amdgpu_driver", [ProbeId.HOST_AMDGPU, ProbeId.AMDSMI_VERSION]),
    ("rccl", [ProbeId.RCCL_ALL_REDUCE]),
    ("rvs", [ProbeId.RVS_LEVEL3]),
    ("transferbench", [ProbeId.TB_A2A]),
    ("torch", [ProbeId.FRAMEWORK_TORCH]),
    # The digest of the framework's image, when the pool runs its framework in one named by digest.
    ("image_digest", [ProbeId.FRAMEWORK_TORCH]),
):
    register(f"stack.{_key}", _stack_metric(_key, _probes))


def _firmware_unread(facts: NodeFacts) -> dict[int, dict[str | None, str]]:
    """Per GPU (by position in ``facts.gpus``), the firmware blocks it has no version of and why: the whole GPU
    (key None) when ``amd-smi firmware`` left it out, else each block another GPU reports or the pool pins.

    A GPU whose list was empty, printed N/A versions or lost a block was otherwise no observation at all: the
    pin and the consistency checks passed the node without reading it.
    """
    pinned = {field.removeprefix("firmware.") for field in facts.pin.pinned_fields() if field.startswith("firmware.")}
    seen: dict[str, list[int]] = {}
    for gpu in facts.gpus:
        for block in gpu.firmware:
            seen.setdefault(block, []).append(gpu.identity.index if gpu.identity.index is not None else -1)
    wanted = set(seen) | pinned
    unread: dict[int, dict[str | None, str]] = {}
    if not facts.answered([ProbeId.AMDSMI_FIRMWARE]):
        return unread
    for position, gpu in enumerate(facts.gpus):
        left_out = facts.left_out(ProbeId.AMDSMI_FIRMWARE, gpu)
        if left_out is not None:
            unread[position] = {None: left_out}
            continue
        lost: dict[str | None, str] = {}
        for block in sorted(wanted - set(gpu.firmware)):
            others = gpu_list(seen.get(block, []))
            lost[block] = f"{block}: no version read" + (f", while GPU {others} report one" if others else "")
        if lost:
            unread[position] = lost
    return unread


@metric("gpu.firmware")
def firmware(facts: NodeFacts, _: Variables) -> list[Observation]:
    """One observation per GPU and firmware block (compare with ``pin_field = 'firmware.*'``); a block, or a
    whole GPU, with no version read is an unread observation (``_firmware_unread``)."""
    observations = []
    unread = _firmware_unread(facts)
    for position, gpu in enumerate(facts.gpus):
        subject = gpu_subject(facts, gpu)
        for block, version in sorted(gpu.firmware.items()):
            observations.append(Observation(subject, version, None, ProbeId.AMDSMI_FIRMWARE, key=block))
        for key, why in unread.get(position, {}).items():
            observations.append(Observation(subject, None, why, ProbeId.AMDSMI_FIRMWARE, key=key, unread=True))
    return observations


@metric("node.firmware_mismatches")
def firmware_mismatches(facts: NodeFacts, _: Variables) -> list[Observation]:
    """Firmware blocks whose version differs between GPUs of the node (one GPU reflashed or left behind)."""
    versions: dict[str, set[str]] = {}
    for gpu in facts.gpus:
        for block, version in gpu.firmware.items():
            versions.setdefault(block, set()).add(version)
    if not versions:
        missing = facts.missing_reason([ProbeId.AMDSMI_FIRMWARE]) or "firmware versions not reported"
        return [Observation(node_subject(facts), None, missing, ProbeId.AMDSMI_FIRMWARE)]
    odd = sorted(block for block, seen in versions.items() if len(seen) > 1)
    detail = ", ".join(f"{block} {'/'.join(sorted(versions[block]))}" for block in odd) or None
    unread = _firmware_unread(facts)
    if unread and not odd:
        # No difference among the GPUs read is no proof of none with one GPU, or one block, not read.
        first = next(iter(unread))
        reasons = list(unread[first].values())
        said = "; ".join(reasons[:2]) + (f" (+{len(reasons) - 2} more blocks)" if len(reasons) > 2 else "")
        index = facts.gpus[first].identity.index
        more = f" (+{len(unread) - 1} more GPUs)" if len(unread) > 1 else ""
        why = Unread(f"GPU {index}: {said}{more}" if not said.startswith(ProbeId.AMDSMI_FIRMWARE) else said + more)
        return [Observation(node_subject(facts), None, why, ProbeId.AMDSMI_FIRMWARE, unread=True)]
    return [Observation(node_subject(facts), len(odd), None, ProbeId.AMDSMI_FIRMWARE, detail=detail)]
