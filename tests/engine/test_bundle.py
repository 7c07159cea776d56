"""Probe bundles: quoting, splitting per probe, and behaviour when a bundle is cut short."""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from console.sweep.bundle import bundle_script, bundle_timeout, group_probes, split_bundle
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
    # A probe with a fallback may run twice (the narrow form hangs, then the full one does).
    assert bundle_timeout(quick) == max(p.timeout_s * (2 if p.fallback else 1) for p in quick) + 10
    plain = [p for p in quick if not p.fallback]
    assert bundle_timeout(plain) == max(p.timeout_s for p in plain) + 10
    assert all(shlex.split(bundle_script(g)) for g in groups)
    assert {p.id for p in PROBES} >= {p.id for p in quick}


def test_a_fallback_runs_only_when_the_narrow_form_fails_and_its_complaint_is_dropped() -> None:
    spec = replace(_spec("probe", "sh", "-c", "echo refused >&2; exit 2"), fallback=("echo", "full output"))
    out = subprocess.run(["sh", "-c", bundle_script([spec])], capture_output=True, check=True).stdout
    section = split_bundle(out, [spec])["probe"]
    assert (section.output, section.exit_status) == (b"full output\n", 0)
    works = replace(spec, argv=("echo", "narrow output"))
    out = subprocess.run(["sh", "-c", bundle_script([works])], capture_output=True, check=True).stdout
    assert split_bundle(out, [works])["probe"].output == b"narrow output\n"
    assert works.command_line == "echo 'narrow output' || echo 'full output'"
