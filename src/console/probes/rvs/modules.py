"""Each RVS module's payload grammar: what follows ``[RESULT] [<ts>] [<action>]`` and what it measures.

Two tables: ``ACTION_GRAMMARS`` for payloads tagged with an action (``[gst-1] [GPU:: 28851] GFLOPS
...``, ``[action_1] mem Test 11: ...``) and ``BARE_GRAMMARS`` for lines RVS prints without one
(babel's throughput table, rcqt's package counters). A handler reads its match into result lines
through a ``ResultSink``, which owns the bookkeeping (actions, GPUs that started, evidence).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from console.model.rvs import RvsGpuRef, RvsGpuResult
from console.probes.rvs.units import bool_word, number, rate_to_gbps, small_int


@dataclass
class LineRef:
    """One line being read: its text as printed (kept as evidence) and the action it belongs to."""

    text: str
    action: str | None = None


class ResultSink(Protocol):
    """What a grammar handler may do with what it read."""

    babel_unit: str
    babel_gpu: int | None

    def add(self, line: LineRef, module: str | None, metric: str, **values: object) -> RvsGpuResult:
        """Record one result line; ``module`` is the default when the action's header did not name one."""
        ...

    def gpu_ref(self, inner: str) -> RvsGpuRef:
        """The GPU named inside ``[GPU:: ...]``."""
        ...

    def start(self, line: LineRef, gpu: RvsGpuRef, module: str) -> None:
        """``gpu`` began work in the line's action and owes a verdict."""
        ...

    def finish(self, line: LineRef, gpu: RvsGpuRef) -> None:
        """``gpu`` printed its verdict (or final measurement) in the line's action."""
        ...

    def warn(self, line: LineRef) -> None:
        """Keep the line as a warning: worth showing, not a failure by itself."""
        ...

    def unread(self, line: LineRef, why: str) -> None:
        """A verdict line whose verdict is not understood: neither a pass nor a failure, and said."""
        ...


Handler = Callable[[ResultSink, re.Match[str], LineRef], None]

_GPU = r"\[GPU::(?P<gpu>[^\]]*)\]\s*"
_RATE = re.compile(r"(?P<value>[-+]?\d+(?:\.\d+)?)\s*(?P<unit>[GMKT]i?B(?:ps|/s))", re.IGNORECASE)
_DURATION = re.compile(r"duration:\s*(?P<value>\S+)\s*secs?", re.IGNORECASE)
_DISTANCE = re.compile(r"^distance:\s*(?P<distance>\d+)\s*(?P<hop>.*)$", re.IGNORECASE)
_H2D_D2H = re.compile(r"^h2d::\s*(?P<h2d>\w+)\s+d2h::\s*(?P<d2h>\w+)\s*(?P<rest>.*)$", re.IGNORECASE)
_LEADING_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
_RCQT_FAILING = ("missing packages", "version mismatch packages")


def _rate(text: str) -> float | None:
    rate = _RATE.search(text)
    return rate_to_gbps(number(rate.group("value")), rate.group("unit")) if rate else None


def _plain_gpu(match: re.Match[str]) -> RvsGpuRef:
    return RvsGpuRef(gpu_id=small_int(match.group("gpu")))


def _gst_final(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    gpu = sink.gpu_ref(match.group("gpu"))
    sink.finish(line, gpu)
    sink.add(
        line,
        "gst",
        "gflops",
        gpu=gpu,
        value=number(match.group("value")),
        unit="GFLOPS",
        target=number(match.group("target")),
        passed=bool_word(match.group("word")),
    )


def _gst_sample(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    gpu = sink.gpu_ref(match.group("gpu"))
    sink.start(line, gpu, "gst")
    sink.add(line, "gst", "gflops_sample", gpu=gpu, value=number(match.group("value")), unit="GFLOPS")


def _gst_ramp(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    sink.start(line, sink.gpu_ref(match.group("gpu")), "gst")


def _iet_power(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    gpu = sink.gpu_ref(match.group("gpu"))
    sink.start(line, gpu, "iet")
    sink.add(line, "iet", "power_w_sample", gpu=gpu, value=number(match.group("value")), unit="W")


def _gpu_verdict(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    # iet, tst and pulse all print "[GPU:: id] pass: TRUE"; the action's header names the module.
    gpu = sink.gpu_ref(match.group("gpu"))
    sink.finish(line, gpu)
    sink.add(line, None, "verdict", gpu=gpu, passed=bool_word(match.group("word")))


def _babel_start(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    gpu = sink.gpu_ref(match.group("gpu"))
    sink.babel_gpu = gpu.gpu_id
    sink.start(line, gpu, "babel")


def _babel_rate(sink: ResultSink, line: LineRef, gpu_id: int | None, *, function: str, rate: str, unit: str) -> None:
    gpu = RvsGpuRef(gpu_id=gpu_id)
    sink.finish(line, gpu)
    value = rate_to_gbps(number(rate), unit)
    result = sink.add(line, "babel", "bandwidth", gpu=gpu, label=function, value=value, unit="GB/s")
    if value is None:
        result.mark_unavailable("value", f"unreadable rate {rate!r} {unit}")


def _gm(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    gpu = _plain_gpu(match)
    name = match.group("name").lower()
    if match.group("kind").lower() == "violations":
        count = number(match.group("value"))
        sink.add(line, "gm", f"{name}_violations", gpu=gpu, value=count, passed=None if count is None else count == 0)
        return
    raw = match.group("value")  # averages glue their unit: 0C, 128MHz, 0%, 139992336Watts
    value = _LEADING_NUMBER.match(raw)
    sink.add(
        line,
        "gm",
        f"{name}_average",
        gpu=gpu,
        value=number(value.group(0)) if value else None,
        unit=(raw[value.end() :] or None) if value else None,
    )


def _mem_verdict(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    sink.add(line, "mem", "verdict", label=f"Test {match.group('test')}", passed=bool_word(match.group("word")))


def _mem_bandwidth(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    value = rate_to_gbps(number(match.group("value")), match.group("unit") or "GB/s")
    sink.add(line, "mem", "bandwidth", label=f"Test {match.group('test')}", value=value, unit="GB/s")


def _transfer(
    sink: ResultSink,
    line: LineRef,
    module: str,
    rest: str,
    *,
    transfer: str | None,
    direction: str | None,
    **where: object,
) -> None:
    """A pebb/pbqt transfer: ``<rate> GBps duration: <s> secs`` when final, an interval sample otherwise."""
    duration = _DURATION.search(rest)
    value = _rate(rest)
    metric = "bandwidth" if duration else "bandwidth_sample"
    result = sink.add(
        line,
        module,
        metric,
        value=value,
        unit="GB/s",
        transfer=re.sub(r"\s+", "", transfer) if transfer else None,
        direction=direction,
        duration_s=number(duration.group("value")) if duration else None,
        **where,
    )
    if value is None:
        # "(pending)" before the first measurement, "(not measured)" when no transfer completed.
        said = (rest[: duration.start()] if duration else rest).strip()
        result.mark_unavailable("value", said or "absent in output")
    if metric == "bandwidth" and (value is None or value <= 0):
        sink.warn(line)


def _pebb(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    gpu = sink.gpu_ref(match.group("gpu"))
    cpu_node = small_int(match.group("cpu"))
    rest = match.group("rest").strip()
    distance = _DISTANCE.match(rest)
    if distance is not None:
        hop = distance.group("hop").strip() or None
        value = number(distance.group("distance"))
        sink.add(line, "pebb", "distance", gpu=gpu, cpu_node=cpu_node, value=value, hop=hop)
        return
    flags = _H2D_D2H.match(rest)
    if flags is None:
        sink.add(line, "pebb", "bandwidth_sample", gpu=gpu, cpu_node=cpu_node, text=rest or None)
        return
    direction = "+".join(name for name in ("h2d", "d2h") if bool_word(flags.group(name))) or None
    transfer = match.group("transfer")
    _transfer(
        sink, line, "pebb", flags.group("rest"), transfer=transfer, direction=direction, gpu=gpu, cpu_node=cpu_node
    )


def _p2p(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    # peers:false is not an RVS failure (PCIe pairs may lack P2P); it is shown and left to the checks.
    distance = _DISTANCE.match(match.group("rest").strip())
    hop = (distance.group("hop") if distance else match.group("rest")).strip() or None
    sink.add(
        line,
        "pbqt",
        "peers",
        gpu=sink.gpu_ref(match.group("src")),
        peer=sink.gpu_ref(match.group("dst")),
        value=number(distance.group("distance")) if distance else None,
        text=match.group("word").lower(),
        hop=hop,
    )
    if bool_word(match.group("word")) is False:
        sink.warn(line)


def _p2p_bandwidth(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    direction = "bidirectional" if bool_word(match.group("word")) else "unidirectional"
    where = {"gpu": sink.gpu_ref(match.group("src")), "peer": sink.gpu_ref(match.group("dst"))}
    _transfer(sink, line, "pbqt", match.group("rest"), transfer=match.group("transfer"), direction=direction, **where)


def _a2a_aggregate(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    value = _rate(match.group("rest"))
    sink.add(line, "pbqt", "aggregate_bandwidth", label=match.group("what"), value=value, unit="GB/s")


def _peqt_verdict(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    passed = bool_word(match.group("word"))
    sink.add(line, "peqt", "verdict", passed=passed)
    if passed is None:
        sink.unread(line, f"peqt verdict {match.group('word')!r} is neither true nor false")


def _peqt_capability(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    text = match.group("value").strip()
    sink.add(line, "peqt", match.group("name"), value=number(text), text=text)


def _gpup(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    link = match.groupdict().get("link")
    text = match.group("value")
    label = f"io_link {link}" if link is not None else None
    sink.add(line, "gpup", match.group("name"), gpu=_plain_gpu(match), label=label, value=number(text), text=text)


def _tst_temperature(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    metric = f"max_{match.group('which').lower()}_temp_c"
    sink.add(line, "tst", metric, gpu=_plain_gpu(match), value=number(match.group("value")), unit="C")


def _module_verdict(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    gpu = _plain_gpu(match)
    sink.finish(line, gpu)
    sink.add(line, match.group("module").lower(), "verdict", gpu=gpu, passed=bool_word(match.group("word")))


def _pesm_change(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    metric = match.group("what").lower().replace(" ", "_")
    sink.add(line, "pesm", metric, gpu=_plain_gpu(match), text=match.group("value").strip())


# Order matters where payloads share a prefix: final gst line before samples, io-link gpup before gpup.
ACTION_GRAMMARS: list[tuple[re.Pattern[str], Handler]] = [
    (
        re.compile(_GPU + r"GFLOPS\s+(?P<value>\S+)\s+Target GFLOPS:\s*(?P<target>\S+)\s+met:\s*(?P<word>\w+)", re.I),
        _gst_final,
    ),
    (re.compile(_GPU + r"GFLOPS\s+(?P<value>\S+)\s*$", re.I), _gst_sample),
    (re.compile(_GPU + r"(?:Start|End) of GPU ramp up", re.I), _gst_ramp),
    (re.compile(_GPU + r"Power\(W\)\s+(?P<value>\S+)", re.I), _iet_power),
    (re.compile(_GPU + r"pass:\s*(?P<word>\w+)", re.I), _gpu_verdict),
    (re.compile(_GPU + r"Starting the Babel", re.I), _babel_start),
    (re.compile(r"gm\s+(?P<gpu>\d+)\s+(?P<name>\w+)\s+(?P<kind>violations|average)\s+(?P<value>\S+)", re.I), _gm),
    (re.compile(r"mem\s+Test\s*(?P<test>\d+)\s*:\s*(?P<word>PASS|FAIL)\b", re.I), _mem_verdict),
    (
        re.compile(
            r"mem\s+Test\s*(?P<test>\d+)\s*:.*?bandwidth\s*=\s*(?P<value>[-+]?[\d.]+(?:[eE][-+]?\d+)?)\s*(?P<unit>\S*)",
            re.I,
        ),
        _mem_bandwidth,
    ),
    (
        re.compile(
            r"pcie-bandwidth\s*(?:\[\s*(?P<transfer>\d+\s*/\s*\d+)\s*\])?\s*\[CPU::\s*(?P<cpu>\d+)\s*\]\s*"
            + _GPU
            + r"(?P<rest>.*)$",
            re.I,
        ),
        _pebb,
    ),
    (
        re.compile(
            r"p2p\s*\[GPU::(?P<src>[^\]]*)\]\s*\[GPU::(?P<dst>[^\]]*)\]\s*peers:\s*(?P<word>\w+)\s*(?P<rest>.*)$", re.I
        ),
        _p2p,
    ),
    (
        re.compile(
            r"(?:a2a-)?p2p-bandwidth\s*\[\s*(?P<transfer>\d+\s*/\s*\d+)\s*\]\s*\[GPU::(?P<src>[^\]]*)\]\s*"
            r"\[GPU::(?P<dst>[^\]]*)\]\s*bidirectional:\s*(?P<word>\w+)\s*(?P<rest>.*)$",
            re.I,
        ),
        _p2p_bandwidth,
    ),
    (re.compile(r"(?P<what>a2a-\S+).*?Aggregate (?:peer )?bandwidth:\s*(?P<rest>.*)$", re.I), _a2a_aggregate),
    # "peqt <word>" alone is the action's verdict, whatever the word: one not understood is said, not dropped.
    (re.compile(r"peqt\s+(?P<word>\S+)\s*$", re.I), _peqt_verdict),
    (re.compile(r"peqt\s+(?P<name>\w+)\s+(?P<value>.+)$", re.I), _peqt_capability),
    (re.compile(r"gpup\s+(?P<gpu>\d+)\s+(?P<link>\d+)\s+(?P<name>[A-Za-z]\w*)\s+(?P<value>\S+)\s*$", re.I), _gpup),
    (re.compile(r"gpup\s+(?P<gpu>\d+)\s+(?P<name>[A-Za-z]\w*)\s+(?P<value>\S+)\s*$", re.I), _gpup),
    (
        re.compile(
            r"tst\s+GPU\s+(?P<gpu>\d+)\s+max\.\s*(?P<which>edge|junction)\s+temperature\s*:\s*(?P<value>\S+)", re.I
        ),
        _tst_temperature,
    ),
    # smqt, pulse and any module that prints "<module> <gpu_id> pass: <word>".
    (re.compile(r"(?P<module>[A-Za-z]\w*)\s+(?P<gpu>\d+)\s+pass:\s*(?P<word>\w+)", re.I), _module_verdict),
    (
        re.compile(
            r"(?:pesm\s+)?(?P<gpu>\d+)\s+(?:PCIe\s+)?(?P<what>link speed|power state)\s+changed?\s+(?P<value>.+)$", re.I
        ),
        _pesm_change,
    ),
]


_BABEL_FUNCTIONS = r"(?P<function>Copy|Mul|Add|Triad|Dot|Read|Write)"


def _babel_header(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    sink.babel_unit = match.group("unit")


def _babel_csv_header(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    sink.babel_unit = "MiB/s" if match.group("unit").lower() == "mi" else "MB/s"


def _babel_row(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    # Old builds print no GPU column: the row belongs to the GPU whose test started last.
    gpu = small_int(match.group("gpu")) if match.group("gpu") else sink.babel_gpu
    _babel_rate(sink, line, gpu, function=match.group("function"), rate=match.group("rate"), unit=sink.babel_unit)


def _babel_triad_gpu(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    sink.babel_gpu = small_int(match.group("gpu"))


def _babel_triad_rate(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    _babel_rate(sink, line, sink.babel_gpu, function="Triad", rate=match.group("rate"), unit=match.group("unit"))


def _rcqt(sink: ResultSink, match: re.Match[str], line: LineRef) -> None:
    name = match.group("name").lower()
    count = number(match.group("value"))
    passed = (count == 0) if name in _RCQT_FAILING and count is not None else None
    sink.add(line, "rcqt", name.replace(" ", "_"), value=count, passed=passed)


BARE_GRAMMARS: list[tuple[re.Pattern[str], Handler]] = [
    (
        re.compile(r"(?:GPU Id\s+)?Function\s+(?P<unit>[GM]i?B(?:ytes)?/s(?:ec)?)(?:\s|$)", re.I),
        _babel_header,
    ),
    (re.compile(r"(?:gpu_id,)?function,.*?max_(?P<unit>mi|m)bytes_per_sec", re.I), _babel_csv_header),
    (re.compile(r"(?:(?P<gpu>\d+)\s+)?" + _BABEL_FUNCTIONS + r"\s*:?\s+(?P<rate>\d+(?:\.\d+)?)(?:\s|$)"), _babel_row),
    (re.compile(r"(?:(?P<gpu>\d+),)?" + _BABEL_FUNCTIONS + r"\s*:?\s*,\d+,\d+,\d+,(?P<rate>[^,]+),"), _babel_row),
    (re.compile(r"GPU Id:\s*(?P<gpu>\d+)", re.I), _babel_triad_gpu),
    (re.compile(r"Bandwidth \((?P<unit>[^)]+)\):\s*(?P<rate>\S+)", re.I), _babel_triad_rate),
    (
        re.compile(
            r"(?P<name>Total packages validated|Installed packages|Missing packages|Version mismatch packages)"
            r"\s*:\s*<?(?P<value>\d+)>?",
            re.I,
        ),
        _rcqt,
    ),
]
