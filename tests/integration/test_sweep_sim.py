"""The headless sweep against the simulated cluster over real SSH (asyncssh server in its own process).

Every fault of the catalogue must be named with the right verdict and family on the right node, GPU or
link; every healthy node must PASS; the exit code must say a node failed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from xml.etree import ElementTree as ET

import pytest

from console.cli import main
from console.model.findings import Status
from console.sim.faults import PLACED_KINDS, Fault, FaultKind
from console.sim.launcher import SimCluster, start_sim_cluster

# What each fault must produce in a full sweep: (node verdict, family of a finding with that verdict).
EXPECTED: dict[FaultKind, tuple[Status, str]] = {
    FaultKind.XGMI_LINK_DOWN: (Status.FAIL, "xgmi"),
    FaultKind.XGMI_LINK_DEGRADED: (Status.FAIL, "xgmi"),
    FaultKind.XGMI_LINK_STATE_NA: (Status.UNKNOWN, "xgmi"),
    FaultKind.XGMI_STATUS_ROW_MISSING: (Status.UNKNOWN, "xgmi"),
    FaultKind.AMDSMI_VALUE_UNREAD: (Status.UNKNOWN, "ecc"),
    FaultKind.BAD_PAGES_UNREAD: (Status.UNKNOWN, "ras"),
    FaultKind.AMDSMI_GPU_LEFT_OUT: (Status.UNKNOWN, "ras"),
    FaultKind.XGMI_GPU_UNLISTED: (Status.UNKNOWN, "xgmi"),
    FaultKind.XGMI_LINK_FLAP: (Status.FAIL, "xgmi"),
    FaultKind.XGMI_STATUS_ROW_REPEATED: (Status.FAIL, "xgmi"),
    FaultKind.ECC_UNCORRECTABLE: (Status.FAIL, "ecc"),
    FaultKind.ECC_CORRECTABLE_STORM: (Status.WARN, "ecc"),
    FaultKind.BAD_PAGES_OVER_THRESHOLD: (Status.FAIL, "ras"),
    FaultKind.GPU_MISSING: (Status.FAIL, "inventory"),
    FaultKind.HBM_BANDWIDTH_LOW: (Status.FAIL, "rvs"),
    FaultKind.THERMAL_THROTTLE: (Status.FAIL, "thermal"),
    FaultKind.POWER_THROTTLE: (Status.WARN, "power"),
    FaultKind.PCIE_DOWNTRAINED_GEN: (Status.FAIL, "pcie"),
    FaultKind.PCIE_DOWNTRAINED_WIDTH: (Status.FAIL, "pcie"),
    FaultKind.ROCM_DRIFT: (Status.WARN, "stack"),
    FaultKind.DRIVER_DRIFT: (Status.WARN, "stack"),
    FaultKind.FIRMWARE_DRIFT: (Status.FAIL, "firmware"),
    FaultKind.RVS_GST_LOW: (Status.FAIL, "rvs"),
    FaultKind.RCCL_WRONG: (Status.FAIL, "rccl"),
    FaultKind.RCCL_LOW_BUSBW: (Status.FAIL, "rccl"),
    FaultKind.RCCL_HANG: (Status.FAIL, "rccl"),
    FaultKind.RCCL_LATENCY_HIGH: (Status.WARN, "rccl"),
    # Outputs that look complete and are no full verdict: UNKNOWN (a size printed twice: its worse row, FAIL).
    FaultKind.RCCL_UNVALIDATED: (Status.UNKNOWN, "rccl"),
    FaultKind.RCCL_FEWER_RANKS: (Status.UNKNOWN, "rccl"),
    FaultKind.RCCL_ROW_REPEATED: (Status.FAIL, "rccl"),
    FaultKind.RCCL_HEADER_LINE_LOST: (Status.UNKNOWN, "rccl"),
    FaultKind.RVS_PEQT_WORD: (Status.UNKNOWN, "rvs"),
    FaultKind.RVS_GPU_UNSEEN: (Status.UNKNOWN, "rvs"),
    FaultKind.RVS_STOPS_EARLY: (Status.UNKNOWN, "rvs"),
    FaultKind.AMDSMI_IMPOSSIBLE_READING: (Status.UNKNOWN, "ecc"),
    FaultKind.TRANSFERBENCH_PAIR_SLOW: (Status.FAIL, "transferbench"),
    FaultKind.TRANSFERBENCH_PAIR_NA: (Status.UNKNOWN, "transferbench"),
    FaultKind.TRANSFERBENCH_GPU_UNSEEN: (Status.UNKNOWN, "transferbench"),
    FaultKind.TRANSFERBENCH_HEALTHCHECK_SHORT: (Status.UNKNOWN, "transferbench"),
    FaultKind.TRANSFERBENCH_P2P_ROW_LOST: (Status.FAIL, "transferbench"),
    FaultKind.NIC_PORT_DOWN: (Status.FAIL, "nic"),
    FaultKind.NIC_MISSING: (Status.FAIL, "nic"),
    FaultKind.NIC_SLOW: (Status.FAIL, "nic"),
    FaultKind.NIC_LISTED_TWICE: (Status.UNKNOWN, "nic"),
    FaultKind.NIC_PHYS_DISABLED: (Status.FAIL, "nic"),
    FaultKind.NIC_PORT_FLAP: (Status.FAIL, "nic"),
    FaultKind.CPER_RECORD: (Status.FAIL, "ras"),
    FaultKind.CPER_NOT_ENABLED: (Status.PASS, ""),  # the CPER checks SKIP: the ECC counters judge instead
    FaultKind.CPER_UNDECODABLE: (Status.FAIL, "ras"),
    # On ROCm 6.4.1 (the demo's MI300X) amd-smi lists 20 records per device, none of them fatal: UNKNOWN;
    # on 7.0.2 (MI355X) it lists the fatal one too (FAILED_FROM_7).
    FaultKind.CPER_FLOOD: (Status.UNKNOWN, "ras"),
    FaultKind.SUDO_DENIED: (Status.UNKNOWN, "ras"),
    FaultKind.TOOL_MISSING: (Status.UNKNOWN, "inventory"),
    FaultKind.DRIVER_NOT_LOADED: (Status.FAIL, "inventory"),
    FaultKind.COMMAND_HANG: (Status.UNKNOWN, "inventory"),  # amd-smi hangs; the long tests still answer
    FaultKind.IGNORES_SIGTERM: (Status.UNKNOWN, "inventory"),
    FaultKind.COMMAND_KILLED: (Status.UNKNOWN, "inventory"),
    FaultKind.GARBAGE_OUTPUT: (Status.UNKNOWN, "inventory"),
    FaultKind.EMPTY_OUTPUT: (Status.UNKNOWN, "inventory"),
    FaultKind.TRUNCATED_OUTPUT: (Status.UNKNOWN, "inventory"),
    FaultKind.HUGE_OUTPUT: (Status.UNKNOWN, "inventory"),
    FaultKind.NON_UTF8_OUTPUT: (Status.UNKNOWN, "inventory"),
    FaultKind.EXIT_CODE: (Status.UNKNOWN, "inventory"),
    FaultKind.SLOW_TRICKLE: (Status.PASS, ""),
    FaultKind.SSH_REFUSED: (Status.UNKNOWN, "reachability"),
    FaultKind.SSH_DROP_MID_COMMAND: (Status.UNKNOWN, "reachability"),
    FaultKind.AUTH_FAILURE: (Status.UNKNOWN, "reachability"),
    FaultKind.HOST_KEY_CHANGED: (Status.UNKNOWN, "reachability"),
    # Only a framework sweep (--probes framework) runs torch: a full sweep rightly sees a healthy node.
    # tests/integration/test_framework_sweep.py sweeps them at that level.
    **{kind: (Status.PASS, "") for kind in FaultKind if kind.value.startswith("torch_")},
}
# Words the operator must read in the reason of these faults.
REASON_WORDS: dict[FaultKind, tuple[str, ...]] = {
    FaultKind.SSH_REFUSED: ("refused",),
    FaultKind.AUTH_FAILURE: ("auth",),
    FaultKind.HOST_KEY_CHANGED: ("host key",),
    FaultKind.TOOL_MISSING: ("not found",),
    # The hung probe's own on-node timeout, or the node's budget, whichever the bundle reached first.
    FaultKind.COMMAND_HANG: ("timed out on the node", "no answer"),
    FaultKind.IGNORES_SIGTERM: ("killed on the node (sigkill)", "no answer"),
    FaultKind.COMMAND_KILLED: ("sigsegv",),
    FaultKind.HUGE_OUTPUT: ("output cut",),
    FaultKind.NON_UTF8_OUTPUT: ("not utf-8",),
    FaultKind.EXIT_CODE: ("exited with status",),
}


@pytest.fixture(scope="module")
def demo_cluster() -> Iterator[SimCluster]:
    # 120 nodes give the demo fault set room for every kind in the catalogue, one per node (two thirds carry
    # one), and put transferbench_healthcheck_short on an MI300X node, where the preset runs at all.
    with start_sim_cluster(nodes=120, models="mi300x,mi355x", pools=2, faults="demo", time_factor=400) as sim:
        yield sim


@pytest.fixture(scope="module")
def full_report(demo_cluster: SimCluster, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    out = tmp_path_factory.mktemp("sweep")
    code = main(
        [
            "sweep",
            "-i",
            str(demo_cluster.inventory_path),
            "--probes",
            "full",
            "--probe-timeout",
            "30",
            "--store",
            str(out / "h.sqlite"),
            "--json",
            str(out / "report.json"),
            "--junit",
            str(out / "junit.xml"),
            "--exclude-out",
            str(out / "bad"),
        ]
    )
    report = json.loads((out / "report.json").read_text())
    report["_exit"] = code
    report["_exclude"] = (out / "bad").read_text().strip()
    report["_junit"] = (out / "junit.xml").read_text()
    return report


def _nodes(report: dict[str, object]) -> dict[str, dict[str, object]]:
    return {n["node"]: n for n in report["nodes"]}  # type: ignore[index,union-attr]


# Faults whose verdict changes with the node's amd-smi: the ROCm 7 nodes' verdict.
FAILED_FROM_7: dict[FaultKind, tuple[Status, str]] = {FaultKind.CPER_FLOOD: (Status.FAIL, "ras")}


def test_every_fault_named_with_the_right_verdict(demo_cluster: SimCluster, full_report: dict[str, object]) -> None:
    faults: list[Fault] = demo_cluster.cluster().faults
    # Fabric faults show only across nodes, container faults only in a container (test_never_false_pass sweeps both).
    assert {f.kind for f in faults} == set(FaultKind) - PLACED_KINDS, "the demo set must cover the whole catalogue"
    nodes = _nodes(full_report)
    problems = []
    for fault in faults:
        status, family = EXPECTED[fault.kind]
        node = nodes[fault.node]
        if fault.kind in FAILED_FROM_7 and str(node.get("stack", {}).get("rocm", "")).startswith("7."):
            status, family = FAILED_FROM_7[fault.kind]
        if node["status"] != status.value:
            problems.append(f"{fault.describe()}: node is {node['status']} ({node['reason']}), want {status.value}")
            continue
        if status is Status.PASS:
            continue
        hits = [f for f in node["findings"] if f["status"] == status.value and f["family"] == family]
        if not hits:
            problems.append(f"{fault.describe()}: no {status.value} finding in family {family}: {node['findings']}")
            continue
        words = REASON_WORDS.get(fault.kind, ())
        if words and not any(word in str(node["reason"]).lower() for word in words):
            problems.append(f"{fault.describe()}: reason {node['reason']!r} lacks {REASON_WORDS[fault.kind]!r}")
        subjects = {(f["subject"].get("gpu"), f["subject"].get("peer")) for f in hits}
        pair, reverse = (fault.gpu, fault.peer), (fault.peer, fault.gpu)
        if fault.peer is not None and pair not in subjects and reverse not in subjects:
            problems.append(f"{fault.describe()}: link not named, findings name {subjects}")
    assert not problems, "\n".join(problems)


def test_healthy_nodes_pass(demo_cluster: SimCluster, full_report: dict[str, object]) -> None:
    faulty = {f.node for f in demo_cluster.cluster().faults}
    wrong = {
        name: (n["status"], n["reason"])
        for name, n in _nodes(full_report).items()
        if name not in faulty and n["status"] != "PASS"
    }
    assert not wrong


def test_exit_code_and_exclude_list(full_report: dict[str, object]) -> None:
    assert full_report["_exit"] == 1
    assert full_report["_exclude"] == full_report["failed_nodes"]
    assert full_report["failed_nodes"]


def test_junit_says_what_the_json_report_says(full_report: dict[str, object]) -> None:
    root = ET.fromstring(str(full_report["_junit"]))
    suites = {suite.get("name"): suite for suite in root.iter("testsuite")}
    nodes = _nodes(full_report)
    assert set(suites) == set(nodes)
    for name, node in nodes.items():
        suite = suites[name]
        assert {p.get("name"): p.get("value") for p in suite.iter("property")}["verdict"] == node["status"]
        failed = sorted(
            (f["check_id"], f["message"])
            for f in node["findings"]
            if f["status"] == "FAIL"  # type: ignore[index,union-attr]
        )
        in_junit = sorted(
            (str(case.get("name")).split()[0], case.find("failure").get("message"))  # type: ignore[union-attr]
            for case in suite.iter("testcase")
            if case.find("failure") is not None
        )
        assert in_junit == failed, name
        assert int(suite.get("tests") or 0) >= len(node["findings"]), name  # type: ignore[arg-type]


def test_every_finding_that_did_not_pass_says_what_it_calls_for(full_report: dict[str, object]) -> None:
    """Issue 19, item 2: FAIL, WARN and UNKNOWN findings name an action with its source; so does their node."""
    missing = []
    for node in _nodes(full_report).values():
        if node["status"] in ("FAIL", "WARN", "UNKNOWN") and not node.get("action"):
            missing.append(f"{node['node']}: no node action")
        for finding in node["findings"]:  # type: ignore[attr-defined]
            evidence = finding.get("evidence", {})
            if finding["status"] in ("FAIL", "WARN", "UNKNOWN") and not (
                evidence.get("action") and evidence.get("action_source")
            ):
                missing.append(f"{node['node']} {finding['check_id']} {finding['status']}: no action")
    assert missing == []
    actions = {f["evidence"]["action"] for n in _nodes(full_report).values() for f in n["findings"]}  # type: ignore[attr-defined]
    assert {"inspect", "reboot", "rma", "rerun", "restore-stack", "monitor"} <= actions
