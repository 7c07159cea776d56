"""amd-smi renderer: layouts against the real samples, parses with console.probes, and fault evidence."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.probes import parse_output
from console.sim.faults import BEHAVIOUR_KINDS, FaultKind, FaultScope, fault_scope
from console.sim.render.amdsmi_format import Fmt, Q, devices_text, dump_csv, flatten, resolve
from console.sim.specs import GpuModel
from tests.sim.simcore_helpers import cluster, fault, run

SAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "amd-smi"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# layout against the real samples


def test_usage_text_folds_long_lists_exactly_like_rocm_6() -> None:
    # The 6.1 sample's JPEG list is folded mid-value by PyYAML at 80 columns.
    out = run(cluster(GpuModel.MI300X, "6.2.2"), "amd-smi", "metric", "-u", "-g", "0").stdout
    assert out == sample("metric-usage-wrapped-list-rocm610.txt") + "\n"


def test_rocm7_text_does_not_fold() -> None:
    out = run(cluster(GpuModel.MI355X), "amd-smi", "metric", "-u", "-g", "0").stdout
    assert "        JPEG_ACTIVITY: [" + ", ".join(["0 %"] * 32) + "]\n" in out


def test_topology_matches_the_mi300x_sample_exactly() -> None:
    out = run(cluster(GpuModel.MI300X), "amd-smi", "topology").stdout
    assert out == sample("topology-mi300x-8gpu-rocm610-5tables.txt")


def test_firmware_text_matches_the_mi300x_sample() -> None:
    out = run(cluster(GpuModel.MI300X), "amd-smi", "firmware", "-g", "0").stdout
    assert out.rstrip("\n") + "\n" == sample("firmware-mi300x-gpu0.txt")


def test_bad_pages_text_matches_the_sample_blocks() -> None:
    out = run(cluster(GpuModel.MI300X), "amd-smi", "bad-pages", "-g", "0", "1").stdout
    blocks = [block.strip("\n ") for block in sample("bad-pages-mi300x-none.txt").split("\n \n")]
    assert out == "\n\n".join(blocks) + "\n\n\n"


def test_xgmi_metric_table_has_the_6x_columns() -> None:
    out = run(cluster(GpuModel.MI300X, "6.2.2"), "amd-smi", "xgmi").stdout.split("\n")
    real = sample("xgmi-mi300x-8gpu-rocm610-kb.txt").split("\n")
    assert out[:3] == real[:3], "title, header and first GPU row are identical"
    cell = re.compile(r"^ (Read {48}|Write {47})(N/A|\d+ KB)( +(N/A|\d+ KB)){7}$")
    assert all(cell.match(line) for line in out[3:5]) and all(cell.match(line) for line in real[3:5])
    assert [line[:7] for line in out] == [line[:7] for line in real]
    assert out[4][53:56] == "N/A" and out[4][53:56] == real[4][53:56]


def test_xgmi_from_rocm_64_adds_link_status_and_legend() -> None:
    out = run(cluster(GpuModel.MI300X), "amd-smi", "xgmi").stdout
    assert "\nLINK METRIC TABLE:\n" in out and "\nXGMI LINK STATUS:\n" in out
    assert re.search(r"^GPU0   0000:0c:00\.0  SELF {10}U {13}U", out, re.MULTILINE)
    assert out.endswith(
        "  U / D / X = Link is Up / Down / Disabled\n  Read / Write = GPU Metric Accumulated Read / Write\n"
    )


def test_xgmi_link_status_faults_print_na_or_leave_the_row_out() -> None:
    faults = [fault(FaultKind.XGMI_LINK_STATE_NA, 0, 2), fault(FaultKind.XGMI_STATUS_ROW_MISSING, 5)]
    out = run(cluster(GpuModel.MI300X, faults=faults), "amd-smi", "xgmi", "-l").stdout
    rows = {line.split()[0]: line.split()[2:] for line in out.splitlines() if re.match(r"^GPU\d ", line)}
    assert sorted(rows) == ["GPU0", "GPU1", "GPU2", "GPU3", "GPU4", "GPU6", "GPU7"]
    assert rows["GPU0"][2] == rows["GPU2"][0] == "N/A" and rows["GPU0"][1] == "U"
    # The metric table still counts the link's traffic: it works, amd-smi only cannot say its state.
    metric = json.loads(run(cluster(GpuModel.MI300X, faults=faults), "amd-smi", "xgmi", "--json").stdout)
    [gpu0] = [row for row in metric if row["gpu"] == 0]
    assert gpu0["link_metrics"]["links"][2]["read"]["value"] != "N/A"


def test_monitor_header_matches_the_mi350x_sample() -> None:
    out = run(cluster(GpuModel.MI350X), "amd-smi", "monitor", "-putm").stdout.split("\n")
    real = sample("monitor-putm-mi350x.txt").split("\n")
    assert out[0] == real[0]
    row = re.compile(r"^  \d  \d{3} W   1000 W   \d\d °C   \d\d °C   \d{3} MHz    0 %    0 %   1900 MHz$")
    assert all(row.match(line) for line in out[1:9]) and all(row.match(line) for line in real[1:9])


def test_monitor_6x_uses_the_long_column_names() -> None:
    header = run(cluster(GpuModel.MI250X), "amd-smi", "monitor", "-putm").stdout.split("\n")[0]
    assert header == "GPU  POWER  GPU_TEMP  MEM_TEMP  GFX_UTIL  GFX_CLOCK  MEM_UTIL  MEM_CLOCK"


def test_default_view_has_the_box_of_the_sample() -> None:
    out = run(cluster(GpuModel.MI300X, "7.0.2"), "amd-smi").stdout.split("\n")
    real = sample("default-view-mi300x-8gpu-rocm700.txt").split("\n")
    gpu_box = 7 + 3 * 8
    assert [len(line) for line in out[:gpu_box]] == [len(line) for line in real[:gpu_box]]
    assert out[2:7] == real[2:7] and out[gpu_box : gpu_box + 4] == real[gpu_box : gpu_box + 4]
    assert re.match(r"^\| 0000:0c:00\.0    AMD Instinct MI300X \| 0 %      \d\d °C   0 +\d{3}/750 W \|$", out[7])
    assert re.match(r"^\|   0       0       2        SPX/NPS1 \| 0 %        N/A +\d+/196592 MB \|$", out[8])
    assert out[gpu_box + 4 :] == ["|  No running processes found" + " " * 50 + "|", out[0], ""]


def test_static_text_keys_follow_the_rocm7_sample() -> None:
    out = run(cluster(GpuModel.MI350X), "amd-smi", "static", "-a", "-b", "-g", "0").stdout
    keys = re.findall(r"^ {8}(\w+):", out, re.MULTILINE)
    real = re.findall(r"^ {8}(\w+):", sample("static-subset-mi350x-gpu0-rocm7x-text.txt"), re.MULTILINE)
    asic_real = real[: real.index("BDF")]
    assert [key for key in asic_real if key != "FLAGS"] == keys[: len(asic_real) - 1]
    assert {"BDF", "MAX_PCIE_WIDTH", "MAX_PCIE_SPEED", "PCIE_INTERFACE_VERSION", "SLOT_TYPE"} <= set(keys)
    assert "        MAX_PCIE_SPEED: 32 GT/s\n" in out and "        TARGET_GRAPHICS_VERSION: gfx950\n" in out


def test_static_json_schema_follows_the_rocm7_sample() -> None:
    ours = json.loads(run(cluster(GpuModel.MI355X), "amd-smi", "static", "--json").stdout)
    real = json.loads(sample("static-json-mi210-rocm7-gpu_data-trimmed.json"))
    assert list(ours) == list(real) == ["gpu_data"] and len(ours["gpu_data"]) == 8
    mine, theirs = ours["gpu_data"][0], real["gpu_data"][0]
    for section in ("asic", "limit", "driver", "board", "vram"):
        assert set(theirs[section]) <= set(mine[section]), section
    assert set(theirs["clock"]) == set(mine["clock"])
    assert set(mine["clock"]["sys"]) == {"current level", "frequency_levels"}
    assert mine["limit"]["socket_power"] == {"value": 1400, "unit": "W"}
    assert mine["vram"]["size"] == {"value": 294912, "unit": "MB"}


def test_metric_power_json_follows_the_rocm6_list_schema() -> None:
    ours = json.loads(run(cluster(GpuModel.MI300X), "amd-smi", "metric", "-p", "--json").stdout)
    real = json.loads(sample("metric-power-json-rocm610-list.json"))
    assert isinstance(ours, list) and len(ours) == 8
    assert set(ours[0]) == set(real[0]) == {"gpu", "power"}
    assert set(ours[0]["power"]) == set(real[0]["power"])
    assert ours[0]["power"]["socket_power"]["unit"] == "W"


def test_version_line_per_rocm_line() -> None:
    assert run(cluster(GpuModel.MI300X), "amd-smi", "version").stdout == (
        "AMDSMI Tool: 25.4.2+aca1101 | AMDSMI Library version: 25.4.0 | ROCm version: 6.4.1\n"
    )
    assert run(cluster(GpuModel.MI355X), "amd-smi", "version").stdout == (
        "AMDSMI Tool: 26.0.2+2e9a2b2d | AMDSMI Library version: 26.0.2 | ROCm version: 7.0.2 | "
        "amdgpu version: 6.14.14 | amd_hsmp version: N/A\n"
    )
    payload = json.loads(run(cluster(GpuModel.MI355X), "amd-smi", "version", "--json").stdout)
    assert payload == [
        {
            "tool": "AMDSMI Tool",
            "version": "26.0.2+2e9a2b2d",
            "amdsmi_library_version": "26.0.2",
            "rocm_version": "7.0.2",
            "amdgpu_version": "6.14.14",
            "amd_hsmp_driver_version": "N/A",
        }
    ]


def test_driver_not_loaded_prints_the_init_errors() -> None:
    reply = run(cluster(GpuModel.MI355X, faults=[fault(FaultKind.DRIVER_NOT_LOADED)]), "amd-smi", "static", "--json")
    real = sample("no-gpu-detected-error-amdsmi2610-rocm711.txt").split("\n")
    assert reply.exit_status == 255
    assert reply.stdout == "AMDSMI Tool: 26.0.2+2e9a2b2d | AMDSMI Library version: 26.0.2 | ROCm version: 7.0.2\n"
    assert real[0].split(",")[0] in reply.stderr
    assert reply.stderr.startswith("ERROR:root:Unable to get devices, driver not initialized")


def test_usage_errors_go_to_stderr_with_exit_2() -> None:
    spec = cluster(GpuModel.MI300X, "6.2.2")
    assert run(spec, "amd-smi", "metric", "--violation").exit_status == 2, "6.2 had no violation counters"
    assert run(spec, "amd-smi", "frob").stderr.endswith("invalid choice: 'frob'\n")
    bad_gpu = run(spec, "amd-smi", "static", "-g", "9")
    assert bad_gpu.exit_status == 2 and "Invalid value: '9'" in bad_gpu.stderr


def test_gpu_selection_by_index_bdf_and_all() -> None:
    spec = cluster(GpuModel.MI300X)
    by_bdf = json.loads(run(spec, "amd-smi", "list", "--json", "-g", "0000:22:00.0", "3").stdout)
    assert [entry["gpu"] for entry in by_bdf] == [1, 3]
    assert len(json.loads(run(spec, "amd-smi", "list", "--json", "-g", "all").stdout)) == 8


# ---------------------------------------------------------------------------------------------
# the format helpers


def test_format_helpers_encode_leaves_per_format() -> None:
    tree: dict[str, Any] = {"power": {"socket_power": Q(140, "W"), "list": [Q(1, "%"), "N/A"]}, "gpu_name": "x"}
    assert resolve(tree, Fmt.JSON)["power"]["socket_power"] == {"value": 140, "unit": "W"}
    assert resolve(tree, Fmt.TEXT)["power"]["list"] == "[1 %, N/A]"
    assert flatten(resolve(tree, Fmt.CSV)) == {"socket_power": 140, "list": [1, "N/A"], "gpu_name": "x"}
    assert dump_csv([{"gpu": 0, "a": 1}, {"gpu": 1, "b": 2}]) == "gpu,a,b\r\n0,1,N/A\r\n1,N/A,2\r\n\n"
    assert (
        devices_text([(0, {"a": {"b": "c"}, "e": {}})], fold=False) == "GPU: 0\n    A:\n        B: c\n    E: N/A\n\n\n"
    )


# ---------------------------------------------------------------------------------------------
# parsing with console.probes


def _parse(text: str) -> Any:
    return parse_output(text)


PARSE_CASES = [
    (model, rocm, argv)
    for model, rocm in ((GpuModel.MI300X, "6.4.1"), (GpuModel.MI355X, "7.0.2"), (GpuModel.MI250X, "6.2.2"))
    for argv in (
        ("list", "--json"),
        ("static", "--json"),
        ("static",),
        ("static", "--csv"),
        ("metric", "--json"),
        ("metric",),
        ("metric", "--csv"),
        ("firmware", "--json"),
        ("firmware",),
        ("bad-pages", "--json"),
        ("xgmi", "--json"),
        ("xgmi",),
        ("topology",),
        ("monitor",),
        ("process", "--json"),
    )
]


@pytest.mark.parametrize(("model", "rocm", "argv"), PARSE_CASES, ids=str)
def test_every_output_parses(model: GpuModel, rocm: str, argv: tuple[str, ...]) -> None:
    parsed = _parse(run(cluster(model, rocm), "amd-smi", *argv).stdout)
    assert parsed.ok and parsed.errors == []
    assert parsed.kind == argv[0]
    assert parsed.summary["gpu_count"] == 8


def test_parsed_static_carries_the_node_identity() -> None:
    parsed = _parse(run(cluster(GpuModel.MI355X), "amd-smi", "static", "--json").stdout)
    identity = parsed.data.gpus[2].identity
    assert (identity.bdf, identity.device_id, identity.gfx_target) == ("0000:65:00.0", "0x75a3", "gfx950")
    assert identity.market_name == "AMD Instinct MI355X"


def test_parsed_version_carries_the_stack() -> None:
    parsed = _parse(run(cluster(GpuModel.MI355X), "amd-smi", "version").stdout)
    assert (parsed.data.versions.rocm, parsed.data.versions.amdgpu_driver) == ("7.0.2", "6.14.14")


# ---------------------------------------------------------------------------------------------
# fault evidence, read back through the parser


def _summary(
    kind: FaultKind, argv: tuple[str, ...], gpu: int | None = 3, peer: int | None = None, **params: Any
) -> Any:
    spec = cluster(GpuModel.MI300X, faults=[fault(kind, gpu=gpu, peer=peer, **params)])
    return _parse(run(spec, "amd-smi", *argv).stdout)


def test_evidence_xgmi_link_down() -> None:
    # ROCm 7 JSON and every text table carry U/D per link; 6.x metric reports the error status.
    assert _summary(FaultKind.XGMI_LINK_DOWN, ("xgmi",), gpu=1, peer=4).summary["links_down"] == 2
    spec = cluster(GpuModel.MI355X, faults=[fault(FaultKind.XGMI_LINK_DOWN, gpu=1, peer=4)])
    assert _parse(run(spec, "amd-smi", "xgmi", "--json").stdout).summary["links_down"] == 2
    spec = cluster(GpuModel.MI300X, faults=[fault(FaultKind.XGMI_LINK_DOWN, gpu=1, peer=4)])
    metric = json.loads(run(spec, "amd-smi", "metric", "-x", "-k", "--json").stdout)
    assert [gpu["xgmi_err"] for gpu in metric].count("AMDSMI_XGMI_STATUS_MULTIPLE_ERRORS") == 2
    assert metric[1]["ecc_blocks"]["XGMI_WAFL"]["correctable_count"] == 12


def test_evidence_xgmi_link_degraded() -> None:
    parsed = _summary(FaultKind.XGMI_LINK_DEGRADED, ("xgmi", "--json"), gpu=1, peer=4)
    assert parsed.summary["min_bit_rate_gbps"] == 16 and parsed.summary["links_down"] == 0


@pytest.mark.parametrize(
    ("kind", "key", "minimum"),
    [
        (FaultKind.ECC_UNCORRECTABLE, "uncorrectable_total", 2),
        (FaultKind.ECC_CORRECTABLE_STORM, "correctable_total", 2400),
        (FaultKind.THERMAL_THROTTLE, "max_hotspot_c", 97),
    ],
)
def test_evidence_in_metric(kind: FaultKind, key: str, minimum: float) -> None:
    assert _summary(kind, ("metric", "--json")).summary[key] >= minimum
    assert _summary(kind, ("metric",)).summary[key] >= minimum, "text shows it too"


def test_evidence_bad_pages_over_threshold() -> None:
    parsed = _summary(FaultKind.BAD_PAGES_OVER_THRESHOLD, ("bad-pages", "--json"))
    assert parsed.summary["bad_pages_total"] >= 128
    ras = json.loads(
        run(
            cluster(faults=[fault(FaultKind.BAD_PAGES_OVER_THRESHOLD, gpu=3)]), "amd-smi", "static", "-r", "--json"
        ).stdout
    )
    assert [gpu["ras"]["bad_page_threshold_exceeded"] for gpu in ras].count("TRUE") == 1


def test_evidence_gpu_missing() -> None:
    parsed = _summary(FaultKind.GPU_MISSING, ("list", "--json"))
    assert parsed.summary["gpu_count"] == 7
    assert "0000:5c:00.0" not in {gpu.identity.bdf for gpu in parsed.data.gpus}


def test_evidence_power_throttle_and_violation() -> None:
    static = _summary(FaultKind.POWER_THROTTLE, ("static", "-l", "--json"))
    assert static.data.details[3].power_cap_w == 525
    metric = json.loads(
        run(cluster(faults=[fault(FaultKind.POWER_THROTTLE, gpu=3)]), "amd-smi", "metric", "-v", "--json").stdout
    )
    assert metric[3]["throttle"]["ppt_violation_status"] == "ACTIVE"
    assert metric[3]["throttle"]["ppt_violation_activity"] == {"value": 42, "unit": "%"}


@pytest.mark.parametrize(
    ("kind", "field", "value"),
    [(FaultKind.PCIE_DOWNTRAINED_GEN, "speed_gts", 8.0), (FaultKind.PCIE_DOWNTRAINED_WIDTH, "width", 8)],
)
def test_evidence_pcie_downtraining(kind: FaultKind, field: str, value: float) -> None:
    parsed = _summary(kind, ("metric", "-P", "--json"))
    assert getattr(parsed.data.gpus[3].metrics.pcie, field) == value
    assert getattr(parsed.data.gpus[2].metrics.pcie, field) != value


def test_evidence_stack_drift() -> None:
    assert _summary(FaultKind.ROCM_DRIFT, ("version",), gpu=None).data.versions.rocm == "6.4.0"
    static = _summary(FaultKind.DRIVER_DRIFT, ("static", "-d", "--json"), gpu=None, amdgpu="6.10.5")
    assert {detail.driver_version for detail in static.data.details} == {"6.10.5"}
    firmware = _summary(FaultKind.FIRMWARE_DRIFT, ("firmware", "--json"))
    assert [gpu.firmware["PM"] for gpu in firmware.data.gpus].count("85.108.0") == 1


def test_evidence_driver_not_loaded() -> None:
    reply = run(cluster(faults=[fault(FaultKind.DRIVER_NOT_LOADED)]), "amd-smi", "list", "--json")
    parsed = _parse(reply.stderr + reply.stdout)
    assert not parsed.ok and any("Unable to detect any GPU devices" in error for error in parsed.errors)


# ---------------------------------------------------------------------------------------------
# any node, any fault: the sweep's amd-smi probes render and parse


SWEEP_PROBES = (("version",), ("list", "--json"), ("static", "--json"), ("metric", "--json"), ("firmware", "--json"),
                ("bad-pages", "--json"), ("xgmi", "--json"))  # fmt: skip
_BEHAVIOUR = BEHAVIOUR_KINDS  # they change how amd-smi answers, on purpose


@settings(max_examples=20, deadline=None, derandomize=True)
@given(
    model=st.sampled_from(list(GpuModel)),
    rocm=st.sampled_from(["6.2.2", "6.4.1", "7.0.2"]),
    kind=st.sampled_from(sorted(FaultKind)),
    pair=st.lists(st.integers(0, 7), min_size=2, max_size=2, unique=True),
    seed=st.integers(0, 2**16),
)
def test_any_faulted_node_renders_parsable_output(
    model: GpuModel, rocm: str, kind: FaultKind, pair: list[int], seed: int
) -> None:
    scope = fault_scope(kind)
    gpu = None if scope is FaultScope.NODE else pair[0]
    peer = pair[1] if scope is FaultScope.LINK else None
    spec = cluster(model, rocm, faults=[fault(kind, gpu=gpu, peer=peer)], seed=seed)
    for argv in SWEEP_PROBES:
        reply = run(spec, "amd-smi", *argv)
        if kind in _BEHAVIOUR or kind is FaultKind.DRIVER_NOT_LOADED:
            continue
        assert reply.exit_status == 0 and reply.stdout, (kind, argv)
        # static/metric parsing is slow and covered case by case above; the cheap kinds are parsed here.
        if argv[0] in ("version", "list", "xgmi", "bad-pages"):
            parsed = _parse(reply.stdout)
            assert parsed.ok and parsed.kind == argv[0], (kind, argv, parsed.errors)
