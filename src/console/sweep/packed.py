"""What the engine keeps of a judged node between sweeps, packed: bytes instead of objects.

A parsed output or a node's GPU records are ~10x their pickled and compressed size as Python objects, and
the engine keeps every node's for the screens, a re-judgement (the fleet pass, an added multi-node finding,
a vanished GPU), the drift report and the slow-changing probes reused under an unchanged stack stamp.
Kept as objects that was ~0.3 MiB per MI300X node besides its findings (bench/README.md, "Engine memory
without workers"); packed, ~20 KiB, loaded again (a fraction of a millisecond each) only where read.
"""

from __future__ import annotations

import pickle
import zlib
from dataclasses import fields
from typing import Any

from console.checks import NodeFacts, ProbeOutcome


def pack_screen(value: object) -> bytes:
    """``value`` (a parsed output, a node's GPU records, XGMI links or NIC ports) as the engine keeps it."""
    return zlib.compress(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL), 1)


def unpack_screen(packed: bytes) -> Any:
    """What ``pack_screen`` packed: made by this console's own process or engine worker, never a node."""
    return pickle.loads(zlib.decompress(packed))


def _screen(name: str) -> property:
    """A field kept as ``pack_screen`` bytes when assigned so, and read as its objects each time."""

    def read(held: Any) -> Any:
        value = held.__dict__[name]
        return unpack_screen(value) if isinstance(value, bytes) else value

    def write(held: Any, value: Any) -> None:
        held.__dict__[name] = value

    return property(read, write)


class PackedFacts(NodeFacts):
    """A judged node's facts, its GPU records, XGMI links and NIC ports (and their rates) kept packed.

    The engine keeps every node's facts for the screens (the ``NodeDone`` snapshot), a re-judgement and
    the drift report. As objects those were ~200 KiB per MI300X node; packed they are ~4 KiB,
    loaded again (~0.6 ms) each time they are read. Assigned objects are kept as they are, so a copy
    (``dataclasses.replace``) reads them once and then holds them while it is used.
    """

    def keep_packed(self, gpus: bytes, xgmi: bytes, nics: bytes) -> None:
        """Hold the three as ``pack_screen`` made them, instead of their objects."""
        self.__dict__.update(gpus=gpus, xgmi=xgmi, nics=nics)

    def packed_screens(self) -> tuple[bytes, bytes, bytes] | None:
        """The three as kept, when all are still packed (an engine worker sends them on so)."""
        held = tuple(self.__dict__[name] for name in ("gpus", "xgmi", "nics"))
        return held if all(isinstance(value, bytes) for value in held) else None

    @classmethod
    def of(cls, facts: NodeFacts, outcomes: dict[str, ProbeOutcome]) -> PackedFacts:
        """``facts`` kept packed, with ``outcomes`` (theirs, kept as the engine keeps them) instead of theirs.
        The Subjects its checks shared are not kept: the findings naming them hold theirs, and a later
        reading of these facts makes the ones it needs again (~100 KiB per MI300X node)."""
        kept = {f.name: getattr(facts, f.name) for f in fields(facts) if f.name not in _NOT_COPIED}
        packed = cls(**kept, outcomes=outcomes)
        packed.keep_packed(pack_screen(facts.gpus), pack_screen(facts.xgmi), pack_screen(facts.nics))
        packed.nic_rates = pack_screen(facts.nic_rates)  # type: ignore[assignment]
        return packed


_NOT_COPIED = ("gpus", "xgmi", "nics", "nic_rates", "_subjects", "outcomes")

# Data descriptors on the subclass: NodeFacts' own __init__ assigns the four through them.
PackedFacts.gpus = _screen("gpus")  # type: ignore[assignment]
PackedFacts.xgmi = _screen("xgmi")  # type: ignore[assignment]
PackedFacts.nics = _screen("nics")  # type: ignore[assignment]
PackedFacts.nic_rates = _screen("nic_rates")  # type: ignore[assignment]


class PackedOutcome(ProbeOutcome):
    """A probe's outcome with its parsed output kept packed, loaded each time it is read.

    Whether it is usable is told without loading it: the engine's stamp-checked reuse asks that of every
    kept outcome at every sweep.
    """

    @property
    def usable(self) -> bool:
        """True when there is parsed output to read."""
        return self.__dict__["parsed"] is not None and self.problem is None

    @classmethod
    def of(cls, outcome: ProbeOutcome) -> PackedOutcome:
        """``outcome`` with its parsed output packed."""
        parsed = outcome.parsed
        return cls(
            outcome.probe,
            None if parsed is None else pack_screen(parsed),
            outcome.problem,
            outcome.run_id,
            outcome.duration_s,
        )

    def loaded(self) -> ProbeOutcome:
        """The outcome with its parsed output as objects, for judging it again."""
        return ProbeOutcome(self.probe, self.parsed, self.problem, self.run_id, self.duration_s)


PackedOutcome.parsed = _screen("parsed")
