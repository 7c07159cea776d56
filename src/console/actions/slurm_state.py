"""What Slurm says about its nodes: base state, flags (DRAIN...), reason, who set it and when.

Three readers, tried in this order by ``console.actions.slurm``:
* ``scontrol show node --json`` (Slurm 23.02+) and ``sinfo --json`` (22.05, openapi v0.0.38): node
  objects whose ``state`` is a string with ``state_flags`` beside it (older) or a list of words (newer),
  and whose ``reason_changed_at`` is epoch seconds or ``{"number": ...}`` (v0.0.40+);
* ``scontrol -o show node``: one line per node, ``State=IDLE+DRAIN`` and, last on the line,
  ``Reason=<text> [<user>@<time>]`` (the text may itself contain brackets and spaces);
* ``sinfo -N -h -o '%N|%T|%E|%u|%H'``: the compact state (``drained``, ``draining``, ``down*``).
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from pydantic import Field

from console.model.base import Model
from console.probes.base import ParseError, clean_lines, to_text

# Slurm appends one of these to a compact state name: * not responding, ~ powered off, # powering up,
# ! pending power down, % powering down, $ maintenance reservation, @ pending reboot, ^ rebooting, - planned.
_STATE_SUFFIXES = "*~#!%$@^-"
_SUFFIX_FLAGS = {"*": "NOT_RESPONDING", "~": "POWERED_DOWN", "#": "POWERING_UP", "%": "POWERING_DOWN",
                 "@": "REBOOT_REQUESTED", "^": "REBOOT_ISSUED", "$": "MAINTENANCE", "!": "POWER_DOWN",
                 "-": "PLANNED"}  # fmt: skip
_BASE_STATES = {"IDLE", "ALLOCATED", "ALLOC", "MIXED", "DOWN", "UNKNOWN", "FUTURE", "ERROR", "COMPLETING"}
_BUSY = {"ALLOCATED", "MIXED", "COMPLETING"}
# sinfo's compact names that fold a flag into the name.
_SINFO_COMPOUND = {
    "drained": ("IDLE", ("DRAIN",)),
    "draining": ("ALLOCATED", ("DRAIN",)),
    "drain": ("UNKNOWN", ("DRAIN",)),
    "alloc": ("ALLOCATED", ()),
    "comp": ("COMPLETING", ()),
    "completing": ("COMPLETING", ()),
    "fail": ("DOWN", ("FAIL",)),
    "failing": ("ALLOCATED", ("FAIL",)),
}
_REASON_STAMP = re.compile(r"^(?P<reason>.*) \[(?P<user>[^\s@\[\]]+)@(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\]")
_NAME = re.compile(r"^NodeName=(\S+)")
_STATE = re.compile(r"(?:^|\s)State=(\S+)")


class SlurmNode(Model):
    """One node as the scheduler sees it."""

    name: str
    base: str = Field(description="IDLE, ALLOCATED, MIXED, DOWN, UNKNOWN, ...")
    flags: tuple[str, ...] = ()
    reason: str | None = None
    reason_user: str | None = None
    reason_time: str | None = Field(None, description="when the reason was set, as scontrol prints it")

    @property
    def draining_flag(self) -> bool:
        """The DRAIN flag is set (draining or drained)."""
        return "DRAIN" in self.flags

    @property
    def state(self) -> str:
        """DRAINING while jobs still run, DRAINED once idle, DOWN+DRAIN for a dead drained node, else the base."""
        if self.draining_flag:
            if self.base in _BUSY:
                return "DRAINING"
            return "DRAINED" if self.base == "IDLE" else f"{self.base}+DRAIN"
        return self.base

    @property
    def out_of_service(self) -> bool:
        """Drained, draining, down or failed, whoever did it: it counts against a pool's drain cap."""
        return self.draining_flag or "FAIL" in self.flags or self.base == "DOWN"

    @property
    def resumable(self) -> bool:
        """RESUME would change something (the node is out of service); on others Slurm refuses it."""
        return self.out_of_service


def _base_and_flags(words: list[str]) -> tuple[str, tuple[str, ...]]:
    """Split ``IDLE+DRAIN`` / ``DOWN*`` / ``["IDLE", "DRAIN"]`` into the base state and its flags."""
    base = "UNKNOWN"
    flags: list[str] = []
    for raw in words:
        word = raw.strip().upper()
        while word and word[-1] in _STATE_SUFFIXES:
            flags.append(_SUFFIX_FLAGS[word[-1]])
            word = word[:-1]
        if not word:
            continue
        if word in _BASE_STATES and base == "UNKNOWN":
            base = "ALLOCATED" if word == "ALLOC" else word
        elif word not in flags:
            flags.append(word)
    return base, tuple(flags)


def _stamp(epoch: Any) -> str | None:
    if isinstance(epoch, dict):
        epoch = epoch.get("number") if epoch.get("set", True) else None
    if not isinstance(epoch, int | float) or isinstance(epoch, bool) or not epoch > 0:
        return None
    try:
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(epoch))
    except (OverflowError, OSError, ValueError):  # beyond what time_t holds: not a real timestamp
        return None


def parse_nodes_json(text: str | bytes) -> dict[str, SlurmNode]:
    """Nodes of a ``scontrol show node --json`` or ``sinfo --json`` document."""
    body = to_text(text).strip()
    try:
        document = json.loads(body[body.index("{") :]) if "{" in body else None
    except (ValueError, RecursionError):
        document = None
    if not isinstance(document, dict) or not isinstance(document.get("nodes"), list):
        raise ParseError("expected a Slurm JSON document with a 'nodes' list")
    nodes: dict[str, SlurmNode] = {}
    for item in document["nodes"]:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            continue
        state = item.get("state")
        words = [state] if isinstance(state, str) else [w for w in state or [] if isinstance(w, str)]
        words += [w for w in item.get("state_flags") or [] if isinstance(w, str)]
        base, flags = _base_and_flags(words)
        reason = item.get("reason")
        user = item.get("reason_set_by_user")
        nodes[item["name"]] = SlurmNode(
            name=item["name"],
            base=base,
            flags=flags,
            reason=reason if isinstance(reason, str) and reason else None,
            reason_user=user if isinstance(user, str) and user else None,
            reason_time=_stamp(item.get("reason_changed_at")),
        )
    if not nodes and document["nodes"]:
        raise ParseError("Slurm JSON 'nodes' list has no named node")
    return nodes


def parse_show_node(text: str | bytes) -> dict[str, SlurmNode]:
    """Nodes of ``scontrol -o show node`` (one line each; multi-line output is joined first)."""
    records: list[list[str]] = []
    for line in clean_lines(text):
        stripped = line.strip()
        if _NAME.match(stripped):
            records.append([stripped])
        elif records and stripped:
            records[-1].append(stripped)
    nodes: dict[str, SlurmNode] = {}
    for record in records:
        name = _NAME.match(record[0])
        state = next((m for part in record if (m := _STATE.search(part))), None)
        if name is None or state is None:
            continue
        base, flags = _base_and_flags(state.group(1).split("+"))
        reason = user = stamp = None
        joined = " ".join(record)
        at = joined.find(" Reason=")
        if at >= 0:
            text_part = joined[at + len(" Reason=") :]
            found = _REASON_STAMP.match(text_part)
            if found:
                reason, user, stamp = found["reason"], found["user"], found["time"]
            else:
                reason = text_part.strip()
        nodes[name.group(1)] = SlurmNode(
            name=name.group(1), base=base, flags=flags, reason=reason or None, reason_user=user, reason_time=stamp
        )
    if not nodes:
        raise ParseError("expected 'NodeName=... State=...' records from scontrol show node")
    return nodes


SINFO_FORMAT = "%N|%T|%E|%u|%H"


def parse_sinfo_nodes(text: str | bytes) -> dict[str, SlurmNode]:
    """Nodes of ``sinfo -N -h -o '%N|%T|%E|%u|%H'`` (the reason may itself contain ``|``)."""
    nodes: dict[str, SlurmNode] = {}
    for line in clean_lines(text):
        parts = line.strip().split("|", 2)
        if len(parts) < 3 or not parts[0] or " " in parts[0]:
            continue
        rest = parts[2].rsplit("|", 2)
        if len(rest) < 3:
            continue
        name, compact = parts[0], parts[1].strip().lower()
        reason, user, stamp = rest
        suffixes = ""
        while compact and compact[-1] in _STATE_SUFFIXES:
            suffixes, compact = compact[-1] + suffixes, compact[:-1]
        base, flags = _SINFO_COMPOUND.get(compact, (compact.upper(), ()))
        if base not in _BASE_STATES:
            continue
        extra = tuple(_SUFFIX_FLAGS[s] for s in suffixes)
        known = reason.strip() not in ("", "none")
        nodes[name] = SlurmNode(
            name=name,
            base=base,
            flags=flags + extra,
            reason=reason.strip() if known else None,
            reason_user=user.strip() if known and user.strip() not in ("", "Unknown") else None,
            reason_time=stamp.strip() if known and stamp.strip() not in ("", "Unknown") else None,
        )
    if not nodes:
        raise ParseError(f"expected 'name|state|reason|user|time' lines from sinfo -o '{SINFO_FORMAT}'")
    return nodes
