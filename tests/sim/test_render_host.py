"""Simulated host facts: files, kernel module, NICs and PCI devices, read back with the console's host parsers."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.probes.host import (
    parse_dkms_status,
    parse_ibv_devinfo,
    parse_modinfo_version,
    parse_os_release,
    parse_rdma_link,
    parse_single_line,
)
from console.sim.faults import FaultKind
from console.sim.models import ClusterSpec, build_node
from console.sim.specs import GpuModel, stack_preset
from tests.sim.simcore_helpers import NODE, cluster, fault, run


def test_os_release_and_versions_come_from_the_stack() -> None:
    spec = cluster(GpuModel.MI300X, rocm="6.4.1")
    stack = stack_preset("6.4.1")
    release = parse_os_release(run(spec, "cat", "/etc/os-release").stdout)
    assert (release.id, release.version_id, release.pretty_name) == ("ubuntu", "22.04", "Ubuntu 22.04.5 LTS")
    assert 'VERSION="22.04.5 LTS (Jammy Jellyfish)"' in run(spec, "cat", "/etc/os-release").stdout
    assert parse_single_line(run(spec, "cat", "/opt/rocm/.info/version").stdout, "ROCm") == stack.rocm_build
    assert run(spec, "cat", "/sys/module/amdgpu/version").stdout == stack.amdgpu_driver + "\n"
    assert run(spec, "uname", "-r").stdout == stack.kernel + "\n"
    assert parse_modinfo_version(run(spec, "modinfo", "amdgpu").stdout) == stack.amdgpu_driver


def test_noble_os_release_has_the_logo_line() -> None:
    out = run(cluster(GpuModel.MI355X, rocm="7.0.2"), "cat", "/etc/os-release").stdout
    assert out.splitlines()[-1] == "LOGO=ubuntu-logo"
    assert 'VERSION="24.04.3 LTS (Noble Numbat)"' in out


def test_cmdline_holds_the_acceptance_parameters() -> None:
    cmdline = run(cluster(), "cat", "/proc/cmdline").stdout
    for parameter in ("pci=realloc=off", "iommu=pt", "numa_balancing=disable"):
        assert parameter in cmdline.split()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (("uname",), "Linux\n"),
        (("uname", "-n"), f"{NODE}\n"),
        (("uname", "-s", "-r"), "Linux 5.15.0-136-generic\n"),
        (("hostname",), f"{NODE}\n"),
        (("hostname", "-s"), f"{NODE}\n"),
        (("modinfo", "-F", "version", "amdgpu"), "6.12.12\n"),
    ],
)
def test_small_commands(argv: tuple[str, ...], expected: str) -> None:
    assert run(cluster(GpuModel.MI300X, rocm="6.4.1"), *argv).stdout == expected


def test_uname_a_has_all_fields() -> None:
    fields = run(cluster(), "uname", "-a").stdout.split()
    assert fields[:3] == ["Linux", NODE, "5.15.0-136-generic"] and fields[-1] == "GNU/Linux"


def test_modinfo_layout_pads_field_names_to_16() -> None:
    lines = run(cluster(), "modinfo", "amdgpu").stdout.splitlines()
    assert lines[0].startswith("filename:       /lib/modules/5.15.0-136-generic/updates/dkms/amdgpu.ko")
    assert all(re.match(r"^[a-z_]+:\s+\S", line) and len(line.split(":", 1)[0]) < 16 for line in lines)


@pytest.mark.parametrize(("rocm", "separator"), [("6.4.1", ", "), ("7.0.2", "/")])
def test_dkms_status_uses_the_distribution_dkms_layout(rocm: str, separator: str) -> None:
    out = run(cluster(rocm=rocm), "dkms", "status").stdout
    assert out.startswith("amdgpu" + separator)
    (module,) = parse_dkms_status(out)
    stack = stack_preset(rocm)
    assert (module.module, module.state, module.kernel) == ("amdgpu", "installed", stack.kernel)
    assert module.version.startswith(stack.amdgpu_driver + "-")


def test_rocm_drift_changes_the_release_file() -> None:
    healthy = run(cluster(rocm="6.4.1"), "cat", "/opt/rocm/.info/version").stdout
    drifted = run(cluster(rocm="6.4.1", faults=[fault(FaultKind.ROCM_DRIFT)]), "cat", "/opt/rocm/.info/version").stdout
    assert drifted != healthy and drifted.startswith("6.4.0-")


def test_driver_drift_changes_modinfo_and_dkms() -> None:
    spec = cluster(rocm="6.4.1", faults=[fault(FaultKind.DRIVER_DRIFT, amdgpu="6.10.5")])
    assert parse_modinfo_version(run(spec, "modinfo", "amdgpu").stdout) == "6.10.5"
    assert parse_dkms_status(run(spec, "dkms", "status").stdout)[0].version.startswith("6.10.5-")


def test_driver_not_loaded_has_no_sysfs_version_and_no_driver_in_use() -> None:
    spec = cluster(faults=[fault(FaultKind.DRIVER_NOT_LOADED)])
    reply = run(spec, "cat", "/sys/module/amdgpu/version")
    assert (reply.exit_status, reply.stderr) == (1, "cat: /sys/module/amdgpu/version: No such file or directory\n")
    verbose = run(spec, "lspci", "-d", "1002:74a1", "-vvv").stdout
    assert "Kernel driver in use" not in verbose and verbose.count("Kernel modules: amdgpu") == 8


def test_boot_id_and_module_inode_hold_until_the_stack_or_its_firmware_changes() -> None:
    def stamp(spec: ClusterSpec, invocation: int = 1) -> tuple[str, str]:
        boot = run(spec, "cat", "/proc/sys/kernel/random/boot_id", invocation=invocation).stdout
        module = run(spec, "stat", "-L", "-c", "%n %i", "/sys/module/amdgpu", invocation=invocation)
        return boot, module.stdout

    healthy = cluster(rocm="6.4.1")
    assert re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}\n", stamp(healthy)[0])
    assert re.fullmatch(r"/sys/module/amdgpu \d+\n", stamp(healthy)[1])
    assert stamp(healthy) == stamp(healthy, invocation=7)
    upgraded = stamp(cluster(rocm="6.4.1", faults=[fault(FaultKind.ROCM_DRIFT)]))
    assert upgraded[0] != stamp(healthy)[0]
    reflashed = stamp(cluster(rocm="6.4.1", faults=[fault(FaultKind.FIRMWARE_DRIFT, gpu=2)]))
    assert reflashed[1] != stamp(healthy)[1]
    unloaded = run(
        cluster(faults=[fault(FaultKind.DRIVER_NOT_LOADED)]), "stat", "-L", "-c", "%n %i", "/sys/module/amdgpu"
    )
    assert (unloaded.exit_status, unloaded.stderr) == (
        1,
        "stat: cannot statx '/sys/module/amdgpu': No such file or directory\n",
    )


@pytest.mark.parametrize(
    ("model", "device"), [(GpuModel.MI300X, "74a1"), (GpuModel.MI355X, "75a3"), (GpuModel.MI250X, "740c")]
)
def test_lspci_counts_the_gpus_by_device_id(model: GpuModel, device: str) -> None:
    out = run(cluster(model), "lspci", "-d", f"1002:{device}").stdout
    assert len(out.splitlines()) == 8
    assert run(cluster(model), "lspci", "-d", "1002:ffff").stdout == ""


def test_gpu_missing_drops_a_device_from_lspci() -> None:
    spec = cluster(faults=[fault(FaultKind.GPU_MISSING, gpu=6)])
    assert len(run(spec, "lspci", "-d", "1002:74a1").stdout.splitlines()) == 7


def test_healthy_link_status_is_ok() -> None:
    out = run(cluster(), "lspci", "-d", "1002:74a1", "-vvv").stdout
    assert out.count("\t\tLnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)\n") == 8
    assert "DevSta:\tCorrErr+" not in out


@pytest.mark.parametrize(
    ("kind", "evidence"),
    [
        (FaultKind.PCIE_DOWNTRAINED_GEN, "LnkSta:\tSpeed 8GT/s (downgraded), Width x16 (ok)"),
        (FaultKind.PCIE_DOWNTRAINED_WIDTH, "LnkSta:\tSpeed 32GT/s (ok), Width x8 (downgraded)"),
    ],
)
def test_pcie_downtraining_shows_in_lnksta_of_that_gpu(kind: FaultKind, evidence: str) -> None:
    spec = cluster(faults=[fault(kind, gpu=2)])
    gpu = build_node(spec, NODE).gpu_by_slot(2)
    assert gpu is not None
    blocks = run(spec, "lspci", "-d", "1002:74a1", "-vvv").stdout.split("\n\n")
    bad = [block for block in blocks if evidence in block]
    assert len(bad) == 1 and bad[0].startswith(gpu.bdf[5:])
    assert "DevSta:\tCorrErr+" in bad[0]


def test_ibv_devinfo_and_rdma_link_list_eight_active_ports() -> None:
    spec = cluster(GpuModel.MI350X)
    ports = parse_ibv_devinfo(run(spec, "ibv_devinfo").stdout)
    assert [port.device for port in ports] == [f"bnxt_re{i}" for i in range(8)]
    assert {port.state for port in ports} == {"ACTIVE"} and {port.link_layer for port in ports} == {"Ethernet"}
    links = parse_rdma_link(run(spec, "rdma", "link").stdout)
    assert len(links) == 8 and {link.state for link in links} == {"ACTIVE"}


def test_nic_port_down_shows_in_ibv_devinfo_and_rdma_link() -> None:
    spec = cluster(GpuModel.MI300X, faults=[fault(FaultKind.NIC_PORT_DOWN, nic=3)])
    ports = parse_ibv_devinfo(run(spec, "ibv_devinfo").stdout)
    assert [port.device for port in ports if port.state != "ACTIVE"] == ["mlx5_3"]
    assert "\t\t\tstate:\t\t\tPORT_DOWN (1)\n" in run(spec, "ibv_devinfo", "-d", "mlx5_3").stdout
    links = {link.device: link for link in parse_rdma_link(run(spec, "rdma", "link").stdout)}
    assert (links["mlx5_3"].state, links["mlx5_3"].physical_state) == ("DOWN", "DISABLED")


def test_errors_look_like_the_real_tools() -> None:
    spec = cluster()
    assert run(spec, "cat", "/etc/nosuch").stderr == "cat: /etc/nosuch: No such file or directory\n"
    assert run(spec, "modinfo", "nosuch").stderr == "modinfo: ERROR: Module nosuch not found.\n"
    assert run(spec, "uname", "-q").stderr.startswith("uname: invalid option -- 'q'\n")
    assert run(spec, "ibv_devinfo", "-d", "nope").exit_status == 255


_PROGRAMS = st.sampled_from(["cat", "uname", "hostname", "modinfo", "dkms", "ibv_devinfo", "rdma", "lspci"])
_WORDS = st.sampled_from(["-d", "-v", "-vvv", "-l", "-F", "status", "link", "amdgpu", "1002:74a1", "/proc/cmdline"])


@settings(max_examples=150, deadline=None)
@given(_PROGRAMS, st.lists(_WORDS | st.text(max_size=10), max_size=4))
def test_any_command_line_gives_a_reply(program: str, args: list[str]) -> None:
    reply = run(cluster(), program, *args)
    assert isinstance(reply.stdout, str) and isinstance(reply.exit_status, int)
