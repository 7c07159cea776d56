"""``instinct-console parse`` with a verdict: pasted outputs and fragments of real ones judged by a check pack.

Through the CLI (``console.cli.main``) on the real samples of ``tests/fixtures/real`` and the fragments of
``tests/fixtures/fragments`` (README there names their sources).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console.checks import CheckPack, load_packs
from console.checks.single import PROBES_OF_KIND, judge_output, probes_reading
from console.cli import main
from console.commands.parse import to_json_object
from console.probes import ParseError, Tool, amdsmi, parse_output, rvs
from console.probes.base import ParsedOutput
from console.sweep.catalog import PROBES
from tests.probes.fuzz import FUZZ_SETTINGS, assert_total, mangled_outputs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REAL = FIXTURES / "real"
FRAGMENTS = FIXTURES / "fragments"
DEGRADED_RCCL = REAL / "rccl-tests" / "all_reduce_perf-mi350x-mpi-np8-degraded.txt"  # 289.27 GB/s at 8 GB
HEALTHY_RCCL = REAL / "rccl-tests" / "all_reduce_perf-mi300x-mpi-np8-rccl2223-full.txt"  # 319 GB/s at 16 GB
MI355X_RCCL = REAL / "rccl-tests" / "all_reduce_perf-mi355x-g8-oci-large-sizes-only.txt"  # ranks name MI355X
STATIC_MI350X = REAL / "amd-smi" / "static-subset-mi350x-gpu0-rocm7x-text.txt"
UMC = FRAGMENTS / "amd-smi-metric-ecc-blocks-grep-umc-mi300x.txt"
SDMA = FRAGMENTS / "amd-smi-metric-ecc-blocks-grep-sdma-uncorrectable-mi300x.txt"
RVS_TAIL = FRAGMENTS / "rvs-json-log-tail-pbqt-xgmi-mi300x.txt"
WHOLE_SAMPLES = sorted(p for p in REAL.rglob("*") if p.is_file() and p.name != "INDEX.md")


@functools.cache
def _mi300x() -> CheckPack:
    return load_packs()["MI300X"]


def _text(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["parse", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["parse", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def _grep(path: Path, *words: str) -> str:
    """The lines of ``path`` holding one of ``words``, as ``grep -E 'w1|w2'`` prints them."""
    return "".join(line for line in path.read_text().splitlines(keepends=True) if any(w in line for w in words))


# --- the acceptance case and whole outputs ------------------------------------------------------


def test_degraded_rccl_fails_the_mi300x_floor(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _text(capsys, "--model", "MI300X", str(DEGRADED_RCCL))
    assert (code, err) == (1, "")
    assert "verdict  FAIL  MI300X pack (--model; the output names MI350X), as probe rccl.all_reduce" in out
    assert "FAIL     RCCL all_reduce in-place busbw at largest size: 289.3 GB/s (fail if < 304)  [rccl.busbw]" in out
    assert "judged: 1 FAIL, 3 PASS" in out
    assert (
        "not applicable to this one output: 57 checks (56 read other probes; 1 compares with the pool's median)" in out
    )


def test_json_adds_verdict_and_findings_and_keeps_every_key(capsys: pytest.CaptureFixture[str]) -> None:
    code, obj = _json(capsys, "--model", "mi300x", str(DEGRADED_RCCL))
    assert code == 1
    before = to_json_object(parse_output(DEGRADED_RCCL.read_bytes()))
    assert {key: obj[key] for key in before} == before
    assert list(obj) == [*before, "verdict", "findings"]
    verdict = obj["verdict"]
    assert (verdict["model"], verdict["model_from"], verdict["status"]) == ("MI300X", "--model", "FAIL")
    assert (verdict["probes"], verdict["fragment"], verdict["counts"]) == (
        ["rccl.all_reduce"],
        False,
        {"FAIL": 1, "PASS": 3},
    )
    assert verdict["not_applicable"]["rccl.busbw_fleet"] == "compares with the pool's median"
    (failed,) = [f for f in obj["findings"] if f["status"] == "FAIL"]
    assert failed["check_id"] == "rccl.busbw"
    assert failed["evidence"]["observed"] == 289.27 and failed["evidence"]["probe"] == "rccl.all_reduce"


def test_healthy_rccl_passes_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _text(capsys, str(HEALTHY_RCCL), "--model", "MI300X")
    assert code == 0
    assert "verdict  PASS  MI300X pack (--model), as probe rccl.all_reduce" in out
    assert "judged: 4 PASS" in out


def test_the_model_the_output_names_is_judged_without_model(capsys: pytest.CaptureFixture[str]) -> None:
    code, obj = _json(capsys, str(MI355X_RCCL))
    assert code == 0
    assert (obj["verdict"]["model"], obj["verdict"]["model_from"]) == ("MI355X", "output")
    assert obj["verdict"]["named_models"] == ["MI355X"]
    # The degraded log names its MI350X, whose pack's floor (350 GB/s) it fails as well.
    code, out, _ = _text(capsys, str(DEGRADED_RCCL))
    assert code == 1 and "verdict  FAIL  MI350X pack (named by the output)" in out


def test_an_unknown_model_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _text(capsys, "--model", "MI999", str(HEALTHY_RCCL))
    assert (code, out) == (2, "")
    assert err == (
        "instinct-console parse: error: --model MI999: no check pack for it; "
        "the packs are MI210, MI250X, MI300A, MI300X, MI325X, MI350X, MI355X\n"
    )


def test_without_a_model_nothing_is_judged_and_the_exit_code_is_as_before(capsys: pytest.CaptureFixture[str]) -> None:
    xgmi = REAL / "amd-smi" / "xgmi-mi300x-8gpu-rocm610-kb.txt"  # names no model
    code, out, _ = _text(capsys, str(xgmi))
    assert code == 0 and "verdict  not judged: no GPU model known: the output names none" in out
    code, obj = _json(capsys, str(REAL / "amd-smi" / "static-asic-mi210-truncated-market-name.txt"))
    # It names MI200 (no pack) and MI210 (a pack since the corpus showed MI210 fleets): judged as MI210.
    assert code == 0 and (obj["verdict"]["model"], obj["verdict"]["model_from"]) == ("MI210", "output")
    code, obj = _json(capsys, str(REAL / "amd-smi" / "metric-usage-wrapped-list-rocm610.txt"))
    assert code == 0 and obj["findings"] == []
    assert obj["verdict"]["status"] is None
    assert obj["verdict"]["reason"] == "no GPU model known: the output names none; give --model to judge it"


def test_an_output_no_probe_reads_is_not_judged(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _text(capsys, "--model", "MI300X", str(REAL / "rocm-smi" / "concise-mi300x-8gpu-rocm642.txt"))
    assert code == 0 and "verdict  not judged: no check reads rocm-smi concise output" in out


def test_what_a_whole_output_was_not_asked_for_is_not_applicable(capsys: pytest.CaptureFixture[str]) -> None:
    # `amd-smi metric -p --json`: power only. The sweep's metric probe asks for ECC, PCIe and thermals too, and
    # there their absence is UNKNOWN; a paste of `-p` was not asked for them: said, and not judged.
    code, obj = _json(capsys, "--model", "MI300X", str(REAL / "amd-smi" / "metric-power-json-rocm610-list.json"))
    assert obj["verdict"]["not_applicable"]["ecc.uncorrectable"] == "not in this output (no ecc data)"
    assert "ecc.uncorrectable" not in {f["check_id"] for f in obj["findings"]}
    assert code == 0 and obj["verdict"]["status"] == "PASS"


# --- fragments ----------------------------------------------------------------------------------


def test_an_ecc_block_fragment_with_an_uncorrectable_error_fails(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _text(capsys, "--model", "MI300X", str(SDMA))
    assert code == 1
    assert "warning: read as a fragment: amd-smi text without its GPU header or section lines" in out
    assert "read as a fragment: only what it shows is judged" in out
    assert (
        "FAIL     a GPU the output does not number: Uncorrectable ECC errors: 1 (fail if > 0); a lower bound: the sum"
        " of the ECC blocks shown  [ecc.uncorrectable]" in out
    )


def test_an_ecc_block_fragment_under_every_limit_judges_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    # UMC's 2 correctable errors are a lower bound of the total: under the limit, it proves no pass.
    code, obj = _json(capsys, "--model", "MI300X", str(UMC))
    assert code == 3
    assert (obj["kind"], obj["summary"]["fragment"], obj["findings"]) == ("metric", True, [])
    assert obj["verdict"]["not_applicable"]["ecc.correctable"] == "not shown in the fragment"
    assert obj["data"]["gpus"][0]["ecc"]["blocks"][0] == {
        "block": "UMC",
        "correctable": 2,
        "uncorrectable": 0,
        "deferred": 0,
        "state": None,
    }


def test_an_rvs_json_log_tail_is_judged_for_its_records(capsys: pytest.CaptureFixture[str]) -> None:
    code, obj = _json(capsys, "--model", "MI300X", str(RVS_TAIL))
    assert code == 0
    assert (obj["tool"], obj["kind"], obj["summary"]["fragment"], obj["summary"]["pass_count"]) == (
        "rvs",
        "json",
        True,
        3,
    )
    assert obj["summary"]["modules"] == ["pbqt"]
    assert obj["verdict"]["probes"] == ["rvs.level3"] and obj["verdict"]["fragment"] is True
    assert [(f["check_id"], f["status"]) for f in obj["findings"]] == [("rvs.failures", "PASS")]
    # The tool's own success is not judged from a tail: the lines that would say otherwise are not in it.
    assert obj["verdict"]["not_applicable"]["rvs.ok"] == "not shown in the fragment"


def test_a_tail_starting_inside_a_record_says_what_it_did_not_read() -> None:
    text = RVS_TAIL.read_text()
    result = parse_output(text[text.index('"pass"') :])
    assert result.summary["pass_count"] == 2
    assert 'not read: 2 line(s) of a record the tail starts inside, from \'"pass" : "true"\'' in result.warnings


def test_a_grepped_static_output_names_its_model_and_is_judged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grepped = tmp_path / "static-grep.txt"
    grepped.write_text(_grep(STATIC_MI350X, "GPU:", "MARKET_NAME", "DEVICE_ID", "BAD_PAGE_THRESHOLD_EXCEEDED"))
    code, obj = _json(capsys, str(grepped))
    assert code == 0
    assert (obj["kind"], obj["summary"]["fragment"], obj["verdict"]["model"]) == ("static", True, "MI350X")
    assert [(f["check_id"], f["status"], f["evidence"]["observed"]) for f in obj["findings"]] == [
        ("inventory.device_id", "PASS", "0x75a0")
    ]
    # BAD_PAGE_THRESHOLD_EXCEEDED: N/A is no value: not judged in a fragment.
    assert obj["verdict"]["not_applicable"]["ras.bad_page_threshold"] == "not shown in the fragment"


def test_orphaned_keys_are_read_under_their_section() -> None:
    text = "GPU: 0\n        HOTSPOT: 91 °C\n        TOTAL_UNCORRECTABLE_COUNT: 0\nGPU: 1\n        HOTSPOT: 40 °C\n"
    result = parse_output(text)
    assert (result.kind, result.summary["fragment"]) == ("metric", True)
    verdict = judge_output(_mi300x(), result, probes_reading(result))
    hot = [(f.subject.gpu, f.status.value) for f in verdict.findings if f.check_id == "thermal.hotspot"]
    assert hot == [(0, "WARN"), (1, "PASS")]


@pytest.mark.parametrize("path", WHOLE_SAMPLES, ids=lambda p: p.name)
def test_whole_outputs_are_not_read_as_fragments(path: Path) -> None:
    try:
        result = parse_output(path.read_bytes())
    except ParseError:
        return
    assert "fragment" not in result.summary


def test_text_that_is_not_amd_smi_is_still_refused() -> None:
    for text in ("Hello: world\n", "NAME: x\nsome sentence without a colon\n", "--\n", "CPU: 0\n    POWER: 9 W\n"):
        with pytest.raises(ParseError):
            amdsmi.parse(text)


# --- the table of probes, held to the catalogue -------------------------------------------------

# A real output of each tool, for the catalogue's parsers (they force their probe's kind) to read.
_SAMPLE_OF_PROGRAM = {
    "amd-smi": STATIC_MI350X,
    "TransferBench": REAL / "transferbench" / "a2a-64M-8CU-mi300x-v160-full.txt",
    "all_reduce_perf": HEALTHY_RCCL,
    "rvs": REAL / "rvs" / "rvs-summary-mi355x-8gpu-rvs130-allpass.txt",
}


# Probes of a program whose one sample above is another subcommand's output.
_SAMPLE_OF_PROBE = {"amdsmi.cper": FIXTURES / "cper" / "ras-cper-folder-rocm71.txt"}


@pytest.mark.parametrize("spec", PROBES, ids=lambda spec: spec.id)
def test_each_catalogued_tool_probe_is_where_its_kind_is_filed(spec: Any) -> None:
    sample = _SAMPLE_OF_PROBE.get(spec.id) or _SAMPLE_OF_PROGRAM.get(spec.program)
    filed = {probe for probes in PROBES_OF_KIND.values() for probe in probes}
    if sample is None:
        assert spec.id not in filed  # a host probe: no tool output is filed under it
        return
    parsed = spec.parse(sample.read_text())
    assert isinstance(parsed, ParsedOutput)
    assert spec.id in PROBES_OF_KIND[(parsed.tool, parsed.kind)]


def test_xgmi_is_filed_under_the_probe_whose_table_it_holds() -> None:
    metric_table = parse_output((REAL / "amd-smi" / "xgmi-mi300x-8gpu-rocm610-kb.txt").read_bytes())
    assert probes_reading(metric_table) == ("amdsmi.xgmi",)
    # `amd-smi xgmi -l --json` as a GPU list (the form tests/probes/test_amdsmi_forms.py reads).
    rows = [["SELF", "U", "D"], ["U", "SELF", "U"], ["D", "U", "SELF"]]
    status = json.dumps([{"gpu": i, "bdf": f"0000:{i:02x}:00.0", "link_status": row} for i, row in enumerate(rows)])
    assert probes_reading(parse_output(status, tool=Tool.AMD_SMI, kind="xgmi")) == ("amdsmi.xgmi_status",)


# --- mangled input -------------------------------------------------------------------------------

_AMDSMI_TEXT = [p for p in sorted((REAL / "amd-smi").iterdir()) if p.suffix == ".txt"]


@FUZZ_SETTINGS
@given(mangled_outputs([UMC, SDMA]))
def test_mangled_amdsmi_fragments_never_crash(data: bytes) -> None:
    assert_total(amdsmi.parse, data.decode("utf-8", "replace"))


@FUZZ_SETTINGS
@given(mangled_outputs([RVS_TAIL]))
def test_mangled_rvs_tails_never_crash(data: bytes) -> None:
    assert_total(rvs.parse, data.decode("utf-8", "replace"))


@FUZZ_SETTINGS
@given(st.sampled_from(_AMDSMI_TEXT), st.data())
def test_any_grep_of_a_real_amdsmi_text_is_parsed_and_judged_or_refused(path: Path, data: st.DataObject) -> None:
    lines = path.read_text().splitlines(keepends=True)
    kept = data.draw(st.lists(st.booleans(), min_size=len(lines), max_size=len(lines)))
    text = "".join(line for line, keep in zip(lines, kept, strict=True) if keep)
    try:
        result = amdsmi.parse(text)
    except ParseError as exc:
        assert exc.reason
        return
    judged = judge_output(_mi300x(), result, probes_reading(result))
    assert all(f.evidence.observed is not None for f in judged.findings) or not judged.fragment
