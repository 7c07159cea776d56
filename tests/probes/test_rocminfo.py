"""rocminfo parser: the real MI300X output, failure outputs, mangled copies, CLI, and fuzzing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console.cli import main
from console.model.rocm import RocminfoReport
from console.probes import ParseError, Tool, parse_output, rocminfo
from console.probes.base import to_text
from tests.conftest import REAL
from tests.probes.fuzz import FUZZ_SETTINGS, assert_total, mangled_outputs
from tests.probes.test_rocmsmi import dotted

SAMPLE = REAL / "rocminfo" / "rocminfo-mi300x-4gpu-2cpu.txt"

NOT_LOADED = "ROCk module is NOT loaded, possibly no GPU devices\n"
HSA_FAILURE = """ROCk module is loaded
hsa api call failure at: /long_pathname_so_that_rpms_can_package_the_debug_info/src/rocminfo/rocminfo.cc:1306
Call returned HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources.
"""
# Newer runtimes: driver version on the status line, 'Runtime Ext Version', no padding left after a
# paste, an MI250X GCD with an empty marketing name and a GPU-XX placeholder UUID.
NEWER_PASTED = """ROCk module version 6.8.5 is loaded
=====================
HSA System Attributes
=====================
Runtime Version:         1.14
Runtime Ext Version:     1.6
System Timestamp Freq.:  1000.000000MHz
Machine Model:           LARGE
==========
HSA Agents
==========
*******
Agent 1
*******
  Name:                    AMD EPYC 7A53 64-Core Processor
  Uuid:                    CPU-XX
  Marketing Name:          AMD EPYC 7A53 64-Core Processor
  Node:                    0
  Device Type:             CPU
  Compute Unit:            128
*******
Agent 2
*******
  Name:                    gfx90a
  Uuid:                    GPU-XX
  Marketing Name:
  Vendor Name:             AMD
  Node:                    4
  Device Type:             GPU
  Cache Info:
    L1:                      16(0x10) KB
    L2:                      8192(0x2000) KB
  Chip ID:                 29704(0x7408)
  BDFID:                   54784
  Compute Unit:            110
  Pool Info:
    Pool 1
      Segment:                 GLOBAL; FLAGS: COARSE GRAINED
      Size:                    67092480(0x3ffc000) KB
  ISA Info:
    ISA 1
      Name:                    amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-
*** Done ***
"""


def _read() -> str:
    return SAMPLE.read_text(encoding="utf-8")


def _report(text: str | bytes) -> RocminfoReport:
    data = parse_output(text, tool=Tool.ROCMINFO).data
    assert isinstance(data, RocminfoReport)
    return data


def test_real_mi300x_output() -> None:
    result = parse_output(_read(), tool=Tool.ROCMINFO)
    assert (result.tool, result.kind, result.ok, result.errors) == (Tool.ROCMINFO, "agents", True, [])
    assert result.summary == {
        "gpu_count": 4,
        "cpu_count": 2,
        "gfx_targets": ["gfx942"],
        "market_names": ["AMD Instinct MI300X"],
        "compute_units": [304],
        "bdfs": ["0000:26:00.0", "0000:46:00.0", "0000:65:00.0", "0000:85:00.0"],
        "runtime_version": "1.1",
        "rock_module_loaded": True,
    }
    assert result.tool_version == "1.1"


# (dotted path into the report, value read from the real file)
REAL_FIELDS: list[tuple[str, Any]] = [
    ("system['Machine Model']", "LARGE"),
    ("system['DMAbuf Support']", "YES"),
    ("versions.hsa_runtime", "1.1"),
    ("cpus[0].agent", 1),
    ("cpus[1].agent", 2),
    ("cpus[0].name", "AMD EPYC 9474F 48-Core Processor"),
    ("cpus[1].node", 1),
    ("cpus[0].compute_units", 96),
    ("cpus[0].max_clock_mhz", 3600.0),
    ("cpus[0].cache_bytes", {"L1": 32768 * 1024}),
    ("cpus[1].pools[0].size_bytes", 1188954608 * 1024),
    ("cpus[0].pools[1].flags", ["KERNARG", "FINE GRAINED"]),
    ("cpus[0].isas", []),
    ("gpus[0].agent", 3),
    ("gpus[0].gpu.identity.uuid", "GPU-8d1457e2c20f59d2"),
    ("gpus[3].gpu.identity.uuid", "GPU-eff71edc82169115"),
    ("gpus[0].gpu.identity.kfd_node", 2),
    ("gpus[3].gpu.identity.kfd_node", 5),
    ("gpus[0].gpu.identity.device_id", "0x74a1"),
    ("gpus[0].gpu.identity.bdf", "0000:26:00.0"),  # BDFID 9728 = 0x2600
    ("gpus[1].gpu.identity.bdf", "0000:46:00.0"),  # BDFID 17920
    ("gpus[0].gpu.identity.gfx_target", "gfx942"),
    ("gpus[0].gpu.identity.compute_units", 304),
    ("gpus[0].gpu.identity.market_name", "AMD Instinct MI300X"),
    ("gpus[0].gpu.metrics.vram_total_bytes", 201310208 * 1024),
    ("gpus[0].max_clock_mhz", 2100.0),
    ("gpus[0].simds_per_cu", 4),
    ("gpus[0].shader_engines", 32),
    ("gpus[0].wavefront_size", 64),
    ("gpus[0].cache_bytes", {"L1": 32 * 1024, "L2": 32768 * 1024, "L3": 262144 * 1024}),
    ("gpus[0].pools[3].segment", "GROUP"),
    ("gpus[0].pools[3].size_bytes", 64 * 1024),
    ("gpus[0].pools[0].accessible_by_all", False),
    ("gpus[0].isas", ["amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"]),
    ("gpus[0].properties['WatchPts on Addr. Ranges']", "4"),
    ("gpus[0].properties['Packet Processor uCode']", "138"),
    ("gpus[0].properties['Features']", "KERNEL_DISPATCH"),
]


@pytest.mark.parametrize(("path", "expected"), REAL_FIELDS, ids=[p for p, _ in REAL_FIELDS])
def test_real_output_fields(path: str, expected: Any) -> None:
    assert dotted(_report(_read()), path) == expected


# (input, ok, errors, summary subset)
OUTCOMES: list[tuple[str, bool, list[str], dict[str, Any]]] = [
    (NOT_LOADED, False, [NOT_LOADED.strip()], {"gpu_count": 0, "rock_module_loaded": False}),
    (
        HSA_FAILURE,
        False,
        HSA_FAILURE.strip().splitlines()[1:],
        {"gpu_count": 0, "rock_module_loaded": True},
    ),
    (
        NEWER_PASTED,
        True,
        [],
        {"gpu_count": 1, "cpu_count": 1, "gfx_targets": ["gfx90a"], "bdfs": ["0000:d6:00.0"], "compute_units": [110]},
    ),
]


@pytest.mark.parametrize(("text", "ok", "errors", "summary"), OUTCOMES, ids=["not-loaded", "hsa-error", "newer"])
def test_outcomes(text: str, ok: bool, errors: list[str], summary: dict[str, Any]) -> None:
    result = parse_output(text, tool=Tool.ROCMINFO)
    assert (result.ok, result.errors) == (ok, errors)
    assert {key: result.summary[key] for key in summary} == summary


def test_newer_runtime_fields_and_placeholders() -> None:
    report = _report(NEWER_PASTED)
    assert report.versions.amdgpu_driver == "6.8.5"
    assert report.runtime_ext_version == "1.6"
    identity = report.gpus[0].gpu.identity
    assert identity.uuid is None and identity.unavailable["uuid"] == "GPU-XX (no unique id)"
    assert identity.market_name is None and identity.unavailable["market_name"] == "'Marketing Name' empty in rocminfo"
    assert identity.device_id == "0x7408"
    assert report.gpus[0].gpu.metrics is not None
    assert report.gpus[0].gpu.metrics.vram_total_bytes == 67092480 * 1024
    assert report.gpus[0].cache_bytes == {"L1": 16 * 1024, "L2": 8192 * 1024}


def test_truncated_run_is_not_ok_but_keeps_what_it_read() -> None:
    text = _read()
    cut = text[: text.index("Agent 5")]
    result = parse_output(cut, tool=Tool.ROCMINFO)
    assert not result.ok
    assert result.errors == ["output ends before '*** Done ***': rocminfo did not finish"]
    assert (result.summary["gpu_count"], result.summary["cpu_count"]) == (2, 2)


def test_lost_indentation_padding_crlf_and_srun_labels_do_not_change_the_result() -> None:
    expected = _report(_read()).model_dump()
    flattened = "\r\n".join(f"0: {line.strip()}" for line in _read().split("\n"))
    assert _report(flattened.encode()).model_dump() == expected


def test_detection() -> None:
    for text, confidence in ((_read(), 0.95), (NOT_LOADED, 0.95), (NEWER_PASTED, 0.95)):
        found = rocminfo.detect(text)
        assert found is not None and (found.tool, found.kind, found.confidence) == (Tool.ROCMINFO, "agents", confidence)
    headless = _read().split("\n", 1)[1]  # status line cut off: the banners still say rocminfo
    found = rocminfo.detect(headless)
    assert found is not None and found.confidence == 0.9


@pytest.mark.parametrize("text", ["", "hello\n", "Name: gfx942\nCompute Unit: 304\n", "GPU[0]\t\t: GUID: 1\n"])
def test_unrelated_text_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="expected rocminfo output"):
        parse_output(text, tool=Tool.ROCMINFO)
    assert rocminfo.detect(text) is None


def test_unknown_kind_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="unknown rocminfo kind"):
        parse_output(_read(), tool=Tool.ROCMINFO, kind="static")


def test_detection_across_all_parsers_picks_rocminfo() -> None:
    assert parse_output(_read()).tool is Tool.ROCMINFO


def test_cli_json_exit_codes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["parse", str(SAMPLE), "--as", "rocminfo", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert (obj["tool"], obj["ok"], obj["summary"]["gpu_count"]) == ("rocminfo", True, 4)
    assert obj["data"]["gpus"][2]["gpu"]["identity"]["bdf"] == "0000:65:00.0"

    failed = tmp_path / "failed.txt"
    failed.write_text(NOT_LOADED)
    assert main(["parse", str(failed), "--as", "rocminfo", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["errors"] == [NOT_LOADED.strip()]

    junk = tmp_path / "junk.txt"
    junk.write_text("nothing here\n")
    assert main(["parse", str(junk), "--as", "rocminfo", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "expected rocminfo output" in captured.err


@pytest.fixture(scope="session")
def fuzz_samples(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The real sample plus the inline failure and newer-runtime outputs, as files."""
    folder = tmp_path_factory.mktemp("rocminfo-inline")
    for name, text in (("not-loaded", NOT_LOADED), ("hsa", HSA_FAILURE), ("newer", NEWER_PASTED)):
        (folder / name).write_text(text, encoding="utf-8")
    return [SAMPLE, *sorted(folder.iterdir())]


@FUZZ_SETTINGS
@given(data=st.data(), kind=st.sampled_from([None, rocminfo.KIND]))
def test_any_input_gives_a_result_or_a_parse_error(
    fuzz_samples: list[Path], data: st.DataObject, kind: str | None
) -> None:
    assert_total(rocminfo.parse, to_text(data.draw(mangled_outputs(fuzz_samples))), kind)


def test_cli_prints_node_text_verbatim_not_as_emoji(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Rich reads ':ab:' as the AB-button emoji code: a BDF on bus 0xab must print as it is.
    path = tmp_path / "rocminfo.txt"
    path.write_text(SAMPLE.read_text(encoding="utf-8").replace("BDFID:                   9728", "BDFID:        43776"))
    assert main(["parse", str(path)]) == 0
    out = capsys.readouterr().out
    assert "0000:ab:00.0" in out and "\N{NEGATIVE SQUARED AB}" not in out
