"""``amd-smi ras --cper`` in the forms other than the 7.1 table (``tables.parse_cper`` reads that one).

amd-smi has printed its CPER records four ways (docs/sources/cper-afid.md#output-forms-by-release):

- 6.4.1: ``Dumping CPER file header entries for GPU N:`` and, per record, a ``"k": { ... }`` block of
  header fields (severity, notify type, time, record id) with no AFID: AFIDs came in 6.4.2.
- 6.4.2 to 7.2: the fixed-width table (``tables.parse_cper``); ``--json`` is ignored up to 7.1.
- the refactored CLI (2026): ``--json`` prints a list of rows ``{"timestamp", "gpu", "severity",
  "cper_file", "metadata_file", "afids", ...}``.
- with ``--folder``, each record's header also goes to ``<prefix>-<n>.json`` beside its ``.cper`` file:
  one object with ``error_severity``, ``notify_type``, ``timestamp``, ``record_id``...

Every form reads into the same ``CperRecord``. A line or key a form does not explain is reported, never
dropped; an AFID amd-smi printed as 2^64-1 (or -1, the same bits signed) keeps its record, marked
``afid_unknown``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from console.model.amdsmi import CperRecord

# amd-smi before ROCm 7.2.1 printed 2^64 - 1 for each AFID of a record it could not decode; a reader that
# takes the 64 bits as signed sees -1 (ROCm/rocm-systems#2477).
INVALID_AFID = "18446744073709551615"
INVALID_AFIDS = frozenset({INVALID_AFID, "-1"})
INVALID_NOTE = "AFID unknown: invalid AFID 2^64-1, the record could not be decoded (amd-smi before 7.2.1)"
# The keys of one row of the refactored CLI's ``--json`` (S4 ras.py); any other key is reported.
_ROW_KEYS = frozenset(
    {
        "timestamp",
        "gpu",
        "severity",
        "cper_file",
        "metadata_file",
        "afids",
        "decode_failed",
        "status",
        "message",
        "code",
    }
)
# The header fields amd-smi writes per record (6.4.1 dump, ``--folder`` header files): read or known-unused.
_HEADER_KEYS = frozenset(
    {
        "error_severity", "notify_type", "timestamp", "record_id", "signature", "revision", "signature_end",
        "sec_cnt", "record_length", "platform_id", "creator_id", "partition_id", "flags", "persistence_info",
        "validation_bits",
    }
)  # fmt: skip
_DUMP_TITLE = re.compile(r"^Dumping CPER file header entries for GPU\s+(\S+?):?\s*$", re.IGNORECASE)
_ENTRY_OPEN = re.compile(r'^"?(\d+)"?\s*:\s*\{\s*$')
_ENTRY_FIELD = re.compile(r'^"([A-Za-z_][A-Za-z0-9_]*)"\s*:\s*(.*?)\s*,?\s*$')
_ENTRY_CLOSE = re.compile(r"^\}\s*,?\s*$")
_PROMPT = re.compile(r"^\S*\$\s")  # a shell prompt quoted with the output, as AMD's documentation does
_DUMP_NOTE = "amd-smi 6.4.1 lists no AFIDs (they came in 6.4.2)"
_FILE_NOTE = "a --folder header file names no AFID (the .cper record beside it holds them)"


@dataclass
class CperRead:
    """Records of one output, with the lines or keys not understood (warnings) and what makes the listing
    incomplete (errors: a record cut off mid-way)."""

    records: list[CperRecord] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # The GPUs the listing has a section for (the 6.4.1 dump titles each GPU, with or without records);
    # None for a form that names a GPU only in its records.
    listed: list[int] | None = None


def afid_values(values: Iterable[object]) -> tuple[list[str], str | None, bool]:
    """AFIDs of one record (a table cell's words or a JSON list): the usable ids, a note on what was no id,
    and whether amd-smi printed the invalid id (the AFID is then unknown, the record still counts)."""
    words = [str(v).strip() for v in values if not isinstance(v, bool)]
    words = [w for w in words if w]
    unknown = any(w in INVALID_AFIDS for w in words)

    def is_id(word: str) -> bool:  # AFIDs are small; ascii only: int() refuses '²', which isdigit() accepts
        return word.isascii() and word.isdigit() and len(word) < len(INVALID_AFID)

    afids = [w for w in words if is_id(w)]
    other = " ".join(w for w in words if not is_id(w) and w not in INVALID_AFIDS)
    if unknown:
        return afids, INVALID_NOTE + (f"; also {other}" if other else ""), True
    if other and other != "-":
        return afids, other, False
    return afids, "no AFID" if not afids else None, False


def is_header_dump(lines: list[str]) -> bool:
    """The 6.4.1 form: a ``Dumping CPER file header entries for GPU N:`` title."""
    return any(_DUMP_TITLE.match(line.strip()) for line in lines)


def parse_header_dump(lines: list[str]) -> CperRead:
    """Read the 6.4.1 form: per GPU title, per record a block of ``"key": value`` header fields."""
    read = CperRead(listed=[])
    gpu: int | None = None
    entry: dict[str, str] | None = None
    name = ""
    for raw in lines:
        line = raw.strip()
        if not line or _PROMPT.match(line):
            continue
        if title := _DUMP_TITLE.match(line):
            if entry is not None:
                read.errors.append(f"CPER entry {name} of GPU {gpu} is not closed: the listing was cut")
                read.records.append(_from_header(entry, gpu, read.warnings, _DUMP_NOTE))
                entry = None
            word = title.group(1)
            gpu = int(word) if word.isascii() and word.isdigit() and len(word) <= 3 else None
            if gpu is not None and read.listed is not None:
                read.listed.append(gpu)
            continue
        if entry is None and (opened := _ENTRY_OPEN.match(line)):
            entry, name = {}, opened.group(1)
            continue
        if entry is not None and _ENTRY_CLOSE.match(line):
            read.records.append(_from_header(entry, gpu, read.warnings, _DUMP_NOTE))
            entry = None
            continue
        if entry is not None and (pair := _ENTRY_FIELD.match(line)):
            entry[pair.group(1).lower()] = pair.group(2).strip().strip('"')
            continue
        read.warnings.append(f"not a CPER header line: {line[:200]}")
    if entry is not None:
        # A record cut off after its title: it is counted with what was read, and the listing is incomplete.
        read.errors.append(f"CPER entry {name} of GPU {gpu} is not closed: the listing was cut")
        read.records.append(_from_header(entry, gpu, read.warnings, _DUMP_NOTE))
    return read


def _from_header(fields: Mapping[str, Any], gpu: int | None, warnings: list[str], note: str) -> CperRecord:
    unknown = sorted(str(k) for k in fields if str(k).lower() not in _HEADER_KEYS)
    if unknown:
        warnings.append(f"CPER header fields not read: {', '.join(unknown)}")
    return CperRecord(
        gpu_index=gpu,
        timestamp=_text(fields.get("timestamp")),
        severity=_lower(fields.get("error_severity")),
        afid_note=note,
        notify_type=_text(fields.get("notify_type")),
        record_id=_text(fields.get("record_id")),
    )


def _text(value: object) -> str | None:
    if value is None or isinstance(value, dict | list):
        return None
    text = str(value).strip()
    return text or None


def _lower(value: object) -> str | None:
    text = _text(value)
    return text.lower() if text is not None else None


def is_cper_json(documents: list[Any]) -> bool:
    """Rows of the refactored ``--json`` (objects with ``severity`` and ``gpu``), or header files of
    ``--folder`` (objects with ``error_severity``), and nothing else."""
    items = [item for document in documents for item in (document if isinstance(document, list) else [document])]
    return bool(items) and all(
        isinstance(item, dict) and ("error_severity" in item or ({"severity", "gpu"} <= item.keys())) for item in items
    )


def parse_cper_json(documents: list[Any]) -> CperRead:
    """Records from ``--json`` rows and ``--folder`` header files (``is_cper_json`` said they are)."""
    read = CperRead()
    for document in documents:
        for item in document if isinstance(document, list) else [document]:
            if "error_severity" in item:
                read.records.append(_from_header(item, None, read.warnings, _FILE_NOTE))
            else:
                read.records.append(_from_row(item, read.warnings))
    return read


def _from_row(row: Mapping[str, Any], warnings: list[str]) -> CperRecord:
    unknown = sorted(str(k) for k in row if k not in _ROW_KEYS)
    if unknown:
        warnings.append(f"CPER row keys not read: {', '.join(unknown)}")
    raw = row.get("afids")
    values = raw if isinstance(raw, list) else ([] if raw is None else [raw])
    afids, note, invalid = afid_values(values)
    if "afids" not in row:
        note = "no AFIDs in this row (amd-smi lists them with --folder only)"
    said = [str(row[k]) for k in ("status", "message", "code") if row.get(k) not in (None, "", 0, "0", "success")]
    if row.get("decode_failed") is True:
        said.insert(0, "decode failed")
    if said:
        note = "; ".join(p for p in (note if afids or invalid else None, *said) if p)
    gpu = row.get("gpu")
    index = gpu if isinstance(gpu, int) and not isinstance(gpu, bool) and 0 <= gpu < 1000 else None
    if index is None and isinstance(gpu, str) and gpu.isascii() and gpu.isdigit() and len(gpu) <= 3:
        index = int(gpu)
    return CperRecord(
        gpu_index=index,
        timestamp=_text(row.get("timestamp")),
        severity=_lower(row.get("severity")),
        file_name=_text(row.get("cper_file")),
        afids=afids,
        afid_note=note,
        afid_unknown=invalid,
    )
