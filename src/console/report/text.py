"""Text that leaves the console: inert on a terminal, free of secrets.

Node names, reasons and finding messages carry text that nodes and files supplied: a tool's output can
hold escape sequences that retitle the terminal, write the clipboard (OSC 52) or clear the screen, and
bidirectional overrides that reorder what the operator reads; an address or a jump host can hold a
password in URL form. ``printable`` shows control characters as escapes instead of obeying them;
``redact`` replaces passwords and key material with ``***``.
"""

from __future__ import annotations

import logging
import re
import sys
import unicodedata
from typing import TextIO

_REDACTED = "***"
# scheme://user:password@host, and user:password@host as ssh_config and inventories spell hops
_URL_PASSWORD = re.compile(r"(?P<user>[\w.~%+-]+):(?P<secret>[^\s@/:]+)@(?=[\w.\[\]-])")
_KEY_VALUE_SECRET = re.compile(
    r"(?i)\b(?P<key>password|passwd|passphrase|secret|token)(?P<sep>\s*[=:]\s*)(?P<secret>\S+)"
)
_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?P<kind>[A-Z0-9 ]*PRIVATE KEY)-----.*?(?:-----END (?P=kind)-----|\Z)", re.DOTALL
)


def redact(text: str) -> str:
    """``text`` with passwords in URLs and ``key=value`` form and private key blocks replaced."""
    text = _PRIVATE_KEY.sub(f"[{_REDACTED} private key]", text)
    text = _URL_PASSWORD.sub(lambda m: f"{m['user']}:{_REDACTED}@", text)
    return _KEY_VALUE_SECRET.sub(lambda m: f"{m['key']}{m['sep']}{_REDACTED}", text)


# Controls, format characters (bidi overrides, zero-width), private use, surrogates and unassigned
# code points (U+FFFE/U+FFFF among them, which XML cannot carry either).
_HIDDEN = frozenset({"Cc", "Cf", "Co", "Cs", "Cn"})


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with control and format characters (ESC, C1, BEL, bidi overrides, ...) shown as ``\\xNN``.

    Tabs stay; newlines stay when ``keep_newlines``, else they are shown too (one line in, one line out).
    """
    if text.isprintable():
        return text
    kept = "\t\n" if keep_newlines else "\t"
    return "".join(_escape(c) if c not in kept and unicodedata.category(c) in _HIDDEN else c for c in text)


class _SafeFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return printable(redact(super().format(record)), keep_newlines=True)


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time, as logging's own last-resort handler does."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass


def log_to_stderr(level: int = logging.WARNING) -> None:
    """Print the console's log records of ``level`` and above on stderr, redacted and inert (once per process)."""
    logger = logging.getLogger("console")
    if any(isinstance(handler, _StderrHandler) for handler in logger.handlers):
        return
    handler = _StderrHandler()
    handler.setLevel(level)
    handler.setFormatter(_SafeFormatter("%(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
