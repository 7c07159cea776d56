"""rocm-smi and rocminfo renderers: layouts against the real samples, parser round-trips, fault evidence."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from console.probes import parse_output
from console.sim.faults import FaultKind
from console.sim.specs import GpuModel
from tests.sim.simcore_helpers import cluster, fault, run

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"


def lines_of(name: str) -> list[str]:
    return (REAL / name).read_text(encoding="utf-8").split("\n")


def test_concise_63_layout_matches_the_mi350x_sample() -> None:
    out = run(cluster(GpuModel.MI350X), "rocm-smi").stdout.split("\n")
    real = lines_of("rocm-smi/concise-mi350x-8gpu-rocm70.txt")
    assert len(out) == len(real)
    assert [len(line) for line in out] == [len(line) for line in real]
    assert out[:7] == real[:7], "banners and both header lines are identical"
    assert out[-3:] == real[-3:]
    row = re.compile(
        r"^[0-7] {7}[2-9] {5}0x75a0,   \d+ +\d\d\.0°C +2\d\d\.0W +NPS1, SPX, 0 +"
        r"1\d\dMhz  1900Mhz  0%   auto  1000\.0W  0% +0% +$"
    )
    assert all(row.match(line) for line in out[7:15]) and all(row.match(line) for line in real[7:15])


def test_concise_rows_join_kfd_nodes_and_guids() -> None:
    spec = cluster(GpuModel.MI300X)
    rows = run(spec, "rocm-smi").stdout.split("\n")[7:15]
    listing = run(spec, "amd-smi", "list").stdout
    for row in rows:
        device, node, _, guid = row.split()[:4]
        assert f"KFD_ID: {guid}\n    NODE_ID: {node}\n" in listing.split(f"GPU: {device}\n")[1]


def test_concise_60_layout_has_a_name_line_per_gpu() -> None:
    out = run(cluster(GpuModel.MI300X, "6.2.2"), "rocm-smi").stdout.split("\n")
    assert out[3] == "=" * 51 + " Concise Info " + "=" * 51
    assert out[4].startswith("Device  [Model : Revision]    Temp        Power     Partitions      SCLK    MCLK    Fan")
    assert out[5].startswith("        Name (20 chars)       (Junction)  (Socket)  (Mem, Compute)")
    assert re.match(
        r"^0       \[0x74a1 : 0x00\]       \d\d\.0°C      1\d\d\.0W    NPS1, SPX       "
        r"1\d\dMhz  900Mhz  0%   auto  750\.0W    0%   0%",
        out[7],
    )
    assert out[8].rstrip() == "        AMD Instinct MI300X" and len(out[8]) == len(out[7])


def test_mi250x_secondary_dies_have_no_power_sensor() -> None:
    out = run(cluster(GpuModel.MI250X), "rocm-smi").stdout
    assert "(Edge)  (Avg)" in out
    rows = [line for line in out.split("\n") if re.match(r"^\d ", line)]
    assert [("N/A" in row.split("  ")[5:9]) for row in rows] == [False, True] * 4
    assert rows[1].count("0.0W") == 1 and "AMD INSTINCT MI200 (" in out


def test_showid_layout_matches_the_sample() -> None:
    out = run(cluster(GpuModel.MI300X), "rocm-smi", "-i").stdout.split("\n")
    real = lines_of("rocm-smi/showid-mi300x-dpx-16part-NA.txt")
    assert out[:4] == real[:4]
    assert out[-3:] == real[-3:]
    assert out[4] == real[4] == "GPU[0]\t\t: Device Name: \t\tAMD Instinct MI300X"
    assert out[5:8] == real[5:8]
    assert re.match(r"^GPU\[0\]\t\t: GUID: \t\t\d+$", out[8])


def test_showtoponuma_and_all_sections() -> None:
    spec = cluster(GpuModel.MI355X)
    numa = run(spec, "rocm-smi", "--showtoponuma").stdout
    assert "=" * 39 + " Numa Nodes " + "=" * 39 in numa
    assert "GPU[7]\t\t: (Topology) Numa Node: 1\n" in numa
    every = run(spec, "rocm-smi", "-a").stdout
    for title in ("ID", "Temperature", "Power Consumption", "Firmware Information", "Product Info"):
        assert f" {title} " in every
    assert "GPU[0]\t\t: Max Graphics Package Power (W): 1400.0\n" in every
    assert "GPU[0]\t\t: SMC firmware version: \t128.69.0\n" in every


def test_rocm_smi_version_and_usage_error() -> None:
    spec = cluster(GpuModel.MI300X)
    assert run(spec, "rocm-smi", "--version").stdout == "ROCM-SMI version: 3.0.0+bd8bdb5\nROCM-SMI-LIB version: 7.5.0\n"
    assert run(spec, "rocm-smi", "--frob").exit_status == 2


def test_rocminfo_field_layout_matches_the_sample() -> None:
    out = run(cluster(GpuModel.MI300X), "rocminfo").stdout.split("\n")
    real = lines_of("rocminfo/rocminfo-mi300x-4gpu-2cpu.txt")
    assert out[0] == real[0] == "ROCk module is loaded"
    assert out[1:4] == real[1:4]
    gpu_start = out.index("  Name:                    gfx942                             ")
    real_start = real.index("  Name:                    gfx942                             ")
    same = ("Vendor Name", "Feature", "Profile", "Max Queue Number", "Queue Type", "Chip ID", "Compute Unit",
            "SIMDs per CU", "Shader Engines", "Coherent Host Access", "Features", "Wavefront Size")  # fmt: skip
    for key in same:
        ours = next(line for line in out[gpu_start:] if line.startswith(f"  {key}:"))
        theirs = next(line for line in real[real_start:] if line.startswith(f"  {key}:"))
        assert ours == theirs, key
    assert "      Name:                    amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-" in out
    assert out[-2] == real[-2] == "*** Done ***             "


def test_rocminfo_lists_cpus_then_gpus_in_kfd_order() -> None:
    out = run(cluster(GpuModel.MI300X), "rocminfo").stdout
    nodes = [int(node) for node in re.findall(r"^  Node:\s+(\d+)", out, re.MULTILINE)]
    assert nodes == list(range(10))
    bdfids = [int(value) for value in re.findall(r"^  BDFID:\s+(\d+)", out, re.MULTILINE)][2:]
    assert sorted(bdfid >> 8 for bdfid in bdfids) == [0x0C, 0x22, 0x38, 0x5C, 0x9F, 0xAF, 0xBF, 0xDF]


def _parse(text: str, module: str) -> Any:
    return parse_output(text)


@pytest.mark.parametrize("model", list(GpuModel))
@pytest.mark.parametrize(
    "argv", [("rocm-smi",), ("rocm-smi", "-i"), ("rocm-smi", "-a"), ("rocm-smi", "--showtoponuma")]
)
def test_rocm_smi_outputs_parse(model: GpuModel, argv: tuple[str, ...]) -> None:
    parsed = _parse(run(cluster(model), *argv).stdout, "rocmsmi")
    assert parsed.ok and parsed.summary["gpu_count"] == 8


@pytest.mark.parametrize("model", list(GpuModel))
def test_rocminfo_parses_with_the_node_identity(model: GpuModel) -> None:
    parsed = _parse(run(cluster(model), "rocminfo").stdout, "rocminfo")
    assert parsed.ok and parsed.summary["gpu_count"] == 8 and parsed.summary["cpu_count"] == 2
    amdsmi = run(cluster(model), "amd-smi", "list").stdout
    assert set(parsed.summary["bdfs"]) == set(re.findall(r"BDF: (\S+)", amdsmi))


def test_evidence_in_rocm_smi_and_rocminfo() -> None:
    missing = cluster(GpuModel.MI300X, faults=[fault(FaultKind.GPU_MISSING, gpu=5)])
    assert _parse(run(missing, "rocm-smi").stdout, "rocmsmi").summary["gpu_count"] == 7
    assert _parse(run(missing, "rocminfo").stdout, "rocminfo").summary["gpu_count"] == 7
    hot = cluster(GpuModel.MI300X, faults=[fault(FaultKind.THERMAL_THROTTLE, gpu=0)])
    assert _parse(run(hot, "rocm-smi").stdout, "rocmsmi").summary["max_temp_c"] >= 97
    capped = run(cluster(GpuModel.MI300X, faults=[fault(FaultKind.POWER_THROTTLE, gpu=2)]), "rocm-smi").stdout
    assert capped.count("525.0W") == 1 and capped.count("750.0W") == 7


def test_driver_not_loaded() -> None:
    spec = cluster(GpuModel.MI300X, faults=[fault(FaultKind.DRIVER_NOT_LOADED)])
    smi = run(spec, "rocm-smi")
    assert (smi.stdout, smi.stderr, smi.exit_status) == (
        "",
        "ERROR:root:Driver not initialized (amdgpu not found in modules)\n",
        0,
    )
    info = run(spec, "rocminfo")
    assert (info.stdout, info.exit_status) == ("ROCk module is NOT loaded, possibly no GPU devices\n", 1)
    parsed = _parse(info.stdout, "rocminfo")
    assert not parsed.ok
