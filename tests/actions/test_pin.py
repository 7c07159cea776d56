"""Stack pins and drift: fingerprints, the effective pin per pool, drift verdicts through the check packs,
the PIN action (store, audit) and the package holds chosen per OS."""

from __future__ import annotations

import json
from typing import Any

import pytest

from console.actions import ActionKind, ActionRequest, ActionService, effective_pins, fingerprint
from console.actions.holds import PackageManager, hold_argv, manager_for, packages_to_hold
from console.actions.pin import drift_rows, pin_changes, pin_from_fields
from console.checks import ProbeOutcome, build_facts, load_packs
from console.checks.facts import NodeFacts
from console.inventory import Inventory, StackPin, from_mapping
from console.model.findings import NodeVerdict, Status
from console.model.gpu import GpuIdentity, GpuRecord
from console.model.host import OsRelease
from console.store import Store

FIRMWARE = {"PM": "00.85.04", "PSP_SOSDRV": "00.36.02.59", "RLC": "00.00.23.05"}


def inventory(pin: dict[str, Any] | None = None) -> Inventory:
    pool: dict[str, Any] = {"name": "mi300x", "gpu_model": "MI300X", "nodes": "gpu[001-004]"}
    if pin:
        pool["pin"] = pin
    return from_mapping({"pools": [pool, {"name": "mi355x", "gpu_model": "MI355X", "nodes": "gpu[101-102]"}]})


def facts(inv: Inventory, name: str, *, driver: str = "6.10.5", odd_gpu_pm: str | None = None) -> NodeFacts:
    """A node's facts as a stack/firmware sweep would build them (probe outcomes -> stack)."""
    outcomes = {
        "host.os": ProbeOutcome("host.os", parsed=OsRelease(id="ubuntu", version_id="22.04")),
        "host.kernel": ProbeOutcome("host.kernel", parsed="5.15.0-126-generic"),
        "host.rocm": ProbeOutcome("host.rocm", parsed="6.4.1-120"),
        "host.amdgpu": ProbeOutcome("host.amdgpu", parsed=driver),
        "amdsmi.firmware": ProbeOutcome("amdsmi.firmware", parsed=object()),
    }
    built = build_facts(inv.node(name), StackPin(), outcomes)
    built.gpus = [
        GpuRecord(
            identity=GpuIdentity(index=i),
            firmware={**FIRMWARE, **({"PM": odd_gpu_pm} if i == 3 and odd_gpu_pm else {})},
        )
        for i in range(8)
    ]
    return built


def test_fingerprint_keeps_pin_fields_and_drops_tool_versions() -> None:
    stack = {"os": "ubuntu 22.04", "rocm": "6.4.1", "amdsmi": "25.3.0", "firmware.PM": "00.85.04"}
    pin = fingerprint(stack, image_digest="sha256:ab12")
    assert pin.pinned_fields() == {
        "os": "ubuntu 22.04",
        "rocm": "6.4.1",
        "image_digest": "sha256:ab12",
        "firmware.PM": "00.85.04",
    }
    assert pin_from_fields(pin.pinned_fields()) == pin


def test_stored_pin_wins_field_by_field_over_the_inventory(tmp_path: Any) -> None:
    inv = inventory({"rocm": "6.4.0", "firmware_bundle": "01.25.06.05"})
    with_store = Store(tmp_path / "h.sqlite")
    assert effective_pins(inv, with_store)["mi300x"].rocm == "6.4.0"
    with_store.set_pin("mi300x", {"rocm": "6.4.1", "firmware.PM": "00.85.04"}, "gpu001", "alice")
    pins = effective_pins(inv, with_store)
    assert pins["mi300x"].pinned_fields() == {
        "rocm": "6.4.1",
        "firmware_bundle": "01.25.06.05",
        "firmware.PM": "00.85.04",
    }
    assert pins["mi355x"] == StackPin()
    assert pin_changes(StackPin(rocm="6.4.0"), pins["mi300x"]) == [
        "firmware.PM: (unpinned) -> 00.85.04",
        "firmware_bundle: (unpinned) -> 01.25.06.05",
        "rocm: 6.4.0 -> 6.4.1",
    ]
    with_store.close()


def test_drift_rows_per_field_through_the_check_packs() -> None:
    inv = inventory()
    pack = load_packs()["MI300X"]
    pin = StackPin(
        os="ubuntu 22.04",
        rocm="6.4.1",
        amdgpu_driver="6.10.5",
        rccl="2.22.3",
        image_digest="sha256:ab12",
        firmware=FIRMWARE,
    )
    rows = {r.field: r for r in drift_rows(facts(inv, "gpu002", driver="6.8.5", odd_gpu_pm="00.85.02"), pin, pack)}
    assert rows["os"].status is Status.PASS and rows["rocm"].status is Status.PASS
    assert rows["amdgpu_driver"].status is Status.WARN
    assert rows["amdgpu_driver"].observed == ["6.8.5"] and rows["amdgpu_driver"].pinned == "6.10.5"
    assert "pool pin 6.10.5" in rows["amdgpu_driver"].message
    pm = rows["firmware.PM"]
    assert pm.status is Status.WARN and pm.subjects == ["gpu002 gpu3"] and pm.observed == ["00.85.02", "00.85.04"]
    assert rows["firmware.RLC"].status is Status.PASS
    assert rows["firmware.consistent"].status is Status.FAIL  # one GPU differs from the others: FAIL per C.3
    assert rows["rccl"].status is Status.UNKNOWN and "not reported" in rows["rccl"].message
    # Observed only by a framework probe run in an image named by digest ([pools.framework]): not here.
    assert rows["image_digest"].status is Status.UNKNOWN and "not reported" in rows["image_digest"].message
    assert "kernel" not in rows  # not pinned: no verdict


def test_drift_of_a_node_on_its_pin_passes() -> None:
    inv = inventory()
    pin = StackPin(
        os="ubuntu 22.04", kernel="5.15.0-126-generic", rocm="6.4.1", amdgpu_driver="6.10.5", firmware=FIRMWARE
    )
    rows = drift_rows(facts(inv, "gpu001"), pin, load_packs()["MI300X"])
    assert {r.status for r in rows} == {Status.PASS}
    assert len(rows) == 4 + len(FIRMWARE) + 1  # four stack fields, each firmware block, the consistency check


def record(store: Store, inv: Inventory, node: str, stack: dict[str, str]) -> int:
    sweep = store.start_sweep("quick", "test", node)
    store.record_node(sweep, inv.node(node).pool, NodeVerdict(node=node, status=Status.PASS), stack)
    return sweep


async def test_pin_action_stores_the_nodes_stack_and_audits_it(store: Store) -> None:
    inv = inventory({"rocm": "6.4.0"})
    sweep = record(store, inv, "gpu003", {"os": "ubuntu 22.04", "rocm": "6.4.1", "firmware.PM": "00.85.04"})
    svc = ActionService(inv, store, user="alice")
    plan = svc.plan(ActionRequest(ActionKind.PIN, (), from_node="gpu003", image_digest="sha256:ab12"))
    assert plan.refused is None and plan.where == "store" and plan.request.pool == "mi300x"
    assert plan.notes[0] == f"stack of gpu003 from sweep {sweep}"
    assert "rocm: 6.4.0 -> 6.4.1" in plan.notes and "image_digest: (unpinned) -> sha256:ab12" in plan.notes
    result = await svc.execute(plan)
    assert result.ok and result.outcome == "pinned pool mi300x to the stack of gpu003 (4 fields)"
    assert store.pin("mi300x") == {
        "os": "ubuntu 22.04",
        "rocm": "6.4.1",
        "firmware.PM": "00.85.04",
        "image_digest": "sha256:ab12",
    }
    assert svc.pins()["mi300x"].rocm == "6.4.1"
    entry = store.audit_log(1)[0]
    assert entry["action"] == "pin" and json.loads(entry["targets"]) == ["gpu003"]
    assert json.loads(entry["inputs"])["pinned"]["rocm"] == "6.4.1"


def test_pinning_from_the_odd_node_out_warns(store: Store) -> None:
    inv = inventory()
    record(store, inv, "gpu003", {"rocm": "7.0.1", "os": "ubuntu 22.04"})
    for peer in ("gpu001", "gpu002"):
        record(store, inv, peer, {"rocm": "7.0.2", "os": "ubuntu 22.04"})
    notes = ActionService(inv, store).plan(ActionRequest(ActionKind.PIN, (), from_node="gpu003")).notes
    assert notes[0] == "warning: gpu003 has rocm 7.0.1; 2 of 2 pool peers run 7.0.2"  # first: it was below the fold
    assert not [n for n in notes if n.startswith("warning:") and "os" in n]
    agreeing = ActionService(inv, store).plan(ActionRequest(ActionKind.PIN, (), from_node="gpu001")).notes
    assert not [n for n in agreeing if n.startswith("warning:")]


async def test_live_facts_win_over_the_stored_stack(store: Store) -> None:
    inv = inventory()
    record(store, inv, "gpu001", {"rocm": "6.3.0"})
    svc = ActionService(inv, store, facts={"gpu001": facts(inv, "gpu001")})
    plan = svc.plan(ActionRequest(ActionKind.PIN, (), pool="mi300x", from_node="gpu001"))
    assert plan.notes[0] == "stack of gpu001 from the current sweep" and "rocm: (unpinned) -> 6.4.1" in plan.notes


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"pool": "mi300x"}, "pin needs --from-node"),
        ({"pool": "mi355x", "from_node": "gpu001"}, "gpu001 is not a node of pool mi355x"),
        ({"pool": "nope", "from_node": "gpu001"}, "no such pool: nope"),
        ({"from_node": "gpu004"}, "no stack known for gpu004: sweep it first"),
    ],
)
def test_pin_refusals(store: Store, fields: dict[str, Any], why: str) -> None:
    plan = ActionService(inventory(), store).plan(ActionRequest(ActionKind.PIN, (), **fields))
    assert plan.refused is not None and plan.refused.startswith(why)


@pytest.mark.parametrize(
    ("os_id", "manager"),
    [("ubuntu", PackageManager.APT), ("debian 12", PackageManager.APT), ("rocky 9.4", PackageManager.DNF),
     ("ol", PackageManager.DNF), ("sles", PackageManager.ZYPPER), ("arch", None), ("", None), (None, None)],
)  # fmt: skip
def test_package_manager_from_os_release_id(os_id: str | None, manager: PackageManager | None) -> None:
    assert manager_for(os_id) is manager


def test_holds_follow_the_pinned_fields() -> None:
    pin = StackPin(rocm="6.4.1", amdgpu_driver="6.10.5", kernel="5.15.0-126-generic", os="ubuntu 22.04")
    apt = packages_to_hold(pin, PackageManager.APT)
    assert apt == [
        "amdgpu-dkms",
        "amdgpu-dkms-firmware",
        "rocm-core",
        "rocm",
        "linux-image-5.15.0-126-generic",
        "linux-headers-5.15.0-126-generic",
    ]
    assert hold_argv(PackageManager.APT, apt)[:2] == ("apt-mark", "hold")
    dnf = packages_to_hold(StackPin(kernel="5.14.0-427.13.1.el9_4.x86_64"), PackageManager.DNF)
    release = "5.14.0-427.13.1.el9_4.x86_64"
    assert hold_argv(PackageManager.DNF, dnf) == (
        "dnf",
        "-y",
        "versionlock",
        "add",
        f"kernel-{release}",
        f"kernel-devel-{release}",
    )
    assert packages_to_hold(StackPin(os="ubuntu 22.04", firmware={"PM": "1"}), PackageManager.APT) == []


def test_a_stored_pin_overriding_the_inventory_is_said_and_can_be_cleared(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from console.cli import main
    from console.inventory import load_inventory

    cluster = tmp_path / "c.toml"
    cluster.write_text(
        '[[pools]]\nname = "p"\ngpu_model = "MI300X"\nnodes = "gpu[001-002]"\npin = { rocm = "7.0.3" }\n'
    )
    db = tmp_path / "h.sqlite"
    store = Store(db)
    store.set_pin("p", {"rocm": "7.0.2", "os": "ubuntu 22.04"}, "gpu001", "alice")
    store.close()
    assert main(["pin", "-i", str(cluster), "--store", str(db)]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "pool p: rocm 7.0.2 (stored by 'pin --from-node') overrides the inventory's 7.0.3" in err
    assert "'pin --clear --pool p'" in err
    assert main(["pin", "-i", str(cluster), "--store", str(db), "--clear", "--pool", "p", "--yes"]) == 0
    assert "rocm: 7.0.2 -> 7.0.3" in capsys.readouterr().out
    store = Store(db)
    assert store.pin("p") == {}
    entry = store.audit_log(1)[0]
    assert entry["action"] == "unpin" and json.loads(entry["inputs"])["dropped"]["rocm"] == "7.0.2"
    assert entry["user"] and not entry["user"].isdigit()  # a login name, not a uid
    assert effective_pins(load_inventory(str(cluster)), store)["p"].rocm == "7.0.3"
    store.close()
