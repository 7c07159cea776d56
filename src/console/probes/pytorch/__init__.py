"""Parser of the PyTorch framework probe: the one JSON document its node script prints.

The document is found among whatever else reached the console (the bundle merges stderr: torch's
own warnings, the import error). Every key is read tolerantly: a missing key or ``null`` is a stage
or figure not reported, a key this parser has no field for and a value of the wrong type are
reported in ``warnings`` (and ``unknown_keys``), never dropped. Without the document, a Python
traceback saying torch cannot be imported is read as that; anything else is a ``ParseError``.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from console.model.framework import (
    AllReduceStage,
    GemmStage,
    StageStatus,
    TorchBuild,
    TorchDevice,
    TorchProbeResult,
)
from console.probes.base import Detection, ParsedOutput, ParseError, clean_lines
from console.probes.ids import Tool
from console.probes.pytorch.command import PROBE_NAME

__all__ = ["KIND", "detect", "parse"]

KIND = "torch"
_MARK = f'"probe": "{PROBE_NAME}"'
# What Python prints when ``import torch`` fails before the script could say so itself.
_IMPORT_FAILED = re.compile(r"^(?:ModuleNotFoundError|ImportError|OSError): .*(?:torch|libtorch|libamdhip|\.so).*$")
# What a container runtime prints when it could not start the image (absent, pull refused, bad option):
# docker's daemon error, podman's ``Error:``, apptainer's ``FATAL:``. The script never ran: no verdict.
_RUNTIME_FAILED = re.compile(r"^(?:docker: Error response from daemon: |Error: |FATAL: +)\S.*$")


def detect(text: str) -> Detection | None:
    """The probe's document, or a traceback of torch failing to import."""
    if _MARK in text:
        return Detection(Tool.TORCH, KIND, 0.99)
    if "No module named 'torch'" in text:
        return Detection(Tool.TORCH, KIND, 0.5)
    return None


def parse(text: str, kind: str | None = None) -> ParsedOutput:
    """Read the probe's output; raises ``ParseError`` when it holds neither the document nor an import error."""
    lines = [line for line in clean_lines(text) if line.strip()]
    documents = [i for i, line in enumerate(lines) if line.lstrip().startswith("{") and _MARK in line]
    if not documents:
        return _without_document(lines)
    at = documents[-1]
    try:
        raw = json.loads(lines[at])
    except ValueError as exc:
        raise ParseError(f"torch probe JSON is truncated or malformed: {exc}") from None
    if not isinstance(raw, dict):
        raise ParseError("torch probe JSON is not an object")
    notes = _Notes()
    result = _result(raw, notes)
    result.other_lines = [line for i, line in enumerate(lines) if i != at]
    warnings = [*notes.said, *(f"printed beside the document: {line[:200]}" for line in result.other_lines[:5])]
    errors = result.stage_errors()
    if result.torch.status is not StageStatus.OK:
        errors.insert(0, f"import torch: {result.torch.error or result.torch.status.value}")
    return ParsedOutput(
        tool=Tool.TORCH,
        kind=KIND,
        ok=not errors,
        errors=errors,
        warnings=warnings,
        summary=_summary(result),
        tool_version=result.torch.version,
        data=result,
    )


def _without_document(lines: list[str]) -> ParsedOutput:
    """A traceback of ``import torch`` (the script could not print its document), else unreadable."""
    failed = next((line.strip() for line in reversed(lines) if _IMPORT_FAILED.match(line.strip())), None)
    refused = next((line.strip() for line in lines if _RUNTIME_FAILED.match(line.strip())), None)
    if failed is None and refused is not None:
        raise ParseError(f"the container runtime did not run the probe: {refused[:300]}")
    if failed is None:
        first = lines[0][:120] if lines else "no output"
        raise ParseError(f"no torch probe document in the output: {first!r}")
    result = TorchProbeResult(torch=TorchBuild(status=StageStatus.ERROR, error=failed), other_lines=lines)
    return ParsedOutput(
        tool=Tool.TORCH,
        kind=KIND,
        ok=False,
        errors=[f"import torch: {failed}"],
        summary=_summary(result),
        data=result,
    )


class _Notes:
    """What the parser did not understand, said once per key."""

    def __init__(self) -> None:
        self.said: list[str] = []
        self.unknown: list[str] = []

    def unknown_key(self, where: str) -> None:
        self.unknown.append(where)
        self.said.append(f"unknown key {where}")

    def bad(self, where: str, value: Any, wanted: str) -> None:
        self.said.append(f"{where}: {str(value)[:60]!r} is not {wanted}")


def _take(raw: dict[str, Any], key: str, kind: str, where: str, notes: _Notes) -> Any:
    """``raw[key]`` when it is of ``kind`` (text, count, number, flag); None when absent, null or (said in
    ``notes``) not of that kind. A bool is no number, and a NaN or infinite figure is no figure."""
    value: Any = raw.get(key)
    if value is None:
        return None
    wanted = _KINDS[kind]
    if isinstance(value, bool) is not (kind == "flag") or not isinstance(value, wanted):
        notes.bad(f"{where}.{key}", value, _KIND_NAMES[kind])
        return None
    if kind == "number" and isinstance(value, int | float):
        number = float(value)
        if not math.isfinite(number):
            notes.bad(f"{where}.{key}", value, "a finite number")
            return None
        return number
    return value


def _status(raw: dict[str, Any], where: str, notes: _Notes) -> StageStatus:
    value = raw.get("status")
    if value is None:
        return StageStatus.MISSING
    try:
        return StageStatus(value)
    except ValueError:
        notes.bad(f"{where}.status", value, "ok, error, unsupported or skipped")
        return StageStatus.MISSING


def _object(raw: Any, where: str, notes: _Notes) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        notes.bad(where, raw, "an object")
        return {}
    return raw


_STR, _INT, _FLOAT, _BOOL = "text", "count", "number", "flag"
_KINDS: dict[str, type | tuple[type, ...]] = {_STR: str, _INT: int, _FLOAT: (int, float), _BOOL: bool}
_KIND_NAMES = {_STR: "text", _INT: "a whole number", _FLOAT: "a number", _BOOL: "true or false"}
_BUILD_FIELDS = {
    "error": _STR,
    "version": _STR,
    "hip": _STR,
    "cuda": _STR,
    "cuda_available": _BOOL,
    "device_count": _INT,
}
_GEMM_FIELDS = {"error": _STR, "dtype": _STR, "tflops": _FLOAT, "seconds": _FLOAT, "nonfinite": _INT}
_DEVICE_FIELDS = {"error": _STR, "name": _STR, "arch": _STR, "memory_bytes": _INT, "pci_bus_id": _STR}
_ALLREDUCE_FIELDS = {
    "error": _STR,
    "backend": _STR,
    "world_size": _INT,
    "mib": _INT,
    "correct": _BOOL,
    "max_abs_error": _FLOAT,
    "nonfinite": _INT,
    "seconds": _FLOAT,
    "rank_seconds": _FLOAT,
}


def _fields(raw: dict[str, Any], fields: dict[str, str], where: str, notes: _Notes, known: set[str]) -> dict[str, Any]:
    """The typed values of ``fields`` in ``raw``; keys neither in ``fields`` nor ``known`` are reported."""
    for key in raw:
        if key not in fields and key not in known and key != "status":
            notes.unknown_key(f"{where}.{key}")
    values = {key: _take(raw, key, wanted, where, notes) for key, wanted in fields.items()}
    return {key: value for key, value in values.items() if value is not None}


def _gemm(raw: Any, where: str, notes: _Notes) -> GemmStage:
    stage = _object(raw, where, notes)
    return GemmStage(status=_status(stage, where, notes), **_fields(stage, _GEMM_FIELDS, where, notes, set()))


def _device(raw: Any, position: int, notes: _Notes) -> TorchDevice:
    where = f"devices[{position}]"
    entry = _object(raw, where, notes)
    index = _take(entry, "index", _INT, where, notes)
    if index is None:
        notes.said.append(f"{where}: no device index")
        index = position
    return TorchDevice(
        index=index,
        status=_status(entry, where, notes),
        bf16=_gemm(entry.get("bf16"), f"{where}.bf16", notes),
        fp8=_gemm(entry.get("fp8"), f"{where}.fp8", notes),
        **_fields(entry, _DEVICE_FIELDS, where, notes, {"index", "bf16", "fp8"}),
    )


def _result(raw: dict[str, Any], notes: _Notes) -> TorchProbeResult:
    top = {"probe", "schema", "python", "params", "torch", "devices", "all_reduce", "seconds", "container_seen"}
    for key in raw:
        if key not in top:
            notes.unknown_key(key)
    build = _object(raw.get("torch"), "torch", notes)
    reduce = _object(raw.get("all_reduce"), "all_reduce", notes)
    devices_raw = raw.get("devices")
    if devices_raw is not None and not isinstance(devices_raw, list):
        notes.bad("devices", devices_raw, "a list")
        devices_raw = None
    params = {
        str(k): v for k, v in _object(raw.get("params"), "params", notes).items() if isinstance(v, int | float | str)
    }
    devices = [_device(entry, i, notes) for i, entry in enumerate(devices_raw or [])]
    result = TorchProbeResult(
        schema_version=_take(raw, "schema", _INT, "document", notes),
        python=_take(raw, "python", _STR, "document", notes),
        params=params,
        torch=TorchBuild(status=_status(build, "torch", notes), **_fields(build, _BUILD_FIELDS, "torch", notes, set())),
        devices=devices,
        all_reduce=AllReduceStage(
            status=_status(reduce, "all_reduce", notes),
            **_fields(reduce, _ALLREDUCE_FIELDS, "all_reduce", notes, set()),
        ),
        seconds=_take(raw, "seconds", _FLOAT, "document", notes),
        container_seen=_take(raw, "container_seen", _STR, "document", notes),
    )
    result.unknown_keys = notes.unknown
    if result.container_image is not None and result.container_seen is None:
        # Not a failure of the framework (the runtime ran the script), but not what was asked either: said.
        notes.said.append(
            f"started in {result.container_runtime} image {result.container_image}, but the script found no container"
        )
    return result


def _summary(result: TorchProbeResult) -> dict[str, Any]:
    bf16 = [d.bf16.tflops for d in result.devices if d.bf16.tflops is not None]
    fp8 = [d.fp8.tflops for d in result.devices if d.fp8.tflops is not None]
    return {
        "torch": result.torch.version,
        "hip": result.torch.hip,
        "device_count": result.torch.device_count,
        "bf16_min_tflops": min(bf16) if bf16 else None,
        "fp8_min_tflops": min(fp8) if fp8 else None,
        "all_reduce_correct": result.all_reduce.correct,
        "container_image": result.container_image,
        "stage_errors": len(result.stage_errors()),
    }
