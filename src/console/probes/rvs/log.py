"""The RVS console log: levels, errors, headers and the summary box around the module payloads.

``[RESULT] [<ts>] [<action>] <payload>`` lines are framed here; ``modules`` reads the payloads.

Lines are recognised by their own content, never by position, because real logs interleave GPUs
(parallel actions), mix stderr (``RVS-ERROR``) into stdout, lose or add whitespace and carry
launcher or logger prefixes. The level tag is searched anywhere in the line for that reason, and
lines without one (``-q`` logs, babel tables, rcqt counters, docs excerpts) are read too.

A GPU that started (gst ramp or samples, iet power samples, babel start) but printed no verdict is
reported as incomplete: that is what a hang or a kill leaves behind.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from console.model.rvs import RvsAction, RvsGpu, RvsGpuRef, RvsGpuResult
from console.probes.rvs.modules import ACTION_GRAMMARS, BARE_GRAMMARS, Handler, LineRef
from console.probes.rvs.summary import (
    box_part,
    is_no_gpu_line,
    is_summary_title,
    parse_banner,
    parse_gpu_list_line,
)
from console.probes.rvs.units import small_int
from console.probes.values import normalise_bdf

_LEVEL = re.compile(r"\[\s*(?P<level>RESULT|INFO|DEBUG|ERROR|TRACE|NONE)\s*\]\s*\[\s*\d+(?:\.\d*)?\s*\]\s?")
_RVS_ERROR = re.compile(r"RVS-ERROR\s*(?:\[(?P<module>[^\]]*)\])?\s*(?:\[(?P<action>[^\]]*)\])?")
_RVS_CLI = re.compile(r"^RVS-CLI\b")
_CLI_ACTION = re.compile(r"action '(?P<action>[^']+)'.*?module '(?P<module>\w+)'")
_ACTION_HEADER = re.compile(r"^Action name\s*:\s*(?P<name>\S.*?)\s*$", re.IGNORECASE)
_MODULE_HEADER = re.compile(r"^Module name\s*:\s*(?P<name>\S+)", re.IGNORECASE)
_JSON_PATH = re.compile(r"json log file is\s+(?P<path>\S+)", re.IGNORECASE)
_ACTION_PAYLOAD = re.compile(r"^\[(?P<action>[^\[\]]+)\]\s*(?P<body>.*)$")
_BABEL_INVALID = re.compile(r"Validation failed on", re.IGNORECASE)
_FAIL_WORDS = re.compile(r"(?:met|pass)\s*:\s*FALSE", re.IGNORECASE)


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
    # The action of each ``incomplete`` message, in the same order (None when the GPU ran under no action).
    incomplete_actions: list[str | None] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)
    markers: set[str] = field(default_factory=set)


class _Scanner:
    """Reads lines one by one; is the ``ResultSink`` the module grammars write to."""

    def __init__(self) -> None:
        self.scan = LogScan()
        self.current_action: str | None = None
        self.in_box = False
        self.babel_unit = "MBytes/sec"
        self.babel_gpu: int | None = None
        self.started: dict[tuple[str | None, int], str | None] = {}
        self.finished: set[tuple[str | None, int]] = set()

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
            return self._body(bracketed.group("body").strip(), LineRef(line.strip(), action))
        return self._bare(payload, LineRef(line.strip(), self.current_action))

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

    def _body(self, body: str, line: LineRef) -> bool:
        if self._dispatch(ACTION_GRAMMARS, body, line):
            self.scan.markers.add("grammar")
            return True
        return False

    def _bare(self, payload: str, line: LineRef) -> bool:
        """Lines without an ``[action]`` tag: babel tables, rcqt counters (too generic to identify RVS alone)."""
        return self._dispatch(BARE_GRAMMARS, payload, line)

    def _dispatch(self, grammars: list[tuple[re.Pattern[str], Handler]], text: str, line: LineRef) -> bool:
        for pattern, handler in grammars:
            match = pattern.match(text)
            if match is not None:
                handler(self, match, line)
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

    def _module(self, line: LineRef, default: str | None) -> str | None:
        if line.action is not None:
            known = self.scan.actions.get(line.action)
            if known is not None and known.module is not None:
                return known.module
            self._action(line.action, default)
        return default

    # -- ResultSink ----------------------------------------------------------------------------

    def add(self, line: LineRef, module: str | None, metric: str, **values: object) -> RvsGpuResult:
        """Record one result; a failed verdict keeps its line as evidence."""
        result = RvsGpuResult.model_validate(
            {"module": self._module(line, module), "action": line.action, "metric": metric, **values}
        )
        self.scan.results.append(result)
        if result.passed is False:
            self.scan.failed_lines.append(line.text)
        return result

    def gpu_ref(self, inner: str) -> RvsGpuRef:
        """``[GPU:: 28851]`` or ``[GPU:: 2 - 28851 - 0000:05:00.0]`` (padded: ``6 -  1590``)."""
        parts = [part.strip() for part in inner.split(" - ")]
        if len(parts) >= 3:
            ref = RvsGpuRef(node_id=small_int(parts[0]), gpu_id=small_int(parts[1]), bdf=normalise_bdf(parts[2]))
            if ref.gpu_id is not None and ref.gpu_id not in self.scan.triple_gpus:
                self.scan.triple_gpus[ref.gpu_id] = RvsGpu(gpu_id=ref.gpu_id, node_id=ref.node_id, bdf=ref.bdf)
            return ref
        return RvsGpuRef(gpu_id=small_int(parts[-1]))

    def start(self, line: LineRef, gpu: RvsGpuRef, module: str) -> None:
        """``gpu`` began work in the line's action and owes a verdict."""
        module_name = self._module(line, module)
        if gpu.gpu_id is not None:
            self.started.setdefault((line.action, gpu.gpu_id), module_name)

    def finish(self, line: LineRef, gpu: RvsGpuRef) -> None:
        """``gpu`` printed its verdict in the line's action."""
        if gpu.gpu_id is not None:
            self.finished.add((line.action, gpu.gpu_id))

    def warn(self, line: LineRef) -> None:
        """Keep the line as a warning."""
        self.scan.warnings.append(line.text)

    def unread(self, line: LineRef, why: str) -> None:
        """A verdict not understood: the verdict counts cannot be trusted (see ``parse``)."""
        self.scan.unread.append(f"not understood: {why}: {line.text}")

    def incomplete(self) -> list[tuple[str | None, str]]:
        """One message per GPU that started an action and never printed its verdict, with the action."""
        return [
            (action, f"incomplete: {module or 'rvs'} action {action} printed no result for GPU {gpu_id}")
            for (action, gpu_id), module in self.started.items()
            if (action, gpu_id) not in self.finished
        ]


def scan_log(lines: list[str]) -> LogScan:
    """Read every console-log line of an RVS output."""
    scanner = _Scanner()
    for line in lines:
        scanner.feed(line)
    unfinished = scanner.incomplete()
    scanner.scan.incomplete = [message for _, message in unfinished]
    scanner.scan.incomplete_actions = [action for action, _ in unfinished]
    return scanner.scan
