"""``amd-smi xgmi --json`` and ``xgmi -l --json`` from the amdsmi library: link metrics and link states.

Written as AMD's CLI (7.x, ROCm/amdsmi ``amdsmi_cli/amdsmi_commands.py``, ``xgmi``) writes them from
``amdsmi_get_link_metrics`` (per port: the peer's ``bdf``, ``bit_rate`` and ``max_bandwidth`` in Gb/s,
accumulated ``read`` / ``write`` in KB) and ``amdsmi_get_gpu_xgmi_link_status`` (``{"status": ["U",
"D", "X", "N/A"...], "total_links"}``, one state per port in the same port order). Per peer GPU, the
CLI sums the ports' counters and joins their states with ``/``; a peer with no port is ``N/A``, the
GPU itself ``SELF``. A port whose state is ``N/A`` keeps its ``N/A`` in the join, and the check reads
that peer as a link unread (UNKNOWN), never as up nor as "no link". A port the library has counters
for and no state at all (fewer states than ports) fails the probe: the two answers disagree.

Only a partition's first logical GPU (KFD ``current_partition_id`` 0) has links, as the CLI's
``is_primary_partition`` has it. Left out: ``link_type``, one ``amdsmi_topo_get_link_type`` call per
GPU pair that no check reads (it is written ``N/A``).
"""

from __future__ import annotations

from typing import Any

from console.probes.amdsmi.library import NOT_AVAILABLE, AmdSmiLibrary, LibraryCallError, LibraryGpu, quantity


def xgmi_entry(library: AmdSmiLibrary, gpu: LibraryGpu) -> dict[str, Any] | None:
    """One GPU's entry of ``amd-smi xgmi --json``: link metrics, and link states where the library has them."""
    links = _links(library, gpu)
    if links is None:
        return None
    entry = {"bdf": library.call("amdsmi_get_gpu_device_bdf", gpu), "link_metrics": _metrics(library, gpu, links)}
    if getattr(library.module, "amdsmi_get_gpu_xgmi_link_status", None) is not None:  # ROCm 6.4 on
        entry["link_status"] = _states(library, gpu, links)
    return entry


def link_status_entry(library: AmdSmiLibrary, gpu: LibraryGpu) -> dict[str, Any] | None:
    """One GPU's entry of ``amd-smi xgmi -l --json``: the state of its links to every GPU."""
    links = _links(library, gpu)
    if links is None:
        return None
    return {"bdf": library.call("amdsmi_get_gpu_device_bdf", gpu), "link_status": _states(library, gpu, links)}


def _primary(library: AmdSmiLibrary, gpu: LibraryGpu) -> bool:
    kfd = library.call("amdsmi_get_gpu_kfd_info", gpu)
    return isinstance(kfd, dict) and kfd.get("current_partition_id") == 0


def _links(library: AmdSmiLibrary, gpu: LibraryGpu) -> list[dict[str, Any]] | None:
    """The GPU's ports (None for a secondary partition, which the CLI leaves out); N/A reads as no port."""
    if not _primary(library, gpu):
        return None
    found = library.call("amdsmi_get_link_metrics", gpu)
    if found == NOT_AVAILABLE:
        return []
    ports = found.get("links") if isinstance(found, dict) else None
    if not isinstance(ports, list) or not all(isinstance(port, dict) for port in ports):
        raise LibraryCallError(f"amdsmi_get_link_metrics (GPU {gpu.index}) returned no list of links")
    return ports


def _peers(library: AmdSmiLibrary) -> list[tuple[LibraryGpu, Any]]:
    return [(peer, library.call("amdsmi_get_gpu_device_bdf", peer)) for peer in library.gpus if _primary(library, peer)]


def _metrics(library: AmdSmiLibrary, gpu: LibraryGpu, ports: list[dict[str, Any]]) -> dict[str, Any]:
    first = ports[0] if ports else {}
    destinations = []
    for peer, bdf in _peers(library):
        mine = [port for port in ports if port.get("bdf") == bdf]
        read = _total(mine, "read", gpu)
        write = _total(mine, "write", gpu)
        destinations.append(
            {"gpu": peer.index, "bdf": bdf, "read": quantity(read, "KB"), "write": quantity(write, "KB")}
        )
    return {
        "bit_rate": quantity(first.get("bit_rate", NOT_AVAILABLE), "Gb/s"),
        "max_bandwidth": quantity(first.get("max_bandwidth", NOT_AVAILABLE), "Gb/s"),
        "link_type": NOT_AVAILABLE,
        "links": destinations,
    }


def _total(ports: list[dict[str, Any]], key: str, gpu: LibraryGpu) -> Any:
    """The ports' counters summed, as the CLI sums them; N/A for a peer no port reaches."""
    if not ports:
        return NOT_AVAILABLE
    values = [port.get(key) for port in ports]
    if not all(isinstance(value, int) and not isinstance(value, bool) for value in values):
        raise LibraryCallError(f"amdsmi_get_link_metrics (GPU {gpu.index}): {key} is not a count: {values}")
    return sum(values)


def _states(library: AmdSmiLibrary, gpu: LibraryGpu, ports: list[dict[str, Any]]) -> list[str]:
    answer = library.call("amdsmi_get_gpu_xgmi_link_status", gpu)
    states = answer.get("status") if isinstance(answer, dict) else None
    if answer != NOT_AVAILABLE and not isinstance(states, list):
        raise LibraryCallError(f"amdsmi_get_gpu_xgmi_link_status (GPU {gpu.index}) returned no status list")
    states = states or []
    own = library.call("amdsmi_get_gpu_device_bdf", gpu)
    row = []
    for _, bdf in _peers(library):
        indexes = [i for i, port in enumerate(ports) if port.get("bdf") == bdf]
        if any(i >= len(states) for i in indexes):
            # The CLI prints N/A here, which reads as "no link to that GPU"; but the library gave this port's
            # counters and not its state: two answers that disagree fail the probe rather than hide a link.
            raise LibraryCallError(
                f"amdsmi_get_gpu_xgmi_link_status (GPU {gpu.index}) gave {len(states)} states, "
                f"amdsmi_get_link_metrics a port #{max(indexes) + 1} to {bdf}"
            )
        if indexes:
            # Every port's state, N/A too: a peer with one port up and one unread was written "U" (up) before.
            # The parser reads a word it does not know as unknown and a peer with any unknown port as
            # unknown ("U/N/A"), so a port without a state never reads as up; a peer with ports (counters in
            # the metric table) whose state is N/A reads as a link unread, not as no link.
            row.append("/".join(str(states[i]) for i in indexes))
        else:
            row.append("SELF" if bdf == own else NOT_AVAILABLE)
    return row
