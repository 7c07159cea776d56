"""How the metrics of every family read a node: its subjects, a value per GPU, a field and why it is missing."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from console.checks.metrics.registry import Absent, Metric, Observation, Unread, Variables
from console.model.findings import Scope, Subject
from console.model.gpu import GpuRecord
from console.probes.values import said_no_value

if TYPE_CHECKING:
    from console.checks.facts import NodeFacts

GpuRead = Callable[[GpuRecord], tuple[Any, str | None]]


def node_subject(facts: NodeFacts) -> Subject:
    """The node itself, for a metric that reads one value of it."""
    return facts.subject()


def gpu_subject(facts: NodeFacts, gpu: GpuRecord) -> Subject:
    """One GPU of the node, by index and PCI address."""
    return facts.subject(Scope.GPU, gpu=gpu.identity.index, gpu_bdf=gpu.identity.bdf)


def link_subject(
    facts: NodeFacts, src: int | None, dst: int | None, src_bdf: str | None, dst_bdf: str | None
) -> Subject:
    """The link from GPU ``src`` to GPU ``dst``."""
    return facts.subject(Scope.LINK, gpu=src, gpu_bdf=src_bdf, peer=dst, peer_bdf=dst_bdf)


def gpu_list(indices: list[Any]) -> str:
    """The GPUs that did report a value a GPU lost, as its reason names them: '0, 1, 2', the first 8 and '...'."""
    return ", ".join(str(index) for index in indices[:8]) + (", ..." if len(indices) > 8 else "")


def indices_text(indices: Iterable[int]) -> str:
    """GPU indices sorted, the first 8 and '...', or 'none'."""
    shown = sorted(indices)
    return ", ".join(str(i) for i in shown[:8]) + (", ..." if len(shown) > 8 else "") if shown else "none"


def fully_connected(variables: Variables) -> bool:
    """Whether every GPU pair of the model has a direct XGMI link (the pack's ``xgmi_fully_connected``; MI250X not)."""
    return variables.get("xgmi_fully_connected", True) is not False


def per_gpu(facts: NodeFacts, probe: str, read: GpuRead) -> list[Observation]:
    """One observation per GPU of the node, read by ``read`` from its record.

    A GPU that ``probe`` answered for the others and left out is unread, whatever ``read`` finds elsewhere (the
    static record's empty page lists read as 0 retired pages for a GPU the bad-pages listing did not name); so
    is a value missing on one GPU while others of the node report it: the same tool on the same model cannot
    lack the counter on one GPU only, so that GPU's reading was lost, not unsupported.
    """
    observations = []
    for gpu in facts.gpus:
        left_out = facts.left_out(probe, gpu)
        value: Any = None
        missing: str | None = Unread(left_out) if left_out is not None else None
        if left_out is None:
            value, missing = read(gpu)
        unread = isinstance(missing, Unread)
        observations.append(Observation(gpu_subject(facts, gpu), value, missing, probe, unread=unread))
    read_on = [o.subject.gpu for o in observations if o.value is not None]
    if not read_on:
        return observations
    others = gpu_list(read_on)
    return [
        o
        if o.value is not None or o.unread
        else Observation(o.subject, None, Unread(f"{o.missing}, while GPU {others} report it"), probe, unread=True)
        for o in observations
    ]


def read_field(obj: Any, name: str, absent: str) -> tuple[Any, str | None]:
    """``obj.name`` and None, else None and why: ``absent`` with no ``obj``, the tool's own reason from the
    record's ``unavailable`` (an unread one when it is no "not supported"), else "not reported"."""
    if obj is None:
        return None, Absent(absent)
    value = getattr(obj, name, None)
    if value is None:
        reasons = getattr(obj, "unavailable", {}) or {}
        if name not in reasons:
            return None, Absent("not reported")
        # What the parser could not read is no "not supported" (``values.said_no_value``).
        reason = reasons[name]
        return None, reason if said_no_value(reason) else Unread(reason)
    return value, None


def gpu_field_metric(source: str, attr: str, probe: str) -> Metric:
    """The metric of one field of each GPU's record: ``source`` is the part of it that holds the field
    (``metrics``, ``pcie``, ``ecc`` or ``bad_pages``)."""

    def read(gpu: GpuRecord) -> tuple[Any, str | None]:
        holder: Any = gpu.metrics if source == "metrics" else None
        if source == "pcie":
            holder = gpu.metrics.pcie if gpu.metrics is not None else None
        elif source == "ecc":
            holder = gpu.ecc
        elif source == "bad_pages":
            holder = gpu.bad_pages
        return read_field(holder, attr, f"no {source} data")

    def extract(facts: NodeFacts, _: Variables) -> list[Observation]:
        return per_gpu(facts, probe, read)

    return extract
