"""Logs as operators fetch them: every real sample reads the same behind kubectl timestamps, a pdsh
host label, srun --label (blank lines included) or Open MPI --tag-output."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from console.probes import ParsedOutput, parse_output
from console.probes.base import strip_log_prefixes

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
SAMPLES = sorted(p for p in REAL.rglob("*") if p.is_file() and p.suffix in (".txt", ".json", ".log", ".csv"))
# Samples that are themselves a launcher's labelled log: prefixing them again is not a real log.
ALREADY_LABELLED = {"all_gather_perf-mi250x-4node-srun-label-lowperf.txt"}


def _prefixed(text: str, prefix: Callable[[int], str], blank: str | None = None) -> str:
    lines = text.splitlines()
    return "\n".join(
        (blank if blank is not None and not line.strip() else prefix(i)) + line for i, line in enumerate(lines)
    )


PREFIXES: dict[str, tuple[Callable[[int], str], str | None]] = {
    "kubectl --timestamps": (lambda i: f"2026-11-30T10:{i // 60 % 60:02d}:{i % 60:02d}.123456789Z ", None),
    "pdsh": (lambda i: "gpu-node-017: ", "gpu-node-017:"),
    "srun --label": (lambda i: "  0: ", "  0: "),
    "mpirun --tag-output": (lambda i: "[1,0]<stdout>:", None),
}


def _same(a: ParsedOutput, b: ParsedOutput) -> tuple[object, ...]:
    return (
        (a.tool, a.kind, a.ok, a.summary) == (b.tool, b.kind, b.ok, b.summary),
        (a.kind, a.summary),
        (b.kind, b.summary),
    )


@pytest.mark.parametrize("how", sorted(PREFIXES))
def test_every_real_sample_reads_the_same_behind_a_prefix(how: str) -> None:
    prefix, blank = PREFIXES[how]
    wrong = []
    for path in SAMPLES:
        if path.name in ALREADY_LABELLED or path.parent.name == "hostile":
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            plain = parse_output(text)
        except Exception:
            continue
        same, *shown = _same(plain, parse_output(_prefixed(text, prefix, blank)))
        if not same:
            wrong.append(f"{path.relative_to(REAL)}: {shown}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(
    "text",
    [
        "amd-smi: error: unrecognized arguments: -l\n",  # one line: the tool's own name, not a host
        "Error: a\nError: b\nError: c\n",
        "GPU: 0\nGPU: 1\nGPU: 2\n",
        "node01: only\nnode02: two hosts\nnode01: mixed\n",
    ],
)
def test_text_that_only_looks_prefixed_is_left_alone(text: str) -> None:
    assert strip_log_prefixes(text) == text
