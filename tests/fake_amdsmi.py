"""A stand-in for AMD's ``amdsmi`` Python module, written to a test's own directory (never the console's path).

It returns what the real library returns for the calls the console makes, in the same shapes: enum
members for firmware blocks and page states, ``AmdSmiLibraryException`` with ``err_code`` for a failed
call (2 is ``AMDSMI_STATUS_NOT_SUPPORTED``). The values come from a JSON file the test writes, built
from the numbers of real or simulated amd-smi outputs.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_SOURCE = """
import enum, json, threading

VALUES = json.loads(open({values!r}).read())
RAISE = {raise_on!r}
INIT_ERROR = {init_error!r}
HANG = {hang_on!r}


class AmdSmiException(Exception):
    pass


class AmdSmiLibraryException(AmdSmiException):
    def __init__(self, err_code):
        self.err_code = err_code
        name = "AMDSMI_STATUS_NOT_SUPPORTED" if err_code == 2 else "AMDSMI_STATUS_UNKNOWN_ERROR"
        super().__init__(f"Error code:\\n\\t{{err_code}} | {{name}}")


class AmdSmiFwBlock(enum.Enum):
    pass


def _enum(name):
    # The real AmdSmiFwBlock / AmdSmiMemoryPageStatus members: only .name matters to the console.
    return enum.Enum("Member", [name])[name]


def amdsmi_init(*flags):
    if INIT_ERROR is not None:
        raise AmdSmiLibraryException(INIT_ERROR)


def amdsmi_shut_down():
    pass


def amdsmi_get_processor_handles():
    return list(range(len(VALUES["gpus"])))


def _answer(name, handle):
    if name in HANG:
        threading.Event().wait()  # a call blocked in the driver, as on a wedged GPU
    if name in RAISE:
        raise AmdSmiLibraryException(RAISE[name])
    return VALUES["gpus"][handle][name]


def amdsmi_get_gpu_device_bdf(handle):
    return _answer("list", handle)["bdf"]


def amdsmi_get_gpu_device_uuid(handle):
    return _answer("list", handle)["uuid"]


def amdsmi_get_gpu_kfd_info(handle):
    gpu = _answer("list", handle)
    return {{"kfd_id": gpu["kfd_id"], "node_id": gpu["node_id"], "current_partition_id": gpu["partition_id"]}}


def amdsmi_get_fw_info(handle):
    info = _answer("fw_info", handle)
    return {{"fw_list": [{{"fw_name": _enum("FW_ID_" + b["fw"]), "fw_version": b["version"]}} for b in info]}}


def amdsmi_get_gpu_bad_page_info(handle):
    pages = _answer("bad_pages", handle)
    return [
        {{"value": i, "page_address": p["address"], "page_size": p["size"], "status": _enum(p["status"])}}
        for i, p in enumerate(pages)
    ]
"""


def write_fake_amdsmi(
    root: Path,
    gpus: list[dict[str, Any]],
    *,
    raise_on: dict[str, int] | None = None,
    init_error: int | None = None,
    hang_on: frozenset[str] = frozenset(),
) -> Path:
    """Write ``root/amdsmi/__init__.py`` answering with ``gpus`` (per GPU: ``fw_info`` [{fw, version}],
    ``bad_pages`` [{address, size, status}] and ``list`` {bdf, uuid, kfd_id, node_id, partition_id});
    ``raise_on`` maps fw_info/bad_pages/list to the error code raised;
    ``hang_on`` names the calls that never return."""
    package = root / "amdsmi"
    package.mkdir(parents=True, exist_ok=True)
    values = root / "amdsmi-values.json"
    values.write_text(json.dumps({"gpus": gpus}))
    source = _SOURCE.format(values=str(values), raise_on=raise_on or {}, init_error=init_error, hang_on=set(hang_on))
    (package / "__init__.py").write_text(source)
    return root


@pytest.fixture
def fake_amdsmi_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory put first on ``sys.path`` for this test only, ``amdsmi`` unimported before and after."""
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    sys.modules.pop("amdsmi", None)
    yield root
    sys.modules.pop("amdsmi", None)


def library_values_from_json(
    firmware: list[dict[str, Any]], bad_pages: list[dict[str, Any]], listed: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Library-shaped values per GPU from ``amd-smi firmware``, ``bad-pages`` and ``list --json`` entries."""
    groups = {"retired": "RESERVED", "pending": "PENDING", "un_res": "UNRESERVABLE"}
    gpus = []
    for fw_entry, pages_entry, list_entry in zip(firmware, bad_pages, listed, strict=True):
        pages = []
        for key, status in groups.items():
            found = pages_entry.get(key)
            records = found if isinstance(found, list) else [found] if isinstance(found, dict) else []
            pages += [
                {"address": _number(r["page_address"]), "size": r["page_size"], "status": status} for r in records
            ]
        fw = [{"fw": b["fw_id"], "version": _number(b["fw_version"])} for b in fw_entry["fw_list"]]
        gpus.append({"fw_info": fw, "bad_pages": pages, "list": list_entry})
    return gpus


def _number(text: Any) -> Any:
    """What the library returns where the command printed a number: an int (hex addresses included)."""
    if isinstance(text, str) and text.lower().startswith("0x"):
        return int(text, 16)
    return int(text) if isinstance(text, str) and text.isdigit() else text
