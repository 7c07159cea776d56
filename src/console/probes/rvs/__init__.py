"""ROCm Validation Suite (``rvs``) output: console logs, the summary box, ``rvs -g`` and the JSON log.

Kinds:

* the module name for a single-module run: ``gst``, ``iet``, ``pebb``, ``pbqt``, ``peqt``, ``gm``,
  ``mem``, ``babel``, ``gpup``, ``tst``, ``pesm`` (also ``rcqt``, ``smqt``, ``pulse``);
* ``summary`` for a multi-module run (the RVS >= 1.3 summary box, or lines of several modules);
* ``gpu-list`` for ``rvs -g``; ``json`` for the JSON log (``rvs -j``);
* ``error`` for a run that failed to start (module load failure, config error, no GPU);
* ``log`` for result lines that name no module RVS is known to have.

``ok`` is False when any verdict failed (``met: FALSE``, ``pass: FALSE``, ``peqt false``, a mem
test or summary row FAIL, gm violations, rcqt missing packages), on ``RVS-ERROR`` / ``[ERROR ]``
lines, when nothing was measured, and when the run is incomplete: a GPU that started and printed
no verdict, a cut JSON log, or a multi-module run without its summary box (RVS >= 1.3 prints it
last; an older version named in the output is not held to that). ``errors`` holds the tool's lines
verbatim; the parser's own findings about incompleteness start with ``incomplete:`` or ``no results:``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from console.model.rvs import RvsAction, RvsGpu, RvsGpuResult, RvsResult
from console.probes.base import Detection, ParsedOutput, ParseError, clean_lines
from console.probes.ids import Tool
from console.probes.rvs.json_output import (
    JSON_MODULES,
    JsonLog,
    failed_records,
    json_start,
    read_json_log,
    records_to_results,
)
from console.probes.rvs.log import LogScan, scan_log
from console.probes.rvs.summary import SummaryBox, parse_summary_box

MODULE_KINDS = JSON_MODULES
# Said in the output's warnings and summary: the records are judged, what came before them is not there.
FRAGMENT_NOTE = "read as a fragment: records of an RVS JSON log's tail, without their module and action"
KINDS = MODULE_KINDS | {"summary", "gpu-list", "json", "error", "log"}
_SUMMARY_BOX_SINCE = (1, 3)
# Strongest marker seen -> how sure detection is that the text is RVS output.
_CONFIDENCE = (
    ("box", 0.95),
    ("grammar+result", 0.95),
    ("error", 0.9),
    ("header", 0.9),
    ("gpu-list", 0.9),
    ("json", 0.85),
    ("banner", 0.85),
    ("json-fragment", 0.6),
    ("grammar", 0.7),
    ("result", 0.6),
    ("level", 0.5),
)


def detect(text: str) -> Detection | None:
    """RVS output of any kind, with a confidence that reflects how RVS-specific its markers are."""
    try:
        parsed, markers = _parse(text, None)
    except ParseError:
        return None
    if "grammar" in markers and "result" in markers:
        markers.add("grammar+result")
    # Only untagged babel/rcqt lines: plausible RVS, but any tool with its own markers should win.
    confidence = next((value for marker, value in _CONFIDENCE if marker in markers), 0.3)
    return Detection(Tool.RVS, parsed.kind, confidence)


def parse(text: str, kind: str | None = None) -> ParsedOutput:
    """Parse an RVS console log, ``rvs -g`` list, summary box or JSON log. Raises ParseError only.

    Summary keys: ``gpu_count`` (summary box, else its grid, else ``rvs -g``, else distinct GPU ids
    in the results), ``pass_count`` / ``fail_count`` (summary table rows when the box is there;
    otherwise the verdict-bearing result lines: gst ``met``, iet/tst/smqt ``pass:``, peqt, mem test,
    gm violation counters, rcqt package counters and JSON ``pass`` fields), ``actions``, ``modules``,
    ``results``, and when measured ``min_gflops``/``max_gflops`` (gst final lines),
    ``min_bandwidth_gbps``/``max_bandwidth_gbps`` (final mem/pebb/pbqt/babel bandwidths),
    ``max_power_w`` (iet samples), ``gm_violations``. A verdict printed in a word not understood leaves
    ``fail_count`` None (unless another verdict failed) and says why in ``fail_count_unread``.
    """
    if kind is not None and kind not in KINDS:
        raise ParseError(f"unknown rvs kind {kind!r}; expected one of {', '.join(sorted(KINDS))}")
    parsed, _ = _parse(text, kind)
    return parsed


def _parse(text: str, kind: str | None) -> tuple[ParsedOutput, set[str]]:
    lines = clean_lines(text, strip_prefixes=True)
    json_log, console_lines = _split_json(lines)
    if kind == "json" and json_log is None:
        raise ParseError("expected an RVS JSON log: an object keyed by module (gst, iet, ...) with action lists")
    scan = scan_log(console_lines)
    if json_log is not None:
        scan.markers.add("json-fragment" if json_log.fragment else "json")
    box = parse_summary_box(scan.box_lines) if scan.box_lines else None
    data = _build(scan, box, json_log)
    errors = _errors(scan, box, json_log, data)
    found_kind = kind or _kind(scan, box, json_log, data)
    if found_kind == "gpu-list" and not scan.gpu_list and "gpu-list" not in scan.markers:
        raise ParseError("expected 'rvs -g' output: '<bdf> - GPU[<node> - <gpu_id>] <name>' lines")
    has_data = bool(data.results or data.gpus or data.json_records or (box and box.actions))
    summary = _summary(scan, box, data, found_kind)
    warnings = list(dict.fromkeys([*scan.warnings, *scan.unread, *elided(scan, box)]))
    if json_log is not None and json_log.fragment:
        summary["fragment"] = True
        warnings.append(FRAGMENT_NOTE)
        # A tail that starts inside a record: the record's last keys are before the first one read.
        cut = [line.strip() for line in console_lines if line.strip()[:1] in ('"', "}", "]", ",")]
        if cut:
            warnings.append(f"not read: {len(cut)} line(s) of a record the tail starts inside, from {cut[0]!r}")
    parsed = ParsedOutput(
        tool=Tool.RVS,
        kind=found_kind,
        ok=has_data and not errors,
        errors=errors,
        warnings=warnings,
        summary=summary,
        tool_version=data.version,
        data=data,
    )
    return parsed, scan.markers


def _split_json(lines: list[str]) -> tuple[JsonLog | None, list[str]]:
    start = json_start(lines)
    if start is None:
        return None, lines
    json_log = read_json_log("\n".join(lines[start:]))
    if json_log is None:
        return None, lines
    return json_log, lines[:start]


def _build(scan: LogScan, box: SummaryBox | None, json_log: JsonLog | None) -> RvsResult:
    actions = dict(scan.actions)
    for row in box.actions if box else []:
        known = actions.get(row.name)
        module = row.module if known is None or known.module is None else known.module
        actions[row.name] = RvsAction(name=row.name, module=module, passed=row.passed)
    results = list(scan.results)
    if json_log is not None:
        results.extend(records_to_results(json_log.records))
        for record in json_log.records:
            if record.action is not None and record.action not in actions:
                actions[record.action] = RvsAction(name=record.action, module=record.module)
    # The summary table is RVS's own verdict; other actions are judged from their result lines.
    judged_by_rvs = {row.name for row in box.actions} if box else set()
    for action in actions.values():
        if action.name not in judged_by_rvs:
            action.passed = _action_verdict(action, results)
    modules = {a.module for a in actions.values()} | {r.module for r in results}
    modules |= {record.module for record in json_log.records} if json_log else set()
    overview = box.overview if box else None
    return RvsResult(
        version=scan.version or (overview.rvs_version if overview else None),
        overview=overview,
        summary_box=box is not None,
        modules=sorted(m for m in modules if m),
        actions=list(actions.values()),
        gpus=_merge_gpus([*scan.gpu_list, *(box.gpus if box else []), *scan.triple_gpus.values()]),
        results=results,
        json_log_path=scan.json_log_path,
        json_records=json_log.records if json_log else [],
        json_complete=json_log.complete if json_log else None,
    )


def _action_verdict(action: RvsAction, results: list[RvsGpuResult]) -> bool | None:
    verdicts = [r.passed for r in results if r.action == action.name and r.passed is not None]
    if action.passed is False or False in verdicts:
        return False
    return True if verdicts else None


def _merge_gpus(gpus: Iterable[RvsGpu]) -> list[RvsGpu]:
    """One entry per GPU (keyed by gpu_id, else BDF); later sources fill what earlier ones lacked.

    The entries are the parser's own fresh objects, so the first of each GPU is completed in place.
    """
    merged: dict[object, RvsGpu] = {}
    for gpu in gpus:
        key = gpu.gpu_id if gpu.gpu_id is not None else gpu.bdf
        if key is None:
            continue
        known = merged.get(key)
        if known is None:
            merged[key] = gpu
            continue
        for name in ("node_id", "index", "bdf", "name", "device_id"):
            if getattr(known, name) is None and getattr(gpu, name) is not None:
                setattr(known, name, getattr(gpu, name))
    return list(merged.values())


def _version_tuple(version: str | None) -> tuple[int, ...] | None:
    numbers = re.findall(r"\d+", version or "")
    return tuple(int(n) for n in numbers[:3] if len(n) < 10) or None


def _errors(scan: LogScan, box: SummaryBox | None, json_log: JsonLog | None, data: RvsResult) -> list[str]:
    errors = [*scan.error_lines, *scan.failed_lines]
    if box is not None:
        errors.extend(box.failed_rows)
        if not box.complete:
            errors.append("incomplete: the summary box ends before its action table does")
    errors.extend(_unfinished(scan, box))
    if json_log is not None:
        errors.extend(failed_records(json_log.records))
    if json_log is not None and not json_log.complete:
        errors.append("incomplete: the JSON log is cut off (run interrupted); complete records were kept")
    run_modules = {a.module for a in scan.actions.values() if a.module} | {r.module for r in scan.results if r.module}
    version = _version_tuple(data.version)
    # Only a log that names RVS >= 1.3 must end with the box; console logs rarely print the version,
    # and older RVS never prints a box, so an unknown version is judged by the per-GPU verdicts alone.
    if len(run_modules) >= 2 and box is None and version is not None and version >= _SUMMARY_BOX_SINCE:
        errors.append("incomplete: a multi-module run without the final summary box (hung or killed?)")
    produced = data.results or data.json_records or (box and box.actions) or scan.gpu_list
    if not produced and not errors:
        errors.append("no results: the output names actions but holds no result line")
    return list(dict.fromkeys(errors))


def _unfinished(scan: LogScan, box: SummaryBox | None) -> list[str]:
    """The GPUs that started an action and printed no verdict, except in an action the complete summary box
    judges PASS: RVS prints the box last, after every GPU's verdict, so there the verdict lines were lost from
    the paste (an author's ``...``), not from the run (``elided`` says which)."""
    passed = {row.name for row in box.actions if row.passed} if box is not None and box.complete else set()
    return [
        message
        for action, message in zip(scan.incomplete_actions, scan.incomplete, strict=True)
        if action is None or action not in passed
    ]


def elided(scan: LogScan, box: SummaryBox | None) -> list[str]:
    """What the paste lost of an action the summary box judges PASS (said in the warnings, never judged)."""
    kept = set(_unfinished(scan, box))
    return [
        message.replace("incomplete: ", "lost in the paste: ", 1) + " (the summary box judges the action PASS)"
        for message in scan.incomplete
        if message not in kept
    ]


def _kind(scan: LogScan, box: SummaryBox | None, json_log: JsonLog | None, data: RvsResult) -> str:
    ran = bool(data.results or box)
    if json_log is not None and not scan.results:
        return "json"
    if not ran and (scan.gpu_list or ("gpu-list" in scan.markers and not scan.actions)):
        return "gpu-list"
    if not ran and scan.error_lines:
        return "error"
    if (box is not None and len(data.modules) != 1) or len(data.modules) >= 2:
        return "summary"
    if len(data.modules) == 1:
        return data.modules[0] if data.modules[0] in MODULE_KINDS else "log"
    if ran:
        return "log"
    raise ParseError(
        "no RVS output found: expected [RESULT] lines, RVS-ERROR lines, the RVS summary box, "
        "an 'rvs -g' GPU list or an RVS JSON log"
    )


def _summary(scan: LogScan, box: SummaryBox | None, data: RvsResult, kind: str) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    gpu_count = _gpu_count(box, data)
    if gpu_count is not None or kind == "gpu-list":
        summary["gpu_count"] = gpu_count or 0
    if box is not None and box.actions:
        verdicts = [a.passed for a in box.actions]
    else:
        verdicts = [r.passed for r in data.results if r.passed is not None]
    summary["pass_count"] = verdicts.count(True)
    summary["fail_count"] = verdicts.count(False)
    if scan.unread and not summary["fail_count"]:
        # A verdict printed in a word not understood may be a failure: no failure count, and why.
        summary["fail_count"] = None
        summary["fail_count_unread"] = "; ".join(scan.unread[:2])
    summary["actions"] = len(data.actions)
    summary["modules"] = data.modules
    summary["results"] = len(data.results)
    _add_range(summary, "gflops", [r.value for r in data.results if r.metric == "gflops"])
    _add_range(summary, "bandwidth_gbps", [r.value for r in data.results if r.metric == "bandwidth"])
    powers = [r.value for r in data.results if r.metric == "power_w_sample" and r.value is not None]
    if powers:
        summary["max_power_w"] = max(powers)
    violations = [r.value for r in data.results if r.metric.endswith("_violations") and r.value is not None]
    if violations:
        summary["gm_violations"] = int(sum(violations))
    return summary


def _gpu_count(box: SummaryBox | None, data: RvsResult) -> int | None:
    if box is not None and box.overview.gpu_count is not None:
        return box.overview.gpu_count
    if data.gpus:
        return len(data.gpus)
    ids = {r.gpu.gpu_id for r in data.results if r.gpu and r.gpu.gpu_id is not None}
    return len(ids) or None


def _add_range(summary: dict[str, Any], name: str, values: list[float | None]) -> None:
    known = [v for v in values if v is not None]
    if known:
        summary[f"min_{name}"] = min(known)
        summary[f"max_{name}"] = max(known)
