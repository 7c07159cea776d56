"""Benchmark metrics: what RCCL's all-reduce, TransferBench and RVS measured and whether each run passed
(rccl, transferbench and rvs families), with the GPUs each run covered."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from console.checks.metrics.gpu import listed_gpus
from console.checks.metrics.links import has_port
from console.checks.metrics.reading import fully_connected, gpu_subject, link_subject, node_subject
from console.checks.metrics.registry import Absent, Metric, Observation, Variables, metric, register
from console.model.findings import Scope
from console.probes.base import ParsedOutput
from console.probes.ids import ProbeId

if TYPE_CHECKING:
    from console.checks.facts import NodeFacts

_Pair = tuple[int, int]  # (source, destination) GPU of a transfer


def _tb_matrix(parsed: ParsedOutput) -> tuple[dict[_Pair, float], dict[_Pair, str]]:
    """A TransferBench matrix's one-way GPU-to-GPU cells: those measured (GB/s) and those printed N/A."""
    measured: dict[_Pair, float] = {}
    unread: dict[_Pair, str] = {}
    for entry in getattr(parsed.data, "matrix", []) or []:
        if entry.src_type != "GPU" or entry.dst_type != "GPU" or entry.src_index == entry.dst_index:
            continue
        if entry.direction != "uni" or entry.reverse:
            continue
        pair = (entry.src_index, entry.dst_index)
        if entry.gbps is None:
            unread[pair] = entry.unavailable.get("gbps") or "N/A"
        else:
            measured[pair] = entry.gbps
    return measured, unread


def _tb_expected(facts: NodeFacts, variables: Variables, read: set[_Pair]) -> set[_Pair]:
    """The GPU pairs a TransferBench run should have measured besides those it did (``read``)."""
    # Partitioned GPUs (CPX, ...) are several logical GPUs each, and a2a's direct links join only some of
    # them: which pairs it measures is then not every pair, and it is read as on MI250X.
    partitioned = any(
        (g.identity.partition_id or 0) > 0 or (g.identity.compute_partition or "SPX").upper() != "SPX"
        for g in facts.gpus
    )
    if fully_connected(variables) and not partitioned:
        gpus = {g.identity.index for g in facts.gpus if g.identity.index is not None}
        gpus |= {index for pair in read for index in pair}
        return {(src, dst) for src in gpus for dst in gpus if src != dst}
    return {
        (link.src_index, link.dst_index)
        for link in facts.xgmi
        if link.src_index is not None and link.dst_index is not None and has_port(link)
    }


def _tb_pairs(facts: NodeFacts, variables: Variables, probe: str) -> list[Observation]:
    """GPU-to-GPU bandwidth per directed pair from a TransferBench matrix (one-way runs only).

    Every pair that should have been measured gets an observation: a cell printed N/A, or a pair the run
    left out (a GPU TransferBench did not see), is a pair unread (None), never a pair skipped. On a fully
    connected node that is every ordered pair of the node's GPUs; elsewhere (MI250X, where a2a measures
    only direct links, and partitioned GPUs) every pair measured or shown a port to by amd-smi's xgmi table.
    """
    parsed = facts.parsed(probe)
    if not isinstance(parsed, ParsedOutput) or parsed.data is None:
        return []
    measured, unread = _tb_matrix(parsed)
    expected = set(measured) | _tb_expected(facts, variables, {*measured, *unread})
    observations = []
    for src, dst in sorted(expected):
        subject = link_subject(facts, src, dst, None, None)
        if (src, dst) in measured:
            observations.append(Observation(subject, measured[(src, dst)], None, probe))
            continue
        said = unread.get((src, dst))
        why = f"printed {said} for GPU {src} -> GPU {dst}" if said else f"no GPU {src} -> GPU {dst} transfer in the run"
        observations.append(Observation(subject, None, why, probe))
    return observations


@metric("link.tb_a2a_gbps")
def tb_a2a_pairs(facts: NodeFacts, variables: Variables) -> list[Observation]:
    """TransferBench all-to-all bandwidth per GPU pair (GB/s)."""
    return _tb_pairs(facts, variables, ProbeId.TB_A2A)


@metric("gpu.hbm_copy_gbps")
def hbm_copy(facts: NodeFacts, _: Variables) -> list[Observation]:
    """HBM bandwidth per GPU from the RVS babel Copy kernel (GB/s), joined to the GPU by PCI address."""
    parsed = facts.parsed(ProbeId.RVS_LEVEL3)
    if not isinstance(parsed, ParsedOutput) or parsed.data is None:
        return []
    data: Any = parsed.data
    by_bdf = {g.identity.bdf: g for g in facts.gpus if g.identity.bdf}
    observations = []
    for result in getattr(data, "results", []) or []:
        if result.module != "babel" or (result.label or "").lower() != "copy" or result.value is None:
            continue
        gpu_id = result.gpu.gpu_id if result.gpu else None
        bdf = (result.gpu.bdf if result.gpu else None) or (data.bdf_of(gpu_id) if gpu_id is not None else None)
        record = by_bdf.get(bdf) if isinstance(bdf, str) else None
        if record is not None:
            subject = gpu_subject(facts, record)
        else:
            subject = facts.subject(Scope.GPU, gpu_bdf=bdf)
        observations.append(Observation(subject, result.value, None, ProbeId.RVS_LEVEL3))
    return observations


_RVS_GPU = re.compile(r"\[GPU::\s*(\d+)\s*\]")


def _gpus_named(facts: NodeFacts, parsed: ParsedOutput, text: str) -> str:
    """RVS names a GPU by its KFD gpu_id (``[GPU:: 10279]``): say which GPU that is, by index and PCI address.

    The id is looked up among the node's GPUs (amd-smi), else RVS's own GPU list; an id neither
    knows stays as RVS printed it.
    """
    if "GPU::" not in text:
        return text
    known: dict[int, tuple[int | None, str | None]] = {}
    for gpu in getattr(parsed.data, "gpus", None) or []:
        if gpu.gpu_id is not None:
            known[gpu.gpu_id] = (gpu.index, gpu.bdf)
    for record in facts.gpus:
        if record.identity.kfd_gpu_id is not None:
            known[record.identity.kfd_gpu_id] = (record.identity.index, record.identity.bdf)

    def named(match: re.Match[str]) -> str:
        index, bdf = known.get(int(match.group(1)), (None, None))
        if index is None and bdf is None:
            return match.group(0)
        where = ", ".join(part for part in (f"gpu{index}" if index is not None else "", bdf or "") if part)
        return f"[{where} (RVS id {match.group(1)})]"

    return _RVS_GPU.sub(named, text)


def _tool_errors(facts: NodeFacts, parsed: ParsedOutput, count: int) -> str | None:
    """The tool's first ``count`` complaints, one line, GPUs named as the console names them."""
    detail = "; ".join(parsed.errors[:count])
    return _gpus_named(facts, parsed, detail) if detail else None


def _not_run(facts: NodeFacts, probe: str) -> list[Observation]:
    return [Observation(node_subject(facts), None, facts.missing_reason([probe]) or f"{probe} not run", probe)]


def _summary_metric(probe: str, key: str) -> Metric:
    def extract(facts: NodeFacts, _: Variables) -> list[Observation]:
        parsed = facts.parsed(probe)
        if not isinstance(parsed, ParsedOutput):
            return _not_run(facts, probe)
        value = parsed.summary.get(key)
        detail = _tool_errors(facts, parsed, 2)
        # Without the figure, the parser's reason (``<key>_unread``) or the tool's own complaint says why
        # (a crash, no table); else that it is absent.
        unread = parsed.summary.get(f"{key}_unread")
        missing = None if value is not None else (unread or detail or f"not in the {probe} output")
        return [Observation(node_subject(facts), value, missing, probe, detail=detail)]

    return extract


def _ok_metric(probe: str, covers_gpus: bool = False) -> Metric:
    """The run's own verdict. With ``covers_gpus``, a passing run is a verdict on the node only when it
    tested every GPU amd-smi lists: a run on fewer (a rank missing, a GPU RVS skipped) judged the rest
    of them not at all, so it is no value, with why, rather than a PASS."""

    def extract(facts: NodeFacts, _: Variables) -> list[Observation]:
        parsed = facts.parsed(probe)
        if not isinstance(parsed, ParsedOutput):
            return _not_run(facts, probe)
        detail = _tool_errors(facts, parsed, 3)
        # A passing run whose output the parser could not take as the tool's own (``ok_unread``) is no verdict.
        unread = parsed.summary.get("ok_unread") if parsed.ok else None
        if isinstance(unread, str):
            return [Observation(node_subject(facts), None, unread, probe, detail=detail)]
        untested = _gpus_untested(facts, parsed, probe) if covers_gpus and parsed.ok else None
        if untested is not None:
            return [Observation(node_subject(facts), None, untested, probe, detail=detail)]
        return [Observation(node_subject(facts), parsed.ok, None, probe, detail=detail)]

    return extract


def _gpus_untested(facts: NodeFacts, parsed: ParsedOutput, probe: str) -> str | None:
    """Why ``parsed`` does not cover the node's GPUs, or None when it tested as many as amd-smi lists.

    Without amd-smi's count there is nothing to compare with; the checks that read amd-smi say so."""
    listed = listed_gpus(facts)
    if listed is None:
        return None
    tested = parsed.summary.get("gpu_count")
    if not isinstance(tested, int) or isinstance(tested, bool):
        return f"{probe} names no GPU it tested; amd-smi lists {listed}"
    if tested < listed:
        return f"{probe} tested {tested} of the {listed} GPUs amd-smi lists: the other {listed - tested} not judged"
    return None


@metric("tb.healthcheck_ok")
def tb_healthcheck(facts: NodeFacts, _: Variables) -> list[Observation]:
    """Whether TransferBench's healthcheck preset passed. It declines hardware it has no criteria for
    (anything but 8 x gfx942): that is no value, with the tool's own words, for the check's SKIP."""
    parsed = facts.parsed(ProbeId.TB_HEALTHCHECK)
    if not isinstance(parsed, ParsedOutput):
        missing = facts.missing_reason([ProbeId.TB_HEALTHCHECK]) or "tb.healthcheck not run"
        return [Observation(node_subject(facts), None, missing, ProbeId.TB_HEALTHCHECK)]
    if getattr(parsed.data, "unsupported", False):
        said = next((w for w in parsed.warnings if "not supported" in w or "only supported" in w), "declined")
        return [
            Observation(node_subject(facts), None, f"the preset declined this node: {said}", ProbeId.TB_HEALTHCHECK)
        ]
    detail = "; ".join(parsed.errors[:3]) or None
    if parsed.errors and all(error.startswith("incomplete:") for error in parsed.errors):
        # Nothing failed, and not every test ran: the tests left out were never judged.
        return [Observation(node_subject(facts), None, detail, ProbeId.TB_HEALTHCHECK, unread=True)]
    return [Observation(node_subject(facts), parsed.ok, None, ProbeId.TB_HEALTHCHECK, detail=detail)]


def _sized(read: Metric, size_key: str, setting: str, *, largest: bool, required: bool) -> Metric:
    """``read`` where the run reached the message size its rule is stated at (the pack's ``setting``, in bytes):
    a floor stated at 8 GB says nothing of a paste whose largest row is 8 MB. Short of it, each value is
    missing, "sizes not covered": unjudged (UNKNOWN) when ``required``, else not in the output (``Absent``)."""

    def extract(facts: NodeFacts, variables: Variables) -> list[Observation]:
        observations = read(facts, variables)
        parsed = facts.parsed(ProbeId.RCCL_ALL_REDUCE)
        summary = parsed.summary if isinstance(parsed, ParsedOutput) else {}
        size, wanted = summary.get(size_key), variables.get(setting)
        if not isinstance(size, int) or not isinstance(wanted, int) or (size >= wanted if largest else size <= wanted):
            return observations
        which, bound = ("largest", ">=") if largest else ("smallest", "<=")
        said = f"sizes not covered: the {which} size run is {size} bytes; the rule is stated at {bound} {wanted} bytes"
        asked = summary.get("max_bytes_asked")
        # A whole run that was not asked for the size (``-e 128M``) lost nothing: the rule does not apply to it.
        not_asked = largest and summary.get("complete") is True and isinstance(asked, int) and asked <= size
        missing = said if required and not not_asked else Absent(said)
        return [replace(o, value=None, missing=missing) if o.value is not None else o for o in observations]

    return extract


# The busbw floor is what an all_reduce run is for: a run short of its size proves nothing of the node. The
# small-message time is one figure more: a paste without small sizes does not show it.
_SIZED = {
    "rccl.busbw_inplace_max_gbps": ("max_size_bytes", "rccl_busbw_min_size_bytes", True, True),
    "rccl.small_time_us": ("min_size_bytes", "rccl_small_size_max_bytes", False, False),
}
for _name, _probe, _key in (
    ("rccl.busbw_inplace_max_gbps", ProbeId.RCCL_ALL_REDUCE, "inplace_busbw_at_max_size_gbps"),
    ("rccl.wrong_total", ProbeId.RCCL_ALL_REDUCE, "wrong_total"),
    ("rccl.small_time_us", ProbeId.RCCL_ALL_REDUCE, "inplace_time_at_min_size_us"),
    ("tb.a2a_min_gbps", ProbeId.TB_A2A, "min_gbps"),
    ("tb.p2p_min_gbps", ProbeId.TB_P2P, "min_gbps"),
    ("rvs.fail_count", ProbeId.RVS_LEVEL3, "fail_count"),
):
    _read = _summary_metric(_probe, _key)
    if _name in _SIZED:
        _size_key, _setting, _largest, _required = _SIZED[_name]
        _read = _sized(_read, _size_key, _setting, largest=_largest, required=_required)
    register(_name, _read)

register("tb.a2a_ok", _ok_metric(ProbeId.TB_A2A))
register("tb.p2p_ok", _ok_metric(ProbeId.TB_P2P))
# Tests that drive every GPU of the node: a run on fewer is no verdict on the others.
register("rccl.ok", _ok_metric(ProbeId.RCCL_ALL_REDUCE, covers_gpus=True))
register("rvs.ok", _ok_metric(ProbeId.RVS_LEVEL3, covers_gpus=True))
