"""Actions through real OpenSSH (tests/harness/sshd_fleet.py): Slurm on a remote controller, package holds on nodes.

``node01`` stands in for the Slurm head node: root logs in over SSH and runs the real ``scontrol`` of
the Slurm lab (a wrapper first on the node's PATH only points it at the lab's slurm.conf), so every
reason crosses a real remote shell. ``node02`` (Debian: the host's own os-release) and ``node03`` (a
``cat`` that shows a Rocky Linux os-release) get fake ``apt-mark``/``dnf`` that record what they were
asked, so holds are checked without touching this machine's packages.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.actions import ActionKind, ActionRequest, ActionService
from console.cli import main
from console.inventory import Inventory, load_inventory
from console.store import Store
from tests.harness.slurm_lab import SlurmLab
from tests.harness.sshd_fleet import SshdFleet, skip_unless_possible

TAG = "instinct-console:"
RECORDER = '#!/bin/sh\nprintf "%s\\n" "$*" >> "$IC_NODE_DIR/{name}.log"\n'
ROCKY = 'ID="rocky"\nID_LIKE="rhel centos fedora"\nVERSION_ID="9.4"\nPRETTY_NAME="Rocky Linux 9.4 (Blue Onyx)"\n'
FAKE_CAT = "#!/bin/sh\nif [ \"$1\" = /etc/os-release ]; then printf '%s' '{rocky}'; else exec /bin/cat \"$@\"; fi\n"


@pytest.fixture(scope="module")
def fleet() -> Iterator[SshdFleet]:
    skip_unless_possible()
    with SshdFleet(3, login_user="root") as started:
        yield started


@pytest.fixture
def nodes(fleet: SshdFleet) -> Iterator[SshdFleet]:
    yield fleet
    fleet.reset()


def write_inventory(fleet: SshdFleet, path: Path) -> Path:
    hosts = "".join(f'\n[hosts.{n.name}]\naddress = "{n.addr}"\nport = {n.port}\n' for n in fleet.nodes)
    path.write_text(
        f"""name = "lab"
[ssh]
user = "root"
identity_file = "{fleet.client_key}"
known_hosts = "{fleet.known_hosts}"
connect_timeout_s = 5

[slurm]
controller = "node01"

[[pools]]
name = "mi300x"
gpu_model = "MI300X"
nodes = "gpu[001-006]"

[[pools]]
name = "infra"
gpu_model = "MI300X"
nodes = "node[01-03]"

[pools.pin]
rocm = "6.4.1"
amdgpu_driver = "6.10.5"
kernel = "6.8.0-49-generic"
{hosts}"""
    )
    return path


def slurm_head(fleet: SshdFleet, lab: SlurmLab) -> None:
    for tool in ("scontrol", "sinfo"):
        fleet.install_tool("node01", tool, f'#!/bin/sh\nSLURM_CONF={lab.conf} exec /usr/bin/{tool} "$@"\n')


async def test_drain_over_ssh_reaches_slurm_literally(nodes: SshdFleet, lab: SlurmLab, tmp_path: Path) -> None:
    slurm_head(nodes, lab)
    marks = tmp_path / "marks"
    marks.mkdir()
    reason = f'it\'s "bad"; $(touch {marks}/a) `touch {marks}/b` | tee {marks}/c > {marks}/d & echo'
    inventory: Inventory = load_inventory(write_inventory(nodes, tmp_path / "lab.toml"))
    store = Store(tmp_path / "h.sqlite")
    service = ActionService(inventory, store)
    try:
        req = ActionRequest(ActionKind.DRAIN, ("gpu002",), reason=reason, sweep_id=5)
        await service.refresh(req)
        plan = service.plan(req)
        assert plan.where == "node01" and plan.refused is None
        result = await service.execute(plan)
        assert result.ok, result.outcome
        assert lab.reason("gpu002") == f"{TAG} {reason} [sweep 5]"
        assert list(marks.iterdir()) == []
        assert (await service.node_states(["gpu002"]))["gpu002"].startswith("DRAINED by the console")

        back = ActionRequest(ActionKind.RESUME, ("gpu002",))
        await service.refresh(back)
        assert (await service.execute(service.plan(back))).ok
        assert lab.wait_state("gpu002", "idle") == "idle"
        assert "[node01] exit=0" in store.audit_log(1)[0]["output"]
    finally:
        await service.close()
        store.close()


def test_enforce_shows_holds_per_os_and_applies_them_only_when_asked(
    nodes: SshdFleet, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inv = str(write_inventory(nodes, tmp_path / "lab.toml"))
    db = str(tmp_path / "h.sqlite")
    nodes.install_tool("node02", "apt-mark", RECORDER.format(name="apt-mark"))
    nodes.install_tool("node03", "dnf", RECORDER.format(name="dnf"))
    nodes.install_tool("node03", "cat", FAKE_CAT.format(rocky=ROCKY))
    apt_log, dnf_log = nodes.node("node02").dir / "apt-mark.log", nodes.node("node03").dir / "dnf.log"

    code = main(["pin", "-i", inv, "--store", db, "--enforce", "node[02-03]", "--json"])
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert code == 0
    apt = ["apt-mark", "hold", "amdgpu-dkms", "amdgpu-dkms-firmware", "rocm-core", "rocm",
           "linux-image-6.8.0-49-generic", "linux-headers-6.8.0-49-generic"]  # fmt: skip
    dnf = ["dnf", "-y", "versionlock", "add", "amdgpu-dkms", "amdgpu-dkms-firmware", "rocm-core", "rocm",
           "kernel-6.8.0-49-generic", "kernel-devel-6.8.0-49-generic"]  # fmt: skip
    assert plan["commands"] == [apt, dnf]
    assert not apt_log.exists() and not dnf_log.exists(), "a dry run ran a hold"

    assert main(["pin", "-i", inv, "--store", db, "--enforce", "node[02-03]", "--apply", "--yes"]) == 0
    assert apt_log.read_text() == " ".join(apt[1:]) + "\n"
    assert dnf_log.read_text() == " ".join(dnf[1:]) + "\n"
    assert "held node[02-03]" in capsys.readouterr().out
    entry = json.loads(main(["audit", "--store", db, "--json"]) == 0 and capsys.readouterr().out)[0]
    assert entry["action"] == "enforce-pin" and entry["outcome"] == "held node[02-03]"
    assert entry["commands"][0].startswith("node02$ apt-mark hold amdgpu-dkms")


def test_enforce_refuses_an_unknown_os_and_reports_a_failing_hold(
    nodes: SshdFleet, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inv = str(write_inventory(nodes, tmp_path / "lab.toml"))
    db = str(tmp_path / "h.sqlite")
    nodes.install_tool("node02", "apt-mark", "#!/bin/sh\necho 'E: Unable to locate package rocm' >&2\nexit 100\n")
    nodes.install_tool("node03", "cat", FAKE_CAT.format(rocky='ID="arch"\n'))
    nodes.stop_node("node01")
    code = main(["pin", "-i", inv, "--store", db, "--enforce", "node[01-03]", "--apply", "--yes"])
    out = capsys.readouterr().out
    assert code == 1
    assert "node01: skip: cannot read /etc/os-release: refused" in out
    assert "node03: skip: OS 'arch' has no known package manager" in out
    assert "failed: E: Unable to locate package rocm" in out
