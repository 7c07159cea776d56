"""``bundle NODE``: the archive an RMA or a vendor ticket needs, from the history database (issue 19, item 7)."""

from __future__ import annotations

import hashlib
import json
import tarfile
from pathlib import Path

from console.cli import main
from console.commands.evidence import Redactor
from console.sim.launcher import start_sim_cluster
from console.store import Store

# ROCm 7.0.2: its amd-smi lists each CPER record's AFIDs (6.4.1's lists none).
SCENARIO = """time_factor = 400
[[nodes]]
names = "sim[001-002]"
rocm = "7.0.2"
[[faults]]
nodes = "sim002"
kind = "cper_record"
gpu = 3
afid = 19
[[faults]]
nodes = "sim002"
kind = "bad_pages_over_threshold"
gpu = 3
"""


def _members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name.split("/", 1)[1]: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def test_a_bundle_holds_the_raw_outputs_the_decoded_cper_the_serials_and_the_findings(tmp_path: Path) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO)
    db = tmp_path / "h.sqlite"
    with start_sim_cluster(scenario=scenario) as sim:
        assert main(["sweep", "-i", str(sim.inventory_path), "--store", str(db)]) == 1  # sim002 FAILs
        address = next(line for line in sim.inventory_path.read_text().splitlines() if "127." in line)
    archive = tmp_path / "sim002.tar.gz"
    # Where it cannot be written: a usage error naming the path, not a traceback.
    assert main(["bundle", "sim002", "--store", str(db), "-o", str(tmp_path / "no" / "a.tar.gz")]) == 2
    assert main(["bundle", "sim002", "--store", str(db), "-o", str(archive)]) == 0
    files = _members(archive)
    manifest = json.loads(files.pop("manifest.json"))
    assert manifest["node"] == "sim002" and manifest["redacted"] is False
    assert {f["name"]: f["sha256"] for f in manifest["files"]} == {
        name: hashlib.sha256(content).hexdigest() for name, content in files.items()
    }
    store = Store(db)
    runs = store.probe_run_ids(manifest["sweep_id"])["sim002"]
    for probe, run_id in runs.items():  # byte for byte what the node printed
        assert files[f"raw/{probe}.out"] == store.probe_output(run_id)[0]  # type: ignore[index]
    store.close()
    verdict = json.loads(files["verdict.json"])
    assert verdict["status"] == "FAIL" and verdict["action"] == "rma"
    assert "AFID 19: HBM, bad page retirement threshold (fatal) -> rma, physical" in files["cper.txt"].decode()
    gpus = json.loads(files["gpus.json"])
    assert len(gpus) == 8 and all(g["identity"].get("serial") and g["firmware"] for g in gpus)
    findings = json.loads(files["findings.json"])
    assert any(f["check_id"] == "ras.cper_fatal" and f["status"] == "FAIL" for f in findings)
    history = json.loads(files["history.json"])
    assert history[0]["status"] == "FAIL" and isinstance(history[0]["families"], dict)
    assert history[0]["started_at_utc"].endswith(" UTC")
    assert json.loads(files["cases.json"]) == []  # not drained: no remediation case
    assert all("owner" not in row for row in json.loads(files["audit.json"]))  # the console host's bookkeeping

    redacted = tmp_path / "r.tar.gz"
    assert main(["bundle", "sim002", "--store", str(db), "-o", str(redacted), "--redact"]) == 0
    hidden = _members(redacted)
    text = b"".join(hidden.values())
    assert b"sim002" not in text and b"sim001" not in text
    assert json.loads(hidden["manifest.json"])["node"].startswith("node-")
    assert hidden["raw/amdsmi.static.out"].count(b"0000:") == files["raw/amdsmi.static.out"].count(b"0000:")
    assert address  # the inventory names loopback addresses; none reach the archive's text
    assert b"127.0." not in text


def test_bundle_refuses_a_node_the_database_never_judged(tmp_path: Path, capsys: object) -> None:
    db = tmp_path / "h.sqlite"
    Store(db).close()
    assert main(["bundle", "nosuch", "--store", str(db)]) == 2


def test_redaction_keeps_the_evidence_and_hides_hosts_and_addresses() -> None:
    redactor = Redactor(["sim01", "sim010"])
    text = "sim010 sim01 sim0100 10.1.2.3 fe80::1 2001:db8:0:0:1:0:0:1 27.00.01.1D 0000:05:00.0 10:45:13 10.0.0.256"
    assert redactor.text(text) == (
        "node-2 node-1 sim0100 ipv4-1 ipv6-1 ipv6-2 27.00.01.1D 0000:05:00.0 10:45:13 10.0.0.256"
    )
    assert redactor.text("again 10.1.2.3 sim01") == "again ipv4-1 node-1"  # the same placeholder each time
    assert redactor.data(b"sim01 \xff\xfe") == b"node-1 \xff\xfe"  # bytes that are not UTF-8 stay as they were
