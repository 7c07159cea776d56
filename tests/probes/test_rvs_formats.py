"""RVS formats the real samples do not cover: failures, RVS 1.6 layouts, other modules, JSON logs, log mangling.

The texts follow the layouts of RVS's user guide and issue reports (summary box with FAIL rows,
1-GPU grid rows, padded gpu ids, babel tables, old ``rvs -g``), trimmed to the lines under test.
"""

from __future__ import annotations

import pytest

from console.model.rvs import RvsGpuResult, RvsResult
from console.probes import ParsedOutput, ParseError
from console.probes import rvs as rvs_probe


def _parse(text: str, kind: str | None = None) -> tuple[ParsedOutput, RvsResult]:
    result = rvs_probe.parse(text, kind)
    assert isinstance(result.data, RvsResult)
    return result, result.data


def _metric(data: RvsResult, metric: str) -> list[RvsGpuResult]:
    return [r for r in data.results if r.metric == metric]


FAILED_RUN = """\
+=====================================================================+
|                 ROCm Validation Suite (RVS) Summary                 |
+=====================================================================+
|                           System Overview                           |
+---------------------------------------------------------------------+
| Operating System                 | Debian GNU/Linux 12              |
| RVS version                      | 1.3.0                            |
| ROCm version                     | 7.2.0-43                         |
| amdgpu version                   | N/A                              |
| GPUs                             | 2                                |
+---------------------------------------------------------------------+
| GPU Name - GPU ID                |                                  |
| ID - Node ID - BDF               |                                  |
+---------------------------------------------------------------------+
| AMD Instinct MI210 - 20068       | AMD Instinct MI210 - 48932       |
| 0 - 1 - 0000:01:00.0             | 1 - 2 - 0000:02:00.0             |
+=====================================================================+
| Action Name                      | Module         | Result          |
+=====================================================================+
| action_1                         | GPUP           | PASS            |
| action_5                         | IET            | FAIL            |
| action_6                         | GST            | FAIL            |
+---------------------------------------------------------------------+
[RESULT] [   521.259539] [module_terminate] PCIe monitoring ended after wait duration.

[RESULT] [   365.420863] [action_5] [GPU:: 48932] Power(W) 77.000000
[RESULT] [   365.504184] [action_5] [GPU:: 48932] pass: FALSE
RVS-ERROR [iet] [action_5] Action failed to run successfully.
"""


def test_summary_with_fail_rows_and_lines_after_the_box() -> None:
    result, data = _parse(FAILED_RUN)
    assert (result.kind, result.ok) == ("summary", False)
    assert (result.summary["pass_count"], result.summary["fail_count"], result.summary["gpu_count"]) == (1, 2, 2)
    assert result.errors == [
        "RVS-ERROR [iet] [action_5] Action failed to run successfully.",
        "[RESULT] [   365.504184] [action_5] [GPU:: 48932] pass: FALSE",
        "| action_5                         | IET            | FAIL            |",
        "| action_6                         | GST            | FAIL            |",
    ]
    assert data.overview is not None
    assert data.overview.amdgpu_version is None
    assert data.overview.unavailable == {"amdgpu_version": "N/A"}
    assert {a.name: a.passed for a in data.actions} == {"action_5": False, "action_1": True, "action_6": False}
    assert data.bdf_of(48932) == "0000:02:00.0"


RVS16_GST_WITH_BOX = """\
    [RESULT] [301995.91241 ] Action name :gst-Tflops-2K2K2K-trig-fp4
    [RESULT] [301995.175394] Module name :gst
    [RESULT] [301995.794012] [gst-Tflops-2K2K2K-trig-fp4] [GPU:: 42583] Start of GPU ramp up
    [RESULT] [302017.167195] [gst-Tflops-2K2K2K-trig-fp4] [GPU:: 42583] GFLOPS 1063560 Target GFLOPS: 0 met: TRUE
    [RESULT] [302017.168168] [gst-Tflops-2K2K2K-trig-fp4] [GPU::  1590] Start of GPU ramp up
    [RESULT] [302022.421856] [gst-Tflops-2K2K2K-trig-fp4] [GPU::  1590] GFLOPS 536870

    +=====================================================================+
    |                 ROCm Validation Suite (RVS) Summary                 |
    +=====================================================================+
    | RVS version                      | 1.6.75                           |
    | GPUs                             | 3                                |
    +---------------------------------------------------------------------+
    | AMD Instinct MI355X - 42583      | AMD Instinct MI355X - 27226      |
    | 0 - 2 - 0000:05:00.0             | 1 - 3 - 0000:15:00.0             |
    +---------------------------------------------------------------------+
    | AMD Instinct MI355X - 1590       |                                  |
    | 4 - 6 - 0000:85:00.0             |                                  |
    +=====================================================================+
    | Action Name                      | Module         | Result          |
    +=====================================================================+
    | gst-Tflops-2K2K2K-trig-fp4       | GST            | PASS            |
    +---------------------------------------------------------------------+
"""


def test_single_module_run_with_box_keeps_module_kind_and_flags_a_gpu_without_verdict() -> None:
    result, data = _parse(RVS16_GST_WITH_BOX)
    assert (result.kind, result.tool_version) == ("gst", "1.6.75")
    assert [(g.gpu_id, g.index, g.node_id, g.bdf) for g in data.gpus] == [
        (42583, 0, 2, "0000:05:00.0"),
        (27226, 1, 3, "0000:15:00.0"),
        (1590, 4, 6, "0000:85:00.0"),
    ]
    # GPU 1590 ramped up and measured but its met: line is not in the text, while the box RVS prints after every
    # verdict judges the action PASS: the line was lost from the paste, not from the run. Said, never judged.
    assert result.ok is True and result.errors == []
    assert result.warnings == [
        "lost in the paste: gst action gst-Tflops-2K2K2K-trig-fp4 printed no result for GPU 1590"
        " (the summary box judges the action PASS)"
    ]
    assert result.summary["min_gflops"] == 1063560.0


def test_summary_box_cut_inside_its_action_table() -> None:
    cut = FAILED_RUN[: FAILED_RUN.index("| action_5")]
    result, data = _parse(cut)
    assert (result.kind, result.ok) == ("gpup", False)  # the one action that made it is all the box shows
    assert result.errors == ["incomplete: the summary box ends before its action table does"]
    assert [a.name for a in data.actions] == ["action_1"]


def test_multi_module_run_without_box_is_incomplete_only_when_rvs_prints_boxes() -> None:
    lines = [
        "[RESULT] [1.0] Action name :a1",
        "[RESULT] [1.1] Module name :gpup",
        "[RESULT] [1.2] [a1] gpup 42583 simd_count 1024",
        "[RESULT] [1.3] [a1] gpup 57875 7 weight 15",
        "[RESULT] [2.0] Action name :a2",
        "[RESULT] [2.1] Module name :peqt",
        "[RESULT] [2.2] [a2] peqt true",
    ]
    new, _ = _parse("\n".join(["ROCm Validation Suite (version 1.3.0)", *lines]))
    assert (new.kind, new.ok) == ("summary", False)
    assert new.errors == ["incomplete: a multi-module run without the final summary box (hung or killed?)"]
    # Console logs seldom name the version, and RVS before 1.3 never prints a box: judge by verdicts only.
    result, data = _parse("\n".join(lines))
    assert (result.kind, result.ok, result.errors) == ("summary", True, [])
    simd, weight = _metric(data, "simd_count")[0], _metric(data, "weight")[0]
    assert (simd.value, simd.gpu and simd.gpu.gpu_id) == (1024.0, 42583)
    assert (weight.value, weight.label) == (15.0, "io_link 7")
    old, _ = _parse("\n".join(["ROCm Validation Suite (version 0.0.60202)", *lines]))
    assert (old.ok, old.errors) == (True, [])


def test_pebb_lines_padded_ids_pending_and_not_measured() -> None:
    text = "\n".join(
        [
            "[RESULT] [302349.671846] [pcie_h2d] pcie-bandwidth [CPU:: 0] [GPU:: 6 -  1590 - 0000:85:00.0] "
            "distance:52 PCIe:52",
            "[RESULT] [302379.847449] [pcie_h2d] pcie-bandwidth [ 9/16] [CPU:: 0] [GPU:: 6 -  1590 - 0000:85:00.0] "
            "h2d::true d2h::false 57.708 GBps duration: 0.204669 secs",
            "[INFO  ] [302379.8475  ] [pcie_h2d] pcie-bandwidth [10/16] [CPU:: 1] [GPU:: 6 -  1590 - 0000:85:00.0] "
            "h2d::true d2h::false (pending)",
            "[RESULT] [302380.1     ] [pcie_h2d] pcie-bandwidth [11/16] [CPU:: 1] [GPU:: 6 -  1590 - 0000:85:00.0] "
            "h2d::true d2h::true (not measured) duration: 0 secs",
        ]
    )
    result, data = _parse(text)
    assert (result.kind, result.ok) == ("pebb", True)
    (distance,) = _metric(data, "distance")
    assert (distance.value, distance.hop, distance.cpu_node) == (52.0, "PCIe:52", 0)
    measured, unmeasured = _metric(data, "bandwidth")
    assert (measured.value, measured.direction, measured.transfer, measured.duration_s) == (
        57.708,
        "h2d",
        "9/16",
        0.204669,
    )
    assert measured.gpu is not None and (measured.gpu.node_id, measured.gpu.gpu_id) == (6, 1590)
    assert (unmeasured.value, unmeasured.unavailable, unmeasured.direction) == (
        None,
        {"value": "(not measured)"},
        "h2d+d2h",
    )
    (pending,) = _metric(data, "bandwidth_sample")
    assert pending.unavailable == {"value": "(pending)"}
    assert result.warnings == [text.splitlines()[3]]
    assert result.summary["min_bandwidth_gbps"] == 57.708


BABEL = """\
[RESULT] [302411.15197 ] Action name :babel-double-825MiB
[RESULT] [302411.96856 ] Module name :babel
[RESULT] [302411.735270] [babel-double-825MiB] [GPU:: 42583] Starting the Babel memory stress test
[RESULT] [302411.735337] Running kernels 2000 times, Precision: double

[RESULT] [302446.903905]
---------------------------------------------------------------------------------
GPU Id      Function    MBytes/sec     Max MB/s       Min MB/s       Avg MB/s
---------------------------------------------------------------------------------
42583       Read        7090191.900    7090191.900    6638148.386    7019091.298
42583       Copy        6224488.986    6224488.986    6037686.546    6150313.849
"""


def test_babel_table_in_megabytes_is_read_in_gigabytes_per_second() -> None:
    result, data = _parse(BABEL)
    assert (result.kind, result.ok) == ("babel", True)
    rates = {r.label: r.value for r in _metric(data, "bandwidth")}
    assert rates == {"Read": pytest.approx(7090.1919), "Copy": pytest.approx(6224.488986)}
    mib = BABEL.replace("MBytes/sec", "MiBytes/sec")
    _, mib_data = _parse(mib)
    assert _metric(mib_data, "bandwidth")[0].value == pytest.approx(7090191.9 * 2**20 / 1e9)


def test_babel_started_without_table_and_validation_failure() -> None:
    cut = "\n".join(BABEL.splitlines()[:4])
    result, _ = _parse(cut)
    assert result.errors == ["incomplete: babel action babel-double-825MiB printed no result for GPU 42583"]
    broken, _ = _parse(BABEL + "Validation failed on a[]. Average error 0.5\n")
    assert (broken.ok, broken.errors) == (False, ["Validation failed on a[]. Average error 0.5"])


def test_mem_test_fail_fails_the_run() -> None:
    text = "\n".join(
        [
            "[RESULT] [302697.357999] Action name :action_1",
            "[RESULT] [302697.415572] Module name :mem",
            "[RESULT] [302697.637264] [action_1] mem   The following memory tests will run",
            "[RESULT] [302697.895754] [action_1] mem Test 1 : PASS",
            "[RESULT] [302697.900155] [action_1] mem Test 2 : FAIL",
            "[RESULT] [302732.976817] [action_1] mem Test 11: elapsedtime = 1986.538940 bandwidth = 6443.431641GB/s",
        ]
    )
    result, data = _parse(text)
    assert (result.kind, result.ok) == ("mem", False)
    assert result.errors == ["[RESULT] [302697.900155] [action_1] mem Test 2 : FAIL"]
    assert [(r.label, r.passed) for r in _metric(data, "verdict")] == [("Test 1", True), ("Test 2", False)]
    assert (result.summary["pass_count"], result.summary["fail_count"]) == (1, 1)


@pytest.mark.parametrize(
    ("line", "module"),
    [
        ("[RESULT] [1.0] [act] [GPU:: 28851] pass: FALSE", None),
        ("[RESULT] [1.0] [act]  smqt 3254 pass: false", "smqt"),
        ("[RESULT] [1.0] [act] gm 28851 power violations 3", "gm"),
        ("[RESULT] [1.0] [pcie_act_6] peqt false", "peqt"),
        ("[RESULT] [1.0] [act] [GPU:: 1] GFLOPS 5189 Target GFLOPS: 5000 met: FALSE", "gst"),
    ],
)
def test_each_failure_token_fails_the_run(line: str, module: str | None) -> None:
    result, data = _parse(line)
    assert (result.ok, result.errors) == (False, [line])
    assert data.results[-1].passed is False
    assert data.results[-1].module == module


def test_unknown_module_failure_is_still_a_failure() -> None:
    line = "[RESULT] [1.0] [act] newmodule something happened pass: FALSE"
    result, _ = _parse(line + "\n[RESULT] [1.1] [act] [GPU:: 7] pass: TRUE")
    assert (result.ok, result.errors) == (False, [line])


def test_tst_temperatures_and_verdict_use_the_module_header() -> None:
    text = "\n".join(
        [
            "[RESULT] [10.0] Action name :tst-1",
            "[RESULT] [10.1] Module name :tst",
            "[INFO  ] [20.0] [tst-1] tst GPU 55354 max. junction temperature : 95.000000",
            "[RESULT] [20.1] [tst-1] [GPU:: 55354] pass: TRUE",
        ]
    )
    result, data = _parse(text)
    assert (result.kind, result.ok) == ("tst", True)
    assert [(r.metric, r.value, r.unit, r.module) for r in data.results] == [
        ("max_junction_temp_c", 95.0, "C", "tst"),
        ("verdict", None, None, "tst"),
    ]


def test_pesm_changes_and_rcqt_counters() -> None:
    pesm, pesm_data = _parse(
        "[action_1] 33367 PCIe link speed changed 8 GT/s\n[action_1] 3254 PCIe power state changed D0"
    )
    assert pesm.kind == "pesm"
    assert [(r.metric, r.text) for r in pesm_data.results] == [("link_speed", "8 GT/s"), ("power_state", "D0")]
    rcqt_text = "\n".join(
        [
            "[RESULT] [1.0] Action name :metapackage-validation",
            "[RESULT] [1.1] Module name :rcqt",
            "Meta package validation complete :",
            "    Total packages validated     : 17",
            "    Missing packages             : 2",
            "    Version mismatch packages    : 0",
        ]
    )
    rcqt, rcqt_data = _parse(rcqt_text)
    assert (rcqt.kind, rcqt.ok, rcqt.errors) == ("rcqt", False, ["Missing packages             : 2"])
    assert [(r.metric, r.value, r.passed) for r in rcqt_data.results] == [
        ("total_packages_validated", 17.0, None),
        ("missing_packages", 2.0, False),
        ("version_mismatch_packages", 0.0, True),
    ]


def test_gpu_list_variants() -> None:
    old = "Supported GPUs available:\n05:00.0 - GPU[ 2 - 28851] Device 74a1 (Device 29857)\n26:00.0 - GPU[ 3 -   705]"
    result, data = _parse(old)
    assert (result.kind, result.ok, result.summary["gpu_count"]) == ("gpu-list", True, 2)
    assert [(g.bdf, g.node_id, g.gpu_id, g.device_id) for g in data.gpus] == [
        ("0000:05:00.0", 2, 28851, "0x74a1"),
        ("0000:26:00.0", 3, 705, None),
    ]
    none, _ = _parse("\nNo supported GPUs available.\n")
    assert (none.kind, none.ok, none.errors, none.summary["gpu_count"]) == (
        "gpu-list",
        False,
        ["No supported GPUs available."],
        0,
    )


def test_no_gpu_detected_is_an_error_kind() -> None:
    line = "RVS-ERROR [CLI] No platform support for the detected GPU or no GPU detected !"
    result, _ = _parse(line)
    assert (result.kind, result.ok, result.errors) == ("error", False, [line])


def test_error_level_lines_and_old_cli_prefix_are_errors() -> None:
    text = "[ERROR ] [ 12.5    ] [action_1] pulse thermal violation: 107C (limit 105C)\nRVS-CLI: could not open conf"
    result, _ = _parse(text)
    assert result.ok is False
    assert result.errors == [
        "[ERROR ] [ 12.5    ] [action_1] pulse thermal violation: 107C (limit 105C)",
        "RVS-CLI: could not open conf",
    ]


GST_JSON = (
    '{"version":"1.0","gst":{"gst-1":['
    '{"target":"639000","dtype":"fp16_r","gpu_id":"55354","gflops":"738615.0","gpu_index":"0","pass":"true"},'
    '{"target":"639000","dtype":"fp16_r","gpu_id":"1234","gflops":"600000","gpu_index":"1","pass":"false"}]}}'
)


def test_json_log_records_and_verdicts() -> None:
    result, data = _parse(GST_JSON)
    assert (result.kind, result.ok) == ("json", False)
    assert [(r.gpu and r.gpu.gpu_id, r.value, r.target, r.passed) for r in data.results] == [
        (55354, 738615.0, 639000.0, True),
        (1234, 600000.0, 639000.0, False),
    ]
    assert result.errors == [
        'gst [gst-1] {"dtype": "fp16_r", "gflops": "600000", "gpu_id": "1234", "gpu_index": "1", '
        '"pass": "false", "target": "639000"}'
    ]
    assert data.json_complete is True and data.json_records[0].fields["dtype"] == "fp16_r"


def test_interrupted_json_log_keeps_complete_records() -> None:
    cut = GST_JSON[: GST_JSON.index('"dtype":"fp16_r","gpu_id":"1234"')]
    result, data = _parse(cut)
    assert (result.kind, result.ok) == ("json", False)
    assert [r.gpu and r.gpu.gpu_id for r in data.results] == [55354]
    assert data.json_complete is False
    assert result.errors == ["incomplete: the JSON log is cut off (run interrupted); complete records were kept"]


def test_json_record_list_with_stray_commas_and_trailing_noise() -> None:
    text = (
        "[\n,\n"
        '{"action":"a","module":"pbqt","srcgpu":"1","dstgpu":"2","intf":"xgmi",\n'
        '"throughput":"91.832 GBps","pass":"true"}\n'
        ',{"action":"a","module":"pbqt","srcgpu":"2","dstgpu":"1","intf":"xgmi",\n'
        '"throughput":"91.1 GBps","pass":"true"}\n'
        "]\n$ \n"
    )
    result, data = _parse(text)
    assert (result.kind, result.ok) == ("json", True)
    assert [(r.gpu and r.gpu.gpu_id, r.peer and r.peer.gpu_id, r.value) for r in data.results] == [
        (1, 2, 91.832),
        (2, 1, 91.1),
    ]


def test_babel_json_subtests() -> None:
    text = (
        '{"version":"1.0","babel":{"b":[{"gpu_id":"42583","gpu_index":"0","array_size":"1","total_size":"3",'
        '"results":[{"subtest":"Copy","mbytes_per_sec":"6224488.9","max_mbytes_per_sec":"1","min_mbytes_per_sec":"1",'
        '"avg_mbytes_per_sec":"1","pass":"true"}]}]}}'
    )
    result, data = _parse(text)
    assert (result.kind, result.ok) == ("json", True)
    (copy,) = data.results
    assert (copy.label, copy.value, copy.passed) == ("Copy", pytest.approx(6224.4889), True)


def test_console_log_with_json_path_line() -> None:
    text = "json log file is /var/tmp/rvs_1784325458865.json\n[RESULT] [1.0] [pcie_act_1] peqt true"
    result, data = _parse(text)
    assert (result.kind, data.json_log_path) == ("peqt", "/var/tmp/rvs_1784325458865.json")


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t.replace("\n", "\r\n"),
        lambda t: "\n".join(f"  0: {line}" for line in t.splitlines()),
        lambda t: "\n".join(f"[1,0]<stdout>:{line}" for line in t.splitlines()),
        lambda t: "\n".join(f"2026-04-01T10:00:00Z {line}\t\t" for line in t.splitlines()),
        lambda t: "ssh: Warning: Permanently added 'node1' to the list of known hosts.\n" + t + "\nlogout\n",
    ],
    ids=["crlf", "srun", "mpi", "timestamps-tabs", "noise"],
)
def test_mangled_logs_read_the_same(mangle: object) -> None:
    assert callable(mangle)
    clean, clean_data = _parse(FAILED_RUN)
    mangled, mangled_data = _parse(mangle(FAILED_RUN))
    assert (mangled.kind, mangled.ok, mangled.summary) == (clean.kind, clean.ok, clean.summary)
    assert [a.passed for a in mangled_data.actions] == [a.passed for a in clean_data.actions]
    assert [(g.gpu_id, g.bdf) for g in mangled_data.gpus] == [(g.gpu_id, g.bdf) for g in clean_data.gpus]


def test_kind_override_and_mismatch() -> None:
    assert _parse(GST_JSON, "json")[0].kind == "json"
    with pytest.raises(ParseError, match="expected an RVS JSON log"):
        rvs_probe.parse("[RESULT] [1.0] [a] peqt true", "json")
    with pytest.raises(ParseError, match="expected 'rvs -g' output"):
        rvs_probe.parse("[RESULT] [1.0] [a] peqt true", "gpu-list")


def test_only_headers_means_no_results() -> None:
    result, _ = _parse("[RESULT] [1.0] Action name :gst-1\n[RESULT] [1.1] Module name :gst")
    assert (result.kind, result.ok) == ("gst", False)
    assert result.errors == ["no results: the output names actions but holds no result line"]


def test_other_tools_output_is_not_rvs() -> None:
    rocm_smi = "========= ROCm System Management Interface =========\nGPU  Temp  AvgPwr\n0    35.0c 90.0W\n"
    assert rvs_probe.detect(rocm_smi) is None
    with pytest.raises(ParseError, match="no RVS output found"):
        rvs_probe.parse(rocm_smi)
    assert rvs_probe.detect('{"gpu_data": [{"gpu": 0}]}') is None
    # Untagged lines alone read as RVS, but with the lowest confidence so any tool's own markers win.
    bare = rvs_probe.detect("    Missing packages             : 0")
    assert bare is not None and (bare.kind, bare.confidence) == ("rcqt", 0.3)
