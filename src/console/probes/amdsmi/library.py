"""Reading GPUs through AMD's ``amdsmi`` Python library instead of the ``amd-smi`` command (node-local only).

The ``amd-smi`` command is itself a thin layer over this library: each subcommand starts a Python
process, initialises the library and prints what its calls return. On the node (``check-local``) one
process can do that once for every probe. To keep one way of judging, the library's return values are
written here as the document ``amd-smi <subcommand> --json`` prints for them, and that document goes
through the same parser (``console.probes.amdsmi.parse``): both paths give the same ``AmdSmiResult``
and ``GpuRecord`` facts, and the same packs judge them.

A value the library reports as not supported (``AMDSMI_STATUS_NOT_SUPPORTED``) is written ``N/A``, as
the command writes it, so the parser marks it unavailable. Any other exception from a call is the
probe's failure (``LibraryCallError``): the probe is reported failed, with the call and the error,
and judged UNKNOWN like a command that failed; it is never left out.

The module is imported lazily, on the node only: the console host needs neither ROCm nor amdsmi.
"""

from __future__ import annotations

import contextlib
import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

# amdsmi_status_t: AMDSMI_STATUS_NOT_SUPPORTED (amdsmi.h). The command prints N/A for it.
STATUS_NOT_SUPPORTED = 2
NOT_AVAILABLE = "N/A"
# What ``amd-smi bad-pages`` prints for a list with no page (and what older libraries return for one).
NO_BAD_PAGES = "No bad pages found."
# The library names a memory page's state (AmdSmiMemoryPageStatus); the command groups pages by it.
_PAGE_GROUPS = {"RESERVED": "retired", "PENDING": "pending", "UNRESERVABLE": "un_res"}


class LibraryCallError(Exception):
    """A library call raised something other than "not supported": the probe it served failed."""


@dataclass
class LibraryGpu:
    """One GPU as the library enumerates it: the handle and the index the command would print."""

    index: int
    handle: Any


@dataclass
class AmdSmiLibrary:
    """An initialised ``amdsmi`` module and its GPUs; ``close`` shuts the library down."""

    module: ModuleType
    gpus: list[LibraryGpu] = field(default_factory=list)

    def call(self, name: str, gpu: LibraryGpu, *args: Any) -> Any:
        """``amdsmi.<name>(handle, *args)``; N/A when not supported, ``LibraryCallError`` on any other error."""
        function = getattr(self.module, name, None)
        if function is None:
            raise LibraryCallError(f"amdsmi has no {name} (older library?)")
        try:
            return function(gpu.handle, *args)
        except Exception as exc:  # the library's own exceptions, ctypes errors: all are this probe's failure
            if _error_code(exc) == STATUS_NOT_SUPPORTED:
                return NOT_AVAILABLE
            raise LibraryCallError(f"{name} (GPU {gpu.index}) raised {type(exc).__name__}: {exc}") from exc

    def document(self, subcommand: str) -> str:
        """What ``amd-smi <subcommand> --json`` would print, from the library's values."""
        build = DOCUMENTS[subcommand]
        return json.dumps([{"gpu": gpu.index, **build(self, gpu)} for gpu in self.gpus], indent=4)

    def close(self) -> None:
        """Shut the library down (errors here change no result already read)."""
        # Nothing is left to report a failure to: every probe has run.
        with contextlib.suppress(Exception):
            self.module.amdsmi_shut_down()


def open_library(module_name: str = "amdsmi") -> AmdSmiLibrary | str:
    """The library initialised with its GPUs, or why not (the command then collects instead)."""
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or the module failing to load libamd_smi.so (OSError)
        return f"amdsmi library not importable: {type(exc).__name__}: {exc}"
    try:
        module.amdsmi_init()
    except Exception as exc:  # any failure to start means: use the command
        return f"amdsmi library did not initialise: {type(exc).__name__}: {exc}"
    try:
        handles = list(module.amdsmi_get_processor_handles())
    except Exception as exc:
        library = AmdSmiLibrary(module)
        library.close()
        return f"amdsmi library listed no GPUs: {type(exc).__name__}: {exc}"
    if not handles:
        AmdSmiLibrary(module).close()
        return "amdsmi library initialised but found no GPU"
    return AmdSmiLibrary(module, [LibraryGpu(index, handle) for index, handle in enumerate(handles)])


def _error_code(exc: BaseException) -> int | None:
    """amdsmi's exceptions carry the status as ``err_code`` (``get_error_code()`` in some releases)."""
    code = getattr(exc, "err_code", None)
    if code is None and callable(getattr(exc, "get_error_code", None)):
        try:
            code = exc.get_error_code()  # type: ignore[attr-defined]
        except Exception:
            code = None
    return abs(code) if isinstance(code, int) else None


def _name(value: Any) -> str:
    """An enum member's name as the command prints it: ``AmdSmiFwBlock.FW_ID_CP_MEC1`` -> ``CP_MEC1``."""
    text = str(getattr(value, "name", value))
    for prefix in ("AMDSMI_", "FW_ID_"):
        text = text.removeprefix(prefix)
    return text


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
            {"fw_id": _name(block.get("fw_name", block.get("fw_id"))), "fw_version": str(block.get("fw_version"))}
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
        status = _name(page.get("status"))
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


# Subcommand -> how one GPU's entry of its JSON document is built from library calls.
DOCUMENTS: dict[str, Callable[[AmdSmiLibrary, LibraryGpu], dict[str, Any]]] = {
    "firmware": firmware_entry,
    "bad-pages": bad_pages_entry,
    "list": list_entry,
}
