"""``static`` and ``metric`` through the amdsmi library: the same facts as the real outputs' own.

The library's values are read back from real ``amd-smi static --json`` (MI210, ROCm 7) and
``metric -p --json`` (ROCm 6.1) outputs in tests/fixtures, answered by a fake ``amdsmi`` module on this
test's own ``sys.path``, written as documents by ``console.probes.amdsmi.library_documents`` and parsed
by the same parser as the outputs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from console.model.amdsmi import AmdSmiResult
from console.model.base import WithUnavailable
from console.probes import Tool, parse_output
from console.probes.amdsmi.library import AmdSmiLibrary, LibraryCallError, open_library
from console.probes.amdsmi.library_documents import document
from tests.fake_amdsmi import fake_amdsmi_path, metric_values, static_values, write_fake_amdsmi

__all__ = ["fake_amdsmi_path"]  # the fixture, used by name

AMD = Path(__file__).parents[1] / "fixtures" / "real" / "amd-smi"
STATIC = json.loads((AMD / "static-json-mi210-rocm7-gpu_data-trimmed.json").read_text())["gpu_data"][0]
POWER = json.loads((AMD / "metric-power-json-rocm610-list.json").read_text())[0]
# The sections the library does not write (their modules say why): nothing the checks read.
NOT_WRITTEN = {"clock", "cache_info", "soc_pstate", "xgmi_plpd"}


def _result(text: str) -> AmdSmiResult:
    parsed = parse_output(text)
    assert parsed.tool is Tool.AMD_SMI and parsed.ok, parsed.errors
    assert isinstance(parsed.data, AmdSmiResult)
    return parsed.data


def _library(root: Path, gpus: list[dict[str, Any]], **kwargs: Any) -> AmdSmiLibrary:
    write_fake_amdsmi(root, gpus, **kwargs)
    library = open_library()
    assert isinstance(library, AmdSmiLibrary), library
    return library


def stated(model: WithUnavailable | None) -> dict[str, Any]:
    """The facts a model states (what it holds as unavailable or not at all is left out)."""
    assert model is not None
    return {k: v for k, v in model.model_dump(exclude={"unavailable"}).items() if v not in (None, [], {})}


def test_static_from_the_library_states_the_real_outputs_facts(fake_amdsmi_path: Path) -> None:
    from_command = _result(json.dumps([STATIC]))
    library = _library(fake_amdsmi_path, [static_values(STATIC)])
    from_library = _result(document(library, "static"))
    assert from_library.kind == from_command.kind == "static"
    got, want = from_library.gpus[0], from_command.gpus[0]
    assert stated(got.identity) == stated(want.identity)
    assert got.identity.device_id == "0x740f" and got.identity.compute_units == 104
    assert stated(got.bad_pages) == stated(want.bad_pages) == {"threshold": 655}
    details = stated(from_library.details[0])
    assert details == {k: v for k, v in stated(from_command.details[0]).items() if k != "clock_levels"}
    assert details["power_cap_w"] == 300 and details["max_pcie_speed_gts"] == 16 and details["vram_type"] == "HBM"
    assert (
        details["ecc_block_state"]["XGMI_WAFL"] == "DISABLED" and details["ras_schemas"]["poison_schema"] == "ENABLED"
    )
    # What the trimmed output leaves out, the library (answering "not supported" for it) states as N/A.
    assert got.identity.unavailable.get("bdf") == "N/A"


def test_static_threshold_exceeded_counts_the_retired_pages(fake_amdsmi_path: Path) -> None:
    values = static_values(STATIC)
    values["amdsmi_get_gpu_bad_page_threshold"] = 1
    pages = [{"address": 0x5C7E000 + i * 4096, "size": 4096, "status": "RESERVED"} for i in range(2)]
    library = _library(fake_amdsmi_path, [{**values, "amdsmi_get_gpu_bad_page_info": pages}])
    assert _result(document(library, "static")).gpus[0].bad_pages.threshold_exceeded is True  # type: ignore[union-attr]


def test_metric_power_from_the_library_is_the_real_outputs(fake_amdsmi_path: Path) -> None:
    from_command = _result(json.dumps([POWER]))
    library = _library(fake_amdsmi_path, [metric_values(POWER)])
    from_library = _result(document(library, "metric"))
    assert from_library.kind == "metric"
    got = from_library.gpus[0].metrics
    assert stated(got) == stated(from_command.gpus[0].metrics) == {"power_w": 10.0, "throttle_status": "UNTHROTTLED"}
    # The sections this power-only output lacks are not supported by this fake library: N/A, never 0.
    assert got is not None and got.unavailable.get("hotspot_temp_c") == "N/A"
    ecc = from_library.gpus[0].ecc
    assert ecc is not None and ecc.uncorrectable is None and ecc.unavailable.get("uncorrectable") == "N/A"


def _mi300x_metric() -> dict[str, Any]:
    """A metric entry as ``metric -m -p -t -P -e -x -v --json`` prints it on MI300X (the simulator's)."""
    return {
        "gpu": 0,
        "power": {"socket_power": {"value": 142, "unit": "W"}, "throttle_status": "N/A"},
        "temperature": {"edge": "N/A", "hotspot": {"value": 39, "unit": "C"}, "mem": {"value": 38, "unit": "C"}},
        "pcie": {
            "width": 16,
            "speed": {"value": 32, "unit": "GT/s"},
            "bandwidth": {"value": 206, "unit": "Mb/s"},
            "replay_count": 2,
            "l0_to_recovery_count": 0,
            "replay_roll_over_count": 0,
            "nak_sent_count": 0,
            "nak_received_count": 0,
        },
        "ecc": {
            "total_correctable_count": 5,
            "total_uncorrectable_count": 1,
            "total_deferred_count": 0,
            "cache_correctable_count": 1,
            "cache_uncorrectable_count": 0,
        },
        "xgmi_err": "AMDSMI_XGMI_STATUS_NO_ERRORS",
        "mem_usage": {"total_vram": {"value": 196608, "unit": "MB"}, "used_vram": {"value": 295, "unit": "MB"}},
        "throttle": {
            "accumulation_counter": 5271527,
            "ppt_accumulated": 12,
            "ppt_violation_status": "ACTIVE",
            "ppt_violation_activity": {"value": 3, "unit": "%"},
            "socket_thermal_violation_status": "NOT ACTIVE",
            "socket_thermal_violation_activity": {"value": 0, "unit": "%"},
        },
    }


def test_every_metric_section_the_checks_read_comes_through(fake_amdsmi_path: Path) -> None:
    entry = _mi300x_metric()
    from_command = _result(json.dumps([entry]))
    library = _library(fake_amdsmi_path, [metric_values(entry)])
    from_library = _result(document(library, "metric"))
    got, want = from_library.gpus[0], from_command.gpus[0]
    assert stated(got.metrics) == stated(want.metrics)
    assert stated(got.ecc) == stated(want.ecc)
    assert got.metrics is not None and got.metrics.pcie is not None
    assert (got.metrics.hotspot_temp_c, got.metrics.pcie.speed_gts, got.metrics.pcie.replay_count) == (39, 32, 2)
    assert got.metrics.xgmi_error_status == "none" and got.metrics.vram_total_bytes == 196608 * 1024 * 1024
    assert got.ecc is not None and (got.ecc.correctable, got.ecc.uncorrectable) == (5, 1)
    assert {v.name: (v.percent, v.active) for v in got.metrics.violations}["PVIOL"] == (3, True)


def test_not_supported_is_na_and_an_older_library_lacks_the_newer_calls(fake_amdsmi_path: Path) -> None:
    values = static_values(STATIC) | metric_values(_mi300x_metric())
    del values["amdsmi_get_gpu_asic_info"]  # "not supported" on this GPU
    missing = frozenset({"amdsmi_get_gpu_bad_page_threshold", "amdsmi_get_violation_status"})
    library = _library(fake_amdsmi_path, [values], missing=missing)
    static = _result(document(library, "static"))
    assert static.gpus[0].identity.device_id is None and static.gpus[0].identity.unavailable["device_id"] == "N/A"
    pages = static.gpus[0].bad_pages
    assert pages is not None and pages.threshold is None and pages.threshold_exceeded is None
    metrics = _result(document(library, "metric")).gpus[0].metrics
    assert metrics is not None and metrics.violations == [] and metrics.hotspot_temp_c == 39


def test_a_threshold_refused_without_root_is_na_as_the_command_prints_it(fake_amdsmi_path: Path) -> None:
    library = _library(fake_amdsmi_path, [static_values(STATIC)], raise_on={"amdsmi_get_gpu_bad_page_threshold": 10})
    pages = _result(document(library, "static")).gpus[0].bad_pages
    assert pages is not None and pages.threshold is None and pages.unavailable["threshold"] == "N/A"


@pytest.mark.parametrize(
    ("subcommand", "call"),
    [
        ("static", "amdsmi_get_temp_metric"),
        ("static", "amdsmi_get_gpu_asic_info"),
        ("static", "amdsmi_get_gpu_ras_feature_info"),
        ("metric", "amdsmi_get_gpu_total_ecc_count"),
        ("metric", "amdsmi_get_pcie_info"),
        ("metric", "amdsmi_get_violation_status"),
    ],
)
def test_a_call_that_fails_fails_the_whole_document(fake_amdsmi_path: Path, subcommand: str, call: str) -> None:
    values = static_values(STATIC) | metric_values(_mi300x_metric())
    library = _library(fake_amdsmi_path, [values], raise_on={call: 1})
    with pytest.raises(LibraryCallError, match=rf"{call} \(GPU 0\) raised AmdSmiLibraryException"):
        document(library, subcommand)


def test_values_of_an_unknown_shape_fail_rather_than_read_as_healthy(fake_amdsmi_path: Path) -> None:
    values = metric_values(_mi300x_metric())
    values["amdsmi_get_gpu_total_ecc_count"] = [0, 0, 0]  # not the dict this console knows
    library = _library(fake_amdsmi_path, [values])
    with pytest.raises(LibraryCallError, match=r"amdsmi_get_gpu_total_ecc_count .* returned list, not a dict"):
        document(library, "metric")


def test_partial_values_are_unavailable_never_zero(fake_amdsmi_path: Path) -> None:
    values = metric_values(_mi300x_metric())
    values["amdsmi_get_gpu_total_ecc_count"] = {"correctable_count": 0}  # the uncorrectable count missing
    values["amdsmi_gpu_xgmi_error_status"] = 7  # a status this console does not know
    values["amdsmi_get_pcie_info"]["pcie_metric"]["pcie_replay_count"] = "N/A"  # the library's max-uint N/A
    library = _library(fake_amdsmi_path, [values])
    gpu = _result(document(library, "metric")).gpus[0]
    assert gpu.ecc is not None and gpu.ecc.uncorrectable is None and "uncorrectable" in gpu.ecc.unavailable
    assert gpu.metrics is not None and gpu.metrics.xgmi_error_status is None
    assert "xgmi_error_status" in gpu.metrics.unavailable
    assert gpu.metrics.pcie is not None and gpu.metrics.pcie.replay_count is None


def _xgmi_values(result: AmdSmiResult, states: dict[tuple[int, int], str] | None = None) -> list[dict[str, Any]]:
    """The library's ports per GPU from a parsed ``xgmi`` output (one port per peer, counters in KB)."""
    gpus: list[dict[str, Any]] = []
    for gpu in result.gpus:
        src = gpu.identity.index
        mine = [link for link in result.xgmi_links if link.src_index == src]
        ports = [
            {
                "bdf": link.dst_bdf,
                "bit_rate": int(link.bit_rate_gbps or 0),
                "max_bandwidth": int(link.max_bandwidth_gbps or 0),
                "read": (link.read_bytes or 0) // 1024,
                "write": (link.write_bytes or 0) // 1024,
            }
            for link in mine
        ]
        values: dict[str, Any] = {
            "amdsmi_get_gpu_device_bdf": gpu.identity.bdf,
            "amdsmi_get_gpu_kfd_info": {"current_partition_id": 0},
            "amdsmi_get_link_metrics": {"num_links": len(ports), "links": ports},
        }
        if states is not None:
            status = [states.get((src or 0, link.dst_index or 0), "U") for link in mine]
            values["amdsmi_get_gpu_xgmi_link_status"] = {"status": status, "total_links": len(status)}
        gpus.append(values)
    return gpus


XGMI_TEXT = (AMD / "xgmi-mi300x-8gpu-rocm610-kb.txt").read_text()


def test_xgmi_from_the_library_is_the_real_outputs_links(fake_amdsmi_path: Path) -> None:
    from_command = _result(XGMI_TEXT)
    # ROCm 6.1's library has no link status call: the document has none, as that release's amd-smi.
    missing = frozenset({"amdsmi_get_gpu_xgmi_link_status"})
    library = _library(fake_amdsmi_path, _xgmi_values(from_command), missing=missing)
    from_library = _result(document(library, "xgmi"))
    assert from_library.kind == "xgmi" and len(from_library.xgmi_links) == 56
    assert from_library.xgmi_links == from_command.xgmi_links
    assert {link.bit_rate_gbps for link in from_library.xgmi_links} == {32}


def test_link_states_from_the_library_name_the_down_link(fake_amdsmi_path: Path) -> None:
    values = _xgmi_values(_result(XGMI_TEXT), states={(1, 4): "D", (4, 1): "D"})
    library = _library(fake_amdsmi_path, values)
    links = {
        (link.src_index, link.dst_index): link.status.value for link in _result(document(library, "xgmi -l")).xgmi_links
    }
    assert len(links) == 56 and links[(1, 4)] == links[(4, 1)] == "down"
    assert {state for pair, state in links.items() if pair not in ((1, 4), (4, 1))} == {"up"}


def test_a_secondary_partition_has_no_links(fake_amdsmi_path: Path) -> None:
    values = _xgmi_values(_result(XGMI_TEXT), states={})
    values[7]["amdsmi_get_gpu_kfd_info"] = {"current_partition_id": 1}  # GPU 7 as a CPX partition's second
    result = _result(document(_library(fake_amdsmi_path, values), "xgmi"))
    assert {gpu.identity.index for gpu in result.gpus} == set(range(7))
    assert 7 not in {i for link in result.xgmi_links for i in (link.src_index, link.dst_index)}


@pytest.mark.parametrize("call", ["amdsmi_get_link_metrics", "amdsmi_get_gpu_xgmi_link_status"])
def test_a_failed_link_call_fails_both_link_probes(fake_amdsmi_path: Path, call: str) -> None:
    values = _xgmi_values(_result(XGMI_TEXT), states={})
    library = _library(fake_amdsmi_path, values, raise_on={call: 1})
    for subcommand in ("xgmi", "xgmi -l"):
        with pytest.raises(LibraryCallError, match=rf"{call} \(GPU 0\) raised"):
            document(library, subcommand)


def test_a_port_without_its_state_fails_rather_than_read_as_no_link(fake_amdsmi_path: Path) -> None:
    values = _xgmi_values(_result(XGMI_TEXT), states={})
    values[2]["amdsmi_get_gpu_xgmi_link_status"]["status"].pop()  # 6 states for 7 ports
    library = _library(fake_amdsmi_path, values)
    with pytest.raises(LibraryCallError, match=r"\(GPU 2\) gave 6 states, amdsmi_get_link_metrics a port #7"):
        document(library, "xgmi -l")


def test_a_port_whose_state_is_na_is_unknown_never_up(fake_amdsmi_path: Path) -> None:
    """A peer reached by two ports, one up and one N/A, was written ``U``: up with one port unread."""
    values = _xgmi_values(_result(XGMI_TEXT), states={(2, 5): "N/A", (3, 6): "N/A"})
    ports = values[2]["amdsmi_get_link_metrics"]["links"]
    [to_gpu5] = [port for port in ports if port["bdf"] == "0000:af:00.0"]
    ports.append(dict(to_gpu5))  # a second port to GPU 5, its state up
    values[2]["amdsmi_get_gpu_xgmi_link_status"]["status"].append("U")
    library = _library(fake_amdsmi_path, values)
    links = {
        (link.src_index, link.dst_index): link.status.value for link in _result(document(library, "xgmi -l")).xgmi_links
    }
    assert links[(2, 5)] == links[(3, 6)] == "unknown"
    assert {state for pair, state in links.items() if pair not in ((2, 5), (3, 6))} == {"up"}
