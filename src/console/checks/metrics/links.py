"""Link metrics: XGMI links between the node's GPUs (state, rate, errors) and its RDMA NIC ports (count,
state, rate), for the xgmi and nic families."""

from __future__ import annotations

from typing import TYPE_CHECKING

from console.checks.metrics.reading import fully_connected, link_subject, node_subject, per_gpu, read_field
from console.checks.metrics.registry import Observation, Variables, metric
from console.model.findings import Scope
from console.model.gpu import LinkStatus, XgmiLink
from console.probes.ids import ProbeId

if TYPE_CHECKING:
    from console.checks.facts import NodeFacts

Pair = tuple[int | None, int | None]


def has_port(link: XgmiLink | None) -> bool:
    """Whether amd-smi's metric table counts traffic to the peer: it lists a port's counters only for a peer
    the GPU has a port to (``amdsmi_get_link_metrics`` per port), ``N/A`` for a peer it reaches through
    another GPU (ROCm/amdsmi ``amdsmi_cli`` ``xgmi``; docs/sources/gpus.md#xgmi-links-per-gpu)."""
    return link is not None and (link.read_bytes is not None or link.write_bytes is not None)


def _xgmi_bdfs(facts: NodeFacts) -> dict[int | None, str | None]:
    """The GPUs the xgmi tables name, as sources or destinations, with their PCI addresses."""
    bdfs: dict[int | None, str | None] = {}
    for link in facts.xgmi:
        for index, bdf in ((link.src_index, link.src_bdf), (link.dst_index, link.dst_bdf)):
            if index is not None and bdfs.get(index) is None:
                bdfs[index] = bdf
    return bdfs


def _unnamed_gpus(facts: NodeFacts, bdfs: dict[int | None, str | None]) -> dict[int | None, str | None]:
    """A GPU the node has (amd-smi list, static, metric) that neither xgmi table names has links too: none of
    them was read. Only a partition's first logical GPU has links (amd-smi leaves the others out)."""
    return {
        gpu.identity.index: gpu.identity.bdf
        for gpu in facts.gpus
        if gpu.identity.index is not None and gpu.identity.index not in bdfs and gpu.identity.partition_id in (None, 0)
    }


def _link_state(facts: NodeFacts, pair: Pair, link: XgmiLink | None, bdfs: dict[int | None, str | None]) -> Observation:
    """The observation of one GPU pair that should have a direct link: up, down, or why its state is not known."""
    src, dst = pair
    status = link.status if link is not None else LinkStatus.UNKNOWN
    src_bdf, dst_bdf = (link.src_bdf, link.dst_bdf) if link is not None else (bdfs.get(src), bdfs.get(dst))
    subject = link_subject(facts, src, dst, src_bdf, dst_bdf)
    differ = facts.xgmi_disagreements.get(pair)
    if status is LinkStatus.UNKNOWN:
        said = f"the tables disagree ({differ})" if differ else "link status not reported"
        return Observation(subject, None, said, ProbeId.AMDSMI_XGMI)
    return Observation(subject, status is LinkStatus.UP, None, ProbeId.AMDSMI_XGMI, detail=differ)


@metric("link.xgmi_up")
def xgmi_up(facts: NodeFacts, variables: Variables) -> list[Observation]:
    """True per directly linked GPU pair whose XGMI link is up; None when such a pair's state is not reported.

    A pair that should have a direct link and shows ``N/A``, or no state at all, is a link unread, never
    "no link": on a fully connected node (the pack's ``xgmi_fully_connected``) every pair of the GPUs the
    xgmi tables name should, and elsewhere (MI250X) every pair the node itself shows a port to. A pair with
    neither is not observed: the two GPUs reach each other through a third.
    """
    links = {
        (link.src_index, link.dst_index): link
        for link in facts.xgmi
        if link.src_index != link.dst_index and link.status is not LinkStatus.SELF
    }
    bdfs = _xgmi_bdfs(facts)
    unnamed = _unnamed_gpus(facts, bdfs)
    pairs: set[Pair] = set(links)
    everywhere = fully_connected(variables)
    observations = []
    if everywhere:
        # Rows or cells the status table left out are pairs too (a GPU still named by another row or table).
        bdfs = {**bdfs, **unnamed}
        pairs |= {(src, dst) for src in bdfs for dst in bdfs if src != dst}
    else:
        # Which peers it has a port to is not known (the tables that would say it leave the GPU out): the
        # GPU's links are unread as a whole.
        for index, bdf in sorted(unnamed.items()):
            subject = link_subject(facts, index, None, bdf, None)
            said = f"GPU {index} is in neither xgmi table"
            observations.append(Observation(subject, None, said, ProbeId.AMDSMI_XGMI_STATUS))
    for pair in sorted(pairs, key=lambda pair: (pair[0] or 0, pair[1] or 0)):
        link = links.get(pair)
        status = link.status if link is not None else LinkStatus.UNKNOWN
        if status is LinkStatus.UNKNOWN and not (everywhere or has_port(link)):
            continue
        observations.append(_link_state(facts, pair, link, bdfs))
    return observations + _xgmi_ports(facts, per_peer=bool(observations))


def _xgmi_ports(facts: NodeFacts, *, per_peer: bool) -> list[Observation]:
    """Each XGMI port of a GPU whose table says it per port, not per peer (ROCm 6.4's ``xgmi --link-status``
    text, ``U U U U D U D X``): up or down; a disabled port (X) is no link to judge, and one not reported is
    unread unless the links were judged ``per_peer`` already (a port table beside them says nothing more)."""
    observations = []
    for probe in (ProbeId.AMDSMI_XGMI_STATUS, ProbeId.AMDSMI_XGMI):
        parsed = facts.parsed(probe)
        for row in getattr(getattr(parsed, "data", None), "xgmi_ports", None) or []:
            for number, state in enumerate(row.ports):
                if state in (LinkStatus.DISABLED, LinkStatus.SELF) or (per_peer and state is LinkStatus.UNKNOWN):
                    continue
                where = f"XGMI port {number}"
                subject = facts.subject(Scope.GPU, gpu=row.gpu_index, gpu_bdf=row.bdf, port=where)
                up = None if state is LinkStatus.UNKNOWN else state is LinkStatus.UP
                said = f"{where}: state not reported" if up is None else None
                observations.append(Observation(subject, up, said, probe, detail=where))
    return observations


@metric("link.xgmi_bit_rate_gbps")
def xgmi_bit_rate(facts: NodeFacts, _: Variables) -> list[Observation]:
    """XGMI bit rate per link in Gb/s (a link retrained at a lower rate shows here before any error)."""
    observations = []
    for link in facts.xgmi:
        if link.src_index == link.dst_index or link.bit_rate_gbps is None:
            continue
        subject = link_subject(facts, link.src_index, link.dst_index, link.src_bdf, link.dst_bdf)
        observations.append(Observation(subject, link.bit_rate_gbps, None, ProbeId.AMDSMI_XGMI))
    return observations


@metric("gpu.xgmi_errors")
def xgmi_errors(facts: NodeFacts, _: Variables) -> list[Observation]:
    """XGMI error status per GPU since the last read (``amd-smi metric --xgmi-err``): none, error, multiple."""
    return per_gpu(
        facts, ProbeId.AMDSMI_METRIC, lambda g: read_field(g.metrics, "xgmi_error_status", "no XGMI error status")
    )


@metric("nic.port_active")
def nic_port_active(facts: NodeFacts, _: Variables) -> list[Observation]:
    """True per RDMA port that every reading says is up: ``rdma link`` state ACTIVE with physical_state
    LINK_UP, and ``ibv_devinfo`` (when it lists the port) PORT_ACTIVE. A port one of them reads as down is
    not active, whatever the other said a moment before (a port that flaps is not a healthy port)."""
    if facts.nics is None:
        missing = facts.missing_reason([ProbeId.HOST_NIC]) or "rdma link not run"
        return [Observation(node_subject(facts), None, missing, ProbeId.HOST_NIC)]
    ibv = {port.label: port for port in facts.nic_rates or []}
    observations = []
    for port in facts.nics:
        said = [f"state {port.state}"]
        active = port.state == "ACTIVE"
        if port.physical_state is not None:
            said.append(f"physical_state {port.physical_state}")
            active = active and port.physical_state == "LINK_UP"
        other = ibv.get(port.label)
        if other is not None:
            said.append(f"ibv_devinfo {other.state}")
            active = active and other.state == "ACTIVE"
        subject = facts.subject(Scope.NIC, port=port.label)
        observations.append(Observation(subject, active, None, ProbeId.HOST_NIC, detail=", ".join(said)))
    return observations


@metric("node.nic_count")
def nic_count(facts: NodeFacts, _: Variables) -> list[Observation]:
    """RDMA ports ``rdma link`` lists, whatever their state (a NIC that vanished is no port at all)."""
    if facts.nics is None:
        missing = facts.missing_reason([ProbeId.HOST_NIC]) or "rdma link not run"
        return [Observation(node_subject(facts), None, missing, ProbeId.HOST_NIC)]
    return [Observation(node_subject(facts), len(facts.nics), None, ProbeId.HOST_NIC)]


@metric("nic.rate_gbps")
def nic_rate(facts: NodeFacts, _: Variables) -> list[Observation]:
    """Link rate (``ibv_devinfo -v``: active width x lane speed) of every ACTIVE port ``rdma link`` lists.

    A port that is not active has no rate (``nic.port_active`` judges it); an active port that
    ibv_devinfo does not list, or lists without a rate, reads as not reported.
    """
    if facts.nic_rates is None:
        unread = facts.missing_reason([ProbeId.HOST_NIC_RATE]) or "ibv_devinfo not run"
        return [Observation(node_subject(facts), None, unread, ProbeId.HOST_NIC_RATE)]
    read = {port.label: port for port in facts.nic_rates}
    ports = facts.nics if facts.nics is not None else facts.nic_rates
    observations = []
    for port in ports:
        if port.state != "ACTIVE":
            continue
        other = read.get(port.label)
        rate = other.rate_gbps if other is not None else None
        missing = None if rate is not None else f"{port.label} has no rate in ibv_devinfo -v"
        if other is not None and other.state != "ACTIVE":
            # ibv_devinfo reads the port down: whatever width and speed it prints are no rate of a working
            # port (nic.port_active fails it).
            rate, missing = None, f"ibv_devinfo -v reads {port.label} {other.state}"
        observations.append(
            Observation(facts.subject(Scope.NIC, port=port.label), rate, missing, ProbeId.HOST_NIC_RATE)
        )
    return observations
