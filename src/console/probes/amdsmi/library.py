"""Reading GPUs through AMD's ``amdsmi`` Python library instead of the ``amd-smi`` command (node-local only).

The ``amd-smi`` command is itself a thin layer over this library: each subcommand starts a Python
process, initialises the library and prints what its calls return. On the node (``check-local``) one
process can do that once for every probe. To keep one way of judging, the library's return values are
written here as the document ``amd-smi <subcommand> --json`` prints for them, and that document goes
through the same parser (``console.probes.amdsmi.parse``): both paths give the same ``AmdSmiResult``
and ``GpuRecord`` facts, and the same packs judge them. This module opens the library and makes its
calls; ``library_documents`` (list, firmware, bad-pages), ``library_static`` and ``library_metric``
write the documents.

A value the library reports as not supported (``AMDSMI_STATUS_NOT_SUPPORTED``) is written ``N/A``, as
the command writes it, so the parser marks it unavailable. Any other exception from a call is the
probe's failure (``LibraryCallError``): the probe is reported failed, with the call and the error,
and judged UNKNOWN like a command that failed; it is never left out.

The module is imported lazily, on the node only: the console host needs neither ROCm nor amdsmi.
"""

from __future__ import annotations

import contextlib
import importlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

# amdsmi_status_t: AMDSMI_STATUS_NOT_SUPPORTED (amdsmi.h). The command prints N/A for it.
STATUS_NOT_SUPPORTED = 2
# AMDSMI_STATUS_NO_PERM: what a call documented as needing root answers anyone else.
STATUS_NO_PERM = 10
NOT_AVAILABLE = "N/A"


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

    def call(self, name: str, gpu: LibraryGpu, *args: Any, na_statuses: tuple[int, ...] = ()) -> Any:
        """``amdsmi.<name>(handle, *args)``; N/A when not supported (or refused with one of ``na_statuses``),
        ``LibraryCallError`` on any other error."""
        function = getattr(self.module, name, None)
        if function is None:
            raise LibraryCallError(f"amdsmi has no {name} (older library?)")
        try:
            return function(gpu.handle, *args)
        except Exception as exc:  # the library's own exceptions, ctypes errors: all are this probe's failure
            code = _error_code(exc)
            if code == STATUS_NOT_SUPPORTED or (code is not None and code in na_statuses):
                return NOT_AVAILABLE
            raise LibraryCallError(f"{name} (GPU {gpu.index}) raised {type(exc).__name__}: {exc}") from exc

    def optional(self, name: str, gpu: LibraryGpu, *args: Any, na_statuses: tuple[int, ...] = ()) -> Any:
        """``call`` for a function newer libraries added: N/A where this library has none, as an older
        ``amd-smi`` (built on it) prints no value for it either."""
        if getattr(self.module, name, None) is None:
            return NOT_AVAILABLE
        return self.call(name, gpu, *args, na_statuses=na_statuses)

    def enum(self, enum_name: str, member: str) -> Any:
        """``amdsmi.<enum_name>.<member>`` (``AmdSmiTemperatureType.EDGE``), the argument some calls take."""
        found = getattr(getattr(self.module, enum_name, None), member, None)
        if found is None:
            raise LibraryCallError(f"amdsmi has no {enum_name}.{member} (older library?)")
        return found

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


def member_name(value: Any) -> str:
    """An enum member's name as the command prints it: ``AmdSmiFwBlock.FW_ID_CP_MEC1`` -> ``CP_MEC1``."""
    text = str(getattr(value, "name", value))
    for prefix in ("AMDSMI_", "FW_ID_"):
        text = text.removeprefix(prefix)
    return text


def quantity(value: Any, unit: str) -> Any:
    """``{"value": 750, "unit": "W"}`` as ``--json`` prints a measured value; N/A stays the bare string."""
    if value == NOT_AVAILABLE or value is None:
        return NOT_AVAILABLE
    return {"value": value, "unit": unit}


def expect_dict(value: Any, call: str, gpu: LibraryGpu) -> dict[str, Any] | str:
    """A call's dict, or N/A; any other shape is this library answering unlike the one this console knows."""
    if value == NOT_AVAILABLE or isinstance(value, dict):
        return value
    raise LibraryCallError(f"{call} (GPU {gpu.index}) returned {type(value).__name__}, not a dict")
