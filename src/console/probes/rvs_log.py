"""The RVS console log: ``[RESULT] [<ts>] [<action>] <payload>`` lines and each module's payload grammar.

Lines are recognised by their own content, never by position, because real logs interleave GPUs
(parallel actions), mix stderr (``RVS-ERROR``) into stdout, lose or add whitespace and carry
launcher or logger prefixes. The level tag is searched anywhere in the line for that reason, and
lines without one (``-q`` logs, babel tables, rcqt counters, docs excerpts) are read too.

A GPU that started (gst ramp or samples, iet power samples, babel start) but printed no verdict is
reported as incomplete: that is what a hang or a kill leaves behind.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from console.model.rvs import RvsAction, RvsGpu, RvsGpuRef, RvsGpuResult
from console.probes.rvs_summary import (
    box_part,
    is_no_gpu_line,
    is_summary_title,
    parse_banner,
    parse_gpu_list_line,
)
from console.probes.rvs_units import bool_word, number, rate_to_gbps, small_int
from console.probes.values import normalise_bdf

_LEVEL = re.compile(r"\[\s*(?P<level>RESULT|INFO|DEBUG|ERROR|TRACE|NONE)\s*\]\s*\[\s*\d+(?:\.\d*)?\s*\]\s?")
_RVS_ERROR = re.compile(r"RVS-ERROR\s*(?:\[(?P<module>[^\]]*)\])?\s*(?:\[(?P<action>[^\]]*)\])?")
_RVS_CLI = re.compile(r"^RVS-CLI\b")
_CLI_ACTION = re.compile(r"action '(?P<action>[^']+)'.*?module '(?P<module>\w+)'")
_ACTION_HEADER = re.compile(r"^Action name\s*:\s*(?P<name>\S.*?)\s*$", re.IGNORECASE)
_MODULE_HEADER = re.compile(r"^Module name\s*:\s*(?P<name>\S+)", re.IGNORECASE)
_JSON_PATH = re.compile(r"json log file is\s+(?P<path>\S+)", re.IGNORECASE)
_ACTION_PAYLOAD = re.compile(r"^\[(?P<action>[^\[\]]+)\]\s*(?P<body>.*)$")
_FAIL_WORDS = re.compile(r"(?:met|pass)\s*:\s*FALSE", re.IGNORECASE)

_GPU = r"\[GPU::(?P<gpu>[^\]]*)\]\s*"
_GST_FINAL = re.compile(
    _GPU + r"GFLOPS\s+(?P<value>\S+)\s+Target GFLOPS:\s*(?P<target>\S+)\s+met:\s*(?P<word>\w+)", re.I
)
_GST_SAMPLE = re.compile(_GPU + r"GFLOPS\s+(?P<value>\S+)\s*$", re.IGNORECASE)
_GST_RAMP = re.compile(_GPU + r"(?:Start|End) of GPU ramp up", re.IGNORECASE)
_IET_POWER = re.compile(_GPU + r"Power\(W\)\s+(?P<value>\S+)", re.IGNORECASE)
_GPU_VERDICT = re.compile(_GPU + r"pass:\s*(?P<word>\w+)", re.IGNORECASE)
_BABEL_START = re.compile(_GPU + r"Starting the Babel", re.IGNORECASE)
_GM = re.compile(r"^gm\s+(?P<gpu>\d+)\s+(?P<name>\w+)\s+(?P<kind>violations|average)\s+(?P<value>\S+)", re.I)
_MEM_VERDICT = re.compile(r"^mem\s+Test\s*(?P<test>\d+)\s*:\s*(?P<word>PASS|FAIL)\b", re.IGNORECASE)
_MEM_BANDWIDTH = re.compile(
    r"^mem\s+Test\s*(?P<test>\d+)\s*:.*?bandwidth\s*=\s*(?P<value>[-+]?[\d.]+(?:[eE][-+]?\d+)?)\s*(?P<unit>\S*)",
    re.IGNORECASE,
)
_PEBB = re.compile(
    r"^pcie-bandwidth\s*(?:\[\s*(?P<transfer>\d+\s*/\s*\d+)\s*\])?\s*\[CPU::\s*(?P<cpu>\d+)\s*\]\s*"
    + _GPU
    + r"(?P<rest>.*)$",
    re.IGNORECASE,
)
_P2P = re.compile(
    r"^p2p\s*\[GPU::(?P<src>[^\]]*)\]\s*\[GPU::(?P<dst>[^\]]*)\]\s*peers:\s*(?P<word>\w+)\s*(?P<rest>.*)$", re.I
)
_P2P_BANDWIDTH = re.compile(
    r"p2p-bandwidth\s*\[\s*(?P<transfer>\d+\s*/\s*\d+)\s*\]\s*\[GPU::(?P<src>[^\]]*)\]\s*\[GPU::(?P<dst>[^\]]*)\]\s*"
    r"bidirectional:\s*(?P<word>\w+)\s*(?P<rest>.*)$",
    re.IGNORECASE,
)
_A2A_AGGREGATE = re.compile(r"^(?P<what>a2a-\S+).*?Aggregate (?:peer )?bandwidth:\s*(?P<rest>.*)$", re.IGNORECASE)
_DISTANCE = re.compile(r"^distance:\s*(?P<distance>\d+)\s*(?P<hop>.*)$", re.IGNORECASE)
_H2D_D2H = re.compile(r"^h2d::\s*(?P<h2d>\w+)\s+d2h::\s*(?P<d2h>\w+)\s*(?P<rest>.*)$", re.IGNORECASE)
_RATE = re.compile(r"(?P<value>[-+]?\d+(?:\.\d+)?)\s*(?P<unit>[GMKT]i?B(?:ps|/s))", re.IGNORECASE)
_DURATION = re.compile(r"duration:\s*(?P<value>\S+)\s*secs?", re.IGNORECASE)
_PEQT_VERDICT = re.compile(r"^peqt\s+(?P<word>true|false)\s*$", re.IGNORECASE)
_PEQT_CAPABILITY = re.compile(r"^peqt\s+(?P<name>\w+)\s+(?P<value>.+)$", re.IGNORECASE)
_GPUP_LINK = re.compile(r"^gpup\s+(?P<gpu>\d+)\s+(?P<link>\d+)\s+(?P<name>[A-Za-z]\w*)\s+(?P<value>\S+)\s*$", re.I)
_GPUP = re.compile(r"^gpup\s+(?P<gpu>\d+)\s+(?P<name>[A-Za-z]\w*)\s+(?P<value>\S+)\s*$", re.IGNORECASE)
# smqt, pulse and other modules that print "<module> <gpu_id> pass: <word>".
_MODULE_VERDICT = re.compile(r"^(?P<module>[A-Za-z]\w*)\s+(?P<gpu>\d+)\s+pass:\s*(?P<word>\w+)", re.IGNORECASE)
_TST_TEMPERATURE = re.compile(
    r"^tst\s+GPU\s+(?P<gpu>\d+)\s+max\.\s*(?P<which>edge|junction)\s+temperature\s*:\s*(?P<value>\S+)", re.I
)
_PESM_CHANGE = re.compile(
    r"^(?:pesm\s+)?(?P<gpu>\d+)\s+(?:PCIe\s+)?(?P<what>link speed|power state)\s+changed?\s+(?P<value>.+)$", re.I
)

_BABEL_FUNCTIONS = r"(?P<function>Copy|Mul|Add|Triad|Dot|Read|Write)"
_BABEL_HEADER = re.compile(r"^(?:GPU Id\s+)?Function\s+(?P<unit>\S+)", re.IGNORECASE)
_BABEL_ROW = re.compile(r"^(?:(?P<gpu>\d+)\s+)?" + _BABEL_FUNCTIONS + r"\s*:?\s+(?P<rate>\d+(?:\.\d+)?)(?:\s|$)")
_BABEL_CSV_HEADER = re.compile(r"^(?:gpu_id,)?function,.*?max_(?P<unit>mi|m)bytes_per_sec", re.IGNORECASE)
_BABEL_CSV_ROW = re.compile(r"^(?:(?P<gpu>\d+),)?" + _BABEL_FUNCTIONS + r"\s*:?\s*,\d+,\d+,\d+,(?P<rate>[^,]+),")
_BABEL_TRIAD_GPU = re.compile(r"^GPU Id:\s*(?P<gpu>\d+)", re.IGNORECASE)
_BABEL_TRIAD_RATE = re.compile(r"^Bandwidth \((?P<unit>[^)]+)\):\s*(?P<rate>\S+)", re.IGNORECASE)
_BABEL_INVALID = re.compile(r"Validation failed on", re.IGNORECASE)
_RCQT_COUNT = re.compile(
    r"^(?P<name>Total packages validated|Installed packages|Missing packages|Version mismatch packages)"
    r"\s*:\s*<?(?P<value>\d+)>?",
    re.IGNORECASE,
)
_RCQT_FAILING = ("missing packages", "version mismatch packages")


@dataclass
class LogScan:
    """Everything the console-log lines of one output say (the summary box is returned as raw lines)."""

    results: list[RvsGpuResult] = field(default_factory=list)
    failed_lines: list[str] = field(default_factory=list)
    error_lines: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    actions: dict[str, RvsAction] = field(default_factory=dict)
    gpu_list: list[RvsGpu] = field(default_factory=list)
    triple_gpus: dict[int, RvsGpu] = field(default_factory=dict)
    box_lines: list[str] = field(default_factory=list)
    version: str | None = None
    json_log_path: str | None = None
    incomplete: list[str] = field(default_factory=list)
    markers: set[str] = field(default_factory=set)


@dataclass
class _Line:
    """One line being read: its text as printed (for evidence) and the action it belongs to."""

    text: str
    action: str | None = None


class _Scanner:
    def __init__(self) -> None:
        self.scan = LogScan()
        self.current_action: str | None = None
        self.in_box = False
        self.babel_unit = "MBytes/sec"
        self.babel_gpu: int | None = None
        self.started: dict[tuple[str | None, int], str | None] = {}
        self.finished: set[tuple[str | None, int]] = set()
        self.body_grammars: list[tuple[re.Pattern[str], Callable[[re.Match[str], _Line], None]]] = [
            (_GST_FINAL, self._gst_final),
            (_GST_SAMPLE, self._gst_sample),
            (_GST_RAMP, self._gst_ramp),
            (_IET_POWER, self._iet_power),
            (_GPU_VERDICT, self._gpu_verdict),
            (_BABEL_START, self._babel_start),
            (_GM, self._gm),
            (_MEM_VERDICT, self._mem_verdict),
            (_MEM_BANDWIDTH, self._mem_bandwidth),
            (_PEBB, self._pebb),
            (_P2P, self._p2p),
            (_P2P_BANDWIDTH, self._p2p_bandwidth),
            (_A2A_AGGREGATE, self._a2a_aggregate),
            (_PEQT_VERDICT, self._peqt_verdict),
            (_PEQT_CAPABILITY, self._peqt_capability),
            (_GPUP_LINK, self._gpup_link),
            (_GPUP, self._gpup),
            (_TST_TEMPERATURE, self._tst_temperature),
            (_MODULE_VERDICT, self._module_verdict),
            (_PESM_CHANGE, self._pesm_change),
        ]

    # -- line dispatch -------------------------------------------------------------------------

    def feed(self, raw: str) -> None:
        line = raw.replace("\t", " ").rstrip()
        part = box_part(line)
        if self.in_box:
            if part is not None:
                self.scan.box_lines.append(part)
                return
            if not line.strip():
                return
            self.in_box = False
        if not line.strip():
            return
        if part is not None and is_summary_title(part):
            # A log holding several runs keeps the last box: it describes the last run.
            self.in_box = True
            self.scan.box_lines = [part]
            self.scan.markers.add("box")
            return
        level = _LEVEL.search(line)
        payload = line[level.end() :].strip() if level else line.strip()
        if level is not None:
            self.scan.markers.add("result" if level.group("level") == "RESULT" else "level")
        if self._error(line, payload, level.group("level") if level else None):
            return
        if not self._run_line(line, payload):
            self._fail_safety_net(line, payload)

    def _error(self, line: str, payload: str, level: str | None) -> bool:
        match = _RVS_ERROR.search(payload)
        if match is not None or _RVS_CLI.match(payload) or level == "ERROR":
            self.scan.markers.add("error")
            self.scan.error_lines.append(line.strip())
            if match is not None:
                self._note_error_action(match, payload)
            return True
        if is_no_gpu_line(payload):
            self.scan.markers.add("gpu-list")
            self.scan.error_lines.append(line.strip())
            return True
        if _BABEL_INVALID.search(payload):
            self.scan.error_lines.append(line.strip())
            return True
        return False

    def _note_error_action(self, match: re.Match[str], payload: str) -> None:
        module = (match.group("module") or "").strip().lower()
        action = (match.group("action") or "").strip()
        failed = "failed" in payload.lower()
        if module == "cli":
            # The launcher names the action it could not create, and its module, in the message.
            named = _CLI_ACTION.search(payload)
            if named is None:
                return
            module, action, failed = named.group("module").lower(), named.group("action"), True
        if module and action:
            entry = self._action(action, module)
            if failed:
                entry.passed = False

    def _run_line(self, line: str, payload: str) -> bool:
        """Read a non-error line; False when nothing here recognises it."""
        version = parse_banner(payload)
        if version is not None:
            self.scan.version = version
            self.scan.markers.add("banner")
            return True
        json_path = _JSON_PATH.search(payload)
        if json_path is not None:
            self.scan.json_log_path = json_path.group("path")
            return True
        gpu = parse_gpu_list_line(payload)
        if gpu is not None:
            self.scan.markers.add("gpu-list")
            self.scan.gpu_list.append(gpu)
            return True
        if self._header(payload):
            return True
        bracketed = _ACTION_PAYLOAD.match(payload)
        if bracketed is not None:
            action = bracketed.group("action").strip()
            return self._body(bracketed.group("body").strip(), _Line(line.strip(), action))
        return self._bare(payload, _Line(line.strip(), self.current_action))

    def _header(self, payload: str) -> bool:
        action = _ACTION_HEADER.match(payload)
        if action is not None:
            self.current_action = action.group("name")
            self._action(self.current_action, None)
            self.scan.markers.add("header")
            return True
        module = _MODULE_HEADER.match(payload)
        if module is not None:
            if self.current_action is not None:
                self._action(self.current_action, module.group("name").lower())
            self.scan.markers.add("header")
            return True
        return False

    def _body(self, body: str, line: _Line) -> bool:
        for pattern, handler in self.body_grammars:
            match = pattern.search(body) if pattern is _P2P_BANDWIDTH else pattern.match(body)
            if match is not None:
                handler(match, line)
                self.scan.markers.add("grammar")
                return True
        return False

    def _bare(self, payload: str, line: _Line) -> bool:
        """Lines without an ``[action]`` tag: babel tables, rcqt counters."""
        header = _BABEL_HEADER.match(payload)
        if header is not None and rate_to_gbps(1.0, header.group("unit")) is not None:
            self.babel_unit = header.group("unit")
            return True
        csv_header = _BABEL_CSV_HEADER.match(payload)
        if csv_header is not None:
            self.babel_unit = "MiB/s" if csv_header.group("unit").lower() == "mi" else "MB/s"
            return True
        for pattern in (_BABEL_ROW, _BABEL_CSV_ROW):
            row = pattern.match(payload)
            if row is not None:
                gpu = small_int(row.group("gpu")) if row.group("gpu") else self.babel_gpu
                self._babel_rate(line, gpu, row.group("function"), row.group("rate"), self.babel_unit)
                return True
        triad_gpu = _BABEL_TRIAD_GPU.match(payload)
        if triad_gpu is not None:
            self.babel_gpu = small_int(triad_gpu.group("gpu"))
            return True
        triad = _BABEL_TRIAD_RATE.match(payload)
        if triad is not None:
            self._babel_rate(line, self.babel_gpu, "Triad", triad.group("rate"), triad.group("unit"))
            return True
        rcqt = _RCQT_COUNT.match(payload)
        if rcqt is not None:
            self._rcqt(rcqt, line)
            return True
        return False

    def _fail_safety_net(self, line: str, payload: str) -> None:
        # An unknown module's verdict still counts: RVS spells every failure "met: FALSE" or "pass: FALSE".
        if _FAIL_WORDS.search(payload):
            self.scan.failed_lines.append(line.strip())

    # -- bookkeeping ---------------------------------------------------------------------------

    def _action(self, name: str, module: str | None) -> RvsAction:
        entry = self.scan.actions.get(name)
        if entry is None:
            entry = RvsAction(name=name, module=module)
            self.scan.actions[name] = entry
        elif module is not None and entry.module is None:
            entry.module = module
        return entry

    def _module(self, line: _Line, default: str | None) -> str | None:
        if line.action is not None:
            known = self.scan.actions.get(line.action)
            if known is not None and known.module is not None:
                return known.module
            self._action(line.action, default)
        return default

    def _add(self, line: _Line, module: str | None, metric: str, **values: object) -> RvsGpuResult:
        result = RvsGpuResult.model_validate(
            {"module": self._module(line, module), "action": line.action, "metric": metric, **values}
        )
        self.scan.results.append(result)
        if result.passed is False:
            self.scan.failed_lines.append(line.text)
        return result

    def _gpu_ref(self, inner: str) -> RvsGpuRef:
        """``[GPU:: 28851]`` or ``[GPU:: 2 - 28851 - 0000:05:00.0]`` (padded: ``6 -  1590``)."""
        parts = [part.strip() for part in inner.split(" - ")] if " - " in inner else [inner.strip()]
        if len(parts) >= 3:
            ref = RvsGpuRef(node_id=small_int(parts[0]), gpu_id=small_int(parts[1]), bdf=normalise_bdf(parts[2]))
            if ref.gpu_id is not None and ref.gpu_id not in self.scan.triple_gpus:
                self.scan.triple_gpus[ref.gpu_id] = RvsGpu(gpu_id=ref.gpu_id, node_id=ref.node_id, bdf=ref.bdf)
            return ref
        return RvsGpuRef(gpu_id=small_int(parts[-1]))

    def _start(self, line: _Line, gpu: RvsGpuRef) -> None:
        if gpu.gpu_id is not None:
            self.started.setdefault((line.action, gpu.gpu_id), self._module(line, None))

    def _finish(self, line: _Line, gpu: RvsGpuRef) -> None:
        if gpu.gpu_id is not None:
            self.finished.add((line.action, gpu.gpu_id))

    def incomplete(self) -> list[str]:
        """One message per GPU that started an action and never printed its verdict."""
        return [
            f"incomplete: {module or 'rvs'} action {action} printed no result for GPU {gpu_id}"
            for (action, gpu_id), module in self.started.items()
            if (action, gpu_id) not in self.finished
        ]

    # -- module grammars -----------------------------------------------------------------------

    def _gst_final(self, match: re.Match[str], line: _Line) -> None:
        gpu = self._gpu_ref(match.group("gpu"))
        self._finish(line, gpu)
        self._add(
            line,
            "gst",
            "gflops",
            gpu=gpu,
            value=number(match.group("value")),
            unit="GFLOPS",
            target=number(match.group("target")),
            passed=bool_word(match.group("word")),
        )

    def _gst_sample(self, match: re.Match[str], line: _Line) -> None:
        gpu = self._gpu_ref(match.group("gpu"))
        self._start(line, gpu)
        self._add(line, "gst", "gflops_sample", gpu=gpu, value=number(match.group("value")), unit="GFLOPS")

    def _gst_ramp(self, match: re.Match[str], line: _Line) -> None:
        self._start(line, self._gpu_ref(match.group("gpu")))
        self._module(line, "gst")

    def _iet_power(self, match: re.Match[str], line: _Line) -> None:
        gpu = self._gpu_ref(match.group("gpu"))
        self._start(line, gpu)
        self._add(line, "iet", "power_w_sample", gpu=gpu, value=number(match.group("value")), unit="W")

    def _gpu_verdict(self, match: re.Match[str], line: _Line) -> None:
        gpu = self._gpu_ref(match.group("gpu"))
        self._finish(line, gpu)
        self._add(line, None, "verdict", gpu=gpu, passed=bool_word(match.group("word")))

    def _babel_start(self, match: re.Match[str], line: _Line) -> None:
        gpu = self._gpu_ref(match.group("gpu"))
        self.babel_gpu = gpu.gpu_id
        self._start(line, gpu)
        self._module(line, "babel")

    def _babel_rate(self, line: _Line, gpu_id: int | None, function: str, rate: str, unit: str) -> None:
        gpu = RvsGpuRef(gpu_id=gpu_id)
        self._finish(line, gpu)
        value = rate_to_gbps(number(rate), unit)
        result = self._add(line, "babel", "bandwidth", gpu=gpu, label=function, value=value, unit="GB/s")
        if value is None:
            result.mark_unavailable("value", f"unreadable rate {rate!r} {unit}")

    def _gm(self, match: re.Match[str], line: _Line) -> None:
        gpu = RvsGpuRef(gpu_id=small_int(match.group("gpu")))
        name = match.group("name").lower()
        if match.group("kind").lower() == "violations":
            count = number(match.group("value"))
            passed = None if count is None else count == 0
            self._add(line, "gm", f"{name}_violations", gpu=gpu, value=count, passed=passed)
            return
        raw = match.group("value")
        value = re.match(r"[-+]?\d+(?:\.\d+)?", raw)
        unit = raw[value.end() :] if value else None
        self._add(line, "gm", f"{name}_average", gpu=gpu, value=number(value.group(0)) if value else None, unit=unit)

    def _mem_verdict(self, match: re.Match[str], line: _Line) -> None:
        label = f"Test {match.group('test')}"
        self._add(line, "mem", "verdict", label=label, passed=bool_word(match.group("word")))

    def _mem_bandwidth(self, match: re.Match[str], line: _Line) -> None:
        unit = match.group("unit") or "GB/s"
        value = rate_to_gbps(number(match.group("value")), unit)
        self._add(line, "mem", "bandwidth", label=f"Test {match.group('test')}", value=value, unit="GB/s")

    def _pebb(self, match: re.Match[str], line: _Line) -> None:
        gpu = self._gpu_ref(match.group("gpu"))
        cpu_node = small_int(match.group("cpu"))
        rest = match.group("rest").strip()
        distance = _DISTANCE.match(rest)
        if distance is not None:
            hop = distance.group("hop").strip() or None
            value = number(distance.group("distance"))
            self._add(line, "pebb", "distance", gpu=gpu, cpu_node=cpu_node, value=value, hop=hop)
            return
        flags = _H2D_D2H.match(rest)
        if flags is None:
            self._add(line, "pebb", "bandwidth_sample", gpu=gpu, cpu_node=cpu_node, text=rest or None)
            return
        directions = [name for name in ("h2d", "d2h") if bool_word(flags.group(name))]
        self._bandwidth(
            line,
            "pebb",
            flags.group("rest"),
            match.group("transfer"),
            "+".join(directions) or None,
            gpu=gpu,
            cpu_node=cpu_node,
        )

    def _p2p(self, match: re.Match[str], line: _Line) -> None:
        peers = bool_word(match.group("word"))
        distance = _DISTANCE.match(match.group("rest").strip())
        value = number(distance.group("distance")) if distance else None
        hop = (distance.group("hop") if distance else match.group("rest")).strip() or None
        self._add(
            line,
            "pbqt",
            "peers",
            gpu=self._gpu_ref(match.group("src")),
            peer=self._gpu_ref(match.group("dst")),
            value=value,
            text=match.group("word").lower(),
            hop=hop,
        )
        if peers is False:
            self.scan.warnings.append(line.text)

    def _p2p_bandwidth(self, match: re.Match[str], line: _Line) -> None:
        direction = "bidirectional" if bool_word(match.group("word")) else "unidirectional"
        self._bandwidth(
            line,
            "pbqt",
            match.group("rest"),
            match.group("transfer"),
            direction,
            gpu=self._gpu_ref(match.group("src")),
            peer=self._gpu_ref(match.group("dst")),
        )

    def _bandwidth(
        self, line: _Line, module: str, rest: str, transfer: str | None, direction: str | None, **where: object
    ) -> None:
        """A pebb/pbqt transfer line: ``<rate> GBps duration: <s> secs`` final, or an interval sample."""
        duration = _DURATION.search(rest)
        rate = _RATE.search(rest)
        value = rate_to_gbps(number(rate.group("value")), rate.group("unit")) if rate else None
        metric = "bandwidth" if duration else "bandwidth_sample"
        result = self._add(
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
            result.mark_unavailable(
                "value", (rest[: duration.start()] if duration else rest).strip() or "absent in output"
            )
        if metric == "bandwidth" and (value is None or value <= 0):
            self.scan.warnings.append(line.text)

    def _a2a_aggregate(self, match: re.Match[str], line: _Line) -> None:
        rate = _RATE.search(match.group("rest"))
        value = rate_to_gbps(number(rate.group("value")), rate.group("unit")) if rate else None
        self._add(line, "pbqt", "aggregate_bandwidth", label=match.group("what"), value=value, unit="GB/s")

    def _peqt_verdict(self, match: re.Match[str], line: _Line) -> None:
        self._add(line, "peqt", "verdict", passed=bool_word(match.group("word")))

    def _peqt_capability(self, match: re.Match[str], line: _Line) -> None:
        text = match.group("value").strip()
        self._add(line, "peqt", match.group("name"), value=number(text), text=text)

    def _gpup_link(self, match: re.Match[str], line: _Line) -> None:
        gpu = RvsGpuRef(gpu_id=small_int(match.group("gpu")))
        label = f"io_link {match.group('link')}"
        text = match.group("value")
        self._add(line, "gpup", match.group("name"), gpu=gpu, label=label, value=number(text), text=text)

    def _gpup(self, match: re.Match[str], line: _Line) -> None:
        gpu = RvsGpuRef(gpu_id=small_int(match.group("gpu")))
        text = match.group("value")
        self._add(line, "gpup", match.group("name"), gpu=gpu, value=number(text), text=text)

    def _tst_temperature(self, match: re.Match[str], line: _Line) -> None:
        gpu = RvsGpuRef(gpu_id=small_int(match.group("gpu")))
        metric = f"max_{match.group('which').lower()}_temp_c"
        self._add(line, "tst", metric, gpu=gpu, value=number(match.group("value")), unit="C")

    def _module_verdict(self, match: re.Match[str], line: _Line) -> None:
        gpu = RvsGpuRef(gpu_id=small_int(match.group("gpu")))
        self._finish(line, gpu)
        self._add(line, match.group("module").lower(), "verdict", gpu=gpu, passed=bool_word(match.group("word")))

    def _pesm_change(self, match: re.Match[str], line: _Line) -> None:
        gpu = RvsGpuRef(gpu_id=small_int(match.group("gpu")))
        metric = match.group("what").lower().replace(" ", "_")
        self._add(line, "pesm", metric, gpu=gpu, text=match.group("value").strip())

    def _rcqt(self, match: re.Match[str], line: _Line) -> None:
        name = match.group("name").lower()
        count = number(match.group("value"))
        passed = (count == 0) if name in _RCQT_FAILING and count is not None else None
        self._add(line, "rcqt", name.replace(" ", "_"), value=count, passed=passed)


def scan_log(lines: list[str]) -> LogScan:
    """Read every console-log line of an RVS output."""
    scanner = _Scanner()
    for line in lines:
        scanner.feed(line)
    scanner.scan.incomplete = scanner.incomplete()
    return scanner.scan
