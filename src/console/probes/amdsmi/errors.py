"""Lines around an amd-smi payload: the tool's failure messages, harmless noise and the version line.

amd-smi reports failures as Python logging lines on stderr (``ERROR:root:...``), as raw Python
tracebacks, or as ``Error code: -N`` messages from ``set``; logs also carry SyntaxWarning noise from
newer Pythons, ssh chatter and launcher lines. The ``amd-smi version`` line is printed on its own and
after init failures, so it is read wherever it appears.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from console.model.gpu import StackVersions
from console.probes.values import na_reason

_VERSION_LINE = re.compile(r"^\s*AMDSMI Tool\s*:", re.IGNORECASE)
_VERSION_KEYS: dict[str, str] = {
    "amdsmi tool": "amdsmi_tool",
    "amdsmi library version": "amdsmi_lib",
    "rocm version": "rocm",
    "amdgpu version": "amdgpu_driver",
    "kernel version": "amdgpu_driver",
    "hsmp version": "hsmp_driver",
    "amd_hsmp version": "hsmp_driver",
}

# Whole-line failure messages. Each pattern is specific enough never to match a payload line.
_ERROR_PATTERNS = [
    re.compile(r"^\s*(?:ERROR|CRITICAL|FATAL)\s*:"),
    re.compile(r"^\s*Traceback \(most recent call last\):"),
    re.compile(r"^\s*(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)\b(?::|\s*$)"),
    re.compile(r"\bError code:\s*-?\d+"),
    re.compile(r"\bUnable to detect any GPU devices\b", re.IGNORECASE),
    re.compile(r"\bdriver not (?:initialized|loaded)\b", re.IGNORECASE),
    re.compile(r"\bamdgpu not found in modules\b", re.IGNORECASE),
    re.compile(r"\bPermission denied\b|\bCommand requires elevation\b|\brequires (?:root|sudo)\b", re.IGNORECASE),
    re.compile(r"^\s*amd-smi: error:"),
    re.compile(r"^sudo: "),  # sudo -n refused (a password is required, not in sudoers)
    re.compile(r"\[AMDSMI_STATUS_(?!SUCCESS)[A-Z_]+\]"),
    re.compile(r"^\s*Unable to (?:set|get|reset|find|open|initialize)\b", re.IGNORECASE),
]
_WARNING_PATTERNS = [
    re.compile(r"^\s*WARNING\s*:"),
    re.compile(r"\b(?:Syntax|Deprecation|Runtime|User|Future)Warning\b"),
    re.compile(r"^\s*Warning:", re.IGNORECASE),
    re.compile(r"Failed to add the host to the list of known hosts"),
]
# A Python warning echoes the offending source line, indented, right after it.
_WARNING_ECHO = re.compile(r"^\s{2,}\S")


@dataclass
class Triage:
    """Failure messages, warnings and version facts found in an output, all verbatim."""

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    versions: StackVersions | None = None
    tool_version: str | None = None
    fragment: bool = False  # the payload is part of an output (grep-filtered text), set by its reader


def is_message_line(line: str) -> bool:
    """A line ``triage`` reads (version, failure message, warning) rather than the payload."""
    return is_version_line(line) or is_error_line(line) or is_warning_line(line)


def is_version_line(line: str) -> bool:
    """True for the ``AMDSMI Tool: ... | ...`` line of ``amd-smi version``."""
    return bool(_VERSION_LINE.match(line))


def parse_version_line(line: str) -> StackVersions:
    """Read ``AMDSMI Tool: X | AMDSMI Library version: Y | ROCm version: Z | amdgpu version: W``.

    N/A parts become None with the reason recorded; unknown parts are ignored.
    """
    versions = StackVersions()
    for part in line.split("|"):
        key, sep, value = part.partition(":")
        field_name = _VERSION_KEYS.get(" ".join(key.split()).lower())
        if not sep or field_name is None:
            continue
        value = value.strip()
        reason = na_reason(value)
        if reason is None:
            setattr(versions, field_name, value)
        else:
            versions.mark_unavailable(field_name, reason)
    return versions


def is_error_line(line: str) -> bool:
    """True when the line is a failure message of amd-smi or of the Python running it."""
    return any(p.search(line) for p in _ERROR_PATTERNS)


def is_warning_line(line: str) -> bool:
    """True for warnings and log noise that do not make the run a failure."""
    return any(p.search(line) for p in _WARNING_PATTERNS)


def triage(lines: list[str]) -> Triage:
    """Find the version line, failure messages and warnings among ``lines``."""
    result = Triage()
    previous_was_warning = False
    for line in lines:
        stripped = line.strip()
        if not stripped:
            previous_was_warning = False
            continue
        if is_version_line(line):
            result.versions = parse_version_line(line)
            result.tool_version = result.versions.amdsmi_tool
        elif is_error_line(line):
            result.errors.append(stripped)
        elif is_warning_line(line):
            result.warnings.append(stripped)
            previous_was_warning = True
            continue
        elif previous_was_warning and _WARNING_ECHO.match(line) and ":" not in stripped.split()[0]:
            result.warnings.append(stripped)
        previous_was_warning = False
    return result
