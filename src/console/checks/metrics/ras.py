"""RAS metrics: ECC error counters and their change since the last sweep, retired and pending VRAM pages,
and the CPER records of this boot (ecc and ras families)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from console.checks.cper import Tally, bad_page_doubt, severity_class, tally, truncation_doubt
from console.checks.metrics.reading import (
    gpu_field_metric,
    gpu_subject,
    indices_text,
    node_subject,
    per_gpu,
    read_field,
)
from console.checks.metrics.registry import Observation, Unread, Variables, metric, register
from console.model.amdsmi import CperRecord
from console.model.findings import Remedy, Subject
from console.model.gpu import GpuRecord
from console.probes.base import ParsedOutput
from console.probes.ids import ProbeId

if TYPE_CHECKING:
    from console.checks.facts import NodeFacts

for _name, _source, _attr, _probe in (
    ("gpu.ecc_uncorrectable", "ecc", "uncorrectable", ProbeId.AMDSMI_METRIC),
    ("gpu.ecc_correctable", "ecc", "correctable", ProbeId.AMDSMI_METRIC),
    ("gpu.ecc_deferred", "ecc", "deferred", ProbeId.AMDSMI_METRIC),
    ("gpu.bad_page_threshold_exceeded", "bad_pages", "threshold_exceeded", ProbeId.AMDSMI_STATIC),
):
    register(_name, gpu_field_metric(_source, _attr, _probe))


def _page_count(gpu: GpuRecord, status: str) -> tuple[Any, str | None]:
    """How many pages of ``status`` the GPU's listing holds; a listing printed N/A or unread is no count at all
    (its empty list read as 0 retired pages and passed the GPU)."""
    pages = gpu.bad_pages
    if pages is None:
        return None, "no bad-pages data"
    if status in pages.unavailable:
        return None, Unread(f"{status} pages: {pages.unavailable[status]}")
    return len(getattr(pages, status)), None


@metric("gpu.bad_pages_retired")
def bad_pages_retired(facts: NodeFacts, _: Variables) -> list[Observation]:
    """Retired VRAM pages per GPU."""
    return per_gpu(facts, ProbeId.AMDSMI_BAD_PAGES, lambda g: _page_count(g, "retired"))


@metric("gpu.bad_pages_pending")
def bad_pages_pending(facts: NodeFacts, _: Variables) -> list[Observation]:
    """Pages pending retirement per GPU."""
    return per_gpu(facts, ProbeId.AMDSMI_BAD_PAGES, lambda g: _page_count(g, "pending"))


@metric("gpu.bad_pages_fraction")
def bad_pages_fraction(facts: NodeFacts, _: Variables) -> list[Observation]:
    """Retired pages as a fraction of the device's BAD_PAGE_THRESHOLD (1.0 = RMA threshold)."""

    def read(gpu: GpuRecord) -> tuple[Any, str | None]:
        pages = gpu.bad_pages
        if pages is None:
            return None, "no bad-pages data"
        if not pages.threshold:
            return None, pages.unavailable.get("threshold", "threshold not reported")
        retired, missing = _page_count(gpu, "retired")
        return (retired / pages.threshold if retired is not None else None), missing

    return per_gpu(facts, ProbeId.AMDSMI_BAD_PAGES, read)


@metric("gpu.ecc_correctable_increase")
def ecc_correctable_increase(facts: NodeFacts, _: Variables) -> list[Observation]:
    """Correctable ECC errors gained per GPU since the node's previous sweep (a steady 150 and a jump from
    150 to 5,000 both read 150-or-more in the total; only the change tells them apart)."""
    before = facts.previous.get("ecc.correctable")
    observations = []
    for gpu in facts.gpus:
        now, missing = read_field(gpu.ecc, "correctable", "no ecc data")
        observations.append(correctable_increase(gpu_subject(facts, gpu), now, missing, before))
    return observations


def correctable_increase(
    subject: Subject, now: float | None, missing: str | None, before: tuple[int, dict[str, tuple[float, float]]] | None
) -> Observation:
    """One GPU's correctable ECC errors gained since ``before`` (the history's earlier readings) given its
    count ``now``: the metric's reading, also made from a node-judged report's ``ecc.correctable`` figures."""
    if now is None:
        return Observation(subject, None, missing, ProbeId.AMDSMI_METRIC)
    key = subject.gpu_bdf or str(subject.gpu)
    earlier = before[1].get(key) if before is not None else None
    if before is None or earlier is None:
        return Observation(subject, None, "no earlier reading in the history", ProbeId.AMDSMI_METRIC)
    value, when = earlier
    hours = max(0.0, time.time() - when) / 3600
    if now < value:  # the driver reloaded: its counters start again from 0
        detail = f"counter reset since sweep {before[0]} ({value:g} then, {now:g} now)"
        return Observation(subject, float(now), None, ProbeId.AMDSMI_METRIC, detail=detail)
    detail = f"{value:g} -> {now:g} since sweep {before[0]}, {hours:.1f} h ago"
    return Observation(subject, float(now - value), None, ProbeId.AMDSMI_METRIC, detail=detail)


# Metrics of change -> the check whose figures they compare with the history's, and how one subject's
# change reads from its figure now (a console judges them from a node-judged report's kept figures).
CHANGE_METRICS: dict[str, tuple[str, Callable[..., Observation]]] = {
    "gpu.ecc_correctable_increase": ("ecc.correctable", correctable_increase),
}


# How a CPER parser says a line of the listing was no record it could read (``tables.parse_cper`` and the
# 6.4.1 header dump of ``probes.amdsmi.cper``); a key it did not read inside a record is another warning.
_UNREAD_CPER = ("not a CPER record: ", "not a CPER header line: ")


def unread_cper_lines(warnings: Iterable[str]) -> str | None:
    """Why the CPER listing may hold records not counted: the lines its parser could not read, or None."""
    unread = [w.split(": ", 1)[1] for w in warnings if w.startswith(_UNREAD_CPER)]
    if not unread:
        return None
    more = f" (+{len(unread) - 1} more)" if len(unread) > 1 else ""
    return f"{len(unread)} line(s) of the CPER listing not read as records, e.g. {unread[0][:120]!r}{more}"


def _max_age_h(variables: Variables) -> float | None:
    """The pack's ``cper_max_age_h``: how old a record may be and still count (None: any age of this boot)."""
    max_age = variables.get("cper_max_age_h")
    return float(max_age) if isinstance(max_age, int | float) and not isinstance(max_age, bool) else None


@dataclass(frozen=True)
class _CperListing:
    """A node's CPER listing read for one severity class: the records of that class per GPU, with what
    may keep a count of them from being the whole count (lines not read, a GPU's section absent)."""

    wanted: str
    by_gpu: dict[int | None, list[CperRecord]]
    listed: dict[int | None, int]  # every severity: the old read limit cut a device's whole listing
    known: dict[int | None, GpuRecord]
    sections: Any  # the GPUs a 6.4.1 listing has a section for, None for a listing without sections
    skipped: str | None  # lines of the listing not read as records (``unread_cper_lines``)
    now: float
    booted: float | None
    max_age_h: float | None
    pages_read: bool

    @classmethod
    def read(cls, facts: NodeFacts, parsed: ParsedOutput, wanted: str, variables: Variables) -> _CperListing:
        now = time.time()
        uptime = facts.parsed(ProbeId.HOST_UPTIME)
        by_gpu: dict[int | None, list[CperRecord]] = {}
        listed: dict[int | None, int] = {}
        for record in list(getattr(parsed.data, "cper", None) or []):
            listed[record.gpu_index] = listed.get(record.gpu_index, 0) + 1
            if severity_class(record) == wanted:
                by_gpu.setdefault(record.gpu_index, []).append(record)
        return cls(
            wanted=wanted,
            by_gpu=by_gpu,
            listed=listed,
            known={gpu.identity.index: gpu for gpu in facts.gpus},
            sections=getattr(parsed.data, "cper_gpus", None),
            skipped=unread_cper_lines(parsed.warnings),
            now=now,
            booted=now - uptime if isinstance(uptime, float) else None,
            max_age_h=_max_age_h(variables),
            pages_read=facts.answered([ProbeId.AMDSMI_BAD_PAGES]),
        )

    def subjects(self, facts: NodeFacts) -> list[tuple[int | None, Subject]]:
        """Each GPU amd-smi lists, and the node for records on a GPU it did not list (or with no GPU, ``-``):
        those are the node's, never dropped."""
        subjects = [(index, gpu_subject(facts, gpu)) for index, gpu in self.known.items()]
        if self.strays or not subjects:
            subjects.append((None, node_subject(facts)))
        return subjects

    @property
    def strays(self) -> list[int | None]:
        return [index for index in self.by_gpu if index not in self.known]

    def counted(self, index: int | None) -> Tally:
        mine = self.by_gpu.get(index, []) if index is not None else [r for i in self.strays for r in self.by_gpu[i]]
        return tally(mine, now=self.now, booted=self.booted, max_age_h=self.max_age_h)

    def action(self, index: int | None, counted: Tally) -> tuple[Remedy | None, str | None]:
        """What the GPU's records call for (their AFIDs); an RMA its retired pages contradict is a reboot."""
        action, action_why = counted.action()
        gpu = self.known.get(index) if index is not None else None
        if (
            action is Remedy.RMA
            and gpu is not None
            and (doubt := bad_page_doubt(counted.counted, gpu.bad_pages, pages_read=self.pages_read))
        ):
            # AFID 19 says the bad-page threshold was reached; the GPU's own retired pages say otherwise.
            return Remedy.REBOOT, doubt
        return action, action_why

    def observe(self, facts: NodeFacts, index: int | None, subject: Subject) -> Observation:
        """The count of one GPU's (or the node's stray) records of the class, or why there is none."""
        if self.sections is not None and index is not None and index not in self.sections and not self.skipped:
            # (With lines not read as records, the GPU is UNKNOWN below, for a reason that covers every GPU.)
            lists = indices_text(self.sections)
            said = f"amdsmi.cper: the listing has no section for GPU {index} (it lists GPU {lists})"
            return Observation(subject, None, Unread(said), ProbeId.AMDSMI_CPER, unread=True)
        counted = self.counted(index)
        action, action_why = self.action(index, counted)
        cut = truncation_doubt(self.listed.get(index, 0), facts.stack.get("rocm")) if index is not None else None
        if self.skipped and not counted.counted:
            # A line of the listing the parser could not read as a record may be a record of any GPU and any
            # severity: none counted here is then no proof of none.
            return Observation(subject, None, self.skipped, ProbeId.AMDSMI_CPER)
        if cut is not None and not counted.counted:
            # No record of this class among the 20 read is no proof there is none among those not read.
            return Observation(subject, None, cut, ProbeId.AMDSMI_CPER)
        parts = (
            counted.detail(severity=self.wanted == "unknown"),
            action_why if action is Remedy.REBOOT else None,
            cut,
            self.skipped,
        )
        return Observation(
            subject,
            float(len(counted.counted)),
            probe=ProbeId.AMDSMI_CPER,
            detail="; ".join(p for p in parts if p),
            always_detail=bool(counted.ignored or counted.notes),
            action=action,
            action_source=action_why,
        )


def _cper(facts: NodeFacts, variables: Variables, wanted: str) -> list[Observation]:
    """Per GPU, the CPER records of severity class ``wanted`` that count (``console.checks.cper``)."""
    parsed = facts.parsed(ProbeId.AMDSMI_CPER)
    if not isinstance(parsed, ParsedOutput) or not parsed.ok or getattr(parsed.data, "kind", None) != "ras":
        # Nothing listed is not "no records": the check says why it could not judge (never 0, never PASS).
        why = "; ".join(parsed.errors[:2]) if isinstance(parsed, ParsedOutput) and parsed.errors else "no CPER listing"
        return [Observation(node_subject(facts), None, f"amdsmi.cper: {why}", ProbeId.AMDSMI_CPER)]
    listing = _CperListing.read(facts, parsed, wanted, variables)
    return [listing.observe(facts, index, subject) for index, subject in listing.subjects(facts)]


@metric("gpu.cper_fatal")
def cper_fatal(facts: NodeFacts, variables: Variables) -> list[Observation]:
    """Fatal and boot-time CPER records of this boot, younger than the pack's ``cper_max_age_h``."""
    return _cper(facts, variables, "fatal")


@metric("gpu.cper_uncorrected")
def cper_uncorrected(facts: NodeFacts, variables: Variables) -> list[Observation]:
    """Non-fatal uncorrected CPER records (poison consumed, deferred errors) of this boot, recent enough."""
    return _cper(facts, variables, "uncorrected")


@metric("gpu.cper_unrecognised")
def cper_unrecognised(facts: NodeFacts, variables: Variables) -> list[Observation]:
    """CPER records of a severity the console does not know (amd-smi's ``UNKNOWN``, a new word, none), of
    this boot and recent enough: counted here so that no listed record goes unjudged."""
    return _cper(facts, variables, "unknown")
