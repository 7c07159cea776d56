"""Probe bundles: quoting, splitting per probe, and behaviour when a bundle is cut short."""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from console.sweep.bundle import GPU_TOOLS, bundle_script, bundle_timeout, group_probes, split_bundle
from console.sweep.catalog import PROBES, ProbeSpec, probes_for


def _spec(pid: str, *argv: str, timeout: float = 10) -> ProbeSpec:
    return ProbeSpec(pid, "x", tuple(argv), timeout, lambda text: text, probes_for("quick")[0].level)


def test_script_runs_in_a_real_shell_and_splits_back(tmp_path: Path) -> None:
    pwned = tmp_path / "ic-pwned"
    hostile = f"; touch {pwned} $(id) `id` \"q' \n"
    probes = [
        _spec("a.one", "echo", hostile),
        _spec("b.two", "sh", "-c", "echo out; echo err >&2; exit 3"),
        _spec("c.three", "no-such-program-ic"),
    ]
    proc = subprocess.run(["sh", "-c", bundle_script(probes)], capture_output=True, timeout=30, check=False)
    sections = split_bundle(proc.stdout, probes)
    assert sections["a.one"].output.decode() == hostile + "\n"  # echo's own newline: sections are byte-exact
    assert not pwned.exists()
    assert sections["a.one"].exit_status == 0
    assert sections["b.two"].output == b"out\nerr\n" and sections["b.two"].exit_status == 3
    assert sections["c.three"].exit_status == 127


def test_cut_short_bundle_marks_the_running_probe_and_omits_the_rest() -> None:
    probes = [_spec("a", "x"), _spec("b", "x"), _spec("c", "x")]
    out = b"motd noise\n@@ic-begin a\nfine\n@@ic-end a rc=0\n@@ic-begin b\npartial"
    sections = split_bundle(out, probes)
    assert sections["a"].output == b"fine" and sections["a"].exit_status == 0
    assert sections["b"].output == b"partial" and sections["b"].exit_status is None
    assert "c" not in sections


def test_markers_of_unknown_probes_are_ignored() -> None:
    probes = [_spec("a", "x")]
    out = b"@@ic-begin evil\nX\n@@ic-end evil rc=0\n@@ic-begin a\nY\n@@ic-end a rc=1\n"
    assert split_bundle(out, probes)["a"].output == b"Y"


def test_ids_must_be_plain_words() -> None:
    with pytest.raises(ValueError, match="plain word"):
        bundle_script([_spec("a; rm -rf /", "x")])


def test_grouping_and_timeout() -> None:
    quick = probes_for("quick")
    groups = group_probes(quick, 4)
    assert len(groups) == 4 and sorted(p.id for g in groups for p in g) == sorted(p.id for p in quick)
    assert bundle_timeout(quick) == max(p.timeout_s for p in quick) + 10
    assert all(shlex.split(bundle_script(g)) for g in groups)
    for group in groups:  # what cannot hang ahead of the GPU tools that can
        on_gpu = [p.argv[0] in GPU_TOOLS for p in group]
        assert on_gpu == sorted(on_gpu), [p.id for p in group]
    assert {p.id for p in PROBES} >= {p.id for p in quick}


def test_a_fallback_is_not_part_of_the_bundle() -> None:
    """The engine sends the full form only after the tool refused the narrow one (a hang is not retried)."""
    spec = replace(_spec("probe", "amd-smi", "metric", "-v", "--json"), fallback=("amd-smi", "metric", "--json"))
    assert "metric --json" not in bundle_script([spec]) and spec.command_line == "amd-smi metric -v --json"
    full = spec.fallback_spec()
    assert full is not None and (full.id, full.argv, full.fallback) == ("probe", ("amd-smi", "metric", "--json"), None)
    assert bundle_timeout([spec]) == spec.timeout_s + 10
