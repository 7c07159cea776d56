"""``check-local`` collecting through the amdsmi library: the same verdicts as the command, said which path ran.

The node is a simulated one answering through PATH shims; the fake ``amdsmi`` module (on this test's own
``sys.path``) answers with the values the node's own ``amd-smi`` prints for the subcommands it serves.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from console.cli import main
from console.exitcodes import ExitCode
from console.model.amdsmi import AmdSmiResult
from console.model.findings import Status
from console.probes import parse_output
from console.probes.amdsmi.library import AmdSmiLibrary, open_library
from console.probes.amdsmi.library_documents import document
from console.probes.ids import ProbeId
from console.sim.faults import Fault, FaultKind
from console.sweep.bundle import bundle_script, split_bundle
from console.sweep.catalog import PROBES_BY_ID
from console.sweep.library_collect import LibraryTransport
from console.sweep.node_report import LocalCheckReport
from console.transport import LocalTransport
from tests.fake_amdsmi import SERVED, fake_amdsmi_path, node_outputs, node_values, write_fake_amdsmi
from tests.multinode.localnodes import local_cluster, shim_dir

__all__ = ["fake_amdsmi_path"]  # the fixture, used by name

NAMES = ["gpu001", "gpu002"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("nodes")
    fault = Fault(kind=FaultKind.BAD_PAGES_OVER_THRESHOLD, node="gpu002", gpu=5)
    return root, local_cluster(root, NAMES, [fault])


def _check(
    cluster: tuple[Path, Path],
    node: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *args: str,
) -> tuple[int, LocalCheckReport, str]:
    root, inventory = cluster
    with monkeypatch.context() as m:
        m.setenv("PATH", f"{shim_dir(root, node)}:{os.environ['PATH']}")
        m.setenv("SLURMD_NODENAME", node)
        code = main(["check-local", "-i", str(inventory), "--json", "-", *args])
    out, err = capsys.readouterr()
    return code, LocalCheckReport.model_validate_json(out), err


def _same_verdict(library: LocalCheckReport, command: LocalCheckReport) -> None:
    assert (library.status, library.reason, library.families) == (command.status, command.reason, command.families)
    assert library.passed == command.passed
    keyed = sorted((f.check_id, f.subject.label(), f.status, f.message) for f in library.findings)
    assert keyed == sorted((f.check_id, f.subject.label(), f.status, f.message) for f in command.findings)


@pytest.mark.parametrize("node", NAMES)
def test_library_and_command_judge_the_node_alike(
    node: str,
    cluster: tuple[Path, Path],
    fake_amdsmi_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_fake_amdsmi(fake_amdsmi_path, node_values(node_outputs(cluster[0], node)))
    lib_code, by_library, err = _check(cluster, node, monkeypatch, capsys)
    assert by_library.collector == "amdsmi library for bad-pages, firmware, list, metric, static, xgmi, xgmi -l"
    assert "collected by: amdsmi library" in err
    cmd_code, by_command, _ = _check(cluster, node, monkeypatch, capsys, "--no-amdsmi-library")
    assert by_command.collector == "amd-smi command (library not asked for)"
    assert lib_code == cmd_code
    _same_verdict(by_library, by_command)
    if node == "gpu002":  # the fault shows through the library as through the command
        assert by_library.status is Status.FAIL
        assert any(f.status is Status.FAIL and f.check_id.startswith("ras.bad_pages") for f in by_library.findings)
    else:
        assert by_library.status is Status.PASS


def test_a_failing_library_call_makes_its_probe_unknown(
    cluster: tuple[Path, Path],
    fake_amdsmi_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_fake_amdsmi(
        fake_amdsmi_path,
        node_values(node_outputs(cluster[0], "gpu001")),
        raise_on={"amdsmi_get_gpu_bad_page_info": 10, "amdsmi_get_violation_status": 1},
    )
    code, report, _ = _check(cluster, "gpu001", monkeypatch, capsys, "--raw")
    assert report.status is Status.UNKNOWN and code == ExitCode.UNKNOWN_EXCEEDED
    probe = next(p for p in report.probes if p.probe == ProbeId.AMDSMI_BAD_PAGES)
    assert probe.exit_status == 1
    assert report.raw is not None
    said = next(r.output for r in report.raw if r.probe == ProbeId.AMDSMI_BAD_PAGES)
    assert said.startswith("amdsmi library: amdsmi_get_gpu_bad_page_info (GPU 0) raised AmdSmiLibraryException")
    # ``static`` reads the pages too (is the threshold exceeded?): it fails with them; ``metric`` fails with the
    # violation counters; nothing else does.
    failed = {p.probe for p in report.probes if p.exit_status != 0}
    assert failed == {ProbeId.AMDSMI_BAD_PAGES, ProbeId.AMDSMI_STATIC, ProbeId.AMDSMI_METRIC}
    unknown = [f for f in report.findings if f.status is Status.UNKNOWN]
    assert unknown and all(any(p in f"{f.evidence.probe} {f.message}" for p in failed) for f in unknown)


def test_without_a_working_library_the_command_collects_and_says_why(
    cluster: tuple[Path, Path],
    fake_amdsmi_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_fake_amdsmi(fake_amdsmi_path, [], init_error=8)
    code, report, _ = _check(cluster, "gpu001", monkeypatch, capsys)
    assert code == ExitCode.OK and report.status is Status.PASS
    assert report.collector is not None
    assert report.collector.startswith("amd-smi command (amdsmi library did not initialise: AmdSmiLibraryException")


async def test_a_hung_library_call_times_its_probe_out_and_is_not_asked_again(fake_amdsmi_path: Path) -> None:
    write_fake_amdsmi(fake_amdsmi_path, [{"amdsmi_get_fw_info": []}], hang_on=frozenset({"amdsmi_get_fw_info"}))
    library = open_library()
    assert isinstance(library, AmdSmiLibrary)
    transport = LibraryTransport(LocalTransport("gpu001"), library, timeout_s=0.5)
    probes = [PROBES_BY_ID[ProbeId.AMDSMI_FIRMWARE], PROBES_BY_ID[ProbeId.AMDSMI_BAD_PAGES]]
    result = await transport.run_script("gpu001", bundle_script(probes), timeout_s=5)
    sections = split_bundle(result.stdout, probes)
    firmware, pages = sections[ProbeId.AMDSMI_FIRMWARE], sections[ProbeId.AMDSMI_BAD_PAGES]
    assert (firmware.exit_status, firmware.output) == (124, b"amdsmi library: no answer within 0.5 s")
    # The next call would queue behind the hung one: the probe fails at once, saying why.
    assert pages.exit_status == 1 and b"not asked, an earlier call did not answer" in pages.output
    await transport.close()


@pytest.mark.parametrize("subcommand", list(SERVED))
def test_library_documents_give_the_commands_facts(
    subcommand: str, cluster: tuple[Path, Path], fake_amdsmi_path: Path
) -> None:
    outputs = node_outputs(cluster[0], "gpu002")
    write_fake_amdsmi(fake_amdsmi_path, node_values(outputs))
    library = open_library()
    assert isinstance(library, AmdSmiLibrary)
    by_library = parse_output(document(library, subcommand))
    by_command = parse_output(json.dumps(outputs[subcommand]))
    assert isinstance(by_library.data, AmdSmiResult) and isinstance(by_command.data, AmdSmiResult)
    assert (by_library.kind, by_library.ok, by_library.summary) == (by_command.kind, True, by_command.summary)
    assert by_library.data.gpus == by_command.data.gpus and len(by_library.data.gpus) == 8
    assert by_library.data.xgmi_links == by_command.data.xgmi_links
    assert len(by_library.data.xgmi_links) == (56 if subcommand.startswith("xgmi") else 0)
    # static's details, but for the DPM clock levels the library does not read (no check does), and process
    # isolation, which the simulated amd-smi does not print and the library says N/A for.
    for got, want in zip(by_library.data.details, by_command.data.details, strict=True):
        assert got.unavailable.pop("process_isolation", None) == "N/A"
        assert got.model_copy(update={"clock_levels": []}) == want.model_copy(update={"clock_levels": []})
