"""AMD Field IDs (AFIDs): what a CPER record's id means and what an operator does about it.

amd-smi derives one AFID per CPER section from the error's category, type and severity, against the
table compiled into amdsmi (AFID_VERSION 0.7). Each row here says what the id means, the action it
calls for, whether that action is physical, and where both come from: ``doc`` points at the heading of
``docs/sources/cper-afid.md`` that gives the figure, the document and its commit. The actions follow
the AMD GPU Operator's default remediation map; rows it leaves out (corrected and non-fatal errors)
are monitored, and ids that say the record could not be classified call for no hardware verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

from console.model.findings import Remedy


@dataclass(frozen=True)
class Afid:
    """One AFID (or a run of them with one meaning)."""

    first: int
    last: int
    category: str
    error_type: str
    severity: str
    action: Remedy
    physical: bool
    what_to_do: str
    doc: str

    def covers(self, afid: int) -> bool:
        """True for the ids of this row."""
        return self.first <= afid <= self.last


_DOC = "docs/sources/cper-afid.md"

AFIDS: tuple[Afid, ...] = (
    Afid(1, 12, "boot", "boot-time error (firmware load, HBM test or training, link training, boot controller)",
         "fail-to-init", Remedy.REBOOT, False, "reboot and revalidate; RMA the OAM if the validation fails",
         f"{_DOC}#boot-time-errors"),
    Afid(13, 13, "off-package link", "PCIe AER", "corrected", Remedy.MONITOR, False,
         "count it; no remediation for a corrected error", f"{_DOC}#off-package-links"),
    Afid(14, 14, "off-package link", "PCIe AER", "fatal", Remedy.INSPECT, True,
         "PCIe triage: link status, the upstream switch or root port, reseat and retorque; RMA the OAM last",
         f"{_DOC}#off-package-links"),
    Afid(15, 15, "off-package link", "WAFL", "corrected", Remedy.MONITOR, False,
         "count it; no remediation for a corrected error", f"{_DOC}#off-package-links"),
    Afid(16, 16, "off-package link", "WAFL", "fatal", Remedy.INSPECT, True,
         "pull the GPU tray, check the OAM screw torque, reinstall; RMA the UBB if the validation fails",
         f"{_DOC}#off-package-links"),
    Afid(17, 17, "off-package link", "XGMI", "corrected", Remedy.MONITOR, False,
         "count it; no remediation for a corrected error", f"{_DOC}#off-package-links"),
    Afid(18, 18, "off-package link", "XGMI", "fatal", Remedy.INSPECT, True,
         "pull the GPU tray, check the OAM screw torque, reinstall; RMA the UBB if the validation fails",
         f"{_DOC}#off-package-links"),
    Afid(19, 19, "HBM", "bad page retirement threshold", "fatal", Remedy.RMA, True,
         "RMA the OAM (check amd-smi bad-pages first: a stale record recurs at every driver load)",
         f"{_DOC}#hbm"),
    Afid(20, 20, "HBM", "on-die ECC", "fatal", Remedy.RMA, True, "RMA the OAM", f"{_DOC}#hbm"),
    Afid(21, 21, "HBM", "end-to-end CRC", "fatal", Remedy.RMA, True, "RMA the OAM", f"{_DOC}#hbm"),
    Afid(22, 22, "HBM", "on-die ECC", "uncorrected non-fatal", Remedy.MONITOR, False,
         "count it: not in the remediation map (non-fatal)", f"{_DOC}#hbm"),
    Afid(23, 23, "HBM", "end-to-end CRC", "uncorrected non-fatal", Remedy.MONITOR, False,
         "count it: not in the remediation map (non-fatal)", f"{_DOC}#hbm"),
    Afid(24, 24, "HBM", "any", "corrected", Remedy.MONITOR, False,
         "count it; no remediation for a corrected error", f"{_DOC}#hbm"),
    Afid(25, 25, "HBM", "other", "fatal", Remedy.REBOOT, False,
         "reboot and rerun the failing workload; RMA the OAM if the validation fails", f"{_DOC}#hbm"),
    Afid(26, 26, "device internal", "hardware assertion (HWA)", "fatal", Remedy.REBOOT, False,
         "reboot and rerun the workload; RMA the OAM if the validation fails", f"{_DOC}#device-internal"),
    Afid(27, 27, "device internal", "watchdog timeout (WDT)", "fatal", Remedy.REBOOT, False,
         "reboot and rerun the workload; RMA the OAM if the validation fails", f"{_DOC}#device-internal"),
    Afid(28, 28, "device internal", "other", "uncorrected non-fatal", Remedy.MONITOR, False,
         "count it: not in the remediation map (non-fatal)", f"{_DOC}#device-internal"),
    Afid(29, 29, "device internal", "other", "corrected", Remedy.MONITOR, False,
         "count it; no remediation for a corrected error", f"{_DOC}#device-internal"),
    Afid(30, 30, "device internal", "other", "fatal", Remedy.RMA, True, "RMA the OAM",
         f"{_DOC}#device-internal"),
    Afid(31, 33, "CPER format", "malformed record, incomplete or invalid ACA data", "any", Remedy.RERUN, False,
         "no hardware verdict: decode the saved record again with a newer amd-smi", f"{_DOC}#unclassified"),
    Afid(34, 34, "unidentified", "unidentified error", "any", Remedy.RERUN, False,
         "no hardware verdict: keep the record for AMD support", f"{_DOC}#unclassified"),
)  # fmt: skip


def afid(number: int) -> Afid | None:
    """The row of AFID ``number``; None for an id the table does not know (newer than AFID_VERSION 0.7)."""
    return next((row for row in AFIDS if row.covers(number)), None)


def describe_afid(number: int) -> str:
    """One line: what AFID ``number`` is and what to do about it."""
    row = afid(number)
    if row is None:
        return f"AFID {number}: not in the AFID table this console knows (AFID_VERSION 0.7): see AMD's AFID list"
    physical = ", physical" if row.physical else ""
    return (
        f"AFID {number}: {row.category}, {row.error_type} ({row.severity}) -> {row.action.value}{physical}: "
        f"{row.what_to_do}"
    )
