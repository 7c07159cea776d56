"""TransferBench result tables: SRC\\DST matrices (a2a, p2p), p2p averages, a2a totals, the a2asweep
grid, the nicrings table and the scaling table.

Each reader scans the whole output for its own table, so sections may come in any order and
noise lines may sit between them. Cells that say ``N/A`` are kept as None with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

from console.model.transferbench import (
    BandwidthEntry,
    Direction,
    NicRingCell,
    NicRingStat,
    PeerAverage,
    ScalingCell,
    SweepCell,
    Totals,
)
from console.probes.transferbench.text_output import DEVICE, cells, is_rule, number

# v1.67 boxes the matrix ("│ SRC\\DST │ GPU 00 ...", read as "| SRC\\DST | ..."): a leading bar is allowed.
_MATRIX_HEADER = re.compile(r"^\s*\|?\s*SRC(?:\+EXE)?\\(?:EXE\+)?DST\b(?P<columns>.*)$")
_MATRIX_COLUMN = re.compile(r"\b(CPU|GPU)\s*(\d+)\b|NIC\(\s*\d+\s*QP\)|STotal|Actual")
_MATRIX_ROW = re.compile(r"^\s*\|?\s*(?P<type>CPU|GPU)\s*(?P<index>\d+)\s*(?P<arrow><->|->|<-)?\s*[,|]?(?P<values>.*)$")
_UNI_TITLE = re.compile(r"^\s*Unidirectional copy peak bandwidth")
_BI_TITLE = re.compile(r"^\s*Bidirectional copy peak bandwidth")
_AVERAGES = re.compile(r"^\s*Averages \(During\s+(?P<dir>UniDir|BiDir)\)\s*:?(?P<values>.*)$")
_AVERAGE_LABEL = re.compile(r"\b([CG])PU->([CG])PU\b")
_TOTALS = re.compile(r"^\s*(?P<what>Average|Aggregate)\s+bandwidth \((?P<timer>GPU|CPU) Timed\)\s*:\s*(?P<value>\S+)")
_SWEEP_HEADER = re.compile(r"^\s*#CUs\\Unroll\b(?P<columns>.*)$")
_SWEEP_COLUMN = re.compile(r"(\d+)\((Min|Max)\)", re.IGNORECASE)
_BLOCKSIZE = re.compile(r"^\s*Blocksize:\s*(\d+)")
_NIC = re.compile(r"\bNIC\s*(\d+)\b")
_NIC_RANK = re.compile(r"^\s*(?P<rank>\d+)\s+(?P<host>\S+)\s*$")
_NIC_STAT = re.compile(r"^\s*(?P<stat>MAX|AVG|MIN)\s*\(GB/s\)\s*$")
_SCALING_HEADER = re.compile(r"^\s*NumCUs\b(?P<columns>.*)$")
_SCALING_ROW = re.compile(r"^\s*(?P<cus>\d+)\s*[,\s](?P<values>.*)$")


class _MatrixRow(NamedTuple):
    device_type: str
    device_index: int
    arrow: str
    values: list[str]


def matrices(lines: list[str]) -> tuple[list[BandwidthEntry], list[str]]:
    """Every SRC\\DST matrix: a2a summary (row = source) and p2p uni/bidirectional tables.

    In the p2p bidirectional table each pair test prints '->' (src to dst), '<-' (the transfer
    running the other way at the same time) and '<->' (their sum, not kept: it is derived).
    Returns the entries and what the matrices lack: a closing averages line, a device's row.
    """
    entries: list[BandwidthEntry] = []
    unfinished: list[str] = []
    title: tuple[str, Direction] | None = None
    for start, line in enumerate(lines):
        if _UNI_TITLE.match(line):
            title = ("p2p", Direction.UNI)
        elif _BI_TITLE.match(line):
            title = ("p2p", Direction.BI)
        elif line.lstrip().startswith("Summary:"):
            title = ("a2a", Direction.UNI)
        header = _MATRIX_HEADER.match(line)
        if header is None:
            continue
        columns = [_column(match) for match in _MATRIX_COLUMN.finditer(header.group("columns"))]
        kind, direction = title or (("a2a" if "STotal" in columns else "p2p"), Direction.UNI)
        rows, end = _matrix_rows(lines, start + 1)
        for row in rows:
            entries.extend(_row_entries(kind, direction, row, columns))
        name = f"{kind} {direction.value}directional matrix"
        if kind == "p2p" and not any(_AVERAGES.match(follow) for follow in lines[end : end + 3]):
            unfinished.append(f"{name} has no averages line")
        # Every device is a source and a destination: a column without its row is a row the output lost.
        sources = {(row.device_type, row.device_index) for row in rows}
        for column in columns:
            if isinstance(column, tuple) and column not in sources:
                unfinished.append(f"{name} has no row for {column[0]} {column[1]:02d}")
        title = None
    return entries, unfinished


def _column(match: re.Match[str]) -> tuple[str, int] | str:
    return (match.group(1), int(match.group(2))) if match.group(1) else match.group(0)


def _matrix_rows(lines: list[str], start: int) -> tuple[list[_MatrixRow], int]:
    rows: list[_MatrixRow] = []
    index = start
    for index in range(start, len(lines)):
        line = lines[index]
        if not line.strip() or (not rows and is_rule(line)):  # a boxed matrix rules off its header row
            continue
        match = _MATRIX_ROW.match(line)
        values = cells(match.group("values")) if match else None
        if match is None or values is None:
            return rows, index
        rows.append(_MatrixRow(match.group("type"), int(match.group("index")), match.group("arrow") or "->", values))
    return rows, index + 1


def _row_entries(
    kind: str, direction: Direction, row: _MatrixRow, columns: list[tuple[str, int] | str]
) -> Iterator[BandwidthEntry]:
    if row.arrow == "<->":
        return
    for column, value in zip(columns, row.values, strict=False):
        if not isinstance(column, tuple):
            continue
        src, dst = (row.device_type, row.device_index), column
        if row.arrow == "<-":
            src, dst = dst, src
        gbps, reason = number(value)
        if gbps is None and src == dst:
            continue  # the diagonal of a copy table: a device does not copy to itself
        entry = BandwidthEntry(
            kind=kind,
            direction=direction,
            src_type=src[0],
            src_index=src[1],
            dst_type=dst[0],
            dst_index=dst[1],
            gbps=gbps,
            reverse=row.arrow == "<-",
        )
        if reason is not None:
            entry.mark_unavailable("gbps", reason)
        yield entry


def peer_averages(lines: list[str]) -> list[PeerAverage]:
    """The ``Averages (During UniDir): ...`` lines, labelled by the CPU->GPU style line above them."""
    averages: list[PeerAverage] = []
    for position, line in enumerate(lines):
        match = _AVERAGES.match(line)
        values = cells(match.group("values")) if match else None
        if match is None or values is None:
            continue
        labels = _AVERAGE_LABEL.findall(lines[position - 1]) if position else []
        if len(labels) != len(values):
            labels = [("C", "C"), ("C", "G"), ("G", "C"), ("G", "G")][: len(values)]
        direction = Direction.UNI if match.group("dir") == "UniDir" else Direction.BI
        for (src, dst), value in zip(labels, values, strict=False):
            gbps, reason = number(value)
            average = PeerAverage(direction=direction, src_type=f"{src}PU", dst_type=f"{dst}PU", gbps=gbps)
            if reason is not None:
                average.mark_unavailable("gbps", reason)
            averages.append(average)
    return averages


def totals(lines: list[str]) -> Totals:
    """``Average bandwidth (GPU Timed)`` and the ``Aggregate bandwidth (GPU|CPU Timed)`` lines."""
    result = Totals()
    for line in lines:
        match = _TOTALS.match(line)
        if match is None:
            continue
        what = "average" if match.group("what") == "Average" else "aggregate"
        field = f"{what}_{match.group('timer').lower()}_gbps"
        if field not in Totals.model_fields:
            continue
        gbps, reason = number(match.group("value"))
        setattr(result, field, gbps)
        if reason is not None:
            result.mark_unavailable(field, reason)
    return result


def sweep(lines: list[str]) -> list[SweepCell]:
    """The a2asweep grid: rows are CU counts, columns ``<unroll>(Min|Max)``.

    The tool prints 0.00 for a combination whose run failed; that cell is kept with gbps None.
    """
    result: list[SweepCell] = []
    block_size: int | None = None
    columns: list[tuple[int, str]] = []
    for line in lines:
        if match := _BLOCKSIZE.match(line):
            block_size = int(match.group(1))
            continue
        if match := _SWEEP_HEADER.match(line):
            columns = [(int(unroll), stat.lower()) for unroll, stat in _SWEEP_COLUMN.findall(match.group("columns"))]
            continue
        values = cells(line) if columns else None
        if values is None or len(values) < 2 or not values[0].isdigit():
            if line.strip():
                columns = []
            continue
        for (unroll, stat), value in zip(columns, values[1:], strict=False):
            gbps, _ = number(value)
            result.append(
                SweepCell(
                    block_size=block_size, num_cus=int(values[0]), unroll=unroll, statistic=stat, gbps=gbps or None
                )
            )
    return result


def nic_rings(lines: list[str]) -> tuple[list[NicRingCell], list[NicRingStat]]:
    """The nicrings table: one column per NIC ring (grouped under the memory device it uses), TOTAL last."""
    for position, line in enumerate(lines):
        if _NIC.search(line) and "TOTAL" in line and "|" in line:
            return _nic_table(lines, position)
    return [], []


def _nic_table(lines: list[str], header_at: int) -> tuple[list[NicRingCell], list[NicRingStat]]:
    # Borders separate memory devices, not NICs: a device with two NICs has both in one segment.
    nic_segments = _segments(lines[header_at])
    device_segments = _segments(lines[header_at - 1]) if header_at else []
    name_segments = _segments(lines[header_at + 1]) if header_at + 1 < len(lines) else []
    nics: list[tuple[int, str | None, str | None]] = []
    for position, segment in enumerate(nic_segments[1:], start=1):
        device = DEVICE.search(device_segments[position]) if position < len(device_segments) else None
        names = name_segments[position].split() if position < len(name_segments) else []
        for offset, nic in enumerate(_NIC.findall(segment)):
            name = names[offset] if offset < len(names) else None
            nics.append((int(nic), f"{device.group(1)} {device.group(2)}" if device else None, name))
    ring_cells: list[NicRingCell] = []
    stats: list[NicRingStat] = []
    for line in lines[header_at + 2 :]:
        if is_rule(line):
            continue
        segments = _segments(line)
        values = cells(" ".join(segments[1:])) if len(segments) > 1 else None
        rank, stat = _NIC_RANK.match(segments[0]), _NIC_STAT.match(segments[0])
        if values is None or (rank is None and stat is None):
            break
        for position, value in enumerate(values[: len(nics) + 1]):
            gbps, _ = number(value)
            nic = nics[position] if position < len(nics) else None  # the last value is the TOTAL column
            if stat is not None:
                stats.append(
                    NicRingStat(statistic=stat.group("stat").lower(), nic_index=nic[0] if nic else None, gbps=gbps)
                )
            elif rank is not None and nic is not None:
                ring_cells.append(
                    NicRingCell(
                        rank=int(rank.group("rank")),
                        host=rank.group("host"),
                        device=nic[1],
                        nic_index=nic[0],
                        nic_name=nic[2],
                        gbps=gbps,
                    )
                )
    return ring_cells, stats


def _segments(line: str) -> list[str]:
    """The parts of a bordered table line between ``|`` characters."""
    return line.split("|")


def scaling(lines: list[str]) -> list[ScalingCell]:
    """The scaling preset table: ``NumCUs`` rows, one column per destination device."""
    result: list[ScalingCell] = []
    columns: list[tuple[str, int]] = []
    for line in lines:
        if match := _SCALING_HEADER.match(line):
            columns = [(kind, int(index)) for kind, index in DEVICE.findall(match.group("columns"))]
            continue
        row = _SCALING_ROW.match(line) if columns else None
        values = cells(row.group("values")) if row else None
        if row is None or values is None:
            if line.strip() and not line.lstrip().startswith("Best"):
                columns = []
            continue
        for (kind, index), value in zip(columns, values, strict=False):
            gbps, _ = number(value)
            result.append(ScalingCell(num_cus=int(row.group("cus")), device_type=kind, device_index=index, gbps=gbps))
    return result
