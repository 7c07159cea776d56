"""GPU-to-GPU links from amd-smi ``xgmi --json`` and ``topology --json`` entries.

xgmi: each source GPU has ``link_metrics`` (``bit_rate``, ``max_bandwidth``, ``links`` with per-
destination ``read``/``write`` in KB); 7.x adds ``link_status`` (U/D/X per destination, in GPU order)
and ``link_port_status`` (per port). topology: 7.x gives a ``links`` list per source; 6.x gave one
dict per matrix (``link_accessibility``, ``weight``, ``hops``, ``link_type``, ``numa_bandwidth``)
keyed ``gpu_N``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from console.model.amdsmi import XgmiPortStatus
from console.model.gpu import LinkStatus, TopologyLink, XgmiLink
from console.probes.amdsmi.fields import (
    ABSENT,
    assign_number,
    finite_int,
    is_mapping,
    number_field,
    pick,
    text_of,
    to_int,
)
from console.probes.amdsmi.tables import link_status, xgmi_rate
from console.probes.values import Quantity, na_reason, normalise_bdf, to_bytes

Entry = Mapping[str, Any]


def _index(raw: Any) -> int | None:
    return finite_int(to_int(raw))


def _gbits(raw: Any) -> Quantity:
    return xgmi_rate(raw)


def _kilobytes(raw: Any) -> Quantity:
    return to_bytes(raw, default_unit="KB")


def xgmi_links(entries: Sequence[Entry], status_rows: list[Any]) -> list[XgmiLink]:
    """Directed links from ``link_metrics``, with U/D/X states from ``link_status`` rows if present."""
    # Each link's fields are gathered first and its model built once, with its state: 56 links per node,
    # and each assignment to a model is validated alone. A source's rate and bandwidth are read once, not
    # per destination, and each of the node's few PCI addresses is normalised once.
    links: dict[tuple[int | None, int | None], dict[str, Any]] = {}
    order: list[tuple[int | None, str | None]] = []
    bdfs: dict[str, str | None] = {}

    def bdf_of(raw: Any) -> str | None:
        if not isinstance(raw, str):
            return normalise_bdf(text_of(raw))
        if raw not in bdfs:
            bdfs[raw] = normalise_bdf(text_of(raw))
        return bdfs[raw]

    for entry in entries:
        src, src_bdf = _index(entry.get("gpu")), bdf_of(entry.get("bdf"))
        order.append((src, src_bdf))
        metrics = entry.get("link_metrics")
        if not is_mapping(metrics):
            continue
        rates: dict[str, Any] = {}
        rates_unavailable: dict[str, str] = {}
        number_field(rates, rates_unavailable, "bit_rate_gbps", metrics.get("bit_rate", ABSENT), _gbits)
        number_field(rates, rates_unavailable, "max_bandwidth_gbps", metrics.get("max_bandwidth", ABSENT), _gbits)
        destinations = metrics.get("links")
        for dest in destinations if isinstance(destinations, list) else []:
            if not is_mapping(dest):
                continue
            dst = _index(dest.get("gpu"))
            if dst is not None and dst == src:
                continue
            values = dict(rates)
            unavailable = dict(rates_unavailable)
            number_field(values, unavailable, "read_bytes", dest.get("read", ABSENT), _kilobytes, integer=True)
            number_field(values, unavailable, "write_bytes", dest.get("write", ABSENT), _kilobytes, integer=True)
            links[(src, dst)] = {
                "src_index": src,
                "dst_index": dst,
                "src_bdf": src_bdf,
                "dst_bdf": bdf_of(dest.get("bdf")),
                "unavailable": unavailable,
                **values,
            }
    rows = [row for row in status_rows if is_mapping(row) and isinstance(row.get("link_status"), list)]
    named = [(_index(row.get("gpu")), bdf_of(row.get("bdf"))) for row in rows]
    for row, (src, src_bdf) in zip(rows, named, strict=True):
        # One word per GPU the table names, in order: the metric entries name them, else the status rows
        # themselves; a table that left a row out has more words than rows, for GPU 0, 1, ... in order.
        words = len(row["link_status"])
        targets = next((o for o in (order, named) if len(o) == words), [(i, None) for i in range(words)])
        for (dst, dst_bdf), word in zip(targets, row["link_status"], strict=False):
            if dst == src:
                continue
            link = links.setdefault(
                (src, dst), {"src_index": src, "dst_index": dst, "src_bdf": src_bdf, "dst_bdf": dst_bdf}
            )
            status = link_status(str(word))
            if "status" in link and link["status"] is not status:
                # A GPU's row printed twice, saying different things: a down link in either stays down, and
                # up against anything else is no reading of up.
                bad = [s for s in (LinkStatus.DOWN, LinkStatus.DISABLED) if s in (status, link["status"])]
                status = bad[0] if bad else LinkStatus.UNKNOWN
            link["status"] = status
    return [XgmiLink(**fields) for fields in links.values()]


def xgmi_ports(rows: list[Any]) -> list[XgmiPortStatus]:
    """Per-port U/D/X states (``link_port_status``)."""
    ports = []
    for row in rows:
        if is_mapping(row) and isinstance(row.get("link_status"), list):
            ports.append(
                XgmiPortStatus(
                    gpu_index=_index(row.get("gpu")),
                    bdf=normalise_bdf(text_of(row.get("bdf"))),
                    ports=[link_status(str(word)) for word in row["link_status"]],
                )
            )
    return ports


_MATRIX_KEYS = {
    "link_accessibility": "link_status",
    "weight": "weight",
    "hops": "num_hops",
    "link_type": "link_type",
    "numa_bandwidth": "bandwidth",
}


def topology_links(entries: Sequence[Entry]) -> list[TopologyLink]:
    """One link per ordered pair of distinct GPUs."""
    found = []
    for entry in entries:
        src, src_bdf = _index(entry.get("gpu")), normalise_bdf(text_of(entry.get("bdf")))
        for dest in _destinations(entry):
            dst = _index(dest.get("gpu"))
            if dst is not None and dst == src:
                continue
            link = TopologyLink(
                src_index=src, dst_index=dst, src_bdf=src_bdf, dst_bdf=normalise_bdf(text_of(dest.get("bdf")))
            )
            access = text_of(dest.get("link_status"))
            link.accessible = {"ENABLED": True, "DISABLED": False}.get((access or "").upper())
            assign_number(link, "weight", pick(dest, ("weight",)), to_int, integer=True)
            assign_number(link, "hops", pick(dest, ("num_hops", "hops")), to_int, integer=True)
            link_type = text_of(dest.get("link_type"))
            link.link_type = link_type.upper() if link_type else None
            _numa_bandwidth(link, dest.get("bandwidth", ABSENT))
            found.append(link)
    return found


def _destinations(entry: Entry) -> list[Mapping[str, Any]]:
    links = entry.get("links")
    if isinstance(links, list):
        return [d for d in links if is_mapping(d)]
    # 6.x: {"weight": {"gpu_0": 0, "gpu_1": 15}, "hops": {...}} -> one dict per destination
    merged: dict[int, dict[str, Any]] = {}
    for key, field_name in _MATRIX_KEYS.items():
        matrix = entry.get(key)
        if not is_mapping(matrix):
            continue
        for label, value in matrix.items():
            match = re.fullmatch(r"gpu_?(\d+)", label)
            if match:
                merged.setdefault(int(match.group(1)), {"gpu": int(match.group(1))})[field_name] = value
    return [merged[i] for i in sorted(merged)]


def _numa_bandwidth(link: TopologyLink, raw: Any) -> None:
    if raw is ABSENT:
        return
    text = text_of(raw)
    low, sep, high = (text or "").partition("-")
    if sep and low.strip().isdigit() and high.strip().isdigit():
        link.numa_bw_min_mbps, link.numa_bw_max_mbps = float(low), float(high)
    else:
        reason = na_reason(raw) if not isinstance(raw, Mapping | list) else None
        link.mark_unavailable("numa_bw_min_mbps", reason or f"unreadable: {str(raw)[:40]}")
