"""Pure planning rules (no Slurm needed): reason tags, ownership and idempotence per node, caps, re-checks,
and the one-line outcomes and refusals an operator reads."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from console.actions import ActionKind, ActionRequest, ActionService, CapPolicy, RunOutput, bare_inventory
from console.actions.caps import cap_violations
from console.actions.planning import NOT_READ, explain, outcome, plan_enforce, plan_slurm, recheck
from console.actions.slurm import clean_reason, decide, is_ours, tag_reason, update_argv
from console.actions.slurm_state import SlurmNode
from console.inventory import StackPin
from console.store import Store

OURS = "instinct-console: ecc [sweep 4]"
STATES = {
    "idle": SlurmNode(name="idle", base="IDLE"),
    "busy": SlurmNode(name="busy", base="ALLOCATED"),
    "ours": SlurmNode(name="ours", base="IDLE", flags=("DRAIN",), reason=OURS, reason_user="root"),
    "ours_busy": SlurmNode(name="ours_busy", base="MIXED", flags=("DRAIN",), reason=OURS, reason_user="root"),
    "theirs": SlurmNode(name="theirs", base="IDLE", flags=("DRAIN",), reason="NHC: hung", reason_user="slurm"),
    "down": SlurmNode(name="down", base="DOWN", reason="Not responding", reason_user="slurm"),
    "down_ours": SlurmNode(name="down_ours", base="DOWN", flags=("DRAIN",), reason=OURS, reason_user="root"),
}
OWNED = frozenset({"ours", "ours_busy", "down_ours"})  # the nodes the console's drain records hold


def test_reason_tag_and_cleaning() -> None:
    assert tag_reason("xgmi\r\nlink\tdown ", 12) == "instinct-console: xgmi link down [sweep 12]"
    assert tag_reason("plain") == "instinct-console: plain"
    assert clean_reason("a\x00b\x1b[31mc") == "a b [31mc"
    assert is_ours(OURS) and not is_ours("NHC: hung") and not is_ours(None) and not is_ours("")
    assert update_argv("gpu[1-2]", ActionKind.DRAIN, "x")[-1] == 'Reason="x"'
    assert update_argv("gpu1", ActionKind.UNDRAIN) == ("scontrol", "update", "NodeName=gpu1", "State=UNDRAIN")


@pytest.mark.parametrize(
    ("kind", "node", "force", "act", "starts"),
    [
        (ActionKind.DRAIN, "idle", False, True, "drain (now IDLE)"),
        (ActionKind.DRAIN, "busy", False, True, "drain (now ALLOCATED)"),
        (ActionKind.DRAIN, "ours", False, False, "no-op: already DRAINED by the console"),
        (ActionKind.DRAIN, "ours_busy", True, False, "no-op: already DRAINING by the console"),
        (ActionKind.DRAIN, "theirs", False, False, "skip: DRAINED by slurm: NHC: hung; not overwritten"),
        (ActionKind.DRAIN, "theirs", True, True, "drain, replacing the reason of DRAINED by slurm"),
        (ActionKind.DRAIN, "down", False, False, "skip: DOWN by slurm: Not responding"),
        (ActionKind.DRAIN, "gone", False, False, "skip: not a node of this Slurm cluster"),
        (ActionKind.RESUME, "idle", False, False, "no-op: IDLE, nothing to resume"),
        (ActionKind.RESUME, "busy", True, False, "no-op: ALLOCATED"),
        (ActionKind.RESUME, "ours", False, True, "resume (DRAINED by the console"),
        (ActionKind.RESUME, "theirs", False, False, "skip: DRAINED by slurm: NHC: hung; the console resumes only"),
        (ActionKind.RESUME, "theirs", True, True, "resume DRAINED by slurm: NHC: hung (forced)"),
        (ActionKind.RESUME, "down", False, False, "skip: DOWN by slurm"),
        (ActionKind.RESUME, "down_ours", False, True, "resume (DOWN+DRAIN by the console"),
        (ActionKind.UNDRAIN, "down", True, False, "no-op: DOWN, nothing to undrain"),
        (ActionKind.UNDRAIN, "ours_busy", False, True, "undrain (DRAINING by the console"),
    ],
)
def test_slurm_decisions(kind: ActionKind, node: str, force: bool, act: bool, starts: str) -> None:
    decision = decide(kind, node, STATES, force, owned=OWNED)
    assert decision.act is act and decision.note.startswith(starts), decision.note


def test_unread_state_acts_and_says_it_will_check_again() -> None:
    decision = decide(ActionKind.RESUME, "x", None, False, owned=frozenset())
    assert decision.act and "checked again when executing" in decision.note


def drain(*targets: str, force: bool = False) -> ActionRequest:
    return ActionRequest(ActionKind.DRAIN, targets, reason="ecc", force=force)


def test_cap_counts_every_node_out_of_service_whoever_took_it_out() -> None:
    pools = {"p": [f"n{i:02d}" for i in range(36)] + ["ours", "ours_busy", "idle", "theirs"]}  # 40 nodes: cap 4
    states = dict(STATES)
    plan = plan_slurm(drain("idle"), states, where="local", caps=CapPolicy(), pools=pools, owned=OWNED)
    assert plan.refused is None  # 2 by the console + 1 by others + 1 = 4
    plan = plan_slurm(
        drain("idle", "busy"), states, where="local", caps=CapPolicy(), pools={"p": [*pools["p"], "busy"]}, owned=OWNED
    )
    # One of the two fits (3 out + 1 = 4): it is drained, the other is named with the count.
    assert plan.refused is None and plan.capped == ("busy",) and plan.acting_on == ("idle",)
    assert plan.decisions["busy"] == (
        "skip: cap: cap 4 = max(2, 10% of 41); 3 already out (2 by the console, 1 by others), 1 more by this action"
    )
    # None fits: refused as a whole, with the pool's count.
    states["idle"] = STATES["ours"]
    plan = plan_slurm(
        drain("busy"), states, where="local", caps=CapPolicy(), pools={"p": [*pools["p"], "busy"]}, owned=OWNED
    )
    assert plan.refused is not None and "cap 4 = max(2, 10% of 41)" in plan.refused, plan.decisions
    assert plan.commands == () and plan.steps == ()


def test_the_cap_is_checked_once_the_state_is_read() -> None:
    plan = plan_slurm(drain("a", "b"), None, where="local", caps=CapPolicy(), pools={"p": ["a", "b"]}, owned=OWNED)
    assert plan.refused is None and plan.notes == (NOT_READ,)


def test_cap_policy() -> None:
    assert CapPolicy().cap("p", 5) == 2 and CapPolicy().cap("p", 100) == 10 and CapPolicy().cap("p", 39) == 3
    assert CapPolicy(fixed=7).cap("p", 100) == 7 and CapPolicy(per_pool={"p": 1}, fixed=7).cap("p", 100) == 1
    # One node of a pool always stays in service, whatever cap is asked for.
    assert CapPolicy().cap("p", 2) == 1 and CapPolicy(fixed=5).cap("p", 3) == 2 and CapPolicy().cap("p", 1) == 0
    assert CapPolicy(fixed=5).describe("p", 3) == "cap 2 (5 set for pool p), leaving 1 of 3 in service"
    with pytest.raises(ValueError):
        CapPolicy(fraction=1.5)
    assert cap_violations(CapPolicy(), {"a": ["x", "y", "z"]}, held=["x", "y"], adding=["x"]) == []
    assert cap_violations(CapPolicy(), {"a": ["x", "y", "z"], "b": ["w"]}, held=[], adding=["w"]) == [
        "pool b: 1 nodes would be out of service (0 already: 0 by the console, 0 by others; 1 new), over the"
        " cap 0 = max(2, 10% of 1), leaving 1 of 1 in service"
    ]


def test_recheck_refuses_a_plan_that_would_now_do_more() -> None:
    pools = {"p": [*STATES, *(f"n{i}" for i in range(10))]}  # 5 of its 17 nodes are out: cap 9 leaves room
    shown = plan_slurm(drain("idle"), STATES, where="local", caps=CapPolicy(minimum=9), pools=pools, owned=OWNED)
    fresh = plan_slurm(
        drain("idle", "busy"), STATES, where="local", caps=CapPolicy(minimum=9), pools=pools, owned=OWNED
    )
    assert recheck(shown, fresh) is not None and "also act on busy" in (recheck(shown, fresh) or "")
    assert recheck(fresh, shown) is None


def test_outcome_lines() -> None:
    plan = plan_slurm(
        drain("idle", "theirs", "ours"), STATES, where="local", caps=CapPolicy(minimum=9), pools={}, owned=OWNED
    )
    assert outcome(ActionKind.DRAIN, plan, []) == "drained idle; skipped theirs"
    failed = RunOutput("head", ("scontrol",), 1, "", "slurm_update error: Invalid user id\n")
    assert outcome(ActionKind.DRAIN, plan, [failed]) == (
        "failed: slurm_update error: Invalid user id (scontrol update needs root or a Slurm operator on head)"
    )
    lock = RunOutput("n1", ("apt-mark", "hold"), 100, "", "E: Could not open lock file - open (13: Permission denied)")
    assert explain(lock).endswith("(apt-mark needs root on n1)")
    unreachable = RunOutput("n1", ("true",), None, "", "", "unreachable: no route")
    assert explain(unreachable) == "unreachable: no route" and not unreachable.ok
    assert "not run: unreachable" in unreachable.transcript()


def test_enforce_plan_per_node_os() -> None:
    pins = {"a": StackPin(rocm="6.4.1"), "b": StackPin(rocm="6.4.1"), "c": StackPin(os="ubuntu 22.04"), "d": StackPin()}
    plan = plan_enforce(
        ActionRequest(ActionKind.ENFORCE_PIN, ("a", "b", "c", "d")), pins, {"a": "ubuntu", "b": "rhel", "c": "ubuntu"}
    )
    assert plan.commands == (
        ("apt-mark", "hold", "rocm-core", "rocm"),
        ("dnf", "-y", "versionlock", "add", "rocm-core", "rocm"),
    )
    assert plan.where == "a,b"
    assert plan.decisions["c"] == "no-op: the pool pin names no packaged field"
    assert plan.decisions["d"] == "skip: OS not detected yet"


def test_enforce_skips_a_node_last_seen_off_its_pin_and_says_which_were_never_checked() -> None:
    pin = StackPin(rocm="7.0.2", kernel="6.8.0-49-generic")
    targets = ("same", "drifted", "unseen")
    stacks = {"same": {"rocm": "7.0.2", "kernel": "6.8.0-49-generic"}, "drifted": {"rocm": "7.0.1"}, "unseen": {}}
    plan = plan_enforce(
        ActionRequest(ActionKind.ENFORCE_PIN, targets),
        dict.fromkeys(targets, pin),
        dict.fromkeys(targets, "ubuntu"),
        stacks=stacks,
    )
    assert plan.decisions["drifted"] == "skip: off its pin (rocm 7.0.1, pin 7.0.2): a hold would keep the drift"
    assert [argv[:2] for argv in plan.commands] == [("apt-mark", "hold")] * 2
    assert plan.where == "same,unseen"
    assert "never swept, not checked against the pin: unseen (run drift first)" in plan.notes


class DeadController:
    """A runner whose every command fails as scontrol/sinfo do when slurmctld is down."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    async def run(self, where: str, argv: Sequence[str], *, timeout_s: float = 60.0) -> RunOutput:
        self.calls.append(tuple(argv))
        message = "slurm_load_node error: Unable to contact slurm controller (connect failure)\n"
        return RunOutput(where, tuple(argv), 1, "", message)

    async def close(self) -> None:
        return None


async def test_an_unreadable_scheduler_refuses_the_plan_with_its_message(store: Store) -> None:
    runner = DeadController()
    service = ActionService(bare_inventory(), store, runner)
    request = ActionRequest(ActionKind.DRAIN, ("gpu001",), reason="x")
    await service.refresh(request)
    plan = service.plan(request)
    assert plan.refused is not None and plan.refused.startswith("cannot read node states on local:")
    assert "Unable to contact slurm controller" in plan.refused
    assert [c[:2] for c in runner.calls] == [
        ("scontrol", "show"),
        ("sinfo", "--json"),
        ("scontrol", "-o"),
        ("sinfo", "-N"),
    ]
    assert not any(c[:2] == ("scontrol", "update") for c in runner.calls)
    states = await service.node_states(["gpu001"])
    assert states["gpu001"].startswith("UNKNOWN: cannot read node states on local")
    result = await service.execute(plan)
    assert not result.ok and store.audit_log(1)[0]["outcome"].startswith("refused: cannot read node states")
