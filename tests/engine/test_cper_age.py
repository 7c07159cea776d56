"""Which CPER records count: this boot's, younger than the pack's max age; the rest are named as ignored."""

from __future__ import annotations

import datetime as dt

import pytest

from console.checks.cper import describe_record, record_time, severity_class, tally, truncation_doubt
from console.model.amdsmi import CperRecord
from console.probes.base import ParseError
from console.probes.host import parse_uptime

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC).timestamp()


def _at(hours_ago: float, severity: str = "fatal", afids: tuple[str, ...] = ("19",)) -> CperRecord:
    stamp = dt.datetime.fromtimestamp(NOW - hours_ago * 3600, dt.UTC).strftime("%Y/%m/%d %H:%M:%S")
    return CperRecord(gpu_index=0, timestamp=stamp, severity=severity, afids=list(afids))


def test_a_recent_record_counts_and_an_old_one_is_ignored_with_its_reason() -> None:
    counted = tally([_at(1), _at(100)], now=NOW, booted=NOW - 30 * 86_400, max_age_h=72)
    assert len(counted.counted) == 1
    assert counted.ignored == ["2026/11/27 08:00:00 is older than 72 h"]
    assert "AFID 19 (HBM, bad page retirement threshold) -> rma, physical" in (counted.detail() or "")
    assert "1 ignored" in (counted.detail() or "")


def test_a_record_from_before_the_boot_is_ignored_but_clock_skew_is_tolerated() -> None:
    booted = NOW - 10 * 3600
    counted = tally([_at(11), _at(10.05)], now=NOW, booted=booted, max_age_h=None)
    assert [r.timestamp for r in counted.counted] == [_at(10.05).timestamp]
    assert counted.ignored == [f"{_at(11).timestamp} is before the node's last boot"]


def test_without_uptime_or_max_age_every_record_counts() -> None:
    assert len(tally([_at(1), _at(5000)], now=NOW, booted=None, max_age_h=None).counted) == 2


@pytest.mark.parametrize("stamp", ["2070/01/01 00:26:21", "--/--/--", None])
def test_a_record_whose_time_cannot_be_trusted_still_counts_and_says_why(stamp: str | None) -> None:
    record = CperRecord(gpu_index=1, timestamp=stamp, severity="fatal")
    counted = tally([record], now=NOW, booted=NOW - 3600, max_age_h=1)
    assert counted.counted == [record] and counted.ignored == []
    assert counted.notes and ("future" in counted.notes[0] or "unreadable" in counted.notes[0])


def test_severity_classes_cover_the_three_vocabularies() -> None:
    def cls(word: str) -> str:
        return severity_class(CperRecord(severity=word))

    assert [cls(w) for w in ("fatal", "boot", "FATAL")] == ["fatal"] * 3
    assert [cls(w) for w in ("nonfatal-uncorrected", "non_fatal_uncorrected")] == ["uncorrected"] * 2
    assert [cls(w) for w in ("nonfatal-corrected", "non_fatal_corrected")] == ["corrected"] * 2
    assert [cls(w) for w in ("CPER_SEVERITY_FATAL", "CPER_SEVERITY_NON_FATAL_UNCORRECTED")] == ["fatal", "uncorrected"]
    assert cls("CPER_SEVERITY_NON_FATAL_CORRECTED") == "corrected"
    assert cls("weird") == "unknown"
    assert (
        record_time(CperRecord(timestamp="2000/06/27 10:45:13"))
        == dt.datetime(2000, 6, 27, 10, 45, 13, tzinfo=dt.UTC).timestamp()
    )


def test_an_unknown_afid_and_an_undecodable_record_are_described_not_dropped() -> None:
    assert "AFID 99 (not in the AFID table" in describe_record(CperRecord(afids=["99"], timestamp="t"))
    note = "invalid AFID 18446744073709551615: the record could not be decoded (amd-smi before 7.2.1)"
    assert note in describe_record(CperRecord(afid_note=note))


def test_uptime_reads_proc_uptime_and_refuses_anything_else() -> None:
    assert parse_uptime("350735.47 234388.90\n") == 350735.47
    for bad in ("", "350735.47 234388.90", "up 3 days\n", "1 2\n3 4\n"):
        with pytest.raises(ParseError):
            parse_uptime(bad)


def test_twenty_records_on_an_amd_smi_before_7_0_2_may_be_a_cut_listing() -> None:
    """amd-smi before 7.0.2 read at most 20 records per device: exactly 20 is no proof the list is whole."""
    assert truncation_doubt(20, "6.4.1") is not None and "ROCm 6.4.1" in (truncation_doubt(20, "6.4.1") or "")
    assert truncation_doubt(20, "7.0.1-12") is not None
    assert truncation_doubt(20, None) is not None  # a release not known cannot rule the limit out
    assert truncation_doubt(20, "7.0.2") is None and truncation_doubt(20, "7.14.0") is None
    assert truncation_doubt(19, "6.4.1") is None and truncation_doubt(21, "6.4.1") is None
