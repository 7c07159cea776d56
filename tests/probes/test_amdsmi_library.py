"""The amdsmi library's values, mapped to the facts the amd-smi parsers make from the real outputs.

Each test builds the library's return values from the numbers of a real amd-smi output in
tests/fixtures, answers them from a fake ``amdsmi`` module on this test's own ``sys.path``, and
checks that the library path gives the same ``GpuRecord`` facts as parsing the output does.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from console.model.amdsmi import AmdSmiResult
from console.probes import Tool, parse_output
from console.probes.amdsmi.library import AmdSmiLibrary, LibraryCallError, open_library
from console.probes.amdsmi.library_documents import NO_BAD_PAGES, document
from tests.fake_amdsmi import fake_amdsmi_path, write_fake_amdsmi

__all__ = ["fake_amdsmi_path"]  # the fixture, used by name

AMD = Path(__file__).parents[1] / "fixtures" / "real" / "amd-smi"
# amd-smi bad-pages as printed with two retired pages (tests/probes/test_amdsmi_forms.py has it too).
BAD_PAGES_TEXT = """GPU: 0
    RETIRED:
        PAGE_ADDRESS: 0x5c7e000
        PAGE_SIZE: 4096
        STATUS: RESERVED
        PAGE_ADDRESS: 0x5c7f000
        PAGE_SIZE: 4096
        STATUS: RESERVED
    PENDING: No bad pages found.
    UN_RES: No bad pages found.
"""


def json_form(result: AmdSmiResult) -> str:
    """``amd-smi bad-pages --json`` of the same pages (one entry per GPU, pages with their state and their
    address a number, as the library returns it and the JSON form prints it)."""
    entries = []
    for index, gpu in enumerate(result.gpus):
        pages = gpu.bad_pages
        assert pages is not None
        retired = [
            {"page_address": int(p.address, 16), "page_size": p.size_bytes, "status": "RESERVED"} for p in pages.retired
        ]
        entries.append(
            {"gpu": index, "retired": retired or NO_BAD_PAGES, "pending": NO_BAD_PAGES, "un_res": NO_BAD_PAGES}
        )
    return json.dumps(entries)


def _result(text: str) -> AmdSmiResult:
    parsed = parse_output(text)
    assert parsed.tool is Tool.AMD_SMI and parsed.ok, parsed.errors
    assert isinstance(parsed.data, AmdSmiResult)
    return parsed.data


def _library(root: Path, gpus: list[dict[str, object]], **kwargs: object) -> AmdSmiLibrary:
    write_fake_amdsmi(root, gpus, **kwargs)  # type: ignore[arg-type]
    library = open_library()
    assert isinstance(library, AmdSmiLibrary), library
    return library


def test_firmware_from_the_library_is_the_real_outputs_facts(fake_amdsmi_path: Path) -> None:
    from_command = _result((AMD / "firmware-mi300x-gpu0.txt").read_text())
    assert len(from_command.gpus[0].firmware) == 10
    # The library's values: block enums, plain numbers as ints, the formatted blocks (VCN, PSP...) as strings.
    blocks = [
        {"fw": name, "version": int(version) if version.isdigit() else version}
        for name, version in from_command.gpus[0].firmware.items()
    ]
    library = _library(fake_amdsmi_path, [{"amdsmi_get_fw_info": blocks, "amdsmi_get_gpu_bad_page_info": []}])
    from_library = _result(document(library, "firmware"))
    assert from_library.kind == from_command.kind == "firmware"
    assert from_library.gpus == from_command.gpus
    assert from_library.gpus[0].firmware["PM"] == "85.110.0" and from_library.gpus[0].firmware["CP_MEC1"] == "147"


def test_bad_pages_none_and_some_are_the_real_outputs_facts(fake_amdsmi_path: Path) -> None:
    none = _result((AMD / "bad-pages-mi300x-none.txt").read_text())
    some = _result(BAD_PAGES_TEXT)
    pages = [
        {"address": int(p.address, 16), "size": p.size_bytes, "status": "RESERVED"}
        for p in some.gpus[0].bad_pages.retired  # type: ignore[union-attr]
    ]
    library = _library(
        fake_amdsmi_path,
        [{"amdsmi_get_gpu_bad_page_info": pages}, {"amdsmi_get_gpu_bad_page_info": []}],
    )
    from_library = _result(document(library, "bad-pages"))
    assert from_library.kind == "bad-pages"
    assert from_library.gpus[1].bad_pages == none.gpus[1].bad_pages
    got, want = from_library.gpus[0].bad_pages, some.gpus[0].bad_pages
    assert got is not None and want is not None
    # The same pages; the text form prints the address in hex, the JSON form (and the library) as a number.
    assert [(int(p.address or ""), p.size_bytes) for p in got.retired] == [
        (int(p.address or "", 16), p.size_bytes) for p in want.retired
    ]
    assert (got.pending, got.unreservable, got.unavailable) == (want.pending, want.unreservable, want.unavailable)
    # The probe runs ``bad-pages --json``, whose pages carry their state; the text form above does not.
    assert got == _result(json_form(some)).gpus[0].bad_pages


def test_not_supported_is_na_as_the_command_prints_it(fake_amdsmi_path: Path) -> None:
    library = _library(
        fake_amdsmi_path, [{"amdsmi_get_gpu_bad_page_info": []}], raise_on={"amdsmi_get_gpu_bad_page_info": 2}
    )
    pages = _result(document(library, "bad-pages")).gpus[0].bad_pages
    assert pages is not None and pages.retired == []
    assert set(pages.unavailable) == {"retired", "pending", "unreservable"}  # unavailable, not "no pages"


def test_a_call_that_fails_is_the_probes_failure(fake_amdsmi_path: Path) -> None:
    library = _library(fake_amdsmi_path, [{"amdsmi_get_fw_info": []}], raise_on={"amdsmi_get_fw_info": 1})
    with pytest.raises(LibraryCallError, match=r"amdsmi_get_fw_info \(GPU 0\) raised AmdSmiLibraryException"):
        document(library, "firmware")


def test_an_unknown_page_state_is_said_not_guessed(fake_amdsmi_path: Path) -> None:
    pages = [{"address": 4096, "size": 4096, "status": "QUARANTINED"}]
    library = _library(fake_amdsmi_path, [{"amdsmi_get_gpu_bad_page_info": pages}])
    with pytest.raises(LibraryCallError, match="unknown page status 'QUARANTINED'"):
        document(library, "bad-pages")


def test_no_library_or_no_init_says_why(fake_amdsmi_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "amdsmi", None)  # what import finds when the package is not installed
    assert str(open_library()).startswith("amdsmi library not importable: ModuleNotFoundError")
    monkeypatch.delitem(sys.modules, "amdsmi")
    write_fake_amdsmi(fake_amdsmi_path, [], init_error=8)
    reason = open_library()
    assert isinstance(reason, str) and reason.startswith("amdsmi library did not initialise: AmdSmiLibraryException")


def test_the_console_imports_amdsmi_only_when_a_node_check_asks() -> None:
    # A console host without ROCm must load everything: the library is imported by open_library alone.
    code = (
        "import sys, console.cli, console.sweep.local_check, console.sweep.library_collect, "
        "console.probes.amdsmi.library, console.probes.amdsmi.library_documents; print('amdsmi' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
