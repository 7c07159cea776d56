"""Parser for TransferBench output: presets a2a, p2p, healthcheck, a2asweep, nicrings, scaling and config files.

The layout changed across versions (<= v1.5x plain tables; v1.60-1.62 banner, environment dump,
``Test N:`` blocks with ``|`` cells; v1.67+ Unicode borders and new presets). Each table reader
looks for its own markers anywhere in the output, and the kind is decided from what was found.
``[ERROR]`` and ``[WARN]`` lines can sit anywhere, even after the dots of a healthcheck line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from console.model.transferbench import BandwidthEntry, Direction, EnvSetting, MemoryRef, TransferBenchResult
from console.probes.base import Detection, ParsedOutput, ParseError, clean_lines
from console.probes.ids import Tool
from console.probes.transferbench.blocks import transfer_tests
from console.probes.transferbench.healthcheck import HEALTHCHECK_TESTS, UNSUPPORTED, healthcheck_tests
from console.probes.transferbench.tables import matrices, nic_rings, peer_averages, scaling, sweep, totals
from console.probes.transferbench.text_output import ascii_borders

__all__ = ["detect", "parse"]

_BANNER = re.compile(r"TransferBench v(?P<version>\d+(?:\.\d+)+)")
_SECTION = re.compile(r"^\[(?P<name>[A-Za-z][\w -]*)\]")
_ENV = re.compile(r"^(?P<name>[A-Z][A-Z0-9_]*)\s*=\s*(?P<value>\S+)\s*:\s?(?P<description>.*)$")
_MESSAGE = re.compile(r"\[(?P<level>ERROR|WARN)[\]}]")
# A Transfer the run refused before measuring anything, in TransferBench's own words and without an
# ``[ERROR]`` tag: "Transfer 0: DST 0: CPU 2 on rank 0 cannot allocate memory due to process memory
# policy/cpuset" (its ``CheckMemDevice`` errors, printed ``Transfer <n>: <SRC|DST|EXE> <i>: <why>``). A
# result row never has a colon after the Transfer's number ("Transfer 00 | 33.520 GB/s | ...").
_TRANSFER_ERROR = re.compile(r"^[ \t]*Transfer[ \t]+\d+[ \t]*:[ \t]+\S", re.MULTILINE)
# A Transfer's own error line, tagged or not ("[ERROR] Transfer 0: Unexpected mismatch at index 0 ..."): enough to
# recognise TransferBench output that is nothing else.
_TRANSFER_MESSAGE = re.compile(r"^[ \t]*(?:\[ERROR\][ \t]*)?Transfer[ \t]+\d+[ \t]*:[ \t]+\S", re.MULTILINE)
# A message's detail lines are indented under it, e.g. "       Detected 8 x [gfx950] with ...".
_MESSAGE_DETAIL = re.compile(r"^ {7}\S")
_BYTES = re.compile(r"Bytes Per Direction[\s,]+(\d+)|Copying (\d+) bytes|(\d+) bytes per Transfer")
_SCALING_SOURCE = re.compile(r"from GPU (\d+) to other devices")
_TITLES = (
    ("All-To-All Sweep benchmark", "a2asweep"),
    ("All-To-All benchmark", "a2a"),
    ("NIC Rings benchmark", "nicrings"),
    ("Scaling benchmark", "scaling"),
    ("copy peak bandwidth", "p2p"),
    ("Bytes Per Direction", "p2p"),
)
_SECTION_KINDS = {"P2P Related": "p2p", "NIC-Rings Related": "nicrings"}
_HEALTHCHECK_DISCLAIMER = "NOTE: This is an experimental feature"
_GPU_MEMORY = {"G", "F"}  # GPU memory letters stable across versions (U changed meaning over time)
_MARKERS = (
    "TransferBench v",
    "DST ",
    "Executor:",
    "#CUs\\Unroll",
    "Related]",
    "NIC Rings benchmark",
    "All-To-All",
    "copy peak bandwidth",
    "Scaling benchmark",
    "healthcheck preset",
    "HBM performance",
    "XGMI copies",
    "Aggregate (CPU)",
)


def detect(text: str) -> Detection | None:
    """TransferBench output: banner, environment sections, result tables or healthcheck lines."""
    if not any(marker in text for marker in _MARKERS) and not _TRANSFER_MESSAGE.search(text):
        return None
    try:
        result = parse(text)
    except ParseError:
        return None
    data = result.data
    if not isinstance(data, TransferBenchResult):
        return None
    found_results = data.kind != "unknown" or data.version is not None
    return Detection(Tool.TRANSFERBENCH, result.kind, 0.95 if found_results else 0.5)


def parse(text: str, kind: str | None = None) -> ParsedOutput:
    """Parse a TransferBench output; ``kind`` overrides the preset name read from the text.

    A healthcheck that declines the hardware (``[WARN] healthcheck preset is currently not
    supported on this hardware``, then exit) is a skip, not a failure: nothing was measured, so
    nothing is wrong with the node. It parses with ok=True, the message in warnings and
    ``unsupported=True`` in the summary, so checks can report UNKNOWN instead of FAIL.
    """
    lines = [ascii_borders(line) for line in clean_lines(text, strip_prefixes=True)]
    result, unfinished = _read(lines)
    if not _recognised(result, lines):
        raise ParseError("no TransferBench banner, environment dump, result table or [ERROR] line found", raw=text)
    result.kind = kind if kind and kind != "unknown" else _kind(result, lines)
    if result.kind == "scaling":
        result.matrix.extend(_scaling_entries(result, lines))
    result.errors.extend(_judgement(result, unfinished))
    return ParsedOutput(
        tool=Tool.TRANSFERBENCH,
        kind=result.kind,
        ok=not result.errors,
        errors=list(result.errors),
        warnings=list(result.warnings),
        summary=_summary(result),
        tool_version=result.version,
        data=result,
    )


def _read(lines: list[str]) -> tuple[TransferBenchResult, list[str]]:
    """Everything the readers find, and the titles of matrices that lack their closing line."""
    matrix, unfinished = matrices(lines)
    rings, ring_stats = nic_rings(lines)
    result = TransferBenchResult(
        kind="unknown",
        env=_environment(lines),
        tests=transfer_tests(lines),
        matrix=matrix,
        averages=peer_averages(lines),
        totals=totals(lines),
        healthcheck=healthcheck_tests(lines),
        sweep=sweep(lines),
        nic_rings=rings,
        nic_ring_stats=ring_stats,
        scaling=scaling(lines),
    )
    for line in lines:
        if result.banner is None and (match := _BANNER.search(line)):
            result.banner, result.version = line.strip(), match.group("version")
        if result.bytes_per_transfer is None and (match := _BYTES.search(line)):
            result.bytes_per_transfer = int(next(group for group in match.groups() if group))
    result.errors, result.warnings = _messages(lines)
    result.unsupported = any(UNSUPPORTED.search(warning) for warning in result.warnings)
    return result, unfinished


def _environment(lines: list[str]) -> dict[str, EnvSetting]:
    env: dict[str, EnvSetting] = {}
    section: str | None = None
    for line in lines:
        if (match := _SECTION.match(line)) and match.group("name") not in ("WARN", "ERROR"):
            section = match.group("name").strip()
        elif match := _ENV.match(line):
            env[match.group("name")] = EnvSetting(
                value=match.group("value"), description=match.group("description").strip(), section=section
            )
    return env


def _messages(lines: list[str]) -> tuple[list[str], list[str]]:
    """``[ERROR]``/``[WARN]`` messages from their marker on, with their indented detail lines."""
    errors: list[str] = []
    warnings: list[str] = []
    last: list[str] | None = None
    for line in lines:
        match = _MESSAGE.search(line)
        if match is not None:
            last = errors if match.group("level") == "ERROR" else warnings
            last.append(line[match.start() :].strip())
        elif _TRANSFER_ERROR.match(line):
            errors.append(line.strip())
            last = errors
        elif last is not None and _MESSAGE_DETAIL.match(line):
            last.append(line.strip())
        else:
            last = None
    return errors, warnings


def _recognised(result: TransferBenchResult, lines: list[str]) -> bool:
    totals = result.totals
    return bool(
        result.version
        or result.env
        or result.errors
        or result.warnings
        or _has_results(result)
        or _is_healthcheck(result, lines)
        or any(
            value is not None
            for value in (totals.average_gpu_gbps, totals.aggregate_gpu_gbps, totals.aggregate_cpu_gbps)
        )
    )


def _is_healthcheck(result: TransferBenchResult, lines: list[str]) -> bool:
    # A lone "Testing ..." line is too common to mean healthcheck without a verdict or the preset's disclaimer.
    return (
        result.unsupported
        or any(test.passed is not None or test.items for test in result.healthcheck)
        or any(_HEALTHCHECK_DISCLAIMER in line for line in lines)
    )


def _has_results(result: TransferBenchResult) -> bool:
    return bool(result.tests or result.matrix or result.sweep or result.nic_rings or result.scaling)


def _kind(result: TransferBenchResult, lines: list[str]) -> str:
    if _is_healthcheck(result, lines):
        return "healthcheck"
    for found, kind in (
        (result.nic_rings, "nicrings"),
        (result.sweep, "a2asweep"),
        (result.scaling, "scaling"),
        ([entry for entry in result.matrix if entry.kind == "a2a"], "a2a"),
        (result.matrix, "p2p"),
    ):
        if found:
            return kind
    for title, kind in _TITLES:
        if any(title in line for line in lines):
            return kind
    for setting in result.env.values():
        if setting.section in _SECTION_KINDS:
            return _SECTION_KINDS[setting.section]
        if setting.section == "AllToAll Related":
            return "a2asweep" if "UNROLLS" in result.env else "a2a"
    return "config" if result.tests else "unknown"


def _scaling_entries(result: TransferBenchResult, lines: list[str]) -> Iterable[BandwidthEntry]:
    """The best bandwidth the scaling sweep reached from the local GPU to each device."""
    source = next((int(m.group(1)) for line in lines if (m := _SCALING_SOURCE.search(line))), 0)
    best: dict[tuple[str, int], float] = {}
    for cell in result.scaling:
        key = (cell.device_type, cell.device_index)
        if cell.gbps is not None and cell.gbps > best.get(key, -1.0):
            best[key] = cell.gbps
    for (device_type, index), gbps in best.items():
        yield BandwidthEntry(
            kind="scaling", src_type="GPU", src_index=source, dst_type=device_type, dst_index=index, gbps=gbps
        )


def _judgement(result: TransferBenchResult, unfinished_matrices: list[str]) -> Iterable[str]:
    """Why the run is not OK beyond the [ERROR] lines: failed checks, failed runs, cut-off output."""
    if result.unsupported:
        return
    for test in result.healthcheck:
        if test.passed is False:
            yield f"Testing {test.name}: FAIL ({test.failed_count} test(s))"
            for item in test.items:
                if not item.passed:
                    pair = f"GPU {item.gpu:02d}" + (f" to GPU {item.dst_gpu:02d}" if item.dst_gpu is not None else "")
                    yield f"{pair}: {item.measured_gbps:.2f} GB/s below criteria {item.criteria_gbps:.2f} GB/s"
        elif test.passed is None:
            yield f"incomplete: no verdict for 'Testing {test.name}'"
    if result.healthcheck:
        # Every release of the preset runs its host-copy tests, then all-to-all last: a run without one of
        # them ended early (its lines after the disclaimer read whole, and exit 0 says nothing).
        names = {test.name for test in result.healthcheck}
        for name in HEALTHCHECK_TESTS:
            if name not in names:
                yield f"incomplete: no 'Testing {name}' line"
    failed_cells = [cell for cell in result.sweep if cell.gbps is None]
    if failed_cells:
        yield f"a2asweep: {len(failed_cells)} of {len(result.sweep)} combinations failed (printed 0.00 GB/s)"
    if not _has_results(result) and not result.healthcheck:
        yield "no results table"
    yield from _incomplete(result, unfinished_matrices)


def _incomplete(result: TransferBenchResult, unfinished_matrices: list[str]) -> Iterable[str]:
    # TransferBench prints its summary lines last: without them the run hung, crashed or was cut.
    if result.kind == "a2a" and _has_results(result) and result.totals.average_gpu_gbps is None:
        yield "incomplete: no 'Average bandwidth (GPU Timed)' line after the all-to-all results"
    if result.kind == "nicrings" and result.nic_rings and result.totals.aggregate_cpu_gbps is None:
        yield "incomplete: no 'Aggregate bandwidth (CPU Timed)' line after the NIC rings table"
    if result.kind == "p2p":
        for lacking in unfinished_matrices:
            yield f"incomplete: {lacking}"
    if result.kind == "config" and result.tests and result.tests[-1].aggregate is None:
        yield f"incomplete: Test {result.tests[-1].number} has no 'Aggregate (CPU)' line"


def _summary(result: TransferBenchResult) -> dict[str, object]:
    pairs = _gpu_pairs(result)
    slowest = min(pairs, key=lambda pair: pair[2], default=None)
    summary: dict[str, object] = {
        "min_gbps": slowest[2] if slowest else None,
        "slowest_pair": f"{slowest[0]}->{slowest[1]}" if slowest else None,
        "gpu_count": _gpu_count(result),
        "avg_gbps": _average(result),
    }
    summary.update(_kind_summary(result))
    return summary


def _gpu_pairs(result: TransferBenchResult) -> list[tuple[str, str, float]]:
    """Measured GPU-to-GPU bandwidths (no CPU, no diagonal): from the matrices, else the transfers, else the
    healthcheck items; as (source label, destination label, GB/s)."""
    pairs = [(f"GPU{entry.src_index}", f"GPU{entry.dst_index}", entry.gbps or 0.0) for entry in _gpu_links(result)]
    if pairs:
        return pairs
    for test in result.tests:
        for transfer in test.transfers:
            if len(transfer.srcs) == len(transfer.dsts) == 1 and transfer.gbps is not None:
                src, dst = _gpu_label(transfer.srcs[0]), _gpu_label(transfer.dsts[0])
                if src and dst and src != dst:
                    pairs.append((src, dst, transfer.gbps))
    if pairs:
        return pairs
    return [
        (f"GPU{item.gpu}", f"GPU{item.dst_gpu}", item.measured_gbps)
        for test in result.healthcheck
        for item in test.items
        if item.dst_gpu is not None
    ]


def _gpu_links(result: TransferBenchResult) -> list[BandwidthEntry]:
    """Matrix cells between two different GPUs that hold a measured value."""
    return [
        entry
        for entry in result.matrix
        if entry.src_type == entry.dst_type == "GPU" and entry.src_index != entry.dst_index and entry.gbps is not None
    ]


def _gpu_label(memory: MemoryRef) -> str | None:
    if memory.letter not in _GPU_MEMORY or memory.index is None:
        return None
    return f"GPU{memory.index}" if memory.rank is None else f"R{memory.rank}:GPU{memory.index}"


def _gpu_count(result: TransferBenchResult) -> int | None:
    gpus: set[int] = set()
    for entry in result.matrix:
        gpus.update(
            index
            for kind, index in ((entry.src_type, entry.src_index), (entry.dst_type, entry.dst_index))
            if kind == "GPU"
        )
    for test in result.tests:
        gpus.update(executor.index for executor in test.executors if executor.device_type in ("GPU", "DMA"))
    for check in result.healthcheck:
        for item in check.items:
            gpus.update(index for index in (item.gpu, item.dst_gpu) if index is not None)
    gpus.update(
        int(cell.device.split()[1]) for cell in result.nic_rings if cell.device and cell.device.startswith("GPU")
    )
    # Failure lines name only the failing GPUs; the healthcheck progress dots count every GPU tested.
    counted = max([len(gpus), *(check.gpus_tested or 0 for check in result.healthcheck)])
    if counted:
        return counted
    setting = result.env.get("NUM_GPU_DEVICES")
    return int(setting.value) if setting and setting.value.isdigit() else None


def _average(result: TransferBenchResult) -> float | None:
    if result.totals.average_gpu_gbps is not None:
        return result.totals.average_gpu_gbps
    for direction in (Direction.UNI, Direction.BI):
        for average in result.averages:
            if average.direction == direction and average.src_type == average.dst_type == "GPU":
                return average.gbps
    return None


def _kind_summary(result: TransferBenchResult) -> dict[str, object]:
    if result.kind == "a2a":
        return {
            "aggregate_gpu_gbps": result.totals.aggregate_gpu_gbps,
            "aggregate_cpu_gbps": result.totals.aggregate_cpu_gbps,
        }
    if result.kind == "p2p":
        extra: dict[str, object] = {}
        for direction in Direction:
            measured = [entry.gbps or 0.0 for entry in _gpu_links(result) if entry.direction == direction]
            extra[f"min_{direction.value}_gbps"] = min(measured, default=None)
            extra[f"avg_{direction.value}_gbps"] = next(
                (a.gbps for a in result.averages if a.direction == direction and a.src_type == a.dst_type == "GPU"),
                None,
            )
        return extra
    if result.kind == "healthcheck":
        return {
            "unsupported": result.unsupported,
            "tests": len(result.healthcheck),
            "tests_failed": sum(1 for test in result.healthcheck if test.passed is False),
        }
    if result.kind == "a2asweep":
        best = max(
            (cell for cell in result.sweep if cell.gbps is not None), key=lambda cell: cell.gbps or 0.0, default=None
        )
        return {
            "best_gbps": best.gbps if best else None,
            "best_config": f"{best.num_cus} CUs, unroll {best.unroll}" if best else None,
        }
    if result.kind == "nicrings":
        slowest = min(
            (cell for cell in result.nic_rings if cell.gbps is not None), key=lambda c: c.gbps or 0.0, default=None
        )
        return {
            "min_gbps": slowest.gbps if slowest else None,
            "slowest_nic": f"rank {slowest.rank} NIC {slowest.nic_index:02d}" if slowest else None,
            "ranks": len({cell.rank for cell in result.nic_rings}),
            "aggregate_cpu_gbps": result.totals.aggregate_cpu_gbps,
        }
    if result.kind == "config":
        return {"tests": len(result.tests), "transfers": sum(len(test.transfers) for test in result.tests)}
    return {}
