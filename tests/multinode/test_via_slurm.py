"""``--via-slurm``: the srun line, reading labelled task output, and one real Slurm job over a lab cluster."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from console.checks import load_packs
from console.inventory import from_mapping, load_inventory
from console.inventory.model import Node
from console.model.findings import NodeVerdict, Status
from console.service.assembly import EngineSpec, build_checker, build_engine
from console.sim.faults import Fault, FaultKind
from console.store import Store
from console.sweep import SweepEngine
from console.sweep.checker_slurm import SlurmChecker
from console.sweep.cluster_sweep import sweep_cluster
from console.sweep.node_report import LocalCheckReport, LocalProbeRun
from console.sweep.via_slurm import (
    SlurmJob,
    SlurmJobSettings,
    _images_given,
    _job_error,
    reports_from,
    runnable_nodes,
    srun_argv,
    task_outputs,
)
from console.transport import LocalTransport
from tests.harness import slurm_lab
from tests.multinode.localnodes import local_cluster, per_node_launcher


def report(node: str, output: str = "6.8.0\n") -> LocalCheckReport:
    return LocalCheckReport(
        node=node,
        pool="p",
        gpu_model="MI300X",
        level="quick",
        outcome="done",
        duration_s=1.0,
        finished_at=1.0,
        judged_with="0" * 16,
        status=Status.FAIL,
        reason="",
        raw=[LocalProbeRun(probe="host.kernel", exit_status=0, output=output)],
    )


def labelled(task: int, text: str, width: int = 1024) -> list[str]:
    """What srun --label prints for one line of a task: chunks of ``width`` characters, each labelled."""
    return [f"{task}: {text[i : i + width]}" for i in range(0, len(text), width)]


def test_srun_line_checks_every_node_in_one_job() -> None:
    nodes = [Node(name=f"gpu00{i}", pool="p", gpu_model="MI300X", gpu_count=8, address="x") for i in (1, 2, 3)]
    argv = srun_argv(nodes, "/shared/inv.toml", "multinode", SlurmJobSettings(partition="gpu"))
    assert argv[:5] == ["srun", "-N", "3", "-w", "gpu[001-003]"]
    assert {"--ntasks-per-node=1", "--label", "--kill-on-bad-exit=0", "--immediate=60", "--partition=gpu"} <= set(argv)
    assert "--time=18" in argv  # the standard set's slowest probe (900 s) + grace + overhead, rounded up, + 1
    tail = ["instinct-console", "check-local", "-i", "/shared/inv.toml", "--probes", "standard", "--json", "-"]
    assert argv[-len(tail) :] == tail
    # Site packs, the console's stored pins and images and --slurm-raw go to the nodes, which judge with them.
    settings = SlurmJobSettings(checks=("/shared/site",), raw=True)
    inventory = from_mapping({"name": "c", "pools": [{"name": "p", "gpu_model": "MI300X", "nodes": "gpu001"}]})
    # Only the inventory's pools: an override of a pool the cluster file no longer has tells the nodes nothing.
    images = _images_given(inventory, {("framework", "p"): "t@sha256:a", ("framework", "gone"): "t@sha256:b"})
    argv = srun_argv(nodes, "/shared/inv.toml", "quick", settings, {"p": {"rocm": "6.4.1"}}, images=images)
    assert argv[argv.index("check-local") :] == [
        "check-local", "-i", "/shared/inv.toml", "--probes", "quick", "--checks", "/shared/site",
        "--pins", '{"p":{"rocm":"6.4.1"}}', "--images", '{"p":{"framework":"t@sha256:a"}}', "--raw", "--json", "-",
    ]  # fmt: skip


def test_task_outputs_rejoin_chunked_interleaved_lines() -> None:
    one, two = report("gpu001", "a b " * 900).model_dump_json(), report("gpu002", "x" * 2500).model_dump_json()
    chunks_one, chunks_two = labelled(0, one), labelled(1, two)
    mixed = [line for pair in zip(chunks_one, chunks_two, strict=False) for line in pair]
    mixed += chunks_one[len(chunks_two) :] + chunks_two[len(chunks_one) :]
    assert task_outputs("\n".join(mixed)) == {0: one, 1: two}
    found, unusable = reports_from("\n".join([*mixed, "2: Traceback (most recent call last):", "not labelled"]))
    assert set(found) == {"gpu001", "gpu002"} and unusable == {}
    assert found["gpu001"].raw is not None and found["gpu001"].raw[0].output == "a b " * 900
    # A cut report still names its node, which is then UNKNOWN for that reason, not "no report".
    _, unusable = reports_from("\n".join(chunks_one[:2]))
    assert list(unusable) == ["gpu001"] and "cut or garbled" in unusable["gpu001"]


def test_only_idle_or_mixed_nodes_get_the_job() -> None:
    sinfo = "gpu001 idle\ngpu002 drained\ngpu002 drained\ngpu003 mixed\ngpu004 idle*\n"
    refused = runnable_nodes(sinfo, ["gpu001", "gpu002", "gpu003", "gpu004", "gpu005"])
    assert refused == {
        "gpu002": "Slurm state drained: no job can run there now",
        "gpu004": "Slurm state idle*: no job can run there now",
        "gpu005": "not listed by sinfo: not a Slurm node",
    }


def test_job_error_quotes_the_task_of_the_node() -> None:
    stderr = (
        "1: Traceback (most recent call last):\n"
        "1: ModuleNotFoundError: No module named 'console'\n"
        "0: fine\n"
        "srun: error: gpu002: task 1: Exited with exit code 1\n"
    )
    assert _job_error(stderr, "gpu002") == "ModuleNotFoundError: No module named 'console'"
    assert _job_error(stderr, "gpu007") == "srun: error: gpu002: task 1: Exited with exit code 1"
    assert _job_error("", "gpu007") == "the task printed no report"


@pytest.fixture(scope="module")
def lab() -> Iterator[Any]:
    with slurm_lab.SlurmLab(3) as running:
        yield running


def test_one_slurm_job_sweeps_every_idle_node(lab: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    names = list(lab.nodes)
    inventory_path = local_cluster(tmp_path, names, [Fault(kind=FaultKind.ECC_UNCORRECTABLE, node=names[1], gpu=3)])
    lab.run("scontrol", "update", f"NodeName={names[2]}", "State=DRAIN", "Reason=test")
    monkeypatch.setenv("SLURM_CONF", lab.env["SLURM_CONF"])
    inventory = load_inventory(inventory_path)
    settings = SlurmJobSettings(command=(str(per_node_launcher(tmp_path)),), immediate_s=20)
    job = SlurmJob(inventory, LocalTransport("local"), "local", settings)
    store = Store(tmp_path / "h.db")
    engine = SweepEngine(inventory, job.submit, load_packs(), store, checker=SlurmChecker(job))

    async def sweep() -> tuple[dict[str, NodeVerdict], float, float]:
        try:
            began = time.monotonic()
            result, _ = await sweep_cluster(engine, inventory.nodes, "quick")
            return result.verdicts, result.duration_s, time.monotonic() - began
        finally:
            await engine.close()

    try:
        verdicts, duration_s, wall_s = asyncio.run(sweep())
    finally:
        lab.reset()
    # The job's srun is the sweep: its duration (the report's, Prometheus's) said 0.1 s of a 6 s run once.
    assert duration_s >= 0.9 * wall_s, (duration_s, wall_s)
    # The healthy node judged itself: its verdict came back with its PASS findings as counts, no outputs.
    assert verdicts[names[0]].status is Status.PASS and sum(verdicts[names[0]].passed.values()) > 200
    assert store.latest_probe_run(names[0], "amdsmi.static") is None
    # The failing one sent its outputs too: judged here again, and kept.
    assert verdicts[names[1]].status is Status.FAIL and verdicts[names[1]].families["ecc"] is Status.FAIL
    assert verdicts[names[2]].status is Status.UNKNOWN
    assert "Slurm state drained" in verdicts[names[2]].reason
    stored = store.latest_probe_run(names[1], "amdsmi.static")
    assert stored is not None and stored["command"] == "amd-smi static --json"
    output = store.probe_output(int(stored["id"]))
    assert output is not None and b'"market_name"' in output[0]
    assert os.environ.get("SLURMD_NODENAME") is None  # the console ran as itself, not as a node


def test_a_report_cut_on_its_way_back_is_unknown(lab: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    names = list(lab.nodes)[:2]
    inventory = load_inventory(local_cluster(tmp_path, names))
    monkeypatch.setenv("SLURM_CONF", lab.env["SLURM_CONF"])
    # The first node's report loses its end on the way (a full pipe, a killed task): only 3,000 bytes arrive.
    cutting = tmp_path / "cutting-console"
    launcher = per_node_launcher(tmp_path)
    cutting.write_text(
        f'#!/bin/sh\nif [ "$SLURMD_NODENAME" = "{names[0]}" ]; then\n'
        f'  {launcher} "$@" | head -c 3000; echo\nelse\n  exec {launcher} "$@"\nfi\n'
    )
    cutting.chmod(0o755)
    settings = SlurmJobSettings(command=(str(cutting),), immediate_s=20)
    job = SlurmJob(inventory, LocalTransport("local"), "local", settings)
    engine = SweepEngine(inventory, job.submit, load_packs(), checker=SlurmChecker(job))

    async def sweep() -> tuple[dict[str, NodeVerdict], float, float]:
        try:
            began = time.monotonic()
            result, _ = await sweep_cluster(engine, inventory.nodes, "quick")
            return result.verdicts, result.duration_s, time.monotonic() - began
        finally:
            await engine.close()

    try:
        verdicts, duration_s, wall_s = asyncio.run(sweep())
    finally:
        lab.reset()
    # The job's srun is the sweep: its duration (the report's, Prometheus's) said 0.1 s of a 6 s run once.
    assert duration_s >= 0.9 * wall_s, (duration_s, wall_s)
    assert verdicts[names[0]].status is Status.UNKNOWN
    assert "its check-local report is cut or garbled (3000 characters" in verdicts[names[0]].reason
    assert verdicts[names[1]].status is Status.PASS


def test_a_missing_console_on_the_nodes_is_reported_per_node(
    lab: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = list(lab.nodes)[:2]
    inventory = load_inventory(local_cluster(tmp_path, names))
    monkeypatch.setenv("SLURM_CONF", lab.env["SLURM_CONF"])
    settings = SlurmJobSettings(command=(str(tmp_path / "no-such-console"),), immediate_s=20)
    job = SlurmJob(inventory, LocalTransport("local"), "local", settings)
    asyncio.run(job.gather(inventory.nodes, "quick"))
    for name in names:
        with pytest.raises(Exception, match=r"no report from the Slurm job: .*no-such-console"):
            asyncio.run(job.check_reachable(name))


# The pool's framework image in the cluster file, whose torch GEMM the simulator runs slower, and the one
# the pool was accepted in, which ``rollback`` set back (a store override: the cluster file stays as it is).
IMAGE_ACCEPTED = "docker.io/rocm/pytorch@sha256:" + "a1" * 32
IMAGE_IN_FILE = "docker.io/rocm/pytorch@sha256:" + "b2" * 32


def test_the_image_rollback_set_back_is_the_one_the_nodes_run(
    lab: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    node = next(iter(lab.nodes))
    slow = Fault(kind=FaultKind.TORCH_GEMM_SLOW, node=node, gpu=0, params={"factor": 0.3, "image": IMAGE_IN_FILE})
    inventory_path = local_cluster(tmp_path, [node], [slow])
    container = f'[pools.framework]\ncontainer = {{ runtime = "podman", image = "{IMAGE_IN_FILE}" }}\n'
    inventory_path.write_text(inventory_path.read_text() + container)
    monkeypatch.setenv("SLURM_CONF", lab.env["SLURM_CONF"])
    store = Store(tmp_path / "h.db")
    # --slurm-raw: every node sends its outputs, so the history keeps the command the node ran.
    settings = SlurmJobSettings(command=(str(per_node_launcher(tmp_path)),), immediate_s=20, raw=True)
    spec = EngineSpec(load_inventory(inventory_path), load_packs(), store.path, slurm=settings)

    def sweep() -> NodeVerdict:
        engine = build_engine(spec, store, build_checker(spec))

        async def run() -> NodeVerdict:
            try:
                result, _ = await sweep_cluster(engine, engine.inventory.nodes, "framework")
                return result.verdicts[node]
            finally:
                await engine.close()

        return asyncio.run(run())

    try:
        assert sweep().status is Status.FAIL  # the cluster file's image: the slow GEMM
        store.set_image_override("framework", "p", IMAGE_ACCEPTED, user="test", audit_id=None)
        rolled_back = sweep()
    finally:
        lab.reset()
    assert rolled_back.status is Status.PASS, rolled_back.reason
    query = "SELECT command FROM probe_runs WHERE probe = 'framework.torch' ORDER BY id"
    commands = [str(r["command"]) for r in store.conn.execute(query)]
    assert [IMAGE_ACCEPTED in c for c in commands] == [False, True], "the node ran the rolled-back image"
