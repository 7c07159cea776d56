"""The simulator's ``amd-smi ras --cper`` and ``sudo``: records from faults, root only, in the form the node's
amd-smi prints them (the 6.4.1 header dump, the table from 6.4.2, the refactored CLI's ``--json`` rows)."""

from __future__ import annotations

import json

from console.probes import Tool, parse_output
from console.sim.faults import FaultKind
from console.sim.models import build_node
from console.sim.render.amdsmi_cper import header_file
from console.sweep.catalog import PROBES_BY_ID
from tests.sim.simcore_helpers import cluster, fault, run

CPER = PROBES_BY_ID["amdsmi.cper"].argv


def test_the_catalogued_probe_lists_a_faulted_gpus_records_with_their_afids() -> None:
    spec = cluster(
        rocm="7.0.2",
        faults=[
            fault(FaultKind.CPER_RECORD, gpu=2, afid=19),
            fault(FaultKind.CPER_RECORD, gpu=5, severity="uncorrected"),
        ],
    )
    reply = run(spec, *CPER)
    assert reply.exit_status == 0, reply.stderr
    records = parse_output(reply.stdout, tool=Tool.AMD_SMI, kind="ras").data.cper  # type: ignore[union-attr]
    assert [(r.gpu_index, r.severity, r.file_name, r.afids) for r in records] == [
        (2, "fatal", "fatal-1.cper", ["19"]),
        (5, "nonfatal-uncorrected", "uncorrected-1.cper", ["22"]),
    ]


def test_a_healthy_node_prints_the_header_only_and_it_reads_as_no_records() -> None:
    reply = run(cluster(rocm="7.0.2"), *CPER)
    parsed = parse_output(reply.stdout, tool=Tool.AMD_SMI, kind="ras")
    assert parsed.ok and parsed.data.cper == [] and reply.stdout.startswith("timestamp")  # type: ignore[union-attr]
    dump = run(cluster(rocm="6.4.1"), *CPER)  # 6.4.1: one title per GPU and no entry under it
    parsed = parse_output(dump.stdout, tool=Tool.AMD_SMI, kind="ras")
    assert parsed.ok and parsed.data.cper == [] and dump.stdout.count("Dumping CPER") == 8  # type: ignore[union-attr]


def test_records_are_root_only_and_sudo_may_refuse() -> None:
    plain = run(cluster(), *CPER[2:])  # amd-smi ras ... without sudo
    assert plain.exit_status == 1 and "requires elevation" in plain.stderr
    refused = run(cluster(faults=[fault(FaultKind.SUDO_DENIED)]), *CPER)
    assert refused.exit_status == 1 and refused.stderr == "sudo: a password is required\n"


def test_a_driver_without_the_ring_and_an_amd_smi_without_ras_say_so() -> None:
    disabled = run(cluster(faults=[fault(FaultKind.CPER_NOT_ENABLED)]), *CPER)
    assert "requires CPER to be enabled" in disabled.stderr
    old = run(cluster(rocm="6.2.2"), *CPER)
    assert old.exit_status == 2 and "invalid choice: 'ras'" in old.stderr


def test_severity_words_select_and_without_a_folder_there_are_no_afids() -> None:
    spec = cluster(
        rocm="7.0.2",
        faults=[fault(FaultKind.CPER_RECORD, gpu=1), fault(FaultKind.CPER_RECORD, gpu=3, severity="corrected")],
    )
    fatal_only = run(spec, "sudo", "-n", "amd-smi", "ras", "--cper", "--severity", "fatal", "--folder", "/run/x")
    assert fatal_only.stdout.count("FATAL") == 1 and "CORRECTED" not in fatal_only.stdout
    bare = run(spec, "sudo", "amd-smi", "ras", "--cper")
    assert "list of afids" not in bare.stdout and "not dumped" in bare.stderr


def test_untrustworthy_clocks_and_old_records_are_played() -> None:
    spec = cluster(
        rocm="7.0.2",
        faults=[
            fault(FaultKind.CPER_RECORD, gpu=0, time="future"),
            fault(FaultKind.CPER_RECORD, gpu=1, before_boot=1),
            fault(FaultKind.CPER_RECORD, gpu=2, severity="boot", count=2),
        ],
    )
    lines = run(spec, *CPER).stdout.splitlines()[1:]
    assert lines[0].startswith("2070/01/01") or any(line.startswith("2070/01/01") for line in lines)
    assert sum("BOOT" in line for line in lines) == 2 and len(lines) == 4
    uptime = float(run(spec, "cat", "/proc/uptime").stdout.split()[0])
    assert 2 * 86_400 <= uptime <= 30 * 86_400


def _records(reply_stdout: str) -> list:  # type: ignore[type-arg]
    parsed = parse_output(reply_stdout, tool=Tool.AMD_SMI, kind="ras")
    assert parsed.ok, parsed.errors
    return list(parsed.data.cper)  # type: ignore[union-attr]


def test_amd_smi_641_dumps_the_headers_without_afids() -> None:
    spec = cluster(rocm="6.4.1", faults=[fault(FaultKind.CPER_RECORD, gpu=2, severity="boot", afid=4)])
    reply = run(spec, *CPER)
    assert "Dumping CPER file header entries for GPU 2:" in reply.stdout and "list of afids" not in reply.stdout
    (record,) = _records(reply.stdout)
    assert (record.gpu_index, record.severity, record.notify_type, record.afids) == (2, "fatal", "BOOT", [])
    assert record.record_id == "2:1" and "lists no AFIDs" in (record.afid_note or "")


def test_an_undecodable_record_prints_the_invalid_afid_until_7_2_1() -> None:
    faults = [fault(FaultKind.CPER_UNDECODABLE, gpu=4)]
    (old,) = _records(run(cluster(rocm="7.0.2", faults=faults), *CPER).stdout)
    assert (old.gpu_index, old.severity, old.afids, old.afid_unknown) == (4, "fatal", [], True)
    newer = cluster(rocm="7.0.2", faults=faults)
    newer.nodes[0].stack.rocm = "7.2.1"
    (fixed,) = _records(run(newer, *CPER).stdout)
    assert (fixed.afid_unknown, fixed.afid_note) == (False, "decode failed")


def test_an_amd_smi_before_7_0_2_lists_twenty_records_per_device() -> None:
    faults = [fault(FaultKind.CPER_FLOOD, gpu=1), fault(FaultKind.CPER_RECORD, gpu=5, severity="corrected")]
    for rocm, shown, fatal in (("6.4.1", 20, 0), ("7.0.2", 21, 1)):
        records = _records(run(cluster(rocm=rocm, faults=faults), *CPER).stdout)
        on_one = [r for r in records if r.gpu_index == 1]
        assert len(on_one) == shown and sum(r.severity == "fatal" for r in on_one) == fatal, rocm
        assert [r.gpu_index for r in records].count(5) == 1  # the limit is per device


def test_the_refactored_cli_prints_json_rows() -> None:
    spec = cluster(rocm="7.0.2", faults=[fault(FaultKind.CPER_RECORD, gpu=3, afid=18)])
    argv = [*CPER, "--json"]
    assert run(spec, *argv).stdout.startswith("timestamp")  # 7.0.2 ignores --json: the table
    spec.nodes[0].stack.rocm = "7.14.0"
    reply = run(spec, *argv)
    rows = json.loads(reply.stdout)
    assert rows[0]["metadata_file"].endswith("/fatal-1.json") and rows[0]["afids"] == [18]
    (record,) = _records(reply.stdout)
    assert (record.gpu_index, record.severity, record.afids, record.file_name) == (
        3,
        "fatal",
        ["18"],
        "/run/instinct-console-cper/fatal-1.cper",
    )


def test_the_header_file_beside_a_record_reads_as_that_record() -> None:
    node = build_node(cluster(faults=[fault(FaultKind.CPER_RECORD, gpu=6, afid=26)]), "n01")
    gpu = node.gpus[6]
    (record,) = _records(header_file(gpu, gpu.cper[0], 1))
    assert (record.severity, record.notify_type, record.record_id, record.gpu_index) == ("fatal", "MCE", "6:1", None)
