"""TransferBench ``Test N:`` blocks: Executor, Transfer and Aggregate lines, and Transfer descriptors.

Layouts seen: ``|`` separated (<= v1.62), Unicode-bordered tables (v1.67+, already turned into
``|`` by the caller), ``,`` separated (OUTPUT_TO_CSV). The cells are the same in all of them:
label | GB/s | ms | bytes | descriptor, sum or overhead.
"""

from __future__ import annotations

import re

from console.model.transferbench import BlockAggregate, ExecutorResult, MemoryRef, TransferResult, TransferTest
from console.probes.transferbench.text_output import number

_TEST = re.compile(r"^\s*Test\s+(\d+)\s*:")
_EXECUTOR = re.compile(r"^Executor:\s*(?:Rank\s+(?P<rank>\d+)\s+)?(?P<type>[A-Z]{3})\s*(?P<index>\d+)$")
_TRANSFER = re.compile(r"^Transfer\s+(\d+)$")
_AGGREGATE = re.compile(r"^Aggregate \(CPU\)$")
_UNIT_CELL = re.compile(r"^(?P<value>\S+)\s*(?P<unit>GB/s|ms|bytes)\b")
_UNIT_FIELDS = {"GB/s": "gbps", "ms": "duration_ms", "bytes": "size_bytes"}
_SUM = re.compile(r"^(?P<value>\S+)\s*GB/s \(sum\)(?:\s*\[(?P<host>[^\]]*)\])?")
_OVERHEAD = re.compile(r"Overhead:?\s*(?P<value>\S+)\s*ms")
_DESCRIPTOR = re.compile(r"^(?P<srcs>\S+)\s*->\s*(?P<exe>\S+)\s*->\s*(?P<dsts>\S+)$")
# Executor: "G000:008", "G0.1:4", "R1D2:1", older "GPU00:004" and "DMA00.*:001".
_EXE = re.compile(r"^(?:R(?P<rank>\d+))?(?P<type>[A-Z]+?)(?P<index>\d+)(?:\.(?P<sub>\d+|\*))?(?::(?P<count>\d+))?$")
_MEMORY = re.compile(r"(?:R(\d+))?([A-Z])(\d*)")


def transfer_tests(lines: list[str]) -> list[TransferTest]:
    """Every ``Test N:`` block; lines of other kinds between blocks are skipped."""
    tests: list[TransferTest] = []
    current: TransferTest | None = None
    for line in lines:
        if match := _TEST.match(line):
            current = TransferTest(number=int(match.group(1)))
            tests.append(current)
            continue
        row = _cells(line)
        if row is None:
            continue
        if current is None:
            # CSV output and some presets print executors without a "Test N:" line.
            current = TransferTest(number=1)
            tests.append(current)
        _add_row(current, row)
    return [test for test in tests if test.executors or test.transfers or test.aggregate]


def _cells(line: str) -> list[str] | None:
    text = line.strip().strip("|").strip()
    if not text.startswith(("Executor:", "Transfer ", "Aggregate (CPU)")):
        return None
    separator = "|" if "|" in text else ","
    cells = [cell.strip() for cell in text.split(separator)]
    return cells if len(cells) >= 5 else None


def _add_row(test: TransferTest, cells: list[str]) -> None:
    label, last = cells[0], cells[4]
    row: ExecutorResult | TransferResult | BlockAggregate
    if match := _EXECUTOR.match(label):
        summed = _SUM.match(last)
        row = ExecutorResult(
            test=test.number,
            device_type=match.group("type"),
            index=int(match.group("index")),
            rank=int(match.group("rank")) if match.group("rank") else None,
            host=summed.group("host") if summed else None,
            sum_gbps=number(summed.group("value"))[0] if summed else None,
        )
        test.executors.append(row)
    elif match := _TRANSFER.match(label):
        row = _transfer(test.number, int(match.group(1)), last)
        test.transfers.append(row)
    elif _AGGREGATE.match(label):
        overhead = _OVERHEAD.search(last)
        row = test.aggregate = BlockAggregate(overhead_ms=number(overhead.group("value"))[0] if overhead else None)
    else:
        return
    for cell in cells[1:4]:
        if match := _UNIT_CELL.match(cell):
            field = _UNIT_FIELDS[match.group("unit")]
            value, reason = number(match.group("value"))
            setattr(row, field, int(value) if field == "size_bytes" and value is not None else value)
            if reason is not None:
                row.mark_unavailable(field, reason)


def _transfer(test: int, index: int, descriptor: str) -> TransferResult:
    transfer = TransferResult(test=test, index=index, descriptor=descriptor)
    match = _DESCRIPTOR.match(descriptor)
    executor = _EXE.match(match.group("exe")) if match else None
    if match is None or executor is None:
        transfer.mark_unavailable("executor", f"unrecognised descriptor: {descriptor[:60]}")
        return transfer
    transfer.srcs = _memory(match.group("srcs"))
    transfer.dsts = _memory(match.group("dsts"))
    transfer.executor = executor.group("type")
    transfer.executor_index = int(executor.group("index"))
    transfer.executor_rank = int(executor.group("rank")) if executor.group("rank") else None
    transfer.executor_sub_index = executor.group("sub")
    transfer.subexecutors = int(executor.group("count")) if executor.group("count") else None
    return transfer


def _memory(text: str) -> list[MemoryRef]:
    """``F0``, ``G0G1`` (two sources), ``R1F3`` (rank 1), ``N`` (null destination: no index)."""
    return [
        MemoryRef(letter=letter, index=int(index) if index else None, rank=int(rank) if rank else None)
        for rank, letter, index in _MEMORY.findall(text)
    ]
