"""The RVS JSON log (``rvs -j``): ``{"version": "1.0", "<module>": {"<action>": [{...}, ...]}}``.

Every value is a string (``"pass": "true"``, ``"throughput": "91.832 GBps"``). RVS appends to the
file while it runs, so an interrupted run leaves text that is not valid JSON; older builds wrote a
list of records, several top-level objects, or stray commas (``[\\n,\\n{``). The reader decodes
what it can value by value, and closes a cut-off tail after its last complete record.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from console.model.rvs import RvsGpuRef, RvsGpuResult, RvsJsonRecord
from console.probes.rvs.units import bool_word, number, rate_to_gbps, small_int
from console.probes.values import parse_quantity

# RVS module names that key the JSON log; used to tell an RVS log from other JSON.
JSON_MODULES = frozenset(
    {"gst", "iet", "pebb", "pbqt", "peqt", "gm", "mem", "babel", "gpup", "tst", "pesm", "rcqt", "smqt", "pulse"}
)
_JSON_START = re.compile(r"^\s*(?:\{|\[\s*(?:[{\],]|$))")
_LEADING_COMMA = re.compile(r"([\[{])\s*,")
_TRAILING_COMMA = re.compile(r",(\s*[\]}])")
_CLOSERS = {"{": "}", "[": "]"}
# module -> (metric, key of the measured value, key of the target, unit of the value)
_MAIN_VALUE = {
    "gst": ("gflops", "gflops", "target", "GFLOPS"),
    "iet": ("average_power_w", "average power", "target_power", "W"),
    # tst logs its maximum junction temperature under the "average" key.
    "tst": ("max_junction_temp_c", "average junction temperature", "target_temp", "C"),
    "pebb": ("bandwidth", "throughput", None, "GB/s"),
    "pbqt": ("bandwidth", "throughput", None, "GB/s"),
}


# A record of a log's tail (``tail rvs_*.json``) has lost the module and action keys enclosing it: the keys
# only one module logs tell the module (pebb and pbqt both log a throughput; only pebb a source CPU).
_MODULE_OF_KEYS = (
    ("pebb", ("srccpu",)),
    ("pbqt", ("srcgpu", "dstgpu")),
    ("gst", ("gflops",)),
    ("iet", ("average power",)),
    ("tst", ("average junction temperature",)),
    ("babel", ("results",)),
)


@dataclass
class JsonLog:
    """What the JSON part of an output holds."""

    version: str | None = None
    records: list[RvsJsonRecord] = field(default_factory=list)
    complete: bool = True
    fragment: bool = False  # records of a log's tail, without the module and action around them


def json_start(lines: list[str]) -> int | None:
    """Index of the line where a JSON document starts (``[RESULT]`` lines are not one), or None."""
    for index, line in enumerate(lines):
        if _JSON_START.match(line):
            return index
    return None


def read_json_log(text: str) -> JsonLog | None:
    """The RVS records in ``text``; None when it holds no RVS JSON at all."""
    cleaned = _TRAILING_COMMA.sub(r"\1", _LEADING_COMMA.sub(r"\1", text))
    values, complete = _decode_all(cleaned)
    log = JsonLog(complete=complete)
    for value in values:
        _collect(value, log)
    return log if log.records or log.version is not None else None


def _decode_all(text: str) -> tuple[list[Any], bool]:
    decoder = json.JSONDecoder()
    values: list[Any] = []
    pos = 0
    while True:
        while pos < len(text) and (text[pos].isspace() or text[pos] == ","):
            pos += 1
        if pos >= len(text):
            return values, True
        if text[pos] not in "{[":
            # Noise after the document (a shell prompt, a log footer) is not a cut-off log.
            return values, True
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            repaired = _close_cut_tail(text[pos : exc.pos])
            if repaired is not None:
                values.append(repaired)
            return values, False
        except RecursionError:
            return values, False
        values.append(value)


def _close_cut_tail(fragment: str) -> Any:
    """Decode ``fragment`` cut after its last complete container or opening bracket, closers added."""
    stack: list[str] = []
    in_string = escaped = False
    cut, cut_stack = 0, ""
    for index, char in enumerate(fragment):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = True
            continue
        if char in _CLOSERS:
            stack.append(char)
        elif char in "}]":
            if not stack or _CLOSERS[stack[-1]] != char:
                break
            stack.pop()
        else:
            continue
        cut, cut_stack = index + 1, "".join(stack)
    if cut == 0:
        return None
    closing = "".join(_CLOSERS[opener] for opener in reversed(cut_stack))
    try:
        return json.loads(fragment[:cut] + closing)
    except (ValueError, RecursionError):
        return None


def _collect(value: Any, log: JsonLog) -> None:
    if isinstance(value, list):
        for item in value:
            _collect(item, log)
        return
    if not isinstance(value, dict):
        return
    if isinstance(value.get("module"), str) and not any(isinstance(v, dict) for v in value.values()):
        # Older builds: a flat list of records that name their own module and action.
        fields = {k: v for k, v in value.items() if k not in ("module", "action")}
        action = value.get("action")
        log.records.append(
            RvsJsonRecord(
                module=value["module"].strip().lower(),
                action=action if isinstance(action, str) else None,
                fields=fields,
            )
        )
        return
    module = _module_of(value)
    if module is not None:
        log.records.append(RvsJsonRecord(module=module, fields=value))
        log.fragment = True
        return
    for key, sub in value.items():
        if key == "version" and isinstance(sub, str):
            log.version = sub
        elif isinstance(sub, dict) and key.lower() in JSON_MODULES:
            _collect_module(key.lower(), sub, log)


def _module_of(record: dict[str, Any]) -> str | None:
    """The module of a record found outside any module and action (a log's tail), from its own keys."""
    if any(isinstance(value, dict) for value in record.values()):
        return None
    return next((module for module, keys in _MODULE_OF_KEYS if all(key in record for key in keys)), None)


def _collect_module(module: str, actions: dict[str, Any], log: JsonLog) -> None:
    for action, items in actions.items():
        entries = items if isinstance(items, list) else [items]
        for entry in entries:
            if isinstance(entry, dict) and entry:
                log.records.append(RvsJsonRecord(module=module, action=action, fields=entry))


def failed_records(records: list[RvsJsonRecord]) -> list[str]:
    """The records whose ``pass`` (or a babel subtest's ``pass``) is false, as ``module [action] {record}``."""
    failed = []
    for record in records:
        nested = record.fields.get("results")
        subtests = [s for s in nested if isinstance(s, dict)] if isinstance(nested, list) else []
        verdicts = [record.fields.get("pass"), *(s.get("pass") for s in subtests)]
        if any(isinstance(v, str) and bool_word(v) is False for v in verdicts):
            failed.append(f"{record.module} [{record.action}] {json.dumps(record.fields, sort_keys=True)}")
    return failed


def _text(fields: dict[str, Any], key: str) -> str | None:
    value = fields.get(key)
    return value if isinstance(value, str) else None


def _ref(gpu_id: str | None) -> RvsGpuRef | None:
    return None if gpu_id is None else RvsGpuRef(gpu_id=small_int(gpu_id))


def _measure(raw: str | None, unit: str) -> float | None:
    quantity = parse_quantity(raw)
    if unit == "GB/s":
        return rate_to_gbps(quantity.value, quantity.unit or "GB/s")
    return quantity.value


def records_to_results(records: list[RvsJsonRecord]) -> list[RvsGpuResult]:
    """The measurements and verdicts of the JSON records, as result lines (records without either are skipped)."""
    results: list[RvsGpuResult] = []
    for record in records:
        fields = record.fields
        if "srccpu" in fields:  # pebb: a CPU node to a GPU
            gpu_text, peer_text = _text(fields, "dstgpu"), None
        else:
            gpu_text, peer_text = _text(fields, "srcgpu") or _text(fields, "gpu_id"), _text(fields, "dstgpu")
        where: dict[str, Any] = {
            "module": record.module,
            "action": record.action,
            "gpu": _ref(gpu_text),
            "peer": _ref(peer_text),
            "cpu_node": small_int(_text(fields, "srccpu")),
        }
        nested = fields.get("results")
        if record.module == "babel" and isinstance(nested, list):
            results.extend(_babel_results(nested, where))
            continue
        passed = bool_word(_text(fields, "pass"))
        metric, value_key, target_key, unit = _MAIN_VALUE.get(record.module, ("verdict", None, None, None))
        value = _measure(_text(fields, value_key), unit or "") if value_key else None
        if passed is None and value is None:
            continue
        results.append(
            RvsGpuResult(
                **where,
                metric=metric if value is not None else "verdict",
                label=_text(fields, "Test"),
                value=value,
                unit=unit if value is not None else None,
                target=number(_text(fields, target_key)) if target_key else None,
                passed=passed,
            )
        )
    return results


def _babel_results(subtests: list[Any], where: dict[str, Any]) -> list[RvsGpuResult]:
    results = []
    for subtest in subtests:
        if not isinstance(subtest, dict):
            continue
        value = None
        for key, unit in (("mbytes_per_sec", "MB/s"), ("mibytes_per_sec", "MiB/s")):
            if isinstance(subtest.get(key), str):
                value = rate_to_gbps(number(subtest[key]), unit)
        label = subtest.get("subtest")
        results.append(
            RvsGpuResult(
                **where,
                metric="bandwidth",
                label=label if isinstance(label, str) else None,
                value=value,
                unit="GB/s",
                passed=bool_word(subtest.get("pass") if isinstance(subtest.get("pass"), str) else None),
            )
        )
    return results
