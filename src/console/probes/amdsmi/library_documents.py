"""The document ``amd-smi <subcommand> --json`` prints, written from the amdsmi library's values.

One builder per subcommand makes one GPU's entry from library calls; ``document`` puts the GPUs'
entries in the list the command prints, for ``console.probes.amdsmi.parse`` to read as it reads the
command's. ``list``, ``firmware`` and ``bad-pages`` are here; ``static``, ``metric`` and the links
(``xgmi``, ``xgmi -l``) have modules of their own (``library_static``, ``library_metric``,
``library_links``). Shapes follow AMD's own CLI, which is built on the same calls:
``amdsmi_cli/amdsmi_commands.py`` and ``py-interface/amdsmi_interface.py`` in ROCm/amdsmi.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from console.probes.amdsmi.library import NOT_AVAILABLE, AmdSmiLibrary, LibraryCallError, LibraryGpu, member_name
from console.probes.amdsmi.library_links import link_status_entry, xgmi_entry
from console.probes.amdsmi.library_metric import metric_entry
from console.probes.amdsmi.library_static import static_entry

# What ``amd-smi bad-pages`` prints for a list with no page (and what older libraries return for one).
NO_BAD_PAGES = "No bad pages found."
# The library names a memory page's state (AmdSmiMemoryPageStatus); the command groups pages by it.
_PAGE_GROUPS = {"RESERVED": "retired", "PENDING": "pending", "UNRESERVABLE": "un_res"}


def firmware_entry(library: AmdSmiLibrary, gpu: LibraryGpu) -> dict[str, Any]:
    """``amd-smi firmware``: ``fw_list`` of {fw_id, fw_version} from ``amdsmi_get_fw_info``."""
    info = library.call("amdsmi_get_fw_info", gpu)
    if info == NOT_AVAILABLE:
        return {"fw_list": NOT_AVAILABLE}
    blocks = info.get("fw_list", []) if isinstance(info, dict) else info
    if not isinstance(blocks, list):
        raise LibraryCallError(f"amdsmi_get_fw_info (GPU {gpu.index}) returned {type(blocks).__name__}, not a list")
    return {
        "fw_list": [
            {"fw_id": member_name(block.get("fw_name", block.get("fw_id"))), "fw_version": str(block.get("fw_version"))}
            for block in blocks
            if isinstance(block, dict)
        ]
    }


def bad_pages_entry(library: AmdSmiLibrary, gpu: LibraryGpu) -> dict[str, Any]:
    """``amd-smi bad-pages``: retired / pending / un_res lists from ``amdsmi_get_gpu_bad_page_info``."""
    pages = library.call("amdsmi_get_gpu_bad_page_info", gpu)
    if pages == NOT_AVAILABLE:
        return dict.fromkeys(_PAGE_GROUPS.values(), NOT_AVAILABLE)
    if isinstance(pages, str):  # some releases return the sentence for no pages
        pages = []
    if not isinstance(pages, list):
        raise LibraryCallError(f"amdsmi_get_gpu_bad_page_info (GPU {gpu.index}) returned {type(pages).__name__}")
    groups: dict[str, list[dict[str, Any]]] = {group: [] for group in _PAGE_GROUPS.values()}
    for page in pages:
        status = member_name(page.get("status"))
        group = _PAGE_GROUPS.get(status)
        if group is None:  # a state this console does not know: the probe says so rather than guess
            raise LibraryCallError(f"amdsmi_get_gpu_bad_page_info (GPU {gpu.index}): unknown page status {status!r}")
        # The address as the library gives it (a number), as ``bad-pages --json`` prints it.
        groups[group].append(
            {"page_address": page.get("page_address"), "page_size": page.get("page_size"), "status": status}
        )
    return {group: (found if found else NO_BAD_PAGES) for group, found in groups.items()}


def list_entry(library: AmdSmiLibrary, gpu: LibraryGpu) -> dict[str, Any]:
    """``amd-smi list``: bdf, uuid and the KFD ids (``amdsmi_get_gpu_kfd_info``) of one GPU."""
    kfd = library.call("amdsmi_get_gpu_kfd_info", gpu)
    kfd = kfd if isinstance(kfd, dict) else {}
    return {
        "bdf": library.call("amdsmi_get_gpu_device_bdf", gpu),
        "uuid": library.call("amdsmi_get_gpu_device_uuid", gpu),
        "kfd_id": kfd.get("kfd_id", NOT_AVAILABLE),
        "node_id": kfd.get("node_id", NOT_AVAILABLE),
        "partition_id": kfd.get("current_partition_id", NOT_AVAILABLE),
    }


# Subcommand -> how one GPU's entry of its JSON document is built from library calls (None: the command
# prints no entry for that GPU, as ``xgmi`` for a partition's secondary logical GPUs).
DOCUMENTS: dict[str, Callable[[AmdSmiLibrary, LibraryGpu], dict[str, Any] | None]] = {
    "firmware": firmware_entry,
    "bad-pages": bad_pages_entry,
    "list": list_entry,
    "static": static_entry,
    "metric": metric_entry,
    "xgmi": xgmi_entry,
    "xgmi -l": link_status_entry,
}


def document(library: AmdSmiLibrary, subcommand: str) -> str:
    """What ``amd-smi <subcommand> --json`` would print, from the library's values."""
    build = DOCUMENTS[subcommand]
    entries = [(gpu, build(library, gpu)) for gpu in library.gpus]
    return json.dumps([{"gpu": gpu.index, **entry} for gpu, entry in entries if entry is not None], indent=4)
