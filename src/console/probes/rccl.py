"""Parser for rccl-tests (and nccl-tests) output: ``all_reduce_perf``, ``alltoall_perf`` and friends.

The output is a comment header (``# nThread ...``, rank lines, version block), a table whose
columns are named by its own ``# size count type ...`` line, and a footer (``# Out of bounds
values``, ``# Avg bus bandwidth``). The footer is printed last, so a log without it is a run
that hung, crashed or was cut: that is reported as a failure, not as missing data.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from console.model.rccl import (
    RcclFooter,
    RcclHeader,
    RcclMeasurement,
    RcclRank,
    RcclResult,
    RcclRow,
    RcclVersions,
)
from console.probes.base import Detection, ParsedOutput, ParseError, clean_lines, strip_launcher_prefixes
from console.probes.ids import Tool
from console.probes.values import na_reason, normalise_bdf, parse_quantity

__all__ = ["detect", "parse"]

_COLLECTIVE = re.compile(r"^#\s*Collective test (?:starting|concluded):\s*(\S+)")
_PARAMS_LINE = re.compile(r"^#\s*nThreads?\b")
_PARAM = re.compile(r"([A-Za-z][A-Za-z_]*(?: [a-z]+)?):?\s+(-?\d+)(?:\(([a-z]+)\))?")
_PARAM_FIELDS = {
    "nthread": "n_threads",
    "nthreads": "n_threads",
    "ngpus": "n_gpus",
    "nranks": "n_ranks",
    "minbytes": "min_bytes",
    "maxbytes": "max_bytes",
    "step": "step",
    "warmupiters": "warmup_iters",
    "iters": "iters",
    "aggiters": "agg_iters",
    "validation": "validation",
    "graph": "graph",
}
_RANK = re.compile(
    r"^#\s*Rank\s+(?P<rank>\d+)(?:\s+Group\s+(?P<group>\d+))?\s+Pid\s+(?P<pid>\d+)\s+on\s+(?P<host>\S+)"
    r"\s+device\s+(?P<device>\d+)\s+\[(?P<bus>[^\]]*)\]\s*(?P<name>.*)$"
)
_TESTS_VERSION = re.compile(r"^(?:rccl-tests:\s*Version|#\s*nccl-tests version)\b\s*(?P<version>.*)$")
_VERSION_BLOCK = re.compile(
    r"^(?P<key>RCCL version|HIP version|ROCm version|Hostname|Librccl path)\s*:\s*(?P<value>.*)$"
)
# NCCL_DEBUG=VERSION prints "RCCL version 2.17.1+hip5.7 HEAD:..." (no colon), possibly after an INFO prefix.
_LIB_VERSION = re.compile(r"\b(?P<lib>RCCL|NCCL) version\s+(?P<value>\S.*)$")
_OUT_OF_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<count>\d+)\s*(?P<verdict>OK|FAILED)?")
_AVG_BUSBW = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<value>\S+)\s*(?P<check>OK|FAILED)?")
_CYCLE = re.compile(r"^#\s*Testing (\d+) cycle")
_TOOL_WARNING = re.compile(r"^#\s*Reducing maxBytes|NCCL WARN|^invalid (?:type|op|memorytype) ")
# Lines the tests, HIP, MPI or Slurm print when a run fails; kept verbatim as errors.
_FAILURE = re.compile(
    r"Test (?:NCCL|CUDA|HIP) failure|: Test failure |Test timeout|NCCL ERROR|\bHip error\b|\bHIP error\b|"
    r"hipError[A-Z]\w*|ORTE was unable to reliably start|mpirun noticed that process|MPI_ABORT was invoked|"
    r"exited with non-zero status|Segmentation fault|core dumped|srun: error:|slurmstepd: error:|^\[ERROR\]|"
    r"invalid sizes? (?:specified )?for 'm|Invalid --output_format"
)
_SRUN_LABEL = re.compile(r"^\s*(\d+): ")
_MPI_LABEL = re.compile(r"^\[\d+,(\d+)\]<(?:stdout|stderr)>:")
_HALF_TITLE = re.compile(r"\b(out-of-place|in-place)\b")
# The third header line: the columns' units, "#        (B)    (elements)   (us)  (GB/s) ...".
_UNITS_LINE = re.compile(r"^#\s*\(B\)\s+\(elements\)")


def detect(text: str) -> Detection | None:
    """rccl-tests output: a parameter header, the results table or footer, or a test failure line."""
    if not _has_marker(text):
        return None
    try:
        result = parse(text)
    except ParseError:
        return None
    data = result.data
    if not isinstance(data, RcclResult):
        return None
    confidence = 0.95 if data.rows else 0.85 if data.header or data.footer.complete else 0.6
    return Detection(Tool.RCCL_TESTS, result.kind, confidence)


def _has_marker(text: str) -> bool:
    return any(
        marker in text
        for marker in (
            "# nThread",
            "# Collective test",
            "rccl-tests:",
            "nccl-tests version",
            "Avg bus bandwidth",
            "Out of bounds values",
            "algbw",
            "Test NCCL failure",
            "Test CUDA failure",
            "Test HIP failure",
        )
    )


def parse(text: str, kind: str | None = None) -> ParsedOutput:
    """Parse an rccl-tests log; ``kind`` (the test binary) overrides what the text says.

    Raises ParseError only when the text has no header, table, footer or failure line at all.
    """
    lines = _one_copy(clean_lines(text))
    state = _State()
    for line in lines:
        state.feed(line)
    if not state.recognised():
        raise ParseError("no rccl-tests parameter header, results table, footer or test failure line found", raw=text)
    result = state.result(kind if kind and kind != "unknown" else None)
    summary = _summary(result)
    if state.unread is not None:
        # Not a failure of the run: no verdict on it (the check reading ``ok`` says UNKNOWN, with this).
        summary["ok_unread"] = state.unread
    return ParsedOutput(
        tool=Tool.RCCL_TESTS,
        kind=result.collective,
        ok=not result.errors,
        errors=list(result.errors),
        warnings=[*result.warnings, *([state.unread] if state.unread else [])],
        summary=summary,
        tool_version=result.versions.tests,
        data=result,
    )


def _one_copy(lines: list[str]) -> list[str]:
    """Strip launcher prefixes; when several ranks each printed the whole run, keep the first rank's copy.

    Runs built without MPI support and started by mpirun/srun print one full copy per rank. Failure
    lines of the other ranks are kept: a crash on rank 5 is still a crash.
    """
    stripped = strip_launcher_prefixes(lines)
    if stripped == lines:
        return lines
    labels = [_label(line) for line in lines]
    with_payload = [
        label
        for label, bare in zip(labels, stripped, strict=True)
        if label is not None and (_PARAMS_LINE.match(bare) or _AVG_BUSBW.match(bare))
    ]
    if len(set(with_payload)) < 2:
        return stripped
    keep = with_payload[0]
    return [
        bare for label, bare in zip(labels, stripped, strict=True) if label in (keep, None) or _FAILURE.search(bare)
    ]


def _label(line: str) -> str | None:
    match = _MPI_LABEL.match(line) or _SRUN_LABEL.match(line)
    return match.group(1) if match else None


class _State:
    """Accumulates what the lines say; the table layout follows the last column header seen."""

    def __init__(self) -> None:
        self.collective: str | None = None
        self.header: RcclHeader | None = None
        self.versions = RcclVersions()
        self.ranks: dict[int, RcclRank] = {}
        self.rows: list[RcclRow] = []
        self.footer = RcclFooter()
        self.failures: list[str] = []
        self.warnings: list[str] = []
        self.layout: _Layout | None = None
        self.half_titles: list[str] = []
        self.cycle = 1
        self.seen_rows: dict[tuple[object, ...], int] = {}  # row key -> its place in rows
        self.duplicates = 0
        self.conflicts: list[str] = []
        self.set_aside: list[RcclRow] = []  # rows repeated with other figures, not kept as the size's figures
        self.unreadable_rows = 0
        self.rank_conflicts: set[int] = set()
        self.later_runs: list[_State] = []  # further test runs in the same log, each judged on its own
        self.recognised_lines = 0
        self.header_lines: set[str] = set()  # which of the table's three header lines were printed
        self.unread: str | None = None  # why the run's output cannot be taken as the tool's own

    def recognised(self) -> bool:
        return bool(self.recognised_lines or self.rows or self.failures)

    def feed(self, line: str) -> None:
        stripped = line.strip()
        if not stripped:
            return
        current = self.later_runs[-1] if self.later_runs else self
        if current.rows and (_PARAMS_LINE.match(stripped) or stripped.startswith("# Collective test starting")):
            # A script ran several tests into one log: reading on would mix their tables, so each run
            # gets its own reading, and a failure in any of them fails the log.
            current = _State()
            self.later_runs.append(current)
        current.feed_run(line, stripped)

    def feed_run(self, line: str, stripped: str) -> None:
        """One non-blank line of this run."""
        if "NCCL INFO" in line:
            self._maybe_library_version(stripped)
            return
        if _FAILURE.search(line):
            _append_once(self.failures, stripped)
            return
        if _TOOL_WARNING.search(line):
            _append_once(self.warnings, stripped)
            return
        if stripped.startswith("#"):
            self._comment(stripped)
        elif not self._version_line(stripped):
            self._data(stripped)

    def _comment(self, line: str) -> None:
        handled = True
        if match := _COLLECTIVE.match(line):
            self.collective = match.group(1).rsplit("/", 1)[-1]
        elif _PARAMS_LINE.match(line):
            self.header = _parse_params(line)
        elif match := _RANK.match(line):
            rank = _rank(match)
            if self.ranks.setdefault(rank.rank, rank) != rank:
                self.rank_conflicts.add(rank.rank)
        elif match := _OUT_OF_BOUNDS.match(line):
            self.footer.out_of_bounds = int(match.group("count"))
            self.footer.out_of_bounds_failed = match.group("verdict") == "FAILED" or int(match.group("count")) > 0
        elif match := _AVG_BUSBW.match(line):
            average = parse_quantity(match.group("value"))
            self.footer.avg_busbw_gbps = average.value
            if average.value is None:
                self.footer.mark_unavailable("avg_busbw_gbps", average.reason or match.group("value"))
            self.footer.min_bw_check = match.group("check")
            self.footer.complete = True
        elif match := _CYCLE.match(line):
            self.cycle = int(match.group(1))
        elif match := _TESTS_VERSION.match(line):
            self._tests_version(match.group("version"))
        elif titles := _HALF_TITLE.findall(line):
            self.half_titles = [title.replace("-", "_") for title in titles]
            self.header_lines.add("placement")
        elif (layout := _layout_from_header(line, self.half_titles)) is not None:
            self.layout = layout
            self.header_lines.add("columns")
        elif _UNITS_LINE.match(line):
            self.header_lines.add("units")
        else:
            handled = False
        self.recognised_lines += handled

    def _version_line(self, line: str) -> bool:
        if match := _TESTS_VERSION.match(line):
            self._tests_version(match.group("version"))
        elif match := _VERSION_BLOCK.match(line):
            field = match.group("key").split()[0].lower().replace("librccl", "librccl_path")
            self._set_version(field, match.group("value").strip())
        else:
            return self._maybe_library_version(line)
        self.recognised_lines += 1
        return True

    def _maybe_library_version(self, line: str) -> bool:
        match = _LIB_VERSION.search(line)
        if match is None:
            return False
        field = match.group("lib").lower()
        if getattr(self.versions, field) is None:
            self._set_version(field, match.group("value").strip())
        return True

    def _tests_version(self, raw: str) -> None:
        # "# nccl-tests version 2.17.6 nccl-headers=22807 ..." carries more words after the version.
        words = raw.split()
        self._set_version("tests", words[0] if words else "")

    def _set_version(self, field: str, value: str) -> None:
        # ":+" is what a build without git metadata prints: odd, but it is the tool's answer.
        reason = na_reason(value)
        if reason is None:
            setattr(self.versions, field, value)
        else:
            setattr(self.versions, field, None)
            self.versions.mark_unavailable(field, reason)

    def _data(self, line: str) -> None:
        tokens = line.split()
        if not tokens or not tokens[0].isdigit():
            return
        layout = self.layout or _layout_from_row(tokens)
        row = _parse_row(tokens, layout, self.cycle) if layout else None
        if row is None:
            self.unreadable_rows += len(tokens) > 3 and tokens[1].isdigit()
            return
        key = (row.cycle, row.size_bytes, row.count, row.type, row.redop, row.root)
        place = self.seen_rows.get(key)
        if place is None:
            self.seen_rows[key] = len(self.rows)
            self.rows.append(row)
        elif (self.rows[place].out_of_place, self.rows[place].in_place) == (row.out_of_place, row.in_place):
            self.duplicates += 1
        else:
            # The same size measured twice with other figures is no per-rank copy: the worse is judged,
            # and both are checked for #wrong.
            kept = self.rows[place]
            worse, other = (row, kept) if _busbw(row) < _busbw(kept) else (kept, row)
            self.rows[place] = worse
            self.set_aside.append(other)
            self.conflicts.append(
                f"{row.size_bytes} bytes printed twice with different figures (busbw {_busbw(kept):g} and "
                f"{_busbw(row):g} GB/s): the lower is judged"
            )

    def result(self, kind: str | None) -> RcclResult:
        collective = kind or self.collective or _infer_collective(self.rows) or "unknown"
        result = RcclResult(
            collective=collective,
            header=self.header,
            versions=self.versions,
            ranks=[self.ranks[key] for key in sorted(self.ranks)],
            rows=self.rows,
            footer=self.footer,
            warnings=list(self.warnings),
        )
        if self.duplicates:
            result.warnings.append(f"{self.duplicates} repeated table rows ignored (per-rank copies of the output?)")
        result.warnings.extend(self.conflicts)
        if self.unreadable_rows:
            result.warnings.append(f"{self.unreadable_rows} table rows could not be read and were skipped")
        if self.rank_conflicts:
            result.warnings.append(
                f"ranks {sorted(self.rank_conflicts)} listed more than once with different processes "
                "(rccl-tests built without MPI support but started by mpirun/srun?)"
            )
        result.errors = [*self.failures, *_judgement(result)]
        missing = [name for name in ("placement", "columns", "units") if name not in self.header_lines]
        if self.header is not None and self.rows and missing:
            # The tool prints all three before its table; a run from its first line without them was
            # altered on the way (lines lost or rewritten): its figures were read on a guessed layout.
            self.unread = f"the table's {', '.join(missing)} header line(s) missing: the output was altered"
        if self.set_aside:
            aside = result.model_copy(update={"rows": self.set_aside, "footer": RcclFooter(complete=True)})
            result.errors += [error for error in _judgement(aside) if error not in result.errors]
        if self.later_runs:
            count = len(self.later_runs) + 1
            result.warnings.append(f"the output holds {count} test runs: figures of the first, every run judged")
            for number, later in enumerate(self.later_runs, start=2):
                run = later.result(None)
                result.errors += [f"run {number} ({run.collective}): {error}" for error in run.errors]
        return result


def _busbw(row: RcclRow) -> float:
    """The row's bus bandwidth, in-place else out-of-place; unmeasured counts as no worse than any."""
    for half in (row.in_place, row.out_of_place):
        if half is not None and half.busbw_gbps is not None:
            return half.busbw_gbps
    return math.inf


def _judgement(result: RcclResult) -> Iterable[str]:
    """Why the run is not OK, beyond the failure lines the tool printed itself."""
    for row in result.rows:
        for half, measurement in (("out-of-place", row.out_of_place), ("in-place", row.in_place)):
            if measurement is None:
                continue
            if measurement.wrong:
                yield f"#wrong {measurement.wrong} at {row.size_bytes} bytes ({half}, {row.type} {row.redop})"
            elif measurement.over_threshold:
                yield f"error over threshold at {row.size_bytes} bytes ({half}, {row.type} {row.redop})"
    footer = result.footer
    if footer.out_of_bounds_failed:
        yield f"out of bounds values: {footer.out_of_bounds} FAILED"
    if footer.min_bw_check == "FAILED":
        yield f"average bus bandwidth {footer.avg_busbw_gbps} below NCCL_TESTS_MIN_BW: FAILED"
    if not result.rows:
        yield "no results table"
    if not footer.complete:
        yield "incomplete: no footer ('# Avg bus bandwidth' missing: the run hung, crashed or the log was cut)"


def _parse_params(line: str) -> RcclHeader:
    header = RcclHeader()
    for match in _PARAM.finditer(line.lstrip("#")):
        key = match.group(1).replace(" ", "").replace("_", "").lower()
        field = _PARAM_FIELDS.get(key)
        if field is None:
            header.other[match.group(1)] = match.group(2)
            continue
        setattr(header, field, int(match.group(2)))
        if field == "step" and match.group(3):
            header.step_mode = match.group(3)
    return header


def _rank(match: re.Match[str]) -> RcclRank:
    group = match.group("group")
    return RcclRank(
        rank=int(match.group("rank")),
        group=int(group) if group is not None else None,
        pid=int(match.group("pid")),
        host=match.group("host"),
        device=int(match.group("device")),
        bus_id=match.group("bus").strip() or None,
        bdf=normalise_bdf(match.group("bus")),
        gpu_name=match.group("name").strip() or None,
    )


def _append_once(messages: list[str], message: str) -> None:
    if message not in messages:
        messages.append(message)


def _summary(result: RcclResult) -> dict[str, object]:
    largest = max(result.rows, key=lambda row: row.size_bytes, default=None)
    smallest = min(result.rows, key=lambda row: row.size_bytes, default=None)
    wrong_total = sum(
        measurement.wrong or 0
        for row in result.rows
        for measurement in (row.out_of_place, row.in_place)
        if measurement is not None
    )
    unread = _wrong_unread(result)
    return {
        "avg_busbw_gbps": result.footer.avg_busbw_gbps,
        # A #wrong cell printed N/A is a half nobody validated: the total of the others is no verdict.
        "wrong_total": None if unread else wrong_total,
        **({"wrong_total_unread": unread} if unread else {}),
        "gpu_count": _gpu_count(result),
        "max_size_bytes": largest.size_bytes if largest else None,
        # What the run was asked for (``-e``, the parameter line's maxBytes): a complete run that asked for no
        # more than its largest row did not lose the larger sizes; a paste short of what was asked did.
        "max_bytes_asked": result.header.max_bytes if result.header else None,
        "inplace_busbw_at_max_size_gbps": largest.in_place.busbw_gbps if largest and largest.in_place else None,
        "outofplace_busbw_at_max_size_gbps": (
            largest.out_of_place.busbw_gbps if largest and largest.out_of_place else None
        ),
        "min_size_bytes": smallest.size_bytes if smallest else None,
        # Latency, where the collective's time is all launch and synchronisation: the small-message check.
        "inplace_time_at_min_size_us": smallest.in_place.time_us if smallest and smallest.in_place else None,
        "rows": len(result.rows),
        "complete": result.footer.complete,
    }


# alltoall(v) never validates its in-place half: its #wrong there is N/A on a healthy run.
_IN_PLACE_UNCHECKED = ("alltoall_perf", "alltoallv_perf")


def _wrong_unread(result: RcclResult) -> str | None:
    """Why the #wrong count cannot be trusted: cells it was not printed in (``N/A`` when validation is off)."""
    unread = [
        f"{row.size_bytes} bytes {half} ({measurement.unavailable['wrong']})"
        for row in result.rows
        for half, measurement in (("out-of-place", row.out_of_place), ("in-place", row.in_place))
        if measurement is not None
        and "wrong" in measurement.unavailable
        and not (half == "in-place" and result.collective in _IN_PLACE_UNCHECKED)
    ]
    if not unread:
        return None
    more = f" and {len(unread) - 2} more" if len(unread) > 2 else ""
    return f"#wrong not read in {len(unread)} result cell(s) (validation did not run?): {', '.join(unread[:2])}{more}"


def _gpu_count(result: RcclResult) -> int | None:
    # Rank lines are one per GPU (a rank drives one device); without them only old headers say nRanks.
    if result.ranks:
        return len(result.ranks)
    header = result.header
    if header is not None and header.n_ranks is not None and header.n_gpus is not None:
        return header.n_ranks * header.n_gpus * (header.n_threads or 1)
    return None


# ---------------------------------------------------------------------------------------------
# The results table. Its columns are named by the "# size count type redop root time ..." line,
# which differs between builds (no root, an 'error' column instead of '#wrong', extra '#iters'
# or timestamp columns, in-place only with -O 0), so rows are read by column name.

_TIME_COLUMNS = {"time", "cputime"}
_MODERN_LEAD = ("size", "count", "type", "redop", "root")
_MODERN_HALF = ("time", "algbw", "busbw", "#wrong")
_OLD_HALF = ("time", "algbw", "busbw", "error")
_MEASUREMENT_COLUMNS = (
    ("time", "time_us"),
    ("cputime", "time_us"),
    ("algbw", "algbw_gbps"),
    ("busbw", "busbw_gbps"),
    ("#wrong", "wrong"),
    ("error", "max_error"),
)
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)", re.IGNORECASE)
# Bandwidths are printed "%6.2f"; when a value outgrows its field it touches the next one.
_GLUED_DECIMALS = re.compile(r"(\.\d{2})(?=\d)")
_TYPE_BYTES = {
    "int8": 1,
    "uint8": 1,
    "char": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "half": 2,
    "float16": 2,
    "bfloat16": 2,
    "int": 4,
    "int32": 4,
    "uint32": 4,
    "float": 4,
    "float32": 4,
    "int64": 8,
    "uint64": 8,
    "double": 8,
    "float64": 8,
}


@dataclass(frozen=True)
class _Layout:
    """Leading columns, then one group of measurement columns per half (out-of-place, in-place)."""

    lead: tuple[str, ...]
    halves: tuple[tuple[str, tuple[str, ...]], ...]

    @property
    def width(self) -> int:
        return len(self.lead) + sum(len(columns) for _, columns in self.halves)


def _layout_from_header(line: str, half_titles: list[str]) -> _Layout | None:
    tokens = line.lstrip("#").split()
    if not tokens or tokens[0] != "size" or not _TIME_COLUMNS.intersection(tokens):
        return None
    first = next(i for i, token in enumerate(tokens) if token in _TIME_COLUMNS)
    groups: list[list[str]] = []
    for token in tokens[first:]:
        if token in _TIME_COLUMNS:
            groups.append([token])
        else:
            groups[-1].append(token)
    if len(groups) > 2:
        return None
    names = half_titles if len(half_titles) == len(groups) else ["out_of_place", "in_place"][-len(groups) :]
    return _Layout(tuple(tokens[:first]), tuple((name, tuple(cols)) for name, cols in zip(names, groups, strict=True)))


def _layout_from_row(tokens: list[str]) -> _Layout | None:
    """Guess the columns of a table whose header line was not captured, from the row's width."""
    for lead in (_MODERN_LEAD, _MODERN_LEAD[:4], _MODERN_LEAD[:3]):
        rest = len(tokens) - len(lead)
        if rest not in (4, 8):
            continue
        half = _MODERN_HALF if lead == _MODERN_LEAD else _OLD_HALF
        names = ("out_of_place", "in_place")[-(rest // 4) :]
        return _Layout(lead, tuple((name, half) for name in names))
    return None


def _parse_row(tokens: list[str], layout: _Layout, cycle: int) -> RcclRow | None:
    if len(tokens) < layout.width:
        tail = _GLUED_DECIMALS.sub(r"\1 ", " ".join(tokens[len(layout.lead) :]))
        tokens = [*tokens[: len(layout.lead)], *tail.split()]
        if len(tokens) < layout.width:
            return None
    lead = dict(zip(layout.lead, tokens, strict=False))
    size, count = lead.get("size", ""), lead.get("count", "")
    dtype, root = lead.get("type", ""), lead.get("root")
    if not (size.isdigit() and count.isdigit() and dtype[:1].isalpha()):
        return None
    if root is not None and not re.fullmatch(r"-?\d+", root):
        return None
    halves: dict[str, RcclMeasurement] = {}
    position = len(layout.lead)
    for name, columns in layout.halves:
        measurement = _measurement(dict(zip(columns, tokens[position : position + len(columns)], strict=True)))
        if measurement is None:
            return None
        halves[name] = measurement
        position += len(columns)
    return RcclRow(
        size_bytes=int(size),
        count=int(count),
        type=dtype,
        redop=lead.get("redop"),
        root=int(root) if root is not None else None,
        cycle=cycle,
        out_of_place=halves.get("out_of_place"),
        in_place=halves.get("in_place"),
    )


def _measurement(cells: dict[str, str]) -> RcclMeasurement | None:
    """One half of a row; None when a cell is not a number (then the line is not a table row)."""
    values: dict[str, float] = {}
    unavailable: dict[str, str] = {}
    over_threshold = False
    for column, field in _MEASUREMENT_COLUMNS:
        token = cells.get(column)
        if token is None:
            continue
        if field in ("wrong", "max_error"):
            over_threshold = token.endswith("*")
            token = token.rstrip("*")
        reason = na_reason(token)
        if reason is None and not _NUMBER.fullmatch(token):
            return None
        printed = float(token) if reason is None else math.nan
        if not math.isfinite(printed) or (field == "wrong" and printed < 0):
            unavailable[field] = reason or f"not a number: {token}"
        else:
            values[field] = printed
    wrong = values.get("wrong")
    return RcclMeasurement(
        time_us=values.get("time_us"),
        algbw_gbps=values.get("algbw_gbps"),
        busbw_gbps=values.get("busbw_gbps"),
        wrong=int(wrong) if wrong is not None else None,
        max_error=values.get("max_error"),
        over_threshold=over_threshold,
        unavailable=unavailable,
    )


def _infer_collective(rows: list[RcclRow]) -> str | None:
    """Name the collective from the numbers when the log does not: how the tool sized and scored it.

    ``size / (count * type size)`` is 1 for collectives that pass the whole buffer and the rank
    count n for those that split it; busbw/algbw is 2(n-1)/n for all_reduce, (n-1)/n for the
    split ones and 1 for broadcast/reduce/sendrecv. Ambiguous cases (sendrecv vs 2-rank
    all_reduce, alltoall vs alltoallv, gather vs scatter) give None.
    """
    measured = [
        (row, half)
        for row in rows
        for half in (row.out_of_place, row.in_place)
        if half is not None and half.algbw_gbps and half.busbw_gbps
    ]
    if not measured:
        return None
    row, half = max(measured, key=lambda pair: pair[1].algbw_gbps or 0.0)
    width = _TYPE_BYTES.get(row.type)
    if width is None or row.count == 0:
        return None
    ranks_per_count = row.size_bytes / (row.count * width)
    bus_factor = (half.busbw_gbps or 0.0) / (half.algbw_gbps or 1.0)
    reduces = row.redop not in (None, "none")
    split = ranks_per_count > 1.5
    if row.root is not None and row.root >= 0:
        if split or abs(bus_factor - 1) > 0.02:
            return None
        return "reduce_perf" if reduces else "broadcast_perf"
    if not split:
        return "all_reduce_perf" if reduces and bus_factor > 1.05 else None
    ranks = round(ranks_per_count)
    if abs(bus_factor - (ranks - 1) / ranks) > 0.02:
        return None
    if reduces:
        return "reduce_scatter_perf"
    # alltoall(v) never checks its in-place half (#wrong N/A); all_gather does.
    in_place_checked = row.in_place is not None and row.in_place.wrong is not None
    return "all_gather_perf" if in_place_checked else None
