"""CPER records in a quick sweep over real SSH against the simulator (issue 19, item 1).

A fatal record of this boot fails its GPU with the AFID's meaning and action; an old record, or one from
before the node's boot, is named as ignored and does not fail; an untrustworthy clock still counts; a
refused sudo is UNKNOWN, never PASS; a driver without the CPER ring SKIPs, the ECC counters judged instead.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from console.checks import load_packs
from console.inventory import load_inventory
from console.model.findings import Finding, NodeVerdict, Remedy, Status
from console.sim.launcher import start_sim_cluster
from console.sweep import SweepEngine
from console.transport.connect import transport_for

# The AFID cases run on ROCm 7.0.2, whose amd-smi lists AFIDs and every record; the 6.4.1 pool shows what
# the older amd-smi cannot say (no AFID; 20 records per device at most).
SCENARIO = """time_factor = 400
[[nodes]]
names = "sim[001-012]"
rocm = "7.0.2"
[[nodes]]
names = "sim[013-014]"
pool = "old"
rocm = "6.4.1"
[[faults]]
nodes = "sim011"
kind = "cper_flood"
gpu = 1
[[faults]]
nodes = "sim012"
kind = "cper_undecodable"
gpu = 2
[[faults]]
nodes = "sim013"
kind = "cper_flood"
gpu = 1
[[faults]]
nodes = "sim014"
kind = "cper_record"
gpu = 5
afid = 30
[[faults]]
nodes = "sim002"
kind = "cper_record"
gpu = 3
afid = 19
[[faults]]
nodes = "sim002"
kind = "bad_pages_over_threshold"
gpu = 3
[[faults]]
nodes = "sim010"
kind = "cper_record"
gpu = 4
afid = 19
[[faults]]
nodes = "sim003"
kind = "cper_record"
gpu = 1
age_h = 200
[[faults]]
nodes = "sim004"
kind = "cper_record"
gpu = 2
before_boot = true
[[faults]]
nodes = "sim005"
kind = "sudo_denied"
[[faults]]
nodes = "sim006"
kind = "cper_not_enabled"
[[faults]]
nodes = "sim007"
kind = "cper_record"
gpu = 5
severity = "uncorrected"
[[faults]]
nodes = "sim008"
kind = "cper_record"
gpu = 0
time = "future"
[[faults]]
nodes = "sim009"
kind = "cper_record"
gpu = 6
severity = "boot"
afid = 4
count = 2
[[nodes]]
names = "sim015"
rocm = "7.0.2"
[[nodes]]
names = "sim016"
pool = "old"
rocm = "6.4.1"
[[faults]]
nodes = "sim015"
kind = "cper_record"
gpu = 2
severity = "unknown"
[[faults]]
nodes = "sim016"
kind = "cper_record"
gpu = 4
severity = "informational"
"""


def _cper(verdict: NodeVerdict) -> list[Finding]:
    return [f for f in verdict.findings if f.check_id.startswith("ras.cper") and f.status is not Status.PASS]


def test_cper_records_are_judged_by_age_and_afid(tmp_path: Path) -> None:
    scenario = tmp_path / "cper.toml"
    scenario.write_text(SCENARIO)
    with start_sim_cluster(scenario=scenario) as sim:
        inventory = load_inventory(sim.inventory_path)

        async def sweep() -> dict[str, NodeVerdict]:
            engine = SweepEngine(inventory, transport_for(inventory), load_packs())
            try:
                return dict((await engine.run(level="quick")).verdicts)
            finally:
                await engine.close()

        verdicts = asyncio.run(sweep())
    status = {name: v.status for name, v in verdicts.items()}
    assert status == {
        "sim001": Status.PASS,
        "sim002": Status.FAIL,
        "sim003": Status.PASS,
        "sim004": Status.PASS,
        "sim005": Status.UNKNOWN,
        "sim006": Status.PASS,
        "sim007": Status.WARN,
        "sim008": Status.FAIL,
        "sim009": Status.FAIL,
        "sim010": Status.FAIL,
        "sim011": Status.FAIL,
        "sim012": Status.FAIL,
        "sim013": Status.UNKNOWN,
        "sim014": Status.FAIL,
        "sim015": Status.WARN,
        "sim016": Status.WARN,
    }
    [fatal] = [f for f in _cper(verdicts["sim002"]) if f.check_id == "ras.cper_fatal"]
    assert (fatal.check_id, fatal.subject.gpu) == ("ras.cper_fatal", 3)
    assert "AFID 19 (HBM, bad page retirement threshold) -> rma, physical" in fatal.message
    # The finding calls for what the AFID calls for (issue 19, item 2), and so does the node.
    assert fatal.evidence.action is Remedy.RMA and "RMA the OAM" in (fatal.evidence.action_source or "")
    assert verdicts["sim002"].action is Remedy.RMA
    assert verdicts["sim001"].action is None and verdicts["sim005"].action is Remedy.RERUN
    # AFID 19 on a GPU whose retired pages are far under the threshold: no RMA on the record's word alone.
    [doubted] = _cper(verdicts["sim010"])
    assert doubted.status is Status.FAIL and doubted.evidence.action is Remedy.REBOOT
    assert "amd-smi shows 0 retired" in doubted.message and "before an RMA" in doubted.message
    [old] = [f for f in verdicts["sim003"].findings if f.check_id == "ras.cper_fatal" and f.subject.gpu == 1]
    assert old.status is Status.PASS and "1 ignored" in old.message and "older than 72 h" in old.message
    [before] = [f for f in verdicts["sim004"].findings if f.check_id == "ras.cper_fatal" and f.subject.gpu == 2]
    assert before.status is Status.PASS and "before the node's last boot" in before.message
    refused = _cper(verdicts["sim005"])
    assert {f.status for f in refused} == {Status.UNKNOWN}
    assert all("sudo: a password is required" in f.message for f in refused)
    assert "driver.amdsmi" not in {f.check_id for f in verdicts["sim005"].findings if f.status is not Status.PASS}
    skipped = _cper(verdicts["sim006"])
    assert skipped and {f.status for f in skipped} == {Status.SKIP}
    assert "requires CPER to be enabled" in skipped[0].message
    [uncorrected] = _cper(verdicts["sim007"])
    assert uncorrected.status is Status.WARN and "AFID 22" in uncorrected.message
    assert uncorrected.evidence.action is Remedy.MONITOR
    [future] = _cper(verdicts["sim008"])
    assert "in the future" in future.message
    [boot] = _cper(verdicts["sim009"])
    assert boot.message.startswith("Fatal CPER records: 2") and "AFID 4" in boot.message
    assert boot.evidence.action is Remedy.REBOOT
    # 21 records on one GPU: 7.0.2 lists them all, the fatal one last; 6.4.1 lists 20 and no fatal one,
    # which is no proof of health: UNKNOWN, saying why.
    [flood] = _cper(verdicts["sim011"])
    assert flood.status is Status.FAIL and "AFID 30" in flood.message
    [cut] = [f for f in _cper(verdicts["sim013"]) if f.check_id == "ras.cper_fatal"]
    assert (cut.status, cut.subject.gpu) == (Status.UNKNOWN, 1)
    assert "exactly 20 CPER records listed with ROCm 6.4.1" in cut.message
    assert [f.check_id for f in _cper(verdicts["sim013"])] == [
        "ras.cper_fatal",
        "ras.cper_uncorrected",
        "ras.cper_unrecognised",
    ]
    # A severity the console does not know is no class of its own: the record is named, with the word
    # amd-smi printed, its GPU and AFID, and warns (issue 19: no record silently drops).
    [unknown] = _cper(verdicts["sim015"])
    assert (unknown.check_id, unknown.status, unknown.subject.gpu) == ("ras.cper_unrecognised", Status.WARN, 2)
    assert "severity 'unknown'" in unknown.message and "AFID 33" in unknown.message
    assert "-> rerun" in unknown.message  # AFID 33 (invalid data) calls for no hardware verdict
    assert unknown.evidence.action is Remedy.MONITOR  # a WARN: watched, not drained
    [informational] = _cper(verdicts["sim016"])
    assert (informational.status, informational.subject.gpu) == (Status.WARN, 4)
    assert "severity 'informational'" in informational.message
    # An undecodable record counts; its AFID is unknown, so the check's own action (reboot) stands.
    [undecodable] = _cper(verdicts["sim012"])
    assert undecodable.status is Status.FAIL and "AFID unknown" in undecodable.message
    assert undecodable.evidence.action is Remedy.REBOOT
    # amd-smi 6.4.1 prints no AFID: the record fails its GPU, and the finding says why no AFID is named.
    [no_afid] = _cper(verdicts["sim014"])
    assert no_afid.status is Status.FAIL and "lists no AFIDs" in no_afid.message
