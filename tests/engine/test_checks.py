"""Check packs and their evaluation: sources on every threshold, clear config errors, honest verdicts."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.checks import (
    CheckConfigError,
    NodeFacts,
    ProbeOutcome,
    build_facts,
    builtin_checks_dir,
    evaluate_fleet,
    evaluate_node,
    load_pack_file,
    load_packs,
)
from console.inventory.model import Node, StackPin
from console.model.base import Model
from console.model.findings import SourceKind, Status
from console.model.gpu import BadPages, EccCounts, GpuIdentity, GpuMetrics, GpuRecord, PcieLink
from console.probes.base import ParsedOutput
from console.probes.ids import Tool


class _GpuData(Model):
    gpus: list[GpuRecord]


def _gpu(index: int, **metric_overrides: object) -> GpuRecord:
    pcie = PcieLink(
        speed_gts=32, width=16, l0_to_recovery_count=0, nak_sent_count=0, nak_received_count=0, replay_count=0
    )
    metrics = GpuMetrics(hotspot_temp_c=45, mem_temp_c=38, power_cap_w=750, vram_total_bytes=192 * 2**30, pcie=pcie)
    for key, value in metric_overrides.items():
        setattr(metrics, key, value)
    return GpuRecord(
        identity=GpuIdentity(index=index, bdf=f"0000:{0x0C + index:02x}:00.0", device_id="0x74A1"),
        metrics=metrics,
        ecc=EccCounts(correctable=0, uncorrectable=0, deferred=0),
        bad_pages=BadPages(threshold=128),
    )


def _outcomes(gpus: list[GpuRecord], **extra: ProbeOutcome) -> dict[str, ProbeOutcome]:
    # Like amd-smi: list/static carry identity, metric carries telemetry, bad-pages the pages.
    identity_only = [GpuRecord(identity=g.identity) for g in gpus]
    metrics_only = [GpuRecord(identity=GpuIdentity(bdf=g.identity.bdf), metrics=g.metrics, ecc=g.ecc) for g in gpus]
    pages_only = [GpuRecord(identity=GpuIdentity(bdf=g.identity.bdf), bad_pages=g.bad_pages) for g in gpus]
    out = {}
    for probe, kind, records in (
        ("amdsmi.list", "list", identity_only),
        ("amdsmi.static", "static", identity_only),
        ("amdsmi.metric", "metric", metrics_only),
        ("amdsmi.bad_pages", "bad-pages", pages_only),
    ):
        parsed = ParsedOutput(
            tool=Tool.AMD_SMI, kind=kind, ok=True, summary={"gpu_count": len(gpus)}, data=_GpuData(gpus=records)
        )
        out[probe] = ProbeOutcome(probe, parsed)
    out["host.rocm"] = ProbeOutcome("host.rocm", "6.4.1-120")
    out.update(extra)
    return out


NODE = Node(name="gpu001", pool="a", gpu_model="MI300X", gpu_count=8, address="gpu001")


def _findings(gpus: list[GpuRecord], pin: StackPin | None = None, **extra: ProbeOutcome):  # type: ignore[no-untyped-def]
    pack = load_packs()["MI300X"]
    facts = build_facts(NODE, pin or StackPin(), _outcomes(gpus, **extra))
    return evaluate_node(pack, facts)


def test_every_builtin_threshold_has_a_source() -> None:
    packs = load_packs()
    assert set(packs) == {"MI300X", "MI325X", "MI350X", "MI355X", "MI250X", "MI210", "MI300A"}
    for pack in packs.values():
        assert pack.checks
        for check in pack.checks:
            assert check.source.strip() and check.source_kind
        for name in pack.pack.vars:
            if name != "gpu_count":
                assert pack.pack.source_of(name) is not None, name


def test_healthy_node_passes() -> None:
    findings = _findings([_gpu(i) for i in range(8)])
    bad = [f for f in findings if f.status not in (Status.PASS, Status.SKIP)]
    assert not bad, [f.message for f in bad]
    assert {f.check_id for f in findings} >= {"inventory.gpu_count", "pcie.speed", "ecc.uncorrectable"}


def test_downtrained_pcie_fails_on_that_gpu_with_source() -> None:
    gpus = [_gpu(i) for i in range(8)]
    assert gpus[3].metrics is not None and gpus[3].metrics.pcie is not None
    gpus[3].metrics.pcie.speed_gts = 16
    failed = [f for f in _findings(gpus) if f.status is Status.FAIL]
    assert [(f.check_id, f.subject.gpu) for f in failed] == [("pcie.speed", 3)]
    assert failed[0].evidence.observed == 16
    assert failed[0].evidence.expected == "fail if < 32"
    assert "AMD system acceptance" in (failed[0].evidence.source or "")


def test_a_deferred_ecc_error_fails_that_gpu_alone() -> None:
    gpus = [_gpu(i) for i in range(8)]
    gpus[5] = gpus[5].model_copy(update={"ecc": EccCounts(correctable=0, uncorrectable=0, deferred=2)})
    failed = [(f.check_id, f.subject.gpu) for f in _findings(gpus) if f.status is Status.FAIL]
    assert failed == [("ecc.deferred", 5)]


@pytest.mark.parametrize(("peers", "judged"), [(3, False), (4, True)])
def test_fleet_relative_checks_need_min_fleet_nodes(peers: int, judged: bool) -> None:
    pack = load_packs()["MI350X"]
    check = next(c for c in pack.checks if c.id == "rccl.busbw_fleet")
    assert check.min_fleet == 4
    found = [
        f for f in evaluate_fleet(pack, _rccl_pool([367.0, 366.0, 368.0, 300.0][-peers:])) if f.check_id == check.id
    ]
    assert (len(found) == peers) if judged else not found


def test_missing_gpu_fails_the_count() -> None:
    failed = [f for f in _findings([_gpu(i) for i in range(7)]) if f.status is Status.FAIL]
    assert [f.check_id for f in failed] == ["inventory.gpu_count"]
    assert "7" in failed[0].message and "!= 8" in failed[0].message


def test_na_value_is_unknown_not_pass() -> None:
    gpus = [_gpu(i) for i in range(8)]
    assert gpus[0].metrics is not None
    gpus[0].metrics.hotspot_temp_c = None
    gpus[0].metrics.mark_unavailable("hotspot_temp_c", "N/A")
    hot = [f for f in _findings(gpus) if f.check_id == "thermal.hotspot" and f.subject.gpu == 0]
    assert hot[0].status is Status.UNKNOWN and "N/A" in hot[0].message


def test_failed_probe_makes_its_checks_unknown_with_the_reason() -> None:
    timed_out = ProbeOutcome("amdsmi.metric", None, "timed out on the node after 60 s")
    findings = _findings([_gpu(i) for i in range(8)], **{"amdsmi.metric": timed_out})
    pcie = [f for f in findings if f.check_id == "pcie.speed"]
    assert pcie and all(f.status is Status.UNKNOWN for f in pcie)
    assert "timed out" in pcie[0].message
    assert not [f for f in findings if f.status is Status.PASS and f.family == "pcie"]


def test_checks_of_probes_not_run_give_no_finding() -> None:
    findings = _findings([_gpu(i) for i in range(8)])
    assert not [f for f in findings if f.family in ("rccl", "rvs", "transferbench")]


def test_rocm_drift_from_pin_warns() -> None:
    findings = _findings([_gpu(i) for i in range(8)], pin=StackPin(rocm="6.4.2"))
    drift = [f for f in findings if f.check_id == "stack.rocm"]
    assert drift[0].status is Status.WARN
    assert "6.4.1" in drift[0].message and "6.4.2" in drift[0].message
    # The threshold is the pool's pin, and the evidence says so (not the check file's source kind).
    assert (drift[0].evidence.expected, drift[0].evidence.source_kind) == ("== 6.4.2", SourceKind.PIN)


def _rccl_pool(busbw: list[float]) -> list[NodeFacts]:
    """MI350X nodes n0, n1, ... with one RCCL all_reduce result each (in-place busbw at the largest size)."""
    facts = []
    for i, bw in enumerate(busbw):
        node = Node(name=f"n{i}", pool="p", gpu_model="MI350X", gpu_count=8, address=f"n{i}")
        parsed = ParsedOutput(
            tool=Tool.RCCL_TESTS,
            kind="all_reduce_perf",
            ok=True,
            summary={"inplace_busbw_at_max_size_gbps": bw, "wrong_total": 0},
        )
        facts.append(build_facts(node, StackPin(), {"rccl.all_reduce": ProbeOutcome("rccl.all_reduce", parsed)}))
    return facts


def test_fleet_relative_flags_the_outlier() -> None:
    pack = load_packs()["MI350X"]
    fleet = [
        f for f in evaluate_fleet(pack, _rccl_pool([367.0, 366.0, 368.0, 365.0, 300.0])) if f.status is not Status.PASS
    ]
    assert [(f.subject.node, f.status) for f in fleet] == [("n4", Status.FAIL)]
    assert "pool median" in fleet[0].message
    assert fleet[0].evidence.source_kind is SourceKind.FLEET


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "user.toml"
    path.write_text(body)
    return path


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (
            '[pack]\nmodel = "MI300X"\n[[checks]]\nid = "x"\ntitle = "t"\nfamily = "pcie"\nmetric = "nope"\n'
            'fail_if = "> 1"\nsource = "s"\nsource_kind = "estimate"\n',
            "checks[0](id=x).metric",
        ),
        (
            '[pack]\nmodel = "MI300X"\n[[checks]]\nid = "x"\ntitle = "t"\nfamily = "pcie"\nmetric = "gpu.pcie_width"\n'
            'fail_if = "about 3"\nsource = "s"\nsource_kind = "estimate"\n',
            "checks[0](id=x).fail_if",
        ),
        (
            '[pack]\nmodel = "MI300X"\n[[checks]]\nid = "x"\ntitle = "t"\nfamily = "pcie"\nmetric = "gpu.pcie_width"\n'
            'fail_if = "> 1"\nsource_kind = "estimate"\n',
            "checks[0](id=x).source",
        ),
        (
            '[pack]\nmodel = "MI300X"\n[[checks]]\nid = "x"\ntitle = "t"\nfamily = "pcie"\nmetric = "gpu.pcie_width"\n'
            'fail_if = "> 1"\nsource = "s"\nsource_kind = "guess"\n',
            "checks[0](id=x).source_kind",
        ),
        ('[pack]\nmodel = "MI999"\n', "pack.model"),
        ("[pack\n", "not valid TOML"),
        # A misspelt probe made a check silently absent: it was judged only when a probe it named ran.
        (
            '[pack]\nmodel = "MI300X"\n[[checks]]\nid = "x"\ntitle = "t"\nfamily = "pcie"\nmetric = "gpu.pcie_width"\n'
            'fail_if = "< 16"\nsource = "s"\nsource_kind = "estimate"\nrequires = ["amdsmi.metrics"]\n',
            "checks[0](id=x).requires[0]: no probe is called amdsmi.metrics",
        ),
        (
            '[pack]\nmodel = "MI300X"\n[pack.timeouts."rccl.allreduce"]\nvalue = 60\nsource = "s"\n'
            'source_kind = "estimate"\n',
            "pack.timeouts: no probe is called rccl.allreduce",
        ),
    ],
)
def test_bad_check_file_names_file_and_field(tmp_path: Path, body: str, needle: str) -> None:
    path = _write(tmp_path, body)
    with pytest.raises(CheckConfigError) as info:
        load_pack_file(path)
    assert str(path) in str(info.value) and needle in str(info.value)


def test_unknown_variable_is_reported_with_its_file(tmp_path: Path) -> None:
    _write(
        tmp_path,
        '[pack]\nmodel = "MI300X"\n[[checks]]\nid = "x"\ntitle = "t"\nfamily = "pcie"\n'
        'metric = "gpu.pcie_width"\nfail_if = "< $nope"\nsource = "s"\nsource_kind = "estimate"\n',
    )
    with pytest.raises(CheckConfigError, match=r"user.toml.*unknown variable \$nope"):
        load_packs([tmp_path])


@pytest.mark.parametrize("written", ['"16"', "true"])
def test_a_variable_a_numeric_condition_reads_must_be_a_number(tmp_path: Path, written: str) -> None:
    """A quoted "16" loaded and made the check UNKNOWN on every GPU of every sweep (issue 34): refused at load."""
    _write(tmp_path, f'[pack]\nmodel = "MI300X"\n[pack.vars]\npcie_gts = {written}\n')
    with pytest.raises(CheckConfigError, match=r"needs a number, but model MI300X sets pcie_gts = "):
        load_packs([tmp_path])


def test_user_dir_overrides_and_disables_by_id(tmp_path: Path) -> None:
    _write(
        tmp_path,
        '[pack]\nmodel = "MI300X"\n[pack.vars]\npcie_gts = 16\n'
        '[[checks]]\nid = "ecc.correctable"\ntitle = "t"\nfamily = "ecc"\nmetric = "gpu.ecc_correctable"\n'
        'warn_if = "> 0"\nsource = "s"\nsource_kind = "estimate"\nenabled = false\n',
    )
    pack = load_packs([tmp_path])["MI300X"]
    assert pack.pack.values()["pcie_gts"] == 16
    assert not next(c for c in pack.checks if c.id == "ecc.correctable").enabled
    assert builtin_checks_dir().is_dir()


def test_a_site_turns_checks_off_by_id_even_a_model_packs_from_its_common_file(tmp_path: Path) -> None:
    """Turning one check off needed its whole [[checks]] table; a site now names it in [pack] disable."""
    (tmp_path / "site.toml").write_text('[pack]\nmodel = "ALL"\ndisable = ["pcie.replay", "rccl.busbw"]\n')
    packs = load_packs([tmp_path])
    for pack in packs.values():
        off = {c.id for c in pack.checks if not c.enabled}
        assert "pcie.replay" in off and ("rccl.busbw" in off or "rccl.busbw" not in {c.id for c in pack.checks})
    assert "rccl.busbw" in {c.id for c in packs["MI300X"].checks if not c.enabled}  # defined by the model pack
    (tmp_path / "site.toml").write_text('[pack]\nmodel = "ALL"\ndisable = ["pcie.replya"]\n')
    with pytest.raises(CheckConfigError, match=r"site.toml: field pack.disable: no check is called pcie.replya"):
        load_packs([tmp_path])


def test_a_figure_missing_from_a_failed_run_is_explained_by_the_tools_own_error() -> None:
    pack = load_packs()["MI300X"]
    error = "gpu001: Test NCCL failure common.cu:1285 'unhandled cuda error'"
    parsed = ParsedOutput(tool=Tool.RCCL_TESTS, kind="all_reduce_perf", ok=False, errors=[error], summary={})
    facts = build_facts(NODE, StackPin(), {"rccl.all_reduce": ProbeOutcome("rccl.all_reduce", parsed)})
    busbw = [f for f in evaluate_node(pack, facts) if f.check_id == "rccl.busbw"]
    assert len(busbw) == 1 and busbw[0].status is Status.UNKNOWN
    assert busbw[0].message.endswith(error) and "summary" not in busbw[0].message


def test_node_relative_checks_judge_each_link_against_the_nodes_own_median() -> None:
    """The real MI300X a2a sample passes; a pair cut to 0.82x the median FAILs, one at 0.945x WARNs."""
    from console.probes import parse_output

    sample = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "transferbench"
    parsed = parse_output((sample / "a2a-64M-8CU-mi300x-v160-full.txt").read_text(), tool=Tool.TRANSFERBENCH)
    facts = build_facts(NODE, StackPin(), {"tb.a2a": ProbeOutcome("tb.a2a", parsed)})

    def judged() -> dict[tuple[int | None, int | None], Status]:
        found = [f for f in evaluate_node(load_packs()["MI300X"], facts) if f.check_id == "tb.a2a_link"]
        return {(f.subject.gpu, f.subject.peer): f.status for f in found}

    before = judged()
    assert len(before) == 56 and set(before.values()) == {Status.PASS}
    cells = {(e.src_index, e.dst_index): e for e in parsed.data.matrix if e.src_type == e.dst_type == "GPU"}
    cells[(3, 4)].gbps, cells[(5, 6)].gbps = 0.82 * 46.7, 0.945 * 46.7
    after = judged()
    assert {pair: status for pair, status in after.items() if status is not Status.PASS} == {
        (3, 4): Status.FAIL,
        (5, 6): Status.WARN,
    }


def test_the_probe_ids_are_exactly_the_catalogues() -> None:
    from console.probes.ids import PROBE_IDS
    from console.sweep.catalog import PROBES

    assert {p.id for p in PROBES} == PROBE_IDS


def test_a_slow_small_message_all_reduce_warns_and_a_normal_one_passes() -> None:
    """Issue 21, item 6: latency at the smallest size, beside the bandwidth at the largest (sim outputs)."""
    from console.checks import load_packs
    from console.checks.evaluate import evaluate_node
    from console.checks.facts import ProbeOutcome, build_facts
    from console.inventory.model import Node, StackPin
    from console.probes import Tool, parse_output
    from console.sim.faults import FaultKind
    from tests.sim.simcore_helpers import cluster, fault, run

    argv = ("all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "8", "-c", "1")
    node = Node(name="n01", pool="p", gpu_model="MI300X", gpu_count=8, address="127.0.0.1")
    pack = load_packs()["MI300X"]
    seen = {}
    for label, spec in (("healthy", cluster()), ("slow", cluster(faults=[fault(FaultKind.RCCL_LATENCY_HIGH)]))):
        parsed = parse_output(run(spec, *argv).stdout, tool=Tool.RCCL_TESTS, kind="all_reduce_perf")
        facts = build_facts(node, StackPin(), {"rccl.all_reduce": ProbeOutcome("rccl.all_reduce", parsed)})
        [finding] = [f for f in evaluate_node(pack, facts) if f.check_id == "rccl.small_latency"]
        seen[label] = finding
    assert seen["healthy"].status.value == "PASS" and float(seen["healthy"].evidence.observed or 0) < 50
    assert seen["slow"].status.value == "WARN" and "(warn if > 50)" in seen["slow"].message
    assert seen["slow"].evidence.action is not None and seen["slow"].evidence.action.value == "monitor"


@pytest.mark.parametrize(
    "listing",
    [
        # amd-smi 6.4.1's header dump with a record printed on one line: the parser reads blocks only.
        'Dumping CPER file header entries for GPU 3:\n"0": {"error_severity": "FATAL", "timestamp": "2026/12/01"}\n',
        # the 7.1 table with a row garbled past reading (its severity lost).
        "timestamp  gpu_id  severity  file_name  list of afids\n2026/12/01 10:00:00  3  F\x00TAL  x.cper  18\n",
    ],
    ids=["6.4.1-one-line-record", "7.1-garbled-row"],
)
def test_a_cper_line_not_read_as_a_record_is_never_pass(listing: str) -> None:
    """The parser says which lines it could not read; a record hidden in one must not read as "0 fatal"."""
    from console.probes.amdsmi import parse

    parsed = parse(listing, "ras")
    assert parsed.ok and not parsed.data.cper and parsed.warnings  # read as no record, the line said
    findings = _findings([_gpu(i) for i in range(8)], **{"amdsmi.cper": ProbeOutcome("amdsmi.cper", parsed)})
    cper = [f for f in findings if f.check_id.startswith("ras.cper_")]
    assert cper and all(f.status is Status.UNKNOWN for f in cper), [(f.check_id, f.status) for f in cper]
    assert "not read as records" in cper[0].message, cper[0].message
