"""Probe bundles: quoting, splitting per probe, and behaviour when a bundle is cut short."""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from console.sweep.bundle import (
    CLEANUP_TIMEOUT_S,
    GPU_TOOLS,
    BundleOutput,
    bundle_script,
    bundle_timeout,
    group_probes,
    node_grace_s,
    split_bundle,
)
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
    # The promise: T + 10 %, and the time a probe's cleanup may take before and after it.
    cleanups = 2 * (CLEANUP_TIMEOUT_S + 1) if any(p.cleanup for p in quick) else 0
    assert bundle_timeout(quick) == pytest.approx(max(p.timeout_s for p in quick) * 1.1 + cleanups)
    assert all(shlex.split(bundle_script(g)) for g in groups)
    for group in groups:  # what cannot hang ahead of the GPU tools that can
        on_gpu = [p.program in GPU_TOOLS for p in group]
        assert on_gpu == sorted(on_gpu), [p.id for p in group]
    assert {p.id for p in PROBES} >= {p.id for p in quick}


def test_the_framework_probe_runs_in_a_bundle_of_its_own() -> None:
    """Its 600 s hang must not hold the quick probes, even over one channel."""
    probes = probes_for("framework")
    for channels in (1, 4):
        groups = group_probes(probes, channels)
        [alone] = [g for g in groups if any(p.id == "framework.torch" for p in g)]
        assert [p.id for p in alone] == ["framework.torch"]
        assert sum(len(g) for g in groups) == len(probes)


def test_a_fallback_is_not_part_of_the_bundle() -> None:
    """The engine sends the full form only after the tool refused the narrow one (a hang is not retried)."""
    spec = replace(_spec("probe", "amd-smi", "metric", "-v", "--json"), fallback=("amd-smi", "metric", "--json"))
    assert "metric --json" not in bundle_script([spec]) and spec.command_line == "amd-smi metric -v --json"
    full = spec.fallback_spec()
    assert full is not None and (full.id, full.argv, full.fallback) == ("probe", ("amd-smi", "metric", "--json"), None)
    assert bundle_timeout([spec]) == pytest.approx(spec.timeout_s * 1.1)


def _fed(stream: bytes, limit: int, chunk: int) -> BundleOutput:
    output = BundleOutput(limit)
    for start in range(0, len(stream), chunk):
        output.feed(stream[start : start + chunk])
    return output


@pytest.mark.parametrize("chunk", [1, 3, 7, 64, 1 << 20])
def test_bundle_output_keeps_each_section_up_to_its_limit_whatever_the_chunks(chunk: int) -> None:
    probes = [_spec("a", "x"), _spec("b", "x"), _spec("c", "x")]
    stream = (
        b"motd\n@@ic-begin a\nsmall\n@@ic-end a rc=0\n"
        b"@@ic-begin b\n" + b"y" * 5000 + b"\n@@ic-end a rc=0\n" + b"z" * 100 + b"\n@@ic-end b rc=0\n"
        b"@@ic-begin c\nlast"
    )
    output = _fed(stream, 1000, chunk)
    sections = split_bundle(output.value(), probes, output.dropped)
    assert sections["a"].output == b"small" and sections["a"].dropped_bytes == 0
    # b printed a fake end marker of a inside its output: it is b's text, counted against b's limit.
    assert len(sections["b"].output) == 1000 and sections["b"].exit_status == 0
    assert sections["b"].dropped_bytes == 5000 + 1 + len(b"@@ic-end a rc=0\n") + 100 - 1000
    assert sections["c"].output == b"last" and sections["c"].exit_status is None
    assert output.dropped_bytes == sections["b"].dropped_bytes


def test_bundle_output_of_a_huge_section_stays_within_its_limit() -> None:
    output = BundleOutput(1 << 16)
    output.feed(b"@@ic-begin big\n")
    block = b"0123456789abcdef" * 4096
    for _ in range(3200):  # 200 MiB, a 64 KiB block at a time
        output.feed(block)
    output.feed(b"\n@@ic-end big rc=0\n")
    assert len(output.value()) < (1 << 16) + 64
    assert output.dropped["big"] == 3200 * len(block) - (1 << 16)  # the newline before the end marker is its own


def test_node_grace_is_a_twentieth_of_the_timeout_within_half_a_second_and_five() -> None:
    assert [node_grace_s(t) for t in (1, 10, 30, 300, 3600)] == [0.5, 0.5, 1.5, 5.0, 5.0]


def test_a_probe_ignoring_sigterm_is_killed_by_the_nodes_own_timeout_within_its_grace() -> None:
    """The node ends a stubborn probe at T + grace by itself, before the console's T + 10 %."""
    probes = [_spec("stubborn", "sh", "-c", "trap '' TERM; sleep 5; echo late", timeout=1), _spec("next", "echo", "n")]
    started = __import__("time").monotonic()
    proc = subprocess.run(["sh", "-c", bundle_script(probes)], capture_output=True, timeout=30, check=False)
    elapsed = __import__("time").monotonic() - started
    sections = split_bundle(proc.stdout, probes)
    assert sections["stubborn"].exit_status == 137 and b"late" not in sections["stubborn"].output
    assert sections["next"].output == b"n\n"
    assert 1.0 + node_grace_s(1) * 0.9 <= elapsed < bundle_timeout(probes) + 1.0


def test_a_probes_cleanup_runs_before_and_after_it_even_when_it_times_out(tmp_path: Path) -> None:
    """``amd-smi ras --cper --folder`` writes files on the node: its cleanup removes them whatever the probe's
    end, and what a run the console killed left is removed before the next one writes again."""
    folder = tmp_path / "cper"
    folder.mkdir()
    (folder / "left-by-a-killed-run.cper").write_text("x")
    writes = (
        f"test ! -e {folder}/left-by-a-killed-run.cper && mkdir -p {folder} && touch {folder}/fatal-1.cper && sleep 30"
    )
    probe = replace(_spec("ras.cper", "sh", "-c", writes, timeout=1), cleanup=("rm", "-rf", "--", str(folder)))
    after = _spec("b.after", "echo", "next")
    proc = subprocess.run(["sh", "-c", bundle_script([probe, after])], capture_output=True, timeout=60, check=False)
    sections = split_bundle(proc.stdout, [probe, after])
    assert sections["ras.cper"].exit_status == 124  # timed out, after it wrote (so the earlier file was gone)
    assert not folder.exists()
    assert sections["b.after"].output == b"next\n"
    assert bundle_timeout([probe]) > bundle_timeout([_spec("x", "true", timeout=1)])
