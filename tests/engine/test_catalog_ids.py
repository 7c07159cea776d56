"""The probe catalogue and the probe ids the packs are checked against are one list."""

from __future__ import annotations

from console.probes import _PARSERS
from console.probes.ids import ProbeId, Tool
from console.sweep.catalog import PROBES


def test_every_catalogued_probe_has_an_id_and_every_id_a_probe() -> None:
    assert [p.id for p in PROBES] == list(dict.fromkeys(p.id for p in PROBES))  # no id twice
    assert {p.id for p in PROBES} == set(ProbeId)
    assert all(isinstance(p.id, ProbeId) for p in PROBES)


def test_every_tool_has_its_parser() -> None:
    assert set(_PARSERS) == set(Tool)
