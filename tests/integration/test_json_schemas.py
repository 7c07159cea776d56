"""Every ``--json`` output against its published schema, each command run for real on the simulator.

The schemas in ``schemas/`` are written by ``python -m console.commands.generate`` from the models in
``console.commands.outputs`` (and the report models); the first test fails when a file differs from what
the generator writes, the others run one command each and validate what it printed. Every object in the
schemas is closed, so a field a command adds without its model fails here.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from console.cli import main
from console.commands.schemas import PUBLISHED, schema_text
from console.sim.launcher import start_sim_cluster
from tests.documented import workload_blocks
from tests.multinode.localnodes import local_cluster, shim_dir

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "schemas"
FIXTURES = ROOT / "tests" / "fixtures"


def schema(name: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / f"{name}.schema.json").read_text())


def run(*argv: str, codes: tuple[int, ...] = (0, 1)) -> Any:
    """Run the console in this process; what it printed on stdout, as JSON."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    assert code in codes, (argv, code, out.getvalue()[-2000:])
    return json.loads(out.getvalue())


def valid(name: str, document: Any) -> Any:
    jsonschema.validate(document, schema(name), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    return document


def test_each_schema_file_is_what_the_generator_writes() -> None:
    for item in PUBLISHED:
        path = SCHEMAS / f"{item.name}.schema.json"
        assert path.read_text() == schema_text(item), f"regenerate: python -m console.commands.generate ({path})"
    written = {f"{item.name}.schema.json" for item in PUBLISHED}
    assert {p.name for p in SCHEMAS.glob("*.schema.json")} == written, "a schema file no generator writes"


@dataclass(frozen=True)
class Lab:
    """A simulated cluster swept once, its history database and the sweep's report."""

    inventory: str
    store: str
    report: dict[str, Any]

    @property
    def failing(self) -> str:
        return next(n["node"] for n in self.report["nodes"] if n["status"] == "FAIL")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    store = str(tmp_path_factory.mktemp("history") / "history.sqlite")
    with start_sim_cluster(nodes=4, models="mi300x", faults="demo", seed=7, time_factor=400) as sim:
        inventory = str(sim.inventory_path)
        report = run("sweep", "-i", inventory, "--store", store, "--json", "-", codes=(0, 1, 3))
        yield Lab(inventory, store, report)


def test_sweep_report(lab: Lab) -> None:
    valid("sweep-report", lab.report)
    assert any(n["status"] == "FAIL" for n in lab.report["nodes"]), "the demo faults give a FAIL to validate"


def test_sweep_from_history(lab: Lab) -> None:
    document = run("sweep", "-i", lab.inventory, "--store", lab.store, "--max-age", "1d", "--json", "-", codes=(1,))
    assert len(valid("sweep-from-history", document)["nodes"]) == 4


def test_history_and_one_nodes_history(lab: Lab) -> None:
    assert valid("history", run("history", "--store", lab.store, "--json"))
    assert valid("history-node", run("history", "--store", lab.store, "--node", lab.failing, "--json"))


def test_diff_against_the_accepted_baseline(lab: Lab) -> None:
    accept = ["accept", "-i", lab.inventory, "--store", lab.store, "--reason", "schema test", "--allow-failing"]
    assert main(accept) == 0  # the lab has FAIL nodes: accepted knowingly
    document = run("diff", "-i", lab.inventory, "--store", lab.store, "--json")
    assert valid("diff", document) and all(pool["nodes"] == [] or pool["nodes"] for pool in document.values())


def test_actions_cases_revalidation_and_audit(lab: Lab) -> None:
    node, common = lab.failing, ("-i", lab.inventory, "--store", lab.store)
    plan = run("drain", node, *common, "--reason", "schema test", "--dry-run", "--json")
    assert valid("action", plan)["plan"]["commands"]
    drained = run(
        "drain", node, *common, "--reason", "schema", "--sweep", str(lab.report["sweep_id"]), "--yes", "--json"
    )
    assert valid("action", drained)["result"]["ok"] is True
    assert valid("cases", run("cases", *common, "--json"))[0]["node"] == node
    [case] = valid("cases", run("cases", *common, "--node", node, "--json"))
    assert case["steps"], "a node's case comes with its steps"
    assert valid("cases-policy", run("cases", "--policy", "-i", lab.inventory, "--json"))
    run("repaired", node, *common, "--reason", "reseated", "--yes", "--json")
    revalidated = run("revalidate", node, *common, "--level", "quick", "--yes", "--json")
    assert valid("revalidate", revalidated)[node]["case"]["node"] == node
    entries = valid("audit", run("audit", "--store", lab.store, "--json"))
    assert {"drain", "repaired"} <= {e["action"] for e in entries}


def test_pins_and_drift(lab: Lab) -> None:
    healthy = next(n["node"] for n in lab.report["nodes"] if n["status"] == "PASS")
    common = ("-i", lab.inventory, "--store", lab.store)
    valid("action", run("pin", *common, "--from-node", healthy, "--yes", "--json"))
    pins = valid("pins", run("pin", *common, "--json"))
    assert any(pins.values()), pins
    assert valid("drift", run("drift", *common, "--json", codes=(0, 1, 3)))


def test_acceptance(lab: Lab) -> None:
    document = run("acceptance", "-i", lab.inventory, "--store", lab.store, "--json")
    assert valid("acceptance", document)["states"]


def test_workload_check(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.toml"
    pool = '[[pools]]\nname = "mi300x-a"\nnodes = "gpu[01-04]"\ngpu_model = "MI300X"\n\n'
    cluster.write_text(pool + "\n".join(workload_blocks()))
    log = tmp_path / "vllm.log"
    log.write_text("Request throughput (req/s):              10.02\nOutput token throughput (tok/s):  2461.90\n")
    argv = ("workload-check", "-i", str(cluster), "vllm-llama3-8b-serving", str(log), "--exit-status", "0", "--json")
    assert valid("workload", run(*argv))["findings"]


@pytest.mark.parametrize(
    "fixture",
    [
        "real/amd-smi/default-view-mi300x-8gpu-rocm700.txt",
        "real/amd-smi/metric-power-json-rocm610-list.json",
        "real/rvs/gst-config-missing-key-error.txt",
        "cper/ras-cper-rocm641.txt",
    ],
)
def test_parse(fixture: str) -> None:
    document = valid("parse", run("parse", str(FIXTURES / fixture), "--json", codes=(0, 1, 3)))
    assert document["tool"]


def test_check_local_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inventory = local_cluster(tmp_path, ["gpu001"])
    monkeypatch.setenv("PATH", f"{shim_dir(tmp_path, 'gpu001')}:{os.environ['PATH']}")
    monkeypatch.setenv("SLURMD_NODENAME", "gpu001")
    report = run("check-local", "-i", str(inventory), "--json", "-")
    assert valid("check-local-report", report)["node"] == "gpu001"


def test_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "instinct-console").mkdir()
    (tmp_path / "instinct-console" / "config.toml").write_text('theme = "light"\n[sweep]\nprobes = "standard"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    document = valid("config", run("config", "--json"))
    assert {s["key"] for s in document["settings"]} == {"theme", "probes"}
