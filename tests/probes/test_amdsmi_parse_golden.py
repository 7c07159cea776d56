"""What the amd-smi parsers make of every output we hold, pinned: a change that makes them cheaper must not
change what they produce.

Every amd-smi fixture of the repository, and the simulator's answer to every amd-smi probe of the catalogue
(and its fallback form) for every GPU model, every hardware fault and every behaviour fault on that probe,
is parsed as the engine parses it. The result (``model_dump(mode="json")``, or the ParseError's message) is
reduced to a digest and compared with ``golden/amdsmi_parsed.json``. Digests, not whole dumps: there are
~1,000 cases of up to 200 KiB each. A simulator output identical to the healthy node's is left out (most
faults touch no amd-smi output), as it is the healthy case again.

When a change is meant to change a parser's result, regenerate and say so in the commit:
``INSTINCT_GOLDEN_UPDATE=1 .venv/bin/pytest tests/probes/test_amdsmi_parse_golden.py``. A failing case
writes its dump to the test's tmp_path, to diff against the same case on the commit before.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from console.probes import parse_output
from console.probes.base import ParseError
from console.sim.faults import BEHAVIOUR_KINDS, PLACED_KINDS, Fault, FaultKind, FaultScope, fault_scope
from console.sim.specs import DEFAULT_STACK, STACK_PRESETS, GpuModel
from console.sweep.catalog import ProbeSet, ProbeSpec, probes_for
from tests.sim.simcore_helpers import NODE, cluster, run

FIXTURES = Path(__file__).parents[1] / "fixtures"
GOLDEN = Path(__file__).parent / "golden" / "amdsmi_parsed.json"
UPDATE = os.environ.get("INSTINCT_GOLDEN_UPDATE") == "1"
CPER_CLOCK = 1_764_600_000.0
# Behaviour faults whose output a parser reads (a hang or a dropped session gives it nothing new to read).
BEHAVIOUR_READ = (
    FaultKind.GARBAGE_OUTPUT,
    FaultKind.EMPTY_OUTPUT,
    FaultKind.TRUNCATED_OUTPUT,
    FaultKind.EXIT_CODE,
    FaultKind.TOOL_MISSING,
    FaultKind.COMMAND_KILLED,
)


def _amdsmi_specs() -> list[ProbeSpec]:
    seen: dict[str, ProbeSpec] = {}
    for level in ProbeSet:
        for spec in probes_for(level):
            if spec.program == "amd-smi" and spec.id not in seen:
                seen[spec.id] = spec
    specs = list(seen.values())
    return specs + [fallback for spec in specs if (fallback := spec.fallback_spec()) is not None]


def _fixture_files() -> list[Path]:
    found = sorted((FIXTURES / "real" / "amd-smi").iterdir())
    found += sorted(p for p in (FIXTURES / "cper").iterdir() if p.suffix != ".md")
    found += sorted((FIXTURES / "fragments").glob("amd-smi-*"))
    return found


def _fault(kind: FaultKind, spec: ProbeSpec | None) -> Fault:
    if spec is not None:  # a behaviour fault on this probe's command, as the never-false-PASS test puts it
        program = spec.argv[0]
        args = " ".join(spec.argv[1:])
        return Fault(kind=kind, node=NODE, params={"program": program, "args": args, "status": 3})
    scope = fault_scope(kind)
    gpu, peer = (1, 4) if scope is FaultScope.LINK else (3, None) if scope is FaultScope.GPU else (None, None)
    return Fault(kind=kind, node=NODE, gpu=gpu, peer=peer)


def _parse(spec: ProbeSpec, text: str) -> str:
    """The parse's result as canonical JSON (or its ParseError), as the engine's parse thread gets it."""
    try:
        parsed = spec.parse(text)
    except ParseError as exc:
        return f"ParseError: {exc}"
    return json.dumps(parsed.model_dump(mode="json"), sort_keys=True)


def _sim_text(model: GpuModel, rocm: str, faults: list[Fault], spec: ProbeSpec) -> str:
    reply = run(cluster(model, rocm, faults), *spec.argv)
    return reply.stdout + reply.stderr


def _cases() -> Iterator[tuple[str, str]]:
    """(case name, canonical result) for every case of the module docstring."""
    for path in _fixture_files():
        try:
            result = json.dumps(parse_output(path.read_bytes()).model_dump(mode="json"), sort_keys=True)
        except ParseError as exc:
            result = f"ParseError: {exc}"
        yield f"fixture {path.relative_to(FIXTURES)}", result
    specs = _amdsmi_specs()
    stacks = [(model, DEFAULT_STACK[model]) for model in GpuModel]
    stacks += [(GpuModel.MI300X, rocm) for rocm in STACK_PRESETS if rocm != DEFAULT_STACK[GpuModel.MI300X]]
    hardware = sorted(set(FaultKind) - BEHAVIOUR_KINDS - PLACED_KINDS)
    for model, rocm in stacks:
        for spec in specs:
            argv = " ".join(spec.argv)
            healthy = _sim_text(model, rocm, [], spec)
            yield f"sim {model} {rocm} healthy: {argv}", _parse(spec, healthy)
            for kind in hardware:
                text = _sim_text(model, rocm, [_fault(kind, None)], spec)
                if text != healthy:
                    yield f"sim {model} {rocm} {kind}: {argv}", _parse(spec, text)
            if rocm != DEFAULT_STACK[model]:
                continue
            for kind in BEHAVIOUR_READ:
                text = _sim_text(model, rocm, [_fault(kind, spec)], spec)
                if text != healthy:
                    yield f"sim {model} {rocm} {kind} on it: {argv}", _parse(spec, text)


@cache
def _digest(result: str) -> str:
    return hashlib.blake2b(result.encode(), digest_size=12).hexdigest()


def test_every_amdsmi_output_parses_as_pinned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The simulator stamps CPER records with the wall clock; one fixed instant makes them repeatable.
    monkeypatch.setattr(time, "time", lambda: CPER_CLOCK)
    results = dict(_cases())
    found = {name: _digest(result) for name, result in results.items()}
    if UPDATE:
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        pytest.skip(f"wrote {len(found)} digests to {GOLDEN}")
    pinned = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert found.keys() == pinned.keys(), "the cases changed: regenerate (module docstring) and say why"
    changed = sorted(name for name in found if found[name] != pinned[name])
    for i, name in enumerate(changed):
        (tmp_path / f"case{i:04d}.json").write_text(f"{name}\n{results[name]}\n", encoding="utf-8")
    assert not changed, f"{len(changed)} of {len(found)} results changed (dumps in {tmp_path}): {changed[:5]}"


def test_the_pinned_cases_cover_every_model_fixture_and_probe() -> None:
    pinned = json.loads(GOLDEN.read_text(encoding="utf-8"))
    for model in GpuModel:
        assert any(name.startswith(f"sim {model} ") for name in pinned)
    for path in _fixture_files():
        assert f"fixture {path.relative_to(FIXTURES)}" in pinned
    for spec in _amdsmi_specs():
        assert any(name.endswith(": " + " ".join(spec.argv)) for name in pinned)
