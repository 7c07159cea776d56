"""Which CPER records of a node still count, and how a finding words them.

amd-smi lists every record the driver's ring holds, each time it is asked, and a record stays there
until the driver reloads: a fatal record from last week (the GPU was reset since, the node has been
fine) would drain the node at every sweep, which is how healthy nodes were drained elsewhere
(ROCm/device-metrics-exporter#506). So a record counts only when it is from this boot and younger
than the pack's ``cper_max_age_h``; the others are named in the finding as ignored, never dropped
unsaid. A record whose time cannot be read, or that lies in the future, still counts: its age is not
known, and a wrong clock is no proof of health.

amd-smi prints the time without a zone; amdgpu stamps records from the UTC wall clock.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field

from console.checks.afid import afid
from console.model.amdsmi import CperRecord
from console.model.findings import Remedy
from console.model.gpu import BadPages

# A record stamped this much before the computed boot time is still taken as this boot's: the boot time
# is the console's clock minus the node's uptime, and the two clocks may differ a little.
BOOT_SLACK_S = 300.0
# Beyond this ahead of the console's clock a record's time is wrong (AMD's own samples show 2070).
FUTURE_SLACK_S = 86_400.0
_FORMATS = ("%Y/%m/%d %H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y/%m/%d %H:%M", "%Y-%m-%d %H:%M")


def severity_class(record: CperRecord) -> str:
    """``fatal`` (fatal and boot-time records), ``uncorrected``, ``corrected`` or ``unknown``.

    ``unknown`` is every other word (amd-smi's own ``UNKNOWN``, UEFI's ``informational``, a name a later
    release adds, or none at all): the ``ras.cper_unrecognised`` check names those records, so no record
    the listing shows is left out of every check."""
    word = (record.severity or "").lower().replace("_", "-")
    # The device-metrics-exporter's names (CPER_SEVERITY_FATAL, ...) carry a prefix amd-smi's do not.
    word = word.removeprefix("cper-severity-")
    if word in ("fatal", "boot"):
        return "fatal"
    if "uncorrected" in word or word == "recoverable":
        return "uncorrected"
    if "corrected" in word:
        return "corrected"
    return "unknown"


def record_time(record: CperRecord) -> float | None:
    """The record's time as epoch seconds (UTC), None when it cannot be read."""
    text = " ".join((record.timestamp or "").split())
    for form in _FORMATS:
        try:
            return dt.datetime.strptime(text, form).replace(tzinfo=dt.UTC).timestamp()
        except ValueError:
            continue
    return None


@dataclass
class Tally:
    """The records of one severity class on one GPU: those that count, and those ignored with why."""

    counted: list[CperRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # why a counted record's age is unknown
    ignored: list[str] = field(default_factory=list)

    def action(self) -> tuple[Remedy | None, str | None]:
        """The gravest action the counted records' AFIDs call for, and what the vendor says to do."""
        rows = [row for record in self.counted for number in record.afids if (row := afid(int(number))) is not None]
        if not rows:
            return None, None
        row = max(rows, key=lambda r: r.action.rank)
        ids = f"{row.first}-{row.last}" if row.last != row.first else str(row.first)
        return row.action, f"AFID {ids}: {row.what_to_do} ({row.doc})"

    def detail(self, *, severity: bool = False) -> str | None:
        """What the finding says beyond the count: the records' AFIDs and actions, and what was ignored
        (``severity``: each record's severity as amd-smi printed it, when the class does not say it)."""
        parts = [describe_record(record, severity=severity) for record in self.counted[:4]]
        if len(self.counted) > 4:
            parts.append(f"and {len(self.counted) - 4} more")
        parts += self.notes[:3]
        if self.ignored:
            parts.append(f"{len(self.ignored)} ignored: " + "; ".join(self.ignored[:3]))
        return "; ".join(parts) or None


def tally(records: Iterable[CperRecord], *, now: float, booted: float | None, max_age_h: float | None) -> Tally:
    """Sort ``records`` (one severity class of one GPU) into those that count and those ignored."""
    result = Tally()
    for record in records:
        when = record_time(record)
        stamp = record.timestamp or "no time"
        if when is None:
            result.counted.append(record)
            result.notes.append(f"record time {stamp!r} unreadable: counted")
        elif when > now + FUTURE_SLACK_S:
            result.counted.append(record)
            result.notes.append(f"record time {stamp} is in the future (the clock was wrong): counted")
        elif booted is not None and when < booted - BOOT_SLACK_S:
            result.ignored.append(f"{stamp} is before the node's last boot")
        elif max_age_h is not None and now - when > max_age_h * 3600:
            result.ignored.append(f"{stamp} is older than {max_age_h:g} h")
        else:
            result.counted.append(record)
    return result


def describe_record(record: CperRecord, *, severity: bool = False) -> str:
    """``2026/12/01 10:00:00 AFID 19 (HBM, bad page retirement threshold) -> rma, physical`` (with
    ``severity``: ``2026/12/01 10:00:00 severity 'UNKNOWN' AFID 19 ...``)."""
    said = []
    for number in record.afids:
        row = afid(int(number))
        if row is None:
            said.append(f"AFID {number} (not in the AFID table this console knows)")
        else:
            physical = ", physical" if row.physical else ""
            said.append(f"AFID {number} ({row.category}, {row.error_type}) -> {row.action.value}{physical}")
    if record.afid_note:
        said.append(record.afid_note)
    shown = f"severity {record.severity!r} " if severity and record.severity else "no severity " if severity else ""
    return f"{record.timestamp or 'no time'} {shown}" + (", ".join(said) or "no AFID")


# amdsmi's AFID for "bad page retirement threshold" (fatal): the one AFID whose RMA the GPU's own bad-page
# count can contradict (docs/sources/cper-afid.md#hbm).
BAD_PAGE_THRESHOLD_AFID = "19"


def bad_page_doubt(records: list[CperRecord], pages: BadPages | None, *, pages_read: bool) -> str | None:
    """Why an AFID 19 record's RMA is in doubt: the GPU's retired pages are under its threshold (None when
    they are not, when they are unknown, or when no record is AFID 19).

    A bad-page-threshold record can outlive the condition (a stale record, re-created at a driver load),
    and a healthy GPU was drained for one elsewhere: AMD's guidance is to check ``amd-smi bad-pages`` first.
    """
    if not any(BAD_PAGE_THRESHOLD_AFID in record.afids for record in records) or pages is None or not pages_read:
        return None
    if pages.threshold_exceeded is True:
        return None
    if pages.threshold_exceeded is None:  # amd-smi before 7.0.2 does not say: the counts decide, if they can
        if pages.threshold is not None and len(pages.retired) >= pages.threshold:
            return None
        if pages.threshold is None and pages.retired:
            return None
    shown = f"{len(pages.retired)} retired" + (f" of {pages.threshold}" if pages.threshold else "")
    return (
        f"AFID 19 says the bad-page threshold was reached, but amd-smi shows {shown} pages, under it: the record"
        " may be stale; reboot and sweep again before an RMA (docs/sources/cper-afid.md#hbm)"
    )


# amd-smi before ROCm 7.0.2 read at most this many CPER records of one device: its Python layer asked for
# 20 header slots per call and never for the rest (docs/sources/cper-afid.md#the-20-record-limit).
CPER_READ_LIMIT = 20
_LIMIT_FIXED_IN = (7, 0, 2)


def _release(text: str | None) -> tuple[int, ...] | None:
    parts = []
    for word in (text or "").split("-", 1)[0].split(".")[:3]:
        if not (word.isascii() and word.isdigit()):
            break
        parts.append(int(word))
    return tuple(parts) if parts else None


def truncation_doubt(listed: int, rocm: str | None) -> str | None:
    """Why a device's listing may be cut at the old read limit: exactly 20 records on an amd-smi older
    than 7.0.2 (or of a release not known), where the 21st and later records would not show. None when
    the listing is whole as far as anyone can tell."""
    if listed != CPER_READ_LIMIT:
        return None
    release = _release(rocm)
    if release is not None and release >= _LIMIT_FIXED_IN:
        return None
    which = f"ROCm {rocm}" if release is not None else "a ROCm release not known"
    return (
        f"exactly {CPER_READ_LIMIT} CPER records listed with {which}: amd-smi before 7.0.2 reads no more than"
        f" {CPER_READ_LIMIT} per device, so later records may be missing"
        " (docs/sources/cper-afid.md#the-20-record-limit)"
    )
