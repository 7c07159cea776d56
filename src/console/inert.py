"""Text that leaves the console: inert on a terminal, free of secrets. The one place that says which
characters a terminal could act on, for every layer that prints: the CLI (``console.commands.terminal``
passes everything it prints through ``printable``), logs (``log_to_stderr``, the engine's ``engine.log``),
errors, and the TUI (``console.ui.text.safe`` replaces the same characters, ``is_live``).

Node names, reasons and finding messages carry text that nodes, schedulers, files and other operators
supplied: a tool's output or a Slurm drain reason can hold escape sequences that retitle the terminal,
write the clipboard (OSC 52) or clear the screen, and bidirectional overrides that reorder what the
operator reads; an address or a jump host can hold a password in URL form. ``printable`` shows control
characters as escapes instead of obeying them; ``redact`` replaces passwords and key material with ``***``.
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


# Controls (C0 with ESC, C1 with CSI/OSC/DCS/ST), format characters (bidi overrides and isolates,
# zero-width), private use, surrogates (a byte that was not UTF-8, which would reach the terminal raw)
# and unassigned code points (U+FFFE/U+FFFF among them, which XML cannot carry either).
_HIDDEN = frozenset({"Cc", "Cf", "Co", "Cs", "Cn"})


def is_live(char: str) -> bool:
    """Whether a terminal could act on ``char``, or it could hide or reorder text: never print it as is."""
    return unicodedata.category(char) in _HIDDEN


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
    return "".join(_escape(c) if c not in kept and is_live(c) else c for c in text)


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


def log_to_stderr(level: int = logging.WARNING, *, timestamps: bool = False) -> None:
    """Print the console's log records of ``level`` and above on stderr, redacted and inert (once per process).

    Each record is written and flushed as one line, so a log file on stderr (the engine's ``engine.log``)
    holds every line up to a ``kill -9``; ``timestamps`` puts the time first, as a log file wants.
    """
    logger = logging.getLogger("console")
    if any(isinstance(handler, _StderrHandler) for handler in logger.handlers):
        return
    handler = _StderrHandler()
    handler.setLevel(level)
    shape = "%(levelname)s %(name)s: %(message)s"
    handler.setFormatter(_SafeFormatter(f"%(asctime)s {shape}" if timestamps else shape))
    logger.addHandler(handler)
    logger.setLevel(min(logger.getEffectiveLevel(), level))
