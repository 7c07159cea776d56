"""Simulated Slurm 22.05: sinfo/scontrol text compared with a real 22.05.8 lab, and node states shared on disk.

The expected lines below were captured from slurmctld 22.05.8 (Debian 12) with nodes gpu[001-004] in
partition ``gpu``; the simulated cluster uses the same names so the text can be compared as is.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.sim.commands import SimContext, SimReply, run_program
from console.sim.models import ClusterSpec, NodeSpec, build_node
from console.sim.render.slurm import load_state
from console.sim.specs import GpuModel, stack_preset

NAMES = [f"gpu{n:03d}" for n in range(1, 5)]
STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"


def _cluster(name: str = "lab") -> ClusterSpec:
    stack = stack_preset("6.4.1")
    nodes = [NodeSpec(name=node, gpu_model=GpuModel.MI300X, pool="gpu", stack=stack) for node in NAMES]
    return ClusterSpec(name=name, seed=1, nodes=nodes)


def _slurm(spec: ClusterSpec, state: Path | None, *argv: str) -> SimReply:
    ctx = SimContext(node=build_node(spec, NAMES[0]), cluster=spec, state_dir=state, invocation=1)
    return run_program(ctx, list(argv))


@pytest.fixture
def lab(tmp_path: Path):  # type: ignore[no-untyped-def]
    spec = _cluster()

    def slurm(*argv: str) -> SimReply:
        return _slurm(spec, tmp_path, *argv)

    return slurm


def test_nodes_start_idle_in_the_real_layout(lab) -> None:  # type: ignore[no-untyped-def]
    assert lab("sinfo").stdout == (
        "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\ngpu*         up   infinite      4   idle gpu[001-004]\n"
    )
    assert lab("sinfo", "-N").stdout.splitlines() == [
        "NODELIST   NODES PARTITION STATE ",
        *(f"{name}         1      gpu* idle  " for name in NAMES),
    ]
    assert lab("sinfo", "-R").stdout == "REASON               USER      TIMESTAMP           NODELIST\n"


def test_drain_needs_a_reason(lab) -> None:  # type: ignore[no-untyped-def]
    reply = lab("scontrol", "update", "NodeName=gpu001", "State=DRAIN")
    assert (reply.exit_status, reply.stderr) == (
        1,
        "You must specify a reason when DOWNING or DRAINING a node. Request denied\n",
    )


def test_resume_of_an_idle_node_is_refused_like_slurm(lab) -> None:  # type: ignore[no-untyped-def]
    reply = lab("scontrol", "update", "NodeName=gpu001", "State=RESUME")
    assert (reply.exit_status, reply.stderr) == (1, "slurm_update error: Invalid node state specified\n")


def test_drain_shows_in_every_view(lab) -> None:  # type: ignore[no-untyped-def]
    assert lab("scontrol", "update", "NodeName=gpu002", "State=DRAIN", "Reason=second reason").exit_status == 0
    assert lab("sinfo").stdout.splitlines()[1:] == [
        "gpu*         up   infinite      1  drain gpu002",
        "gpu*         up   infinite      3   idle gpu[001,003-004]",
    ]
    assert lab("sinfo", "-N").stdout.splitlines()[2] == "gpu002         1      gpu* drain "
    assert re.fullmatch(
        rf"second reason        root      {STAMP} gpu002\n", lab("sinfo", "-R").stdout.split("\n", 1)[1]
    )
    long_reasons = lab("sinfo", "-R", "-l").stdout.splitlines()
    assert long_reasons[1] == "REASON               USER         TIMESTAMP           STATE  NODELIST"
    assert re.fullmatch(rf"second reason        root\(0\)      {STAMP} drain  gpu002", long_reasons[2])
    nodes_long = lab("sinfo", "-N", "-l").stdout.splitlines()
    assert nodes_long[1] == (
        "NODELIST   NODES PARTITION       STATE CPUS    S:C:T MEMORY TMP_DISK WEIGHT AVAIL_FE REASON              "
    )
    assert nodes_long[3].startswith("gpu002         1      gpu*     drained 384  ")
    assert nodes_long[3].endswith(" second reason       ")
    custom = lab("sinfo", "-N", "-h", "-o", "%N|%T|%E|%u|%H").stdout.splitlines()
    assert custom[0] == "gpu001|idle|none|Unknown|Unknown"
    assert re.fullmatch(rf"gpu002\|drained\|second reason\|root\|{STAMP}", custom[1])


def test_scontrol_show_node_prints_state_and_reason(lab) -> None:  # type: ignore[no-untyped-def]
    lab("scontrol", "update", "NodeName=gpu003", "State=DRAIN", "Reason=xgmi link down")
    text = lab("scontrol", "show", "node", "gpu003").stdout
    lines = text.splitlines()
    assert lines[0] == "NodeName=gpu003 Arch=x86_64 CoresPerSocket=96 "
    assert "   State=IDLE+DRAIN ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A" in lines
    assert "   Gres=gpu:mi300x:8(S:0-1)" in lines
    assert re.fullmatch(rf"   Reason=xgmi link down \[root@{STAMP}\]", lines[-2]) and lines[-1] == ""
    assert text.endswith("\n\n")
    one_line = lab("scontrol", "-o", "show", "node", "gpu003").stdout
    assert one_line.count("\n") == 1 and "CoresPerSocket=96  CPUAlloc=0" in one_line
    all_nodes = lab("scontrol", "show", "nodes").stdout
    assert all_nodes.count("NodeName=") == 4


def test_resume_and_undrain_return_the_node_to_idle(lab) -> None:  # type: ignore[no-untyped-def]
    lab("scontrol", "update", "NodeName=gpu[001-002]", "State=DRAIN", "Reason=maint")
    assert lab("scontrol", "update", "NodeName=gpu001", "State=RESUME").exit_status == 0
    assert lab("scontrol", "update", "NodeName=gpu002", "State=UNDRAIN").exit_status == 0
    assert "drain" not in lab("sinfo").stdout
    assert lab("sinfo", "-R").stdout.count("\n") == 1
    assert lab("scontrol", "update", "NodeName=gpu002", "State=UNDRAIN").exit_status == 0  # no-op, like slurmctld


def test_down_and_fail_states(lab) -> None:  # type: ignore[no-untyped-def]
    lab("scontrol", "update", "NodeName=gpu001", "State=DOWN", "Reason=dead")
    lab("scontrol", "update", "NodeName=gpu002", "State=FAIL", "Reason=f")
    rows = lab("sinfo", "-N").stdout.splitlines()
    assert rows[1] == "gpu001         1      gpu* down  " and rows[2] == "gpu002         1      gpu* fail  "
    assert "   State=IDLE+FAIL " in lab("scontrol", "show", "node", "gpu002").stdout
    lab("scontrol", "update", "NodeName=gpu001", "State=DRAIN", "Reason=dead+drain")
    assert "   State=DOWN+DRAIN " in lab("scontrol", "show", "node", "gpu001").stdout
    assert lab("scontrol", "update", "NodeName=gpu001", "State=RESUME").exit_status == 0
    assert "   State=IDLE " in lab("scontrol", "show", "node", "gpu001").stdout


def test_unknown_node_fails_but_the_known_ones_still_change(lab) -> None:  # type: ignore[no-untyped-def]
    reply = lab("scontrol", "update", "NodeName=gpu002,gpu999", "State=DRAIN", "Reason=x")
    assert (reply.exit_status, reply.stderr) == (1, "slurm_update error: Invalid node name specified\n")
    assert "drain gpu002" in lab("sinfo").stdout
    missing = lab("scontrol", "show", "node", "gpu9")
    assert (missing.exit_status, missing.stdout) == (1, "Node gpu9 not found\n")


@pytest.mark.parametrize(
    ("argv", "stderr"),
    [
        (
            ("scontrol", "update", "NodeName=gpu003", "State=BOGUS"),
            "Invalid input: State=BOGUS\nRequest aborted\n"
            "Valid states are: NoResp DRAIN FAIL FUTURE RESUME POWER_DOWN POWER_UP UNDRAIN\n"
            "Not all states are valid given a node's prior state\n",
        ),
        (("scontrol", "update", "NodeName=gpu001"), "No changes specified\n"),
        (
            ("scontrol", "update", "State=DRAIN"),
            'No valid entity in update command\nInput line must include "NodeName", "PartitionName", '
            '"Reservation", "JobId", or "SlurmctldDebug"\n',
        ),
        (("scontrol", "bogus"), "invalid keyword: bogus\n"),
        (
            ("scontrol", "--json", "show", "node"),
            "scontrol: unrecognized option '--json'\nTry \"scontrol --help\" for more information\n",
        ),
    ],
)
def test_errors_are_worded_like_slurm_22_05(lab, argv: tuple[str, ...], stderr: str) -> None:  # type: ignore[no-untyped-def]
    reply = lab(*argv)
    assert (reply.exit_status, reply.stderr) == (1, stderr)


def test_filters_and_empty_selection(lab) -> None:  # type: ignore[no-untyped-def]
    lab("scontrol", "update", "NodeName=gpu003", "State=DRAIN", "Reason=range")
    assert lab("sinfo", "-t", "drain").stdout.splitlines()[1] == "gpu*         up   infinite      1  drain gpu003"
    assert lab("sinfo", "-t", "idle", "-N").stdout.count("gpu0") == 4  # idle+drain still counts as idle
    assert lab("sinfo", "-n", "gpu999").stdout.splitlines()[1] == "gpu*         up   infinite      0    n/a "
    assert lab("sinfo", "-p", "nope").stdout == "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n"
    assert lab("sinfo", "-h", "-N", "-n", "gpu003", "-o", "%T").stdout == "drained\n"
    long = lab("sinfo", "-l").stdout.splitlines()
    assert long[1] == "PARTITION AVAIL  TIMELIMIT   JOB_SIZE ROOT OVERSUBS     GROUPS  NODES       STATE NODELIST"
    assert long[2] == "gpu*         up   infinite 1-infinite   no       NO        all      1     drained gpu003"


def test_sinfo_json_is_the_openapi_v0_0_38_document(lab) -> None:  # type: ignore[no-untyped-def]
    lab("scontrol", "update", "NodeName=gpu004", "State=DRAIN", "Reason=ecc/umc")
    text = lab("sinfo", "--json").stdout
    assert '"type": "openapi\\/v0.0.38"' in text and '"errors": [\n  ],' in text and not text.endswith("\n")
    document = json.loads(text)
    assert document["meta"]["Slurm"]["release"] == "22.05.8"
    nodes = {node["name"]: node for node in document["nodes"]}
    assert (nodes["gpu004"]["state"], nodes["gpu004"]["state_flags"], nodes["gpu004"]["reason"]) == (
        "idle",
        ["DRAIN"],
        "ecc/umc",
    )
    assert nodes["gpu001"]["state_flags"] == [] and nodes["gpu001"]["reason_set_by_user"] is None


def test_state_is_shared_through_the_state_dir(tmp_path: Path) -> None:
    spec = _cluster()
    _slurm(spec, tmp_path, "scontrol", "update", "NodeName=gpu001", "State=DRAIN", "Reason=hc")
    assert load_state(tmp_path).of("gpu001").drain
    assert "drain gpu001" in _slurm(spec, tmp_path, "sinfo").stdout  # a fresh context, as another process


def test_concurrent_updates_are_all_kept(tmp_path: Path) -> None:
    spec = _cluster()
    with ThreadPoolExecutor(max_workers=4) as pool:
        replies = list(
            pool.map(
                lambda name: _slurm(
                    spec, tmp_path, "scontrol", "update", f"NodeName={name}", "State=DRAIN", "Reason=p"
                ),
                NAMES,
            )
        )
    assert all(reply.exit_status == 0 for reply in replies)
    assert all(load_state(tmp_path).of(name).drain for name in NAMES)


def test_without_a_state_dir_the_state_lives_in_the_process() -> None:
    spec = _cluster("in-process-only")
    _slurm(spec, None, "scontrol", "update", "NodeName=gpu002", "State=DRAIN", "Reason=mem")
    assert "drain gpu002" in _slurm(spec, None, "sinfo").stdout
    assert "drain" not in _slurm(_cluster("another-cluster"), None, "sinfo").stdout


_WORDS = st.sampled_from(["-N", "-R", "-l", "-h", "-o", "%N %T", "-n", "gpu001", "-t", "drain", "--json", "-p", "gpu"])


@settings(max_examples=100, deadline=None)
@given(st.lists(_WORDS | st.text(max_size=8), max_size=5))
def test_any_sinfo_command_line_gives_a_reply(args: list[str]) -> None:
    reply = _slurm(_cluster("fuzz"), None, "sinfo", *args)
    assert isinstance(reply.stdout, str) and reply.exit_status in (0, 1)


_UPDATE = st.sampled_from(
    ["update", "show", "node", "NodeName=gpu001", "State=DRAIN", "State=RESUME", "Reason=x", "-o"]
)


@settings(max_examples=100, deadline=None)
@given(st.lists(_UPDATE | st.text(max_size=8), max_size=5))
def test_any_scontrol_command_line_gives_a_reply(args: list[str]) -> None:
    reply = _slurm(_cluster("fuzz"), None, "scontrol", *args)
    assert isinstance(reply.stdout, str) and reply.exit_status in (0, 1)


CREATE = ("scontrol", "create", "reservation", "ReservationName=ic-watch", "StartTime=now", "Duration=10",
          "Users=root", "Flags=MAINT,IGNORE_JOBS")  # fmt: skip


def test_reservations_are_created_shown_refused_and_deleted_like_slurm_22_05(lab) -> None:  # type: ignore[no-untyped-def]
    """The forms ``watch --reservation`` sends (console.actions.reservation), answered as the real 22.05.8
    lab answered them (captured with tests/harness/slurm_lab.py); the trial's sim said 'invalid keyword'."""
    assert (lab("scontrol", "show", "reservation").stdout, lab("scontrol", "show", "reservation").exit_status) == (
        "No reservations in the system\n",
        0,
    )
    made = lab(*CREATE, "Nodes=gpu[001-002]")
    assert (made.exit_status, made.stdout, made.stderr) == (0, "Reservation created: ic-watch\n", "")
    shown = lab("scontrol", "show", "reservation", "ic-watch").stdout
    assert re.fullmatch(
        rf"ReservationName=ic-watch StartTime={STAMP} EndTime={STAMP} Duration=00:10:00\n"
        r"   Nodes=gpu\[001-002\] NodeCnt=2 CoreCnt=2 Features=\(null\) PartitionName=\(null\)"
        r" Flags=MAINT,IGNORE_JOBS,SPEC_NODES\n"
        r"   TRES=cpu=2\n"
        r"   Users=root Groups=\(null\) Accounts=\(null\) Licenses=\(null\) State=ACTIVE"
        r" BurstBuffer=\(null\) Watts=n/a\n"
        r"   MaxStartDelay=\(null\)\n\n",
        shown,
    ), shown
    one_line = lab("scontrol", "-o", "show", "reservation").stdout
    assert one_line.count("\n") == 1 and "Duration=00:10:00 Nodes=gpu[001-002] NodeCnt=2" in one_line
    taken = lab(*CREATE, "Nodes=gpu003")
    assert (taken.exit_status, taken.stderr) == (1, "Error creating the reservation: Duplicate reservation name\n")
    unknown = lab(*CREATE[:3], "ReservationName=other", *CREATE[4:], "Nodes=gpu009")
    assert (unknown.exit_status, unknown.stderr) == (1, "Error creating the reservation: Invalid node name specified\n")
    endless = lab("scontrol", "create", "reservation", "ReservationName=x", "StartTime=now", "Nodes=gpu003")
    assert (
        endless.exit_status == 1 and "An end time or duration must be given.  No reservation created." in endless.stderr
    )
    missing = lab("scontrol", "show", "reservation", "nope")
    assert (missing.exit_status, missing.stdout) == (1, "Reservation nope not found\n")
    assert lab("scontrol", "delete", "ReservationName=ic-watch").exit_status == 0
    again = lab("scontrol", "delete", "ReservationName=ic-watch")
    assert (again.exit_status, again.stderr) == (
        1,
        "delete_reservation ReservationName=ic-watch: Requested reservation is invalid\n",
    )
    assert lab("scontrol", "show", "reservation").stdout == "No reservations in the system\n"
