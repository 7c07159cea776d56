"""Probe parsers: one module per vendor tool, pure functions from text to typed results.

``parse_output`` is the single entry point used by the sweep and by ``instinct-console parse``:
it detects the tool and kind from the text alone unless told, then calls that tool's parser.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from console.probes.base import Detection, ParsedOutput, ParseError, Tool, clean_lines, strip_log_prefixes, to_text

__all__ = ["Detection", "ParseError", "ParsedOutput", "Tool", "detect", "parse_output", "parser_for"]

_MODULES: dict[Tool, str] = {
    Tool.AMD_SMI: "console.probes.amdsmi",
    Tool.ROCM_SMI: "console.probes.rocmsmi",
    Tool.ROCMINFO: "console.probes.rocminfo",
    Tool.RVS: "console.probes.rvs",
    Tool.RCCL_TESTS: "console.probes.rccl",
    Tool.TRANSFERBENCH: "console.probes.transferbench",
}


def parser_for(tool: Tool) -> ModuleType:
    """The parser module of ``tool`` (exposes ``detect`` and ``parse``)."""
    return importlib.import_module(_MODULES[tool])


def detect(data: str | bytes) -> Detection | None:
    """Best guess of tool and kind for ``data``; None when no parser recognises it."""
    text = strip_log_prefixes(to_text(data))
    # srun/mpirun labels are the parsers' own business (rccl-tests keeps one rank's copy by them); the
    # detectors see the lines without them.
    unlabelled = "\n".join(clean_lines(text, strip_prefixes=True))
    best: Detection | None = None
    for tool in _MODULES:
        guess = parser_for(tool).detect(unlabelled)
        if guess is not None and (best is None or guess.confidence > best.confidence):
            best = guess
    return best


def parse_output(data: str | bytes, tool: Tool | None = None, kind: str | None = None) -> ParsedOutput:
    """Parse ``data``; detect the tool (and kind) when not given. Raises ``ParseError`` only."""
    text = strip_log_prefixes(to_text(data))
    if tool is None:
        found = detect(text)
        if found is None:
            raise ParseError("not recognised as output of any supported tool", raw=data)
        tool = found.tool
        kind = kind or found.kind
    try:
        result: ParsedOutput = parser_for(tool).parse(text, kind)
    except ParseError as exc:
        exc.raw = data
        exc.tool = exc.tool or str(tool)
        raise
    return result
