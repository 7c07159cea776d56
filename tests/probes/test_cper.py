"""``amd-smi ras --cper`` records with their AFIDs, and what each AFID means (issue 19, item 1).

The samples are verbatim outputs published by AMD (tests/fixtures/cper/README.md says where).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given

from console.checks.afid import AFIDS, afid, describe_afid
from console.cli import main
from console.model.findings import Remedy
from console.probes import Tool, parse_output
from console.probes.amdsmi import parse as parse_amdsmi
from tests.engine.test_sources import github_anchor
from tests.probes.fuzz import FUZZ_SETTINGS, assert_total, mangled_outputs

FIXTURES = Path(__file__).parents[1] / "fixtures" / "cper"
REPO = Path(__file__).parents[2]


def _records(name: str) -> list:  # type: ignore[type-arg]
    parsed = parse_output((FIXTURES / name).read_text(), tool=Tool.AMD_SMI)
    assert parsed.kind == "ras"
    return list(parsed.data.cper)  # type: ignore[union-attr]


def test_a_folder_listing_gives_each_records_afids() -> None:
    (record,) = _records("ras-cper-folder-rocm71.txt")
    assert (record.timestamp, record.gpu_index, record.severity) == ("2000/06/27 10:45:13", 1, "fatal")
    assert (record.file_name, record.afids, record.afid_note) == ("fatal-1.cper", ["30"], None)


def test_an_undecodable_record_is_named_not_read_as_ids() -> None:
    """amd-smi before 7.2.1 printed 2^64-1 for each AFID of a record it could not decode."""
    (record,) = _records("ras-cper-invalid-afids.txt")
    assert record.afids == [] and record.gpu_index is None
    assert record.afid_note is not None and "could not be decoded" in record.afid_note


def test_boot_and_unknown_severities_and_cells_without_ids_are_kept() -> None:
    text = (
        "timestamp            gpu_id  severity             file_name         list of afids\n"
        "2025/04/08 18:23:44  0       BOOT                 boot-1.cper       decode failed\n"
        "2025/04/08 18:23:45  3       UNKNOWN              unknown-1.cper    -\n"
        "2025/04/08 18:23:46  5       NONFATAL-CORRECTED   corrected-1.cper  24 29\n"
    )
    records = parse_amdsmi(text).data.cper  # type: ignore[union-attr]
    assert [(r.gpu_index, r.severity, r.afids, r.afid_note) for r in records] == [
        (0, "boot", [], "decode failed"),
        (3, "unknown", [], "no AFID"),
        (5, "nonfatal-corrected", ["24", "29"], None),
    ]


def test_a_row_that_is_no_record_is_said_not_dropped() -> None:
    text = (
        "timestamp            gpu_id  severity             file_name         list of afids\n"
        "2025/04/08 18:23:44  0       FATAL                fatal-1.cper      18\n"
        "2025/04/08 18:2\x00#  garbled\n"
        "Press CTRL + C to stop.\n"
    )
    parsed = parse_amdsmi(text)
    assert len(parsed.data.cper) == 1  # type: ignore[union-attr]
    assert parsed.warnings == ["not a CPER record: 2025/04/08 18:2#  garbled"]  # control characters cleaned
    assert parse_amdsmi((FIXTURES / "ras-cper-folder-rocm71.txt").read_text()).warnings == []


def test_digits_that_are_not_ascii_are_no_ids() -> None:
    """str.isdigit() holds for '²' and '٣', which int() refuses: such a cell is said, not read, nor a crash."""
    text = "timestamp  gpu_id  severity  file_name  list of afids\n2025/04/08 18:23:44  ٣  FATAL  fatal-1.cper  ² 30\n"
    (record,) = parse_amdsmi(text).data.cper  # type: ignore[union-attr]
    assert (record.gpu_index, record.afids, record.afid_note) == (None, ["30"], "²")


def test_parse_says_what_each_afid_means_and_the_action(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", str(FIXTURES / "ras-cper-folder-rocm71.txt")]) == 0
    out = capsys.readouterr().out
    assert "CPER 2000/06/27 10:45:13 gpu1 fatal (fatal-1.cper)" in out
    assert "AFID 30: device internal, other (fatal) -> rma, physical: RMA the OAM" in out
    assert main(["parse", str(FIXTURES / "ras-cper-folder-rocm71.txt"), "--json"]) == 0
    (meaning,) = json.loads(capsys.readouterr().out)["data"]["cper"][0]["afid_meanings"]
    assert (meaning["afid"], meaning["action"], meaning["physical"]) == (30, "rma", True)
    assert meaning["doc"] == "docs/sources/cper-afid.md#device-internal"


def test_every_afid_of_the_table_has_one_row_and_a_doc_heading() -> None:
    covered = [n for row in AFIDS for n in range(row.first, row.last + 1)]
    assert covered == list(range(1, 35))  # AFID_VERSION 0.7: 1-34, each once, in order
    for row in AFIDS:
        path, _, anchor = row.doc.partition("#")
        headings = re.findall(r"^#+ (.+)$", (REPO / path).read_text(), re.MULTILINE)
        assert anchor in {github_anchor(h) for h in headings}, row.doc
    # Fatal link errors are physical inspections; ids that could not be classified are no hardware verdict.
    assert afid(18).action is Remedy.INSPECT and afid(18).physical  # type: ignore[union-attr]
    assert {afid(n).action for n in (31, 32, 33, 34)} == {Remedy.RERUN}  # type: ignore[union-attr]
    assert describe_afid(99).startswith("AFID 99: not in the AFID table")


@FUZZ_SETTINGS
@given(mangled_outputs(sorted(FIXTURES.glob("*.txt"))))
def test_mangled_cper_listings_never_crash(data: bytes) -> None:
    assert_total(parse_amdsmi, data.decode("utf-8", "replace"), "ras")
