"""amd-smi's human-readable form: ``GPU: 0`` blocks of YAML-like ``KEY: value`` lines.

amd-smi renders its JSON dictionaries with upper-cased keys, nesting by indentation (4 spaces per
level, 2 in some ``set`` outputs), lists of scalars as ``- item`` lines and lists of dictionaries as
repeated keys at one level. Old releases wrap long values at about 80 columns, mid-value, with a
deeper-indented continuation line. The result here is the same nested-dict shape as the JSON form
(lower-case keys, raw string leaves), so one mapper turns both into typed records.

A grep-filtered copy (``amd-smi metric | grep -A3 UMC``) is read too, as a *fragment*: key lines with no
``GPU: N`` header at all become blocks of GPUs the text does not name (grep's ``--`` separator starts
the next one), and a key indented deeper than any section line above it shows that its section line
was filtered out.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_DEVICE_HEADER = re.compile(r"^(\s{0,2})(GPU|CPU|CORE|NIC|AI_NIC|BRCM_NIC|BRCM_SWITCH)\s*:\s*(\d+)\s*$")
_KEY_LINE = re.compile(r"^(\s*)([A-Za-z0-9][A-Za-z0-9_ ./()%#+\-]*?)\s*:(?:\s+(.*?))?\s*$")
_LIST_ITEM = re.compile(r"^(\s*)-\s+(.*?)\s*$")
_GREP_SEPARATOR = "--"
# amd-smi indents a GPU's sections by 4 spaces; a first key deeper than that lost its section line.
_LEVEL = 4


_KEY_SEPARATORS = re.compile(r"[\s\-]+")


@functools.lru_cache(maxsize=8192)
def normalise_key(key: str) -> str:
    """``MARKET_NAME`` -> ``market_name``; ``Level 0`` / ``FW 0`` -> ``level_0`` / ``fw_0``."""
    # Cached: an 8-GPU output repeats the same few hundred keys tens of thousands of times.
    return _KEY_SEPARATORS.sub("_", key.strip()).lower()


@dataclass
class TextDocument:
    """GPU blocks in output order plus the lines outside any block (headers, messages, noise)."""

    gpus: list[dict[str, Any]] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    fragment: bool = False  # part of an output: no GPU header, or keys whose section line is missing


@dataclass
class _Frame:
    indent: int
    container: dict[str, Any]
    child_indent: int | None = None  # of the frame's first key: its siblings line up with it


class _BlockBuilder:
    """Builds one device block from its indented lines."""

    def __init__(self, kind: str, index: int | None, indent: int) -> None:
        self.kind = kind
        self.root: dict[str, Any] = {kind.lower(): index}
        self.stack = [_Frame(indent, self.root)]
        # The last key written, so continuation and '- item' lines know where they belong.
        self.last: tuple[dict[str, Any], str, int] | None = None
        self.orphaned = False  # a key whose section line is not in the text (a grep-filtered copy)

    def add(self, line: str) -> bool:
        """Take one line of the block; False when it does not fit the block's shape."""
        item = _LIST_ITEM.match(line)
        if item and self.last is not None and len(item.group(1)) > self.last[2]:
            container, key, _ = self.last
            current = container.get(key)
            if isinstance(current, dict) and not current:
                # The empty section pushed for this key turns out to hold a list.
                self.stack = [frame for frame in self.stack if frame.container is not current]
                container[key] = [item.group(2)]
            elif isinstance(current, list):
                current.append(item.group(2))
            return True
        match = _KEY_LINE.match(line)
        if match is None or not _looks_like_key(match.group(2)):
            return self._continue(line)
        indent = len(match.group(1))
        while len(self.stack) > 1 and self.stack[-1].indent >= indent:
            self.stack.pop()
        self._note_orphan(self.stack[-1], indent)
        parent = self.stack[-1].container
        key = normalise_key(match.group(2))
        value = match.group(3)
        if value is None or value == "":
            child: dict[str, Any] = {}
            _put(parent, key, child)
            self.stack.append(_Frame(indent, child))
        else:
            _put(parent, key, value)
        self.last = (parent, key, indent)
        return True

    def _note_orphan(self, frame: _Frame, indent: int) -> None:
        """A key deeper than its siblings, or a first key more than one level below the GPU header, lost its
        section line; it stays where it is (the mapper reads it by name) and the block is a fragment."""
        if frame.child_indent is None:
            frame.child_indent = indent
            if frame is self.stack[0] and frame.indent >= 0 and indent > frame.indent + _LEVEL:
                self.orphaned = True
        elif indent > frame.child_indent:
            self.orphaned = True

    def _continue(self, line: str) -> bool:
        # A wrapped value: old amd-smi breaks long list values at a space, so re-join with one.
        if self.last is None:
            return False
        container, key, indent = self.last
        text = line.strip()
        if len(line) - len(line.lstrip()) <= indent or not text:
            return False
        current = container.get(key)
        if isinstance(current, str):
            container[key] = f"{current} {text}"
            return True
        if isinstance(current, list) and current and isinstance(current[-1], str):
            current[-1] = f"{current[-1]} {text}"
            return True
        return False


def _looks_like_key(key: str) -> bool:
    # Keys are identifiers (MARKET_NAME, FW 0, Level 1); a sentence with a colon is a message.
    words = key.split()
    return 0 < len(words) <= 3 and not key.strip().endswith(".")


def _put(container: dict[str, Any], key: str, value: Any) -> None:
    # Lists of dictionaries print as the same key repeated at one level (PROCESS_INFO, PAGE_ADDRESS).
    if key not in container:
        container[key] = value
        return
    existing = container[key]
    if isinstance(existing, _Repeated):
        existing.append(value)
    else:
        container[key] = _Repeated([existing, value])


class _Repeated(list[Any]):
    """Values of a key that appeared several times at one level."""


def parse_text(lines: list[str], *, ignored: Callable[[str], bool] = lambda line: False) -> TextDocument:
    """Split ``lines`` into GPU blocks (nested dicts) and the lines outside them.

    Without any ``GPU: N`` header, lines that are all amd-smi key lines (besides those ``ignored``: the
    tool's messages and version line) are read as a fragment: the blocks of GPUs it does not name.
    """
    document = TextDocument()
    builders: list[_BlockBuilder] = []
    builder: _BlockBuilder | None = None
    for raw in lines:
        line = raw.expandtabs(4).rstrip()
        if not line.strip():
            continue
        header = _DEVICE_HEADER.match(line)
        if header:
            builder = _BlockBuilder(header.group(2), int(header.group(3)), len(header.group(1)))
            if header.group(2) == "GPU":
                document.gpus.append(builder.root)
                builders.append(builder)
            continue
        if builder is not None and len(line) - len(line.lstrip()) > builder.stack[0].indent and builder.add(line):
            continue
        builder = None
        document.outside.append(line)
    if not document.gpus:
        return _headerless(lines, ignored) or document
    document.fragment = any(b.orphaned for b in builders)
    return document


def _headerless(lines: list[str], ignored: Callable[[str], bool]) -> TextDocument | None:
    """The blocks of a grep-filtered copy without GPU headers (``--`` between grep's matches starts the next
    GPU), or None unless every line is an upper-case amd-smi key line, a list item, a separator or ``ignored``."""
    document = TextDocument(fragment=True)
    builder: _BlockBuilder | None = None
    for raw in lines:
        line = raw.expandtabs(4).rstrip()
        if not line.strip() or ignored(line):
            continue
        if line.strip() == _GREP_SEPARATOR:
            builder = None
            continue
        if _DEVICE_HEADER.match(line):
            return None  # a CPU's or NIC's block, not a GPU's whose header was filtered out
        key = _KEY_LINE.match(line)
        is_key = key is not None and _looks_like_key(key.group(2)) and key.group(2).upper() == key.group(2)
        if builder is None:
            if not is_key:
                return None
            builder = _BlockBuilder("GPU", None, -1)
            document.gpus.append(builder.root)
        # A key line, or a list item or wrapped value belonging to the key above it; any other line is no
        # amd-smi text, and the whole is left to the other readers.
        if not builder.add(line) or (key is not None and not is_key):
            return None
    return document if document.gpus else None
