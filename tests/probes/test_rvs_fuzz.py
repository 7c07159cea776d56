"""Property tests: any input gives a ParsedOutput or a ParseError, and generated RVS lines read back exactly."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from console.model.rvs import RvsResult
from console.probes import Tool
from console.probes import rvs as rvs_probe
from console.probes.base import to_text
from tests.probes.fuzz import FUZZ_EXAMPLES, FUZZ_SETTINGS, assert_total, mangled_outputs

SAMPLES = sorted((Path(__file__).resolve().parents[1] / "fixtures" / "real" / "rvs").iterdir())
KINDS = st.sampled_from([None, *sorted(rvs_probe.KINDS)])
# Round-trip properties generate whole logs, which is slow; the totality tests carry the full budget.
ROUND_TRIP_SETTINGS = settings(FUZZ_SETTINGS, max_examples=max(50, FUZZ_EXAMPLES // 5))


@FUZZ_SETTINGS
@given(data=mangled_outputs(SAMPLES), kind=KINDS)
def test_parse_is_total(data: bytes, kind: str | None) -> None:
    assert_total(rvs_probe.parse, to_text(data), kind)


@FUZZ_SETTINGS
@given(data=mangled_outputs(SAMPLES))
def test_detect_is_total_and_agrees_with_parse(data: bytes) -> None:
    text = to_text(data)
    found = rvs_probe.detect(text)
    if found is not None:
        assert found.tool is Tool.RVS and 0 < found.confidence <= 1
        assert rvs_probe.parse(text).kind == found.kind


_gpu_ids = st.integers(min_value=1, max_value=65535)
_gflops = st.integers(min_value=0, max_value=3_000_000)
_gst_line = st.tuples(_gpu_ids, _gflops, _gflops, st.booleans())


def _timestamp(seconds: float) -> str:
    # RVS right-aligns the timestamp and drops trailing zeros: "[  2456.47741 ]".
    text = f"{seconds:.6f}".rstrip("0")
    return f"[{text:>14}]"


@ROUND_TRIP_SETTINGS
@given(
    lines=st.lists(_gst_line, min_size=1, max_size=12, unique_by=lambda t: t[0]),
    prefix=st.sampled_from(["", "0: ", "[1,0]<stdout>:", "  "]),
    newline=st.sampled_from(["\n", "\r\n"]),
    seconds=st.floats(min_value=0, max_value=2e6, allow_nan=False),
)
def test_gst_final_lines_read_back(
    lines: list[tuple[int, int, int, bool]], prefix: str, newline: str, seconds: float
) -> None:
    body = [
        f"{prefix}[RESULT] {_timestamp(seconds)} Action name :gst-x",
        f"{prefix}[RESULT] {_timestamp(seconds)} Module name :gst",
    ]
    for gpu_id, gflops, target, met in lines:
        verdict = "TRUE" if met else "FALSE"
        body.append(
            f"{prefix}[RESULT] {_timestamp(seconds)} [gst-x] [GPU:: {gpu_id:5d}] GFLOPS {gflops} "
            f"Target GFLOPS: {target} met: {verdict}"
        )
    result = rvs_probe.parse(newline.join(body))
    assert isinstance(result.data, RvsResult)
    read = {(r.gpu.gpu_id, r.value, r.target, r.passed) for r in result.data.results if r.gpu}
    assert read == {(g, float(v), float(t), m) for g, v, t, m in lines}
    assert result.kind == "gst"
    assert result.ok == all(met for *_, met in lines)
    assert result.summary["fail_count"] == sum(1 for *_, met in lines if not met)
    assert len(result.errors) == result.summary["fail_count"]


_grid_gpu = st.tuples(_gpu_ids, st.integers(0, 63), st.integers(0, 255))


def _box(gpus: list[tuple[int, int, int]], verdicts: list[bool], per_row: int) -> str:
    rule = "+" + "-" * 69 + "+"
    rows = ["+" + "=" * 69 + "+", "|" + "ROCm Validation Suite (RVS) Summary".center(69) + "|", rule]
    rows.append(f"| {'GPUs':<32} | {len(gpus):<32} |")
    for start in range(0, len(gpus), per_row):
        chunk = gpus[start : start + per_row]
        names = [f"AMD Instinct MI300X - {gpu_id}" for gpu_id, _, _ in chunk]
        ids = [f"{start + i} - {node} - 0000:{bus:02x}:00.0" for i, (_, node, bus) in enumerate(chunk)]
        rows.append("| " + " | ".join(f"{cell:<32}" for cell in names) + " |")
        rows.append("| " + " | ".join(f"{cell:<32}" for cell in ids) + " |")
        rows.append(rule)
    rows.append(f"| {'Action Name':<32} | {'Module':<14} | {'Result':<15} |")
    for index, passed in enumerate(verdicts, start=1):
        rows.append(f"| {'action_' + str(index):<32} | {'GST':<14} | {'PASS' if passed else 'FAIL':<15} |")
    rows.append(rule)
    return "\n".join(rows)


@ROUND_TRIP_SETTINGS
@given(
    gpus=st.lists(_grid_gpu, min_size=1, max_size=16, unique_by=lambda t: t[0]),
    verdicts=st.lists(st.booleans(), min_size=1, max_size=12),
    per_row=st.sampled_from([1, 2]),
)
def test_summary_box_reads_back(gpus: list[tuple[int, int, int]], verdicts: list[bool], per_row: int) -> None:
    result = rvs_probe.parse(_box(gpus, verdicts, per_row))
    assert isinstance(result.data, RvsResult)
    assert [(g.gpu_id, g.node_id, g.bdf) for g in result.data.gpus] == [
        (gpu_id, node, f"0000:{bus:02x}:00.0") for gpu_id, node, bus in gpus
    ]
    assert [g.index for g in result.data.gpus] == list(range(len(gpus)))
    assert (result.summary["pass_count"], result.summary["fail_count"]) == (verdicts.count(True), verdicts.count(False))
    assert result.summary["gpu_count"] == len(gpus)
    assert result.ok == all(verdicts)
