"""Site-declared workloads (docs/workloads.md): the declaration, its command, its figures, its judgement, and
``workload-check`` end to end. The examples are read from the documentation itself, so it cannot drift."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from console.checks.workload import judge_workload
from console.cli import main
from console.inventory import InventoryError, from_mapping, load_inventory
from console.model.findings import Status, Subject
from console.model.workload import ResultsSpec
from console.probes.workload import read_figures, workload_argv
from tests.documented import workload_blocks

POOLS = '[[pools]]\nname = "mi300x-a"\nnodes = "gpu[01-04]"\ngpu_model = "MI300X"\n\n'
VLLM_LOG = """INFO 11-02 10:01:02 [benchmark] Starting benchmark
============ Serving Benchmark Result ============
Successful requests:                     500
Request throughput (req/s):              12.31
Output token throughput (tok/s):         2461.90
==================================================
"""


def _doc_examples() -> str:
    blocks = workload_blocks()
    assert len(blocks) == 2, "the page shows the two examples"
    return "\n".join(blocks)


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.toml"
    path.write_text(POOLS + _doc_examples(), encoding="utf-8")
    return path


def test_the_documented_examples_load(cluster: Path) -> None:
    workloads = load_inventory(cluster).workloads
    assert list(workloads) == ["vllm-llama3-8b-serving", "llama-pretrain-smoke"]
    vllm, train = workloads.values()
    assert vllm.container is not None and vllm.container.runtime == "docker" and vllm.pools == ["mi300x-a"]
    assert set(vllm.results.regex) == {"request_throughput", "output_throughput"}
    assert train.nodes == 2 and train.results.json_prefix == "RESULT "
    assert [c.figure for c in train.criteria] == ["tokens_per_s", "loss.step_100", "loss.step_100"]


def test_the_command_in_its_container_and_through_srun(cluster: Path) -> None:
    vllm, train = load_inventory(cluster).workloads.values()
    argv = workload_argv(vllm)
    assert argv[:3] == ("docker", "run", "--rm") and "--device=/dev/kfd" in argv and "--ipc=host" in argv
    assert argv[argv.index("rocm/vllm@sha256:0123...cdef") + 1 :] == tuple(vllm.command)
    srun = (
        "srun",
        "--nodes=2",
        "--ntasks-per-node=1",
        "--immediate=30",
        "--time=21",
        "--kill-on-bad-exit=1",
        "--label",
    )
    assert workload_argv(train)[:10] == (*srun, "apptainer", "exec", "--rocm")
    # Placed on a group, srun is held to exactly its nodes: Slurm would pick any two otherwise.
    assert workload_argv(train, ["gpu001", "gpu002"])[:4] == ("srun", "--nodes=2", "--nodelist=gpu001,gpu002",
                                                               "--ntasks-per-node=1")  # fmt: skip
    bare = train.model_copy(update={"container": None, "nodes": 1})
    assert workload_argv(bare) == tuple(train.command)


def _workload(**changes: object) -> dict[str, object]:
    base: dict[str, object] = {
        "name": "w",
        "timeout_s": 60,
        "command": ["run"],
        "results": {"regex": {"x": r"x=(\S+)"}},
        "criteria": [{"figure": "x", "fail_if": "< 1", "source": "s"}],
    }
    return base | changes


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"container": {"runtime": "docker", "image": "rocm/vllm:latest"}}, "is not pinned"),
        ({"container": {"runtime": "podman", "image": "rocm/vllm"}}, "is not pinned"),
        ({"container": {"runtime": "singularity", "image": "x.sif"}}, "workloads[0].container.runtime"),
        ({"results": {"regex": {"x": "x=\\S+"}}}, "needs exactly one group"),
        ({"results": {"regex": {"x": "x=(\\S+"}}}, "regex x: missing )"),
        ({"results": {}}, "give json_prefix or regex"),
        ({"criteria": [{"figure": "y", "fail_if": "< 1", "source": "s"}]}, "criteria name figures no regex reads: y"),
        ({"criteria": [{"figure": "x", "fail_if": "< fast", "source": "s"}]}, "an operator"),
        ({"criteria": [{"figure": "x", "source": "s"}]}, "needs fail_if or warn_if"),
        ({"name": "a b"}, "letters, digits"),
        ({"command": []}, "workloads[0].command"),
        ({"pools": ["nowhere"]}, "workloads[0].pools: no pool is called 'nowhere'"),
    ],
)
def test_a_bad_declaration_is_refused_naming_the_field(changes: dict[str, object], words: str) -> None:
    data = {"pools": [{"name": "p", "nodes": "n1", "gpu_model": "MI300X"}], "workloads": [_workload(**changes)]}
    with pytest.raises(InventoryError, match=re.escape(words)):
        from_mapping(data, "c.toml")


def test_figures_from_regexes_and_from_a_json_line() -> None:
    regex = ResultsSpec(regex={"rps": r"Request throughput \(req/s\):\s+(\S+)", "gone": r"nothing=(\d+)"})
    figures = read_figures(regex, VLLM_LOG, ["rps", "gone"])
    assert figures.values == {"rps": 12.31} and figures.missing == ["gone"] and figures.problems == []
    line = ResultsSpec(json_prefix="RESULT ")
    text = (
        'step 1\nRESULT {"tokens_per_s": 100}\nRESULT {"tokens_per_s": 51234, "loss": {"step_100": NaN}, "ok": true}\n'
    )
    figures = read_figures(line, text, ["tokens_per_s"])
    assert figures.values["tokens_per_s"] == 51234 and set(figures.values) == {"tokens_per_s", "loss.step_100"}
    assert read_figures(line, "RESULT {cut", []).problems[0].startswith("the last 'RESULT' line is not JSON")
    assert read_figures(line, "nothing\n", []).problems == ["no line starts with 'RESULT '"]
    # One task of an srun job printed its line corrupted: said, though the last task's line is whole.
    tasks = 'RESULT {"tokens_per_s": 51\x00234\nRESULT {"tokens_per_s": 51234}\n'
    figures = read_figures(line, tasks, ["tokens_per_s"])
    assert figures.values == {"tokens_per_s": 51234}
    assert len(figures.problems) == 1 and figures.problems[0].startswith("'RESULT' line 1 of 2 is not JSON")


def test_judging_a_run(cluster: Path) -> None:
    vllm, train = load_inventory(cluster).workloads.values()
    subject = Subject(node="gpu01")
    judged = {f.check_id: f for f in judge_workload(vllm, subject, VLLM_LOG, 0)}
    rps = judged["workload.vllm-llama3-8b-serving.request_throughput"]
    assert (rps.status, rps.evidence.expected) == (Status.WARN, "warn if < 12.5")
    assert rps.evidence.source is not None and rps.evidence.source.startswith("accepted run of 2026-11-02")
    assert judged["workload.vllm-llama3-8b-serving.exit"].status is Status.PASS
    # Two nodes through srun --label: each task's result is judged, and names its task and node.
    result = 'RESULT {"tokens_per_s": 50000, "loss": {"step_100": 2.41}}'
    out = f"0: step 100\n0: {result}\n1: {result}\n"
    statuses = sorted((f.check_id, f.status) for f in judge_workload(train, subject, out, 1, ["gpu01", "gpu02"]))
    assert statuses == [
        ("workload.llama-pretrain-smoke.exit", Status.FAIL),
        *[("workload.llama-pretrain-smoke.loss.step_100", Status.FAIL)] * 2,
        *[("workload.llama-pretrain-smoke.loss.step_100", Status.PASS)] * 2,
        *[("workload.llama-pretrain-smoke.tokens_per_s", Status.PASS)] * 2,
    ]


def test_every_task_of_an_n_node_run_is_judged_naming_its_node(cluster: Path) -> None:
    train = load_inventory(cluster).workloads["llama-pretrain-smoke"]
    group = ["gpu01", "gpu02"]

    def judged(out: str) -> list[tuple[Status, str]]:
        return [(f.status, f.message) for f in judge_workload(train, Subject(node="gpu01"), out, 0, group)]

    good, slow = (
        '{"tokens_per_s": 50000, "loss": {"step_100": 2.07}}',
        '{"tokens_per_s": 9000, "loss": {"step_100": 2.07}}',
    )
    # The last line passes; task 1's line, before it, is slow: the run FAILs, naming task 1 and its node.
    failed = [m for s, m in judged(f"1: RESULT {slow}\n0: RESULT {good}\n") if s is Status.FAIL]
    assert failed and all(
        m.startswith("llama-pretrain-smoke: task 1 on gpu02: tokens_per_s: 9000 (fail if < 46000)") for m in failed
    )
    # Task 1 printed no result line: UNKNOWN for the run, not PASS, whatever task 0 and the exit status say.
    found = judged(f"0: RESULT {good}\n1: step 100\n")
    assert (Status.UNKNOWN, "llama-pretrain-smoke: task 1 on gpu02: no line starts with 'RESULT '") in found
    assert max(s.severity for s, _ in found) == Status.UNKNOWN.severity
    # Output without srun's task labels (a site's own srun without --label): the tasks cannot be told apart.
    [*_, (status, said)] = judged(f"RESULT {good}\n")
    assert status is Status.UNKNOWN and "no line carries an srun task label" in said


def test_nan_fails_and_a_missing_figure_is_unknown(cluster: Path) -> None:
    train = load_inventory(cluster).workloads["llama-pretrain-smoke"]
    out = '0: RESULT {"loss": {"step_100": NaN}}\n1: RESULT {"tokens_per_s": 50000, "loss": {"step_100": 2.07}}\n'
    found = {(f.check_id, f.status, f.message) for f in judge_workload(train, Subject(node="n"), out, 0, ["n", "m"])}
    assert (
        "workload.llama-pretrain-smoke.loss.step_100",
        Status.FAIL,
        "llama-pretrain-smoke: task 0 on n: loss.step_100 is nan",
    ) in found
    unknown = [f for f in found if f[1] is Status.UNKNOWN]
    assert unknown == [
        (
            "workload.llama-pretrain-smoke.tokens_per_s",
            Status.UNKNOWN,
            "llama-pretrain-smoke: task 0 on n: tokens_per_s is not in the output",
        )
    ]
    nan = [f for f in found if f[0].endswith("loss.step_100") and "task 0" in f[2]]
    assert nan and all(f[1] is not Status.PASS for f in nan), "a NaN passes no band"


def test_workload_check_end_to_end(cluster: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "vllm.log"
    log.write_text(VLLM_LOG)
    code = main(["workload-check", "-i", str(cluster), "vllm-llama3-8b-serving", str(log), "--exit-status", "0"])
    out = capsys.readouterr().out
    assert code == 0 and "WARN     vllm-llama3-8b-serving: request_throughput: 12.31 (warn if < 12.5)" in out
    log.write_text(VLLM_LOG.replace("12.31", "10.02"))
    args = ["workload-check", "-i", str(cluster), "vllm-llama3-8b-serving", str(log), "--exit-status", "0", "--json"]
    assert main(args) == 1
    payload = json.loads(capsys.readouterr().out)
    assert [f["status"] for f in payload["findings"] if f["check_id"].endswith("request_throughput")] == ["FAIL"]
    log.write_text("Traceback ...\nRuntimeError: HIP error\n")
    assert main([*args[:-1]]) == 3, "figures that could not be read: UNKNOWN, exit 3"
    capsys.readouterr()
    assert main(["workload-check", "-i", str(cluster), "nope", str(log), "--exit-status", "0"]) == 2
    assert "no workload 'nope'" in capsys.readouterr().err
    assert main(["workload-check", "-i", str(cluster), "llama-pretrain-smoke", "--command"]) == 0
    srun = "srun --nodes=2 --ntasks-per-node=1 --immediate=30 --time=21 --kill-on-bad-exit=1 --label"
    shown = capsys.readouterr()
    assert shown.out.startswith(f"{srun} apptainer exec --rocm ") and "--nodelist=<the group" in shown.err
    hosts = ["workload-check", "-i", str(cluster), "llama-pretrain-smoke", "--command", "--hosts", "gpu[001-002]"]
    assert main(hosts) == 0
    assert capsys.readouterr().out.startswith("srun --nodes=2 --nodelist=gpu001,gpu002 --ntasks-per-node=1 ")
