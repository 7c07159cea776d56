"""The simulator's ``amd-smi ras --cper`` and ``sudo``: records from faults, root only, as amd-smi 7.1 prints them."""

from __future__ import annotations

from console.probes import Tool, parse_output
from console.sim.faults import FaultKind
from console.sweep.catalog import PROBES_BY_ID
from tests.sim.simcore_helpers import cluster, fault, run

CPER = PROBES_BY_ID["amdsmi.cper"].argv


def test_the_catalogued_probe_lists_a_faulted_gpus_records_with_their_afids() -> None:
    spec = cluster(
        faults=[
            fault(FaultKind.CPER_RECORD, gpu=2, afid=19),
            fault(FaultKind.CPER_RECORD, gpu=5, severity="uncorrected"),
        ]
    )
    reply = run(spec, *CPER)
    assert reply.exit_status == 0, reply.stderr
    records = parse_output(reply.stdout, tool=Tool.AMD_SMI, kind="ras").data.cper  # type: ignore[union-attr]
    assert [(r.gpu_index, r.severity, r.file_name, r.afids) for r in records] == [
        (2, "fatal", "fatal-1.cper", ["19"]),
        (5, "nonfatal-uncorrected", "uncorrected-1.cper", ["22"]),
    ]


def test_a_healthy_node_prints_the_header_only_and_it_reads_as_no_records() -> None:
    reply = run(cluster(), *CPER)
    parsed = parse_output(reply.stdout, tool=Tool.AMD_SMI, kind="ras")
    assert parsed.ok and parsed.data.cper == [] and reply.stdout.startswith("timestamp")  # type: ignore[union-attr]


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
        faults=[fault(FaultKind.CPER_RECORD, gpu=1), fault(FaultKind.CPER_RECORD, gpu=3, severity="corrected")]
    )
    fatal_only = run(spec, "sudo", "-n", "amd-smi", "ras", "--cper", "--severity", "fatal", "--folder", "/run/x")
    assert fatal_only.stdout.count("FATAL") == 1 and "CORRECTED" not in fatal_only.stdout
    bare = run(spec, "sudo", "amd-smi", "ras", "--cper")
    assert "list of afids" not in bare.stdout and "not dumped" in bare.stderr


def test_untrustworthy_clocks_and_old_records_are_played() -> None:
    spec = cluster(
        faults=[
            fault(FaultKind.CPER_RECORD, gpu=0, time="future"),
            fault(FaultKind.CPER_RECORD, gpu=1, before_boot=1),
            fault(FaultKind.CPER_RECORD, gpu=2, severity="boot", count=2),
        ]
    )
    lines = run(spec, *CPER).stdout.splitlines()[1:]
    assert lines[0].startswith("2070/01/01") or any(line.startswith("2070/01/01") for line in lines)
    assert sum("BOOT" in line for line in lines) == 2 and len(lines) == 4
    uptime = float(run(spec, "cat", "/proc/uptime").stdout.split()[0])
    assert 2 * 86_400 <= uptime <= 30 * 86_400
