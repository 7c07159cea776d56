"""amd-smi JSON cut anywhere is never a complete reading.

The decoder's error for a document cut inside a string points at the string's start, not at the end of
the text: the "never closes" test missed it, and the scan went on to the next line opening an object,
one GPU of the list, which read as "OK, 1 GPU" and PASSed. Every cut of a multi-GPU document is tried.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.probes import parse_output
from console.probes.base import ParseError
from console.probes.ids import Tool

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "amd-smi"


def _three_gpus_7x() -> str:
    """The real 7.x ``static --json`` document with its one GPU repeated as three, as amd-smi indents it."""
    document = json.loads((REAL / "static-json-mi210-rocm7-gpu_data-trimmed.json").read_text())
    (gpu,) = document["gpu_data"]
    document["gpu_data"] = [{**gpu, "gpu": index} for index in range(3)]
    return json.dumps(document, indent=4) + "\n"


def _power_list_6x() -> str:
    """The real 6.1 ``metric -p --json`` list, as published (several GPUs' objects, one per line block)."""
    return (REAL / "metric-power-json-rocm610-list.json").read_text()


def _cuts(text: str) -> list[int]:
    """Where to cut: evenly through the document, and just inside strings (where the decoder's error
    position is furthest from the end), each kind of place a few hundred times at most."""
    end = len(text.rstrip())
    inside = [index + 1 for index, char in enumerate(text[:end]) if char == '"']
    return sorted({*range(1, end, max(1, end // 300)), *inside[:: max(1, len(inside) // 300)]})


@pytest.mark.parametrize(("make", "kind"), [(_three_gpus_7x, "static"), (_power_list_6x, "metric")])
def test_every_cut_of_a_json_document_is_refused_or_not_ok(make: object, kind: str) -> None:
    assert callable(make)
    whole = make()
    full = parse_output(whole, Tool.AMD_SMI, kind)
    assert full.ok
    gpus = full.summary["gpu_count"]
    for cut in _cuts(whole):
        try:
            parsed = parse_output(whole[:cut], Tool.AMD_SMI, kind)
        except ParseError:
            continue
        assert not parsed.ok or parsed.summary.get("gpu_count") == gpus, (cut, whole[cut - 20 : cut], parsed.summary)
