"""``accept`` is for healthy sweeps: one with FAIL or UNKNOWN nodes in its pools is refused unless the
operator says ``--allow-failing``, and then the audit log keeps which nodes were accepted failing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.cli import main
from console.exitcodes import ExitCode
from console.model.findings import NodeVerdict, Status
from console.store import Store


def test_a_sweep_with_failing_nodes_is_no_baseline_without_allow_failing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = tmp_path / "c.toml"
    cluster.write_text('[[pools]]\nname = "p"\ngpu_model = "MI300X"\nnodes = "gpu[001-003]"\n')
    db = tmp_path / "h.sqlite"
    store = Store(db)
    try:
        sweep = store.start_sweep("standard", str(cluster), "")
        for node, status in (("gpu001", Status.PASS), ("gpu002", Status.FAIL), ("gpu003", Status.UNKNOWN)):
            store.record_node(sweep, "p", NodeVerdict(node=node, status=status), {"rocm": "7.0.2"})
        store.finish_sweep(sweep, "done", {})
    finally:
        store.close()
    accept = ["accept", "-i", str(cluster), "--store", str(db), "--sweep", str(sweep), "--reason", "known bad"]
    assert main(accept) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "1 FAIL, 1 UNKNOWN node(s) (gpu002, gpu003)" in err and "--allow-failing" in err
    store = Store(db)
    try:
        assert store.baseline("p") is None and store.audit_log(10) == []
    finally:
        store.close()
    assert main([*accept, "--allow-failing"]) == 0
    store = Store(db)
    try:
        assert store.baseline("p") == sweep
        [row] = store.audit_log(10)
    finally:
        store.close()
    inputs = json.loads(row["inputs"])
    assert inputs == {"sweep": sweep, "reason": "known bad", "failing": {"gpu002": "FAIL", "gpu003": "UNKNOWN"}}
    assert row["outcome"].endswith("with 2 FAIL or UNKNOWN node(s) accepted")
