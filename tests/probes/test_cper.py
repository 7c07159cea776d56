"""``amd-smi ras --cper`` records with their AFIDs, and what each AFID means (issue 19, item 1).

The samples are verbatim outputs published by AMD (tests/fixtures/cper/README.md says where).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console.checks.afid import AFIDS, afid, describe_afid
from console.checks.cper import describe_record, tally
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


# -- the other forms amd-smi has printed (docs/sources/cper-afid.md#output-forms-by-release) ----------------


def test_the_641_header_dump_reads_and_a_cut_entry_is_said() -> None:
    """AMD's 6.4.1 excerpt stops inside its first entry: the record is read, and the listing is incomplete."""
    parsed = parse_amdsmi((FIXTURES / "ras-cper-rocm641.txt").read_text())
    (record,) = parsed.data.cper  # type: ignore[union-attr]
    assert (record.gpu_index, record.severity, record.notify_type) == (0, "non_fatal_corrected", "CMC")
    assert record.timestamp == "2025/04/08 18:23:44" and record.afids == [] and "6.4.1" in (record.afid_note or "")
    assert not parsed.ok and parsed.errors == ["CPER entry 0 of GPU 0 is not closed: the listing was cut"]
    whole = (FIXTURES / "ras-cper-rocm641.txt").read_text() + '   "record_id": "5:1",\n   "oem_field": 7\n}\n'
    parsed = parse_amdsmi(whole)
    assert parsed.ok and parsed.data.cper[0].record_id == "5:1"  # type: ignore[union-attr]
    assert parsed.warnings == ["CPER header fields not read: oem_field"]


def test_a_folder_header_file_reads_as_its_record() -> None:
    """AMD's excerpt of ``fatal-1.json`` is the object's inside: wrapped in its braces, it is the file."""
    inside = (FIXTURES / "ras-cper-folder-header-rocm71.json.txt").read_text().rstrip().rstrip(",")
    parsed = parse_amdsmi("{\n" + inside + "\n}\n")
    (record,) = parsed.data.cper  # type: ignore[union-attr]
    assert (record.severity, record.notify_type, record.record_id, record.timestamp) == (
        "fatal",
        "MCE",
        "f0000031",
        "2000/06/27 10:45:13",
    )
    assert parsed.ok and parsed.warnings == [] and record.gpu_index is None


def test_the_refactored_json_rows_read_with_invalid_and_failed_afids() -> None:
    """Rows with the keys the refactored CLI prints (S4 ras.py; no published sample: built from its keys)."""
    rows = [
        {"timestamp": "2026/05/01 10:00:00", "gpu": 2, "severity": "FATAL", "cper_file": "/d/fatal-1.cper",
         "metadata_file": "/d/fatal-1.json", "afids": [30], "decode_failed": False},
        {"timestamp": "2026/05/01 10:00:01", "gpu": 3, "severity": "FATAL", "cper_file": "/d/fatal-2.cper",
         "metadata_file": "/d/fatal-2.json", "afids": [18446744073709551615, -1]},
        {"timestamp": "2026/05/01 10:00:02", "gpu": 4, "severity": "NONFATAL-CORRECTED", "afids": [],
         "decode_failed": True, "status": "error", "message": "Unable to read CPER File"},
        {"timestamp": "2026/05/01 10:00:03", "gpu": 5, "severity": "NONFATAL-UNCORRECTED", "fru": "OAM5"},
    ]  # fmt: skip
    parsed = parse_amdsmi(json.dumps(rows, indent=4))
    records = parsed.data.cper  # type: ignore[union-attr]
    assert [(r.gpu_index, r.severity, r.afids, r.afid_unknown) for r in records] == [
        (2, "fatal", ["30"], False),
        (3, "fatal", [], True),
        (4, "nonfatal-corrected", [], False),
        (5, "nonfatal-uncorrected", [], False),
    ]
    assert "AFID unknown" in (records[1].afid_note or "")
    assert records[2].afid_note == "decode failed; error; Unable to read CPER File"
    assert parsed.warnings == ["CPER row keys not read: fru"]
    assert parse_output("[]", tool=Tool.AMD_SMI, kind="ras").data.cper == []  # type: ignore[union-attr]


def test_an_invalid_afid_is_unknown_and_the_record_still_counts() -> None:
    (record,) = _records("ras-cper-invalid-afids.txt")
    assert record.afid_unknown and record.severity == "fatal"
    counted = tally([record], now=0.0, booted=None, max_age_h=None)  # 2000/01/09 is "older" than 0: no filter
    assert counted.counted == [record] and counted.action() == (None, None)  # the check's own action stands
    assert "AFID unknown" in describe_record(record)
    text = "timestamp  gpu_id  severity  file_name  list of afids\n2026/01/01 00:00:00  1  FATAL  fatal-1.cper  -1 19\n"
    (signed,) = parse_amdsmi(text).data.cper  # type: ignore[union-attr]
    assert (signed.afids, signed.afid_unknown) == (["19"], True)


_ROW_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(max_size=12), st.lists(st.integers() | st.text(max_size=6))
)


@FUZZ_SETTINGS
@given(
    st.lists(
        st.fixed_dictionaries(
            {"gpu": _ROW_VALUES, "severity": _ROW_VALUES},
            optional={k: _ROW_VALUES for k in ("timestamp", "afids", "cper_file", "decode_failed", "status", "x")},
        ),
        min_size=1,
        max_size=6,
    )
)
def test_any_json_rows_give_one_record_each_never_a_crash(rows: list[dict[str, object]]) -> None:
    parsed = parse_amdsmi(json.dumps(rows))
    assert parsed.kind == "ras" and len(parsed.data.cper) == len(rows)  # type: ignore[union-attr]


@FUZZ_SETTINGS
@given(
    st.lists(
        st.lists(
            st.tuples(st.sampled_from(["error_severity", "timestamp", "notify_type", "zz"]), st.text(max_size=10))
        ).map(dict),
        min_size=1,
        max_size=4,
    ),
    st.integers(0, 7),
)
def test_any_header_dump_gives_one_record_per_entry(entries: list[dict[str, str]], gpu: int) -> None:
    lines = [f"Dumping CPER file header entries for GPU {gpu}:"]
    for number, fields in enumerate(entries):
        lines += [f'"{number}": {{', *(f"   {json.dumps(k)}: {json.dumps(v)}," for k, v in fields.items()), "}"]
    parsed = parse_amdsmi("\n".join(lines) + "\n")
    assert parsed.kind == "ras" and len(parsed.data.cper) == len(entries)  # type: ignore[union-attr]


def test_the_641_dump_names_the_gpus_it_has_a_section_for() -> None:
    # AMD's 6.4.1 excerpt (GPU 0, its record closed) with an empty section for GPU 2 after it: the GPUs the
    # listing covers are those titled, with or without records; a GPU with no title had no record read.
    whole = (FIXTURES / "ras-cper-rocm641.txt").read_text() + '   "record_id": "5:1"\n}\n'
    parsed = parse_amdsmi(whole + "Dumping CPER file header entries for GPU 2:\n")
    assert parsed.ok and parsed.data.cper_gpus == [0, 2]  # type: ignore[union-attr]
    assert [record.gpu_index for record in parsed.data.cper] == [0]  # type: ignore[union-attr]
    # The table form names a GPU only in its records: it says nothing of the others.
    table = parse_amdsmi((FIXTURES / "ras-cper-folder-rocm71.txt").read_text())
    assert table.data.cper_gpus is None  # type: ignore[union-attr]
