"""A workload's per-step lines (issue 37, item 4): a run whose loss went NaN at step 40 names step 40, with
its task and node, not only the result line (``loss.step_100``) where the NaN ended up."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.checks.workload import judge_workload
from console.inventory import InventoryError, from_mapping
from console.model.findings import Status, Subject
from console.model.workload import StepsSpec, WorkloadSpec
from console.probes.workload import read_steps
from console.sim.render.workloads import NAN_FROM_STEP

# The lines the simulator's train.py prints (console.sim.render.workloads.train), as a training loop logs.
STEP = r"^step\s+(?P<step>\d+) \| loss (?P<loss>\S+) \| tokens/s (?P<tokens_per_s>\S+)"


def _train(nodes: int = 2, bands: dict[str, str] | None = None) -> WorkloadSpec:
    steps: dict[str, object] = {"pattern": STEP}
    if bands:
        steps.update(bands=bands, source="loss of the accepted run never above 11 after step 10")
    return WorkloadSpec.model_validate(
        {
            "name": "train",
            "nodes": nodes,
            "timeout_s": 60,
            "command": ["python3", "train.py"],
            "results": {"json_prefix": "RESULT ", "steps": steps},
            "criteria": [{"figure": "loss.step_100", "fail_if": "> 2.3", "source": "accepted run"}],
        }
    )


def _log(nan_from: int | None, label: str = "", loss_at: dict[int, float] | None = None) -> str:
    lines = []
    for step in range(10, 101, 10):
        loss = "nan" if nan_from is not None and step >= nan_from else f"{(loss_at or {}).get(step, 2.5):.4f}"
        lines.append(f"{label}step {step:>5} | loss {loss} | tokens/s 51234")
    final = "NaN" if nan_from is not None else "2.07"
    lines.append(f'{label}RESULT {{"tokens_per_s": 51234, "loss": {{"step_100": {final}}}}}')
    return "\n".join(lines) + "\n"


def test_a_nan_from_step_40_names_step_40_with_its_task_and_node() -> None:
    out = _log(None, "0: ") + _log(NAN_FROM_STEP, "1: ")
    found = judge_workload(_train(), Subject(node="gpu01"), out, 0, ["gpu01", "gpu02"])
    steps = {f.message: f for f in found if f.check_id == "workload.train.steps"}
    bad = steps[f"train: task 1 on gpu02: first bad step {NAN_FROM_STEP}: loss is nan"]
    assert bad.status is Status.FAIL and bad.evidence.observed == NAN_FROM_STEP
    assert steps["train: task 0 on gpu01: 10 steps, each finite and in band"].status is Status.PASS


def test_an_out_of_band_step_is_named_and_lines_it_cannot_read_are_said() -> None:
    spec = _train(nodes=1, bands={"loss": "> 11"})
    found = judge_workload(spec, Subject(node="n"), _log(None, loss_at={70: 14.2}), 0)
    [steps] = [f for f in found if f.check_id == "workload.train.steps"]
    assert (steps.status, steps.message) == (Status.FAIL, "train: first bad step 70: loss 14.2 (out of band: > 11)")
    # No step line at all, or one whose figure is no number: UNKNOWN, never PASS.
    [none] = [f for f in judge_workload(spec, Subject(node="n"), 'RESULT {"loss": {"step_100": 2.0}}\n', 0)
              if f.check_id == "workload.train.steps"]  # fmt: skip
    assert none.status is Status.UNKNOWN and "no line matches its steps pattern" in none.message
    garbled = "step    10 | loss 2.x1 | tokens/s 5\n" + 'RESULT {"loss": {"step_100": 2.0}}\n'
    [said] = [f for f in judge_workload(spec, Subject(node="n"), garbled, 0) if f.check_id == "workload.train.steps"]
    assert said.status is Status.UNKNOWN and "step 10: loss '2.x1' is not a number" in said.message


@pytest.mark.parametrize(
    ("steps", "words"),
    [
        ({"pattern": r"step (\d+) loss (\S+)"}, "named group 'step'"),
        ({"pattern": r"step (?P<step>\d+)"}, "named group 'step'"),
        ({"pattern": STEP, "bands": {"grad": "> 1"}, "source": "s"}, "no group of that name"),
        ({"pattern": STEP, "bands": {"loss": "big"}, "source": "s"}, "operator and a number"),
        ({"pattern": STEP, "bands": {"loss": "> 11"}}, "need their source"),
    ],
)
def test_a_bad_steps_declaration_is_refused(steps: dict[str, object], words: str) -> None:
    cluster = {
        "pools": [{"name": "p", "nodes": "n1", "gpu_model": "MI300X"}],
        "workloads": [
            {"name": "w", "timeout_s": 5, "command": ["w"], "results": {"json_prefix": "R ", "steps": steps}}
        ],
    }
    with pytest.raises(InventoryError, match=words):
        from_mapping(cluster)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from(["2.5", "nan", "inf", "-inf", "1e400", "x", "12"]), min_size=1, max_size=12))
def test_the_first_bad_step_is_the_first_non_finite_or_out_of_band_one(losses: list[str]) -> None:
    text = "".join(f"step {i * 10} | loss {loss} | tokens/s 1\n" for i, loss in enumerate(losses, start=1))
    found = read_steps(StepsSpec(pattern=STEP, bands={"loss": "> 11"}, source="s"), text)
    bad = [
        i
        for i, loss in enumerate(losses, start=1)
        if loss != "x" and not (math.isfinite(float(loss)) and float(loss) <= 11)
    ]
    if bad:
        assert found.first_bad is not None and found.first_bad.step == bad[0] * 10
    else:
        assert found.first_bad is None and found.read == len(losses)
