"""A corpus of terminal control sequences, and the check that none reaches a terminal alive (issue 34).

What a node, a scheduler, a file or another operator may hand the console: OSC (title, clipboard,
hyperlinks), CSI (clear screen, colours, cursor moves), DCS, their one-character C1 forms, lone C0 and
C1 controls, and bidirectional overrides and isolates that reorder what the operator reads.
"""

from __future__ import annotations

CORPUS: dict[str, str] = {
    "osc-title": "\x1b]0;PWNED\x07",
    "osc-clipboard": "\x1b]52;c;cHduZWQ=\x1b\\",
    "osc-hyperlink": "\x1b]8;;http://evil.invalid/\x1b\\click\x1b]8;;\x1b\\",
    "csi-clear": "\x1b[2J\x1b[H",
    "csi-colour": "\x1b[31;1mred\x1b[0m",
    "csi-title-report": "\x1b[21t",
    "dcs": "\x1bP1$qm\x1b\\",
    "c1-csi": "\x9b2J",
    "c1-osc": "\x9d0;PWNED\x9c",
    "c1-dcs": "\x90q\x9c",
    "c1-nel-ind": "\x85\x84",
    "c0-bel-bs-cr": "\x07ok\x08\x08\rPASS",
    "bidi-override": "gpu\u202e3ULIAF\u202c",
    "bidi-isolates": "\u2066abc\u2069\u2067def\u2069\u200f",
    "surrogate-escaped-byte": "\udc9b2J",  # a non-UTF-8 byte 0x9b kept by surrogateescape
}

# Bytes a terminal acts on: ESC, BEL, BS, CR; C1 controls UTF-8 encoded (and raw, from a surrogate escape);
# bidi controls UTF-8 encoded.
_LIVE_CHARS = "\x1b\x07\x08\r\x9b\x9d\x90\x9c\x85\x84\u202e\u202c\u2066\u2067\u2069\u200f"
LIVE: tuple[bytes, ...] = (
    *(c.encode("utf-8") for c in _LIVE_CHARS),
    b"\x9b",
    b"\x9d",
    b"\x90",
)


def hostile(tag: str = "") -> str:
    """Every sequence of the corpus in one string (with ``tag`` first, to find it in the output)."""
    return tag + "".join(CORPUS.values())


def live_sequences(output: bytes, *, allow_sgr: bool = False) -> list[bytes]:
    """The live bytes in ``output``; with ``allow_sgr``, Rich's own colour codes are not counted."""
    if allow_sgr:
        output = output.replace(b"\x1b[", b"")
    return [seq for seq in LIVE if seq in output]


def live_in_text(text: str) -> list[str]:
    """The live characters of a printed ``str`` (before encoding)."""
    return [c for c in _LIVE_CHARS + "\udc9b" if c in text]
