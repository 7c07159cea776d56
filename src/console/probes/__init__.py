"""Probe parsers: one module per vendor tool, pure functions from text to typed results.

``parse_output`` is the single entry point used by the sweep and by ``instinct-console parse``:
it detects the tool and kind from the text alone unless told, then calls that tool's parser.
"""

from __future__ import annotations

from typing import Protocol

from console.probes import amdsmi, pytorch, rccl, rocminfo, rocmsmi, rvs, transferbench
from console.probes.base import Detection, ParsedOutput, ParseError, clean_lines, strip_log_prefixes, to_text
from console.probes.ids import Tool

__all__ = ["Detection", "ParseError", "ParsedOutput", "Tool", "detect", "parse_output", "parser_for"]


class ToolParser(Protocol):
    """What each tool's parser package exposes."""

    def detect(self, text: str) -> Detection | None:
        """The tool and kind ``text`` is output of, with a confidence; None when it is not this tool's."""
        ...

    def parse(self, text: str, kind: str | None = None) -> ParsedOutput:
        """``text`` read into typed results; raises ``ParseError`` only."""
        ...


# One parser package per tool (console.probes.<tool>): adding a tool adds its line here.
_PARSERS: dict[Tool, ToolParser] = {
    Tool.AMD_SMI: amdsmi,
    Tool.ROCM_SMI: rocmsmi,
    Tool.ROCMINFO: rocminfo,
    Tool.RVS: rvs,
    Tool.RCCL_TESTS: rccl,
    Tool.TRANSFERBENCH: transferbench,
    Tool.TORCH: pytorch,
}


def parser_for(tool: Tool) -> ToolParser:
    """The parser package of ``tool``."""
    return _PARSERS[tool]


def detect(data: str | bytes) -> Detection | None:
    """Best guess of tool and kind for ``data``; None when no parser recognises it."""
    text = strip_log_prefixes(to_text(data))
    # srun/mpirun labels are the parsers' own business (rccl-tests keeps one rank's copy by them); the
    # detectors see the lines without them.
    unlabelled = "\n".join(clean_lines(text, strip_prefixes=True))
    best: Detection | None = None
    for tool in _PARSERS:
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
