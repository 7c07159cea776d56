"""amd-smi ``--json`` outputs, located in a log and reduced to per-GPU dictionaries.

Schema generations (see the formats reference): ROCm 6.x prints a top-level list of ``{"gpu": N}``
objects; 7.x wraps them as ``{"gpu_data": [...]}`` next to ``cpu_data``/``nic_data``; ``xgmi`` and
``partition`` print objects keyed by table (``xgmi_metric``, ``link_status``, ``current_partition``);
watch mode prints entries carrying ``timestamp`` (old releases: one document per iteration).
Noise may precede the document (Python warnings) and the version line may follow it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from console.model.amdsmi import AmdSmiForm
from console.probes.amdsmi.text_output import normalise_key
from console.probes.base import ParseError

_MAX_START_CANDIDATES = 64
_OBJECT_TABLES = (
    "xgmi_metric",
    "link_status",
    "link_port_status",
    "current_partition",
    "memory_partition",
    "partition_profiles",
    "partition_resources",
)
_VERSION_KEYS = {"amdsmi_library_version", "rocm_version", "amdgpu_version"}


@dataclass
class JsonPayload:
    """What the JSON documents hold, with keys normalised to lower_snake_case."""

    form: AmdSmiForm
    gpu_entries: list[dict[str, Any]] = field(default_factory=list)
    tables: dict[str, list[Any]] = field(default_factory=dict)
    version: dict[str, Any] | None = None


def find_json_documents(text: str) -> list[Any]:
    """Every JSON document found from the first line that opens one; [] when there is none.

    A document that runs to the end of the text without closing was cut off (a killed tool, a full
    pipe): ParseError, rather than the first complete object found inside it (one GPU of a list of
    eight, which read as "1 GPU enumerated"). Where it was cut does not matter: inside a string the
    decoder's error points at the string's start, far from the end of the text, so the brackets are
    counted instead. A document that closes but does not decode is skipped whole: no object nested in
    it is taken for the output.
    """
    decoder = json.JSONDecoder()
    offset = 0
    candidates = 0
    skip_to = 0
    for line in text.splitlines(keepends=True):
        stripped = line.lstrip()
        start = offset + (len(line) - len(stripped))
        if stripped[:1] in ("{", "[") and start >= skip_to and candidates < _MAX_START_CANDIDATES:
            candidates += 1
            documents, failed = _decode_all(decoder, text, start)
            if documents:
                return documents
            if failed:
                closes_at = _closing(text, start)
                if closes_at is None:
                    raise ParseError(
                        f"amd-smi JSON is truncated or malformed: the document opened at character {start} never closes"
                    )
                skip_to = closes_at
        offset += len(line)
    return []


def _closing(text: str, start: int) -> int | None:
    """Where the bracket opened at ``start`` closes (the index after it), or None when the text ends first.

    Strings are skipped with their escapes, so a bracket inside a value does not count.
    """
    depth = 0
    in_string = escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth == 0:
                return index + 1
    return None


def _decode_all(decoder: json.JSONDecoder, text: str, start: int) -> tuple[list[Any], bool]:
    """The documents from ``start`` on, and whether the first one failed to decode."""
    documents: list[Any] = []
    position = start
    while position < len(text):
        try:
            document, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            return documents, not documents
        except (ValueError, RecursionError):
            break
        if not isinstance(document, dict | list):
            break
        documents.append(document)
        position = end
        while position < len(text) and text[position].isspace():
            position += 1
    return documents, False


def normalise(value: Any) -> Any:
    """Lower-case every key (``"Level 0"`` -> ``level_0``) throughout a decoded document."""
    # Exact type tests and no call per leaf: a static output of 8 GPUs has ~1,000 keys and leaves.
    kind = type(value)
    if kind is dict:
        if (
            len(value) == 2
            and "value" in value
            and type(value.get("unit")) is str
            and type(value["value"]) not in _NESTED
        ):
            return value  # a ``{"value", "unit"}`` leaf, most of the objects: its keys are normal already
        return {
            normalise_key(k if type(k) is str else str(k)): normalise(v) if type(v) in _NESTED else v
            for k, v in value.items()
        }
    if kind is list:
        return [normalise(v) if type(v) in _NESTED else v for v in value]
    return value


_NESTED = (dict, list)


def is_amdsmi_json(documents: list[Any]) -> bool:
    """True when a decoded document has an amd-smi shape (not rocm-smi's ``{"card0": ...}``)."""
    for document in documents:
        if isinstance(document, dict):
            keys = {normalise_key(str(k)) for k in document}
            if "gpu_data" in keys or keys & set(_OBJECT_TABLES) or "gpu" in keys or keys & _VERSION_KEYS:
                return True
        elif isinstance(document, list) and any(_is_entry(i) or _is_version(i) for i in _flatten(document)):
            return True
    return False


def read_payload(documents: list[Any]) -> JsonPayload:
    """Sort decoded documents into per-GPU entries, object tables and the version record."""
    documents = [normalise(d) for d in documents]
    form = AmdSmiForm.JSON_LIST
    payload = JsonPayload(form=form)
    for document in documents:
        items: list[Any]
        if isinstance(document, dict):
            if "gpu_data" in document or any(key in document for key in _OBJECT_TABLES):
                form = AmdSmiForm.JSON_GPU_DATA
                items = _flatten(document.get("gpu_data") or [])
                for key in _OBJECT_TABLES:
                    if isinstance(document.get(key), list):
                        payload.tables.setdefault(key, []).extend(_flatten(document[key]))
            else:
                items = [document]
        else:
            items = _flatten(document)
        for item in items:
            if _is_version(item):
                payload.version = item
            elif _is_entry(item):
                payload.gpu_entries.append(item)
    watch = len(documents) > 1 or any("timestamp" in entry for entry in payload.gpu_entries)
    payload.form = AmdSmiForm.JSON_WATCH if watch and payload.gpu_entries else form
    return payload


def _flatten(value: Any) -> list[Any]:
    # xgmi_metric is a list holding the list of per-GPU entries; flatten nested lists of entries.
    if not isinstance(value, list):
        return [value]
    flat: list[Any] = []
    for item in value:
        flat.extend(_flatten(item) if isinstance(item, list) else [item])
    return flat


def _is_entry(item: Any) -> bool:
    return isinstance(item, dict) and "gpu" in item


def _is_version(item: Any) -> bool:
    return isinstance(item, dict) and bool(set(item) & _VERSION_KEYS) and "gpu" not in item
