"""The simulator's ``amd-smi ras --cper``: the records of a node's CPER rings, in the form its amd-smi prints.

Which form follows the node's ROCm release (docs/sources/cper-afid.md#output-forms-by-release):

- 6.4.1: ``Dumping CPER file header entries for GPU N:`` and a block of header fields per record, no AFID;
- 6.4.2 to 7.2: the table, with ``file_name`` and ``list of afids`` when ``--folder`` is given; ``--json``
  is ignored (7.1 documents it so; the simulator keeps the table up to 7.2);
- later (the refactored CLI): ``--json`` gives a list of row objects.

Releases before 7.0.2 list at most 20 records per device (the oldest ones: the reader never asked for the
rest); a record amd-smi cannot decode shows its AFIDs as 2^64-1 before 7.2.1 and ``decode failed`` from
then on. ``header_file`` writes what ``--folder`` saves beside each record as ``<prefix>-<n>.json``.
"""

from __future__ import annotations

import time

from console.sim.commands import SimContext, SimReply
from console.sim.models import SimCperRecord, SimGpu
from console.sim.render.amdsmi_format import dump_json

# ``ras --cper`` severities: the table's words and the file name prefix of each record class.
_WORDS = {
    "fatal": ("FATAL", "fatal"),
    "boot": ("BOOT", "boot"),
    "uncorrected": ("NONFATAL-UNCORRECTED", "uncorrected"),
    "corrected": ("NONFATAL-CORRECTED", "corrected"),
}
# The header's ``error_severity`` and ``notify_type`` of each record class (boot records are fatal, BOOT).
_HEADER = {
    "fatal": ("fatal", "MCE"),
    "boot": ("fatal", "BOOT"),
    "uncorrected": ("non_fatal_uncorrected", "MCE"),
    "corrected": ("non_fatal_corrected", "CMC"),
}
# ``--severity`` words -> the record classes they select (``all`` is the default; ``other``: a record of
# any other severity, which only ``all`` selects, as its mask holds every bit).
_SELECT = {
    "all": {"fatal", "boot", "uncorrected", "corrected", "other"},
    "fatal": {"fatal", "boot"},
    "nonfatal-uncorrected": {"uncorrected"},
    "nonfatal-corrected": {"corrected"},
}


def _kind(record: SimCperRecord) -> str:
    """The record's class, ``other`` for a severity amdgpu does not write (``cper_record``'s free word)."""
    return record.severity if record.severity in _WORDS else "other"


def _word(record: SimCperRecord) -> tuple[str, str]:
    """The table's word and the file name prefix: amd-smi prints an other severity as it knows it
    (``UNKNOWN`` for a value outside its enum) and saves it as ``unknown-<n>``."""
    return _WORDS.get(record.severity, (record.severity.upper(), "unknown"))


# One-section record lengths amdgpu writes (fatal 376, boot 408, runtime 472 bytes).
_LENGTH = {"fatal": 376, "boot": 408, "uncorrected": 472, "corrected": 472}
AFIDS_FROM = (6, 4, 2)  # before: the 6.4.1 header dump, no AFID
READ_LIMIT = 20
READ_LIMIT_FIXED = (7, 0, 2)
INVALID_AFID_FIXED = (7, 2, 1)
JSON_ROWS_FROM = (7, 3)  # the refactored CLI (after the 7.2 line) honours --json
INVALID_AFID = 18446744073709551615
_UNDECODABLE_SECTIONS = 4  # AMD's published sample of an undecodable record shows four invalid ids


def ras(ctx: SimContext, args: list[str], duration: float, rocm: tuple[int, ...]) -> SimReply:
    """``amd-smi ras --cper [--severity W...] [--folder DIR] [-g N...] [--json]`` on ``ctx.node``."""
    node = ctx.node
    if "--cper" not in args and "--afid" not in args:
        return SimReply("", "amd-smi ras: error: one of the arguments --cper --afid is required\n", 2, duration)
    if not ctx.as_root:
        return SimReply("", "ERROR:root:amd-smi ras --cper: Command requires elevation\n", 1, duration)
    if not node.cper_enabled:
        return SimReply("", "ERROR:root:amd-smi ras --cper requires CPER to be enabled\n", 1, duration)
    wanted: set[str] = set()
    folder = gpus = None
    position = 0
    while position < len(args):
        arg = args[position]
        position += 1
        if arg == "--severity":
            while position < len(args) and not args[position].startswith("-"):
                word = args[position].lower()
                if word not in _SELECT:
                    return SimReply("", f"amd-smi ras: error: invalid severity: {args[position]}\n", 2, duration)
                wanted |= _SELECT[word]
                position += 1
        elif arg == "--folder" and position < len(args):
            folder, position = args[position], position + 1
        elif arg in ("-g", "--gpu"):
            gpus = set()
            while position < len(args) and args[position].isdigit():
                gpus.add(int(args[position]))
                position += 1
    listed = [
        (gpu, records)
        for gpu in node.gpus
        # A fault may leave a GPU out of the listing (``amdsmi_gpu_left_out`` with ``args = "ras"``).
        if (gpus is None or gpu.index in gpus) and "ras" not in gpu.left_out_of
        for records in [_listed(gpu, wanted or _SELECT["all"], rocm)]
    ]
    if rocm < AFIDS_FROM:
        return SimReply(_header_dump(listed), duration_s=duration)
    if "--json" in args and rocm >= JSON_ROWS_FROM:
        return SimReply(_json_rows(listed, folder, rocm), duration_s=duration)
    return _table(listed, folder, rocm, duration)


def _listed(gpu: SimGpu, wanted: set[str], rocm: tuple[int, ...]) -> list[SimCperRecord]:
    records = [r for r in sorted(gpu.cper, key=lambda r: -r.age_s) if _kind(r) in wanted]
    # The old reader stopped after 20 records of the device: the oldest, in ring order.
    return records[:READ_LIMIT] if rocm < READ_LIMIT_FIXED else records


def _stamp(record: SimCperRecord, now: float) -> str:
    return record.time_text or time.strftime("%Y/%m/%d %H:%M:%S", time.gmtime(now - record.age_s))


def _afid_words(record: SimCperRecord, rocm: tuple[int, ...]) -> list[str]:
    if not record.undecodable:
        return [str(a) for a in record.afids]
    if rocm < INVALID_AFID_FIXED:
        return [str(INVALID_AFID)] * _UNDECODABLE_SECTIONS
    return ["decode", "failed"]


def _table(
    listed: list[tuple[SimGpu, list[SimCperRecord]]], folder: str | None, rocm: tuple[int, ...], duration: float
) -> SimReply:
    now = time.time()
    numbers: dict[str, int] = {}
    rows = []
    for gpu, records in listed:
        for record in records:
            word, prefix = _word(record)
            numbers[prefix] = numbers.get(prefix, 0) + 1
            row = f"{_stamp(record, now):<21}{gpu.index:<8}{word:<21}"
            if folder is not None:
                row += f"{prefix}-{numbers[prefix]}.cper".ljust(17) + " " + " ".join(_afid_words(record, rocm))
            rows.append(row.rstrip())
    if folder is None:
        header = f"{'timestamp':<21}{'gpu_id':<8}severity"
        warning = "WARNING: No folder given (--folder): CPER files are not dumped and AFIDs are not listed\n"
        return SimReply(header + "\n" + "".join(r + "\n" for r in rows), warning, 0, duration)
    header = f"{'timestamp':<21}{'gpu_id':<8}{'severity':<21}{'file_name':<18}list of afids"
    return SimReply(header + "\n" + "".join(r + "\n" for r in rows), duration_s=duration)


def _header_fields(record: SimCperRecord, gpu: SimGpu, number: int, now: float) -> dict[str, object]:
    severity, notify = _HEADER.get(record.severity, (record.severity, "MCE"))
    return {
        "error_severity": severity,
        "notify_type": notify,
        "timestamp": _stamp(record, now),
        "signature": "CPER",
        "revision": 256,
        "signature_end": "0xffffffff",
        "sec_cnt": 1,
        "record_length": _LENGTH.get(record.severity, 472),
        "platform_id": "0x1002:0x74A1",
        "creator_id": "amdgpu",
        "record_id": f"{gpu.slot}:{number:x}",
        "flags": 0,
        "persistence_info": 0,
    }


def _header_dump(listed: list[tuple[SimGpu, list[SimCperRecord]]]) -> str:
    now = time.time()
    out = []
    for gpu, records in listed:
        out.append(f"Dumping CPER file header entries for GPU {gpu.index}:")
        for number, record in enumerate(records):
            out.append(f'"{number}": {{')
            fields = list(_header_fields(record, gpu, number + 1, now).items())
            for position, (key, value) in enumerate(fields):
                shown = f'"{value}"' if isinstance(value, str) else str(value)
                out.append(f'   "{key}": {shown}' + ("," if position < len(fields) - 1 else ""))
            out.append("}")
    return "".join(line + "\n" for line in out)


def _json_rows(listed: list[tuple[SimGpu, list[SimCperRecord]]], folder: str | None, rocm: tuple[int, ...]) -> str:
    now = time.time()
    numbers: dict[str, int] = {}
    rows: list[dict[str, object]] = []
    for gpu, records in listed:
        for record in records:
            row: dict[str, object] = {
                "timestamp": _stamp(record, now),
                "gpu": gpu.index,
                "severity": _word(record)[0],
            }
            if folder is not None:
                prefix = _word(record)[1]
                numbers[prefix] = numbers.get(prefix, 0) + 1
                base = f"{folder.rstrip('/')}/{prefix}-{numbers[prefix]}"
                row |= {
                    "cper_file": f"{base}.cper",
                    "metadata_file": f"{base}.json",
                    "afids": [] if record.undecodable else list(record.afids),
                    "decode_failed": record.undecodable,
                }
            rows.append(row)
    return dump_json(rows)


def header_file(gpu: SimGpu, record: SimCperRecord, number: int) -> str:
    """The ``<prefix>-<number>.json`` amd-smi writes beside a record's ``.cper`` file with ``--folder``."""
    return dump_json(_header_fields(record, gpu, number, time.time()))
