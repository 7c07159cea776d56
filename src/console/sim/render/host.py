"""Host facts of a simulated node: OS, kernel, ROCm and driver versions, PCI devices and RDMA NICs.

Serves ``uname``, ``hostname``, ``cat`` and ``stat`` of the few files the console reads, ``modinfo``, ``dkms``,
``ibv_devinfo``, ``rdma`` and ``lspci``. Versions come from the node's *effective* stack, so the
drift faults (ROCm, driver) show up here; PCIe link faults show in ``lspci -vvv`` LnkSta lines and a
port that is down shows as ``PORT_DOWN`` / ``state DOWN``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from console.sim.commands import SimContext, SimReply, program_name
from console.sim.models import GpuModel, SimGpu, SimNic, SimNode
from console.sim.specs import pcie_gen_speed

__all__ = ["handle"]

AMD_VENDOR = "1002"

_CODENAMES = {"focal": "Focal Fossa", "jammy": "Jammy Jellyfish", "noble": "Noble Numbat"}


def _digest(*parts: object) -> str:
    """Stable hex digest of ``parts`` (serials, build ids that must not change between runs)."""
    return hashlib.sha256(":".join(str(part) for part in parts).encode()).hexdigest()


def _ok(stdout: str) -> SimReply:
    return SimReply(stdout=stdout, duration_s=0.0)


def _fail(stderr: str, status: int = 1) -> SimReply:
    return SimReply(stdout="", stderr=stderr, exit_status=status)


def _take_option(args: list[str], short: str, long: str) -> tuple[str | None, list[str]]:
    """The value of ``-X VALUE`` / ``--long VALUE`` / ``--long=VALUE`` (the last given), and the other args."""
    value: str | None = None
    others: list[str] = []
    rest = iter(args)
    for arg in rest:
        if arg in (short, long):
            value = next(rest, None)
        elif arg.startswith(long + "="):
            value = arg.split("=", 1)[1]
        else:
            others.append(arg)
    return value, others


def _each(operands: Iterable[str], answer: Callable[[str], str | None], missing: Callable[[str], str]) -> SimReply:
    """A tool's reply for several operands: each one's answer, or its complaint and exit status 1."""
    out: list[str] = []
    err: list[str] = []
    for operand in operands:
        text = answer(operand)
        if text is None:
            err.append(missing(operand))
        else:
            out.append(text)
    return SimReply(stdout="".join(out), stderr="".join(err), exit_status=1 if err else 0)


# --- files ---------------------------------------------------------------------------------------


def os_release(node: SimNode) -> str:
    """``/etc/os-release`` of the node's distribution."""
    stack = node.stack
    if stack.os_id != "ubuntu":
        return (
            f'NAME="{stack.os_name}"\nVERSION="{stack.os_version}"\nID="{stack.os_id}"\n'
            f'VERSION_ID="{stack.os_version}"\nPRETTY_NAME="{stack.os_pretty}"\n'
        )
    point = stack.os_pretty.removeprefix("Ubuntu ").removesuffix(" LTS")
    codename = stack.os_codename
    lines = [
        f'PRETTY_NAME="{stack.os_pretty}"',
        'NAME="Ubuntu"',
        f'VERSION_ID="{stack.os_version}"',
        f'VERSION="{point} LTS ({_CODENAMES.get(codename, codename.title())})"',
        f"VERSION_CODENAME={codename}",
        "ID=ubuntu",
        "ID_LIKE=debian",
        'HOME_URL="https://www.ubuntu.com/"',
        'SUPPORT_URL="https://help.ubuntu.com/"',
        'BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"',
        'PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"',
        f"UBUNTU_CODENAME={codename}",
    ]
    if stack.os_version >= "24.04":
        lines.append("LOGO=ubuntu-logo")
    return "\n".join(lines) + "\n"


def kernel_build(node: SimNode) -> str:
    """The ``uname -v`` string of the node's kernel."""
    kernel = node.stack.kernel
    abi = re.search(r"-(\d+)-", kernel)
    number = int(abi.group(1)) + (10 if node.stack.os_version < "24.04" else 0) if abi else 1
    preempt = " PREEMPT_DYNAMIC" if node.stack.os_version >= "24.04" else ""
    return f"#{number}-Ubuntu SMP{preempt} Tue Aug 12 14:42:46 UTC 2025"


def _firmware_loaded(node: SimNode) -> list[list[tuple[str, str]]]:
    """Every GPU's firmware versions, in a stable order: what a driver load or a reboot brings in."""
    return [sorted(gpu.firmware.items()) for gpu in node.gpus]


def boot_id(node: SimNode) -> str:
    """``/proc/sys/kernel/random/boot_id``: new whenever the node's stack, driver or firmware differ.

    A real node takes a new kernel, driver or firmware at a reboot, so a simulated node whose effective
    stack changed (a drift fault, an edited cluster file) answers as one that rebooted into it.
    """
    raw = _digest(node.boot_id, node.stack.model_dump_json(), _firmware_loaded(node), node.driver_loaded)
    return f"{raw[:8]}-{raw[8:12]}-{raw[12:16]}-{raw[16:20]}-{raw[20:32]}"


def _virtual_files(node: SimNode) -> dict[str, str | None]:
    """Path -> content of the files ``cat`` can read (None: absent on this node)."""
    stack = node.stack
    release = os_release(node)
    return {
        "/etc/os-release": release,
        "/usr/lib/os-release": release,
        "/etc/hostname": node.name + "\n",
        "/proc/sys/kernel/hostname": node.name + "\n",
        "/proc/sys/kernel/random/boot_id": boot_id(node) + "\n",
        "/opt/rocm/.info/version": stack.rocm_build + "\n",
        f"/opt/rocm-{stack.rocm}/.info/version": stack.rocm_build + "\n",
        "/sys/module/amdgpu/version": stack.amdgpu_driver + "\n" if node.driver_loaded else None,
        "/proc/cmdline": node.kernel_cmdline + "\n",
        "/proc/uptime": f"{node.uptime_s:.2f} {node.uptime_s * 180:.2f}\n",
        "/proc/version": (
            f"Linux version {stack.kernel} (buildd@lcy02-amd64-001) (x86_64-linux-gnu-gcc-12 (Ubuntu 12.3.0) "
            f"12.3.0, GNU ld (GNU Binutils for Ubuntu) 2.42) {kernel_build(node)}\n"
        ),
    }


def _cat(ctx: SimContext, args: list[str]) -> SimReply:
    files = _virtual_files(ctx.node)
    return _each(
        (arg for arg in args if not arg.startswith("-") or arg == "-"),
        files.get,
        lambda path: f"cat: {path}: No such file or directory\n",
    )


def _inode_of(*parts: object) -> int:
    """An inode number that stays put while ``parts`` do and changes with any of them."""
    return 4000 + int(_digest(*parts)[:6], 16)


def _inodes(node: SimNode) -> dict[str, int | None]:
    """Path -> inode number of what ``stat`` can see (None: absent on this node).

    The amdgpu module's sysfs directory is created anew at every load, so its inode follows what a load
    brings in (driver, firmware) and the boot.
    """
    loaded = node.driver_loaded
    module = _inode_of("module", node.boot_id, node.stack.amdgpu_driver, _firmware_loaded(node)) if loaded else None
    entries: dict[str, int | None] = {"/sys/module/amdgpu": module}
    for path, content in _virtual_files(node).items():
        entries[path] = None if content is None else _inode_of("file", path, content)
    return entries


def _stat(ctx: SimContext, args: list[str]) -> SimReply:
    """``stat [-L] -c FORMAT PATH...`` with %n (name) and %i (inode number) in FORMAT."""
    fmt, rest = _take_option(args, "-c", "--format")
    paths = [arg for arg in rest if arg not in ("-L", "--dereference")]
    if fmt is None or not paths:
        return _fail("stat: missing operand\nTry 'stat --help' for more information.\n")
    inodes, template = _inodes(ctx.node), fmt

    def line(path: str) -> str | None:
        inode = inodes.get(path)
        return None if inode is None else template.replace("%n", path).replace("%i", str(inode)) + "\n"

    return _each(paths, line, lambda path: f"stat: cannot statx '{path}': No such file or directory\n")


# --- uname / hostname ----------------------------------------------------------------------------

_UNAME_FLAGS = "snrvmpio"


def _uname(ctx: SimContext, args: list[str]) -> SimReply:
    node = ctx.node
    values = {
        "s": "Linux",
        "n": node.name,
        "r": node.stack.kernel,
        "v": kernel_build(node),
        "m": "x86_64",
        "p": "x86_64",
        "i": "x86_64",
        "o": "GNU/Linux",
    }
    long_names = {"--kernel-name": "s", "--nodename": "n", "--kernel-release": "r", "--all": "a"}
    wanted: set[str] = set()
    for arg in args:
        if arg in long_names:
            wanted.add(long_names[arg])
            continue
        if not arg.startswith("-") or arg.startswith("--") or len(arg) < 2:
            return _fail(f"uname: extra operand '{arg}'\nTry 'uname --help' for more information.\n")
        for flag in arg[1:]:
            if flag not in _UNAME_FLAGS + "a":
                return _fail(f"uname: invalid option -- '{flag}'\nTry 'uname --help' for more information.\n")
            wanted.add(flag)
    if "a" in wanted:
        wanted = set(_UNAME_FLAGS)
    fields = [values[flag] for flag in _UNAME_FLAGS if flag in wanted] or [values["s"]]
    return _ok(" ".join(fields) + "\n")


def _hostname(ctx: SimContext, args: list[str]) -> SimReply:
    node = ctx.node
    name = node.name
    if "-i" in args or "-I" in args:
        address = ctx.cluster.node(node.name).address
        return _ok(address + (" \n" if "-I" in args else "\n"))
    if "-s" in args or "--short" in args:
        name = name.split(".", 1)[0]
    return _ok(name + "\n")


# --- kernel module -------------------------------------------------------------------------------


def _dkms_version(node: SimNode) -> str:
    """DKMS module version ``<driver>-<debian revision>`` from the amdgpu-dkms package version."""
    package = node.stack.amdgpu_package.split(":", 1)[-1]
    revision = package.split("-", 1)[1] if "-" in package else package
    return f"{node.stack.amdgpu_driver}-{revision}"


_AMDGPU_FIRMWARE = {
    GpuModel.MI300X: ("gc_9_4_3_mec.bin", "gc_9_4_3_rlc.bin", "psp_13_0_6_sos.bin", "psp_13_0_6_ta.bin"),
    GpuModel.MI325X: ("gc_9_4_3_mec.bin", "gc_9_4_3_rlc.bin", "psp_13_0_6_sos.bin", "psp_13_0_6_ta.bin"),
    GpuModel.MI350X: ("gc_9_5_0_mec.bin", "gc_9_5_0_rlc.bin", "psp_13_0_14_sos.bin", "psp_13_0_14_ta.bin"),
    GpuModel.MI355X: ("gc_9_5_0_mec.bin", "gc_9_5_0_rlc.bin", "psp_13_0_14_sos.bin", "psp_13_0_14_ta.bin"),
    GpuModel.MI250X: ("aldebaran_mec.bin", "aldebaran_rlc.bin", "aldebaran_sos.bin", "aldebaran_ta.bin"),
}


def modinfo_fields(node: SimNode) -> list[tuple[str, str]]:
    """``modinfo amdgpu`` as (field, value) pairs, in the order modinfo prints them."""
    stack = node.stack
    suffix = ".ko.zst" if stack.os_version >= "24.04" else ".ko"
    fields = [
        ("filename", f"/lib/modules/{stack.kernel}/updates/dkms/amdgpu{suffix}"),
        ("version", stack.amdgpu_driver),
        ("license", "GPL and additional rights"),
        ("description", "AMD GPU"),
        ("author", "AMD linux driver team"),
    ]
    fields += [("firmware", f"amdgpu/{name}") for name in _AMDGPU_FIRMWARE[node.gpu_model]]
    fields += [
        ("srcversion", _digest("srcversion", stack.amdgpu_driver, stack.amdgpu_package)[:23].upper()),
        ("alias", f"pci:v0000{AMD_VENDOR}d0000{node.spec.device_id.upper()}sv*sd*bc*sc*i*"),
        ("depends", "amddrm_ttm_helper,amdttm,amddrm_buddy,amdxcp,drm_kms_helper,amd-sched,amdkcl,drm,video"),
        ("retpoline", "Y"),
        ("name", "amdgpu"),
        ("vermagic", f"{stack.kernel} SMP mod_unload modversions "),
        ("parm", "ras_enable:Enable RAS features on the GPU (0 = disable, 1 = enable, -1 = auto (default))"),
        ("parm", "bad_page_threshold:Bad page threshold(-1 = ignore threshold (default value), 0 = disable bad page "),
    ]
    return fields


def _modinfo(ctx: SimContext, args: list[str]) -> SimReply:
    field, rest = _take_option(args, "-F", "--field")
    modules = [arg for arg in rest if not arg.startswith("-")]
    if not modules:
        return _fail("modinfo: ERROR: missing module or filename.\n")

    def info(module: str) -> str | None:
        if module != "amdgpu":
            return None
        fields = modinfo_fields(ctx.node)
        if field is None:
            return "".join(f"{name + ':':<16}{value}\n" for name, value in fields)
        return "".join(value + "\n" for name, value in fields if name == field)

    return _each(modules, info, lambda module: f"modinfo: ERROR: Module {module} not found.\n")


def _dkms(ctx: SimContext, args: list[str]) -> SimReply:
    if not args or args[0] != "status":
        return _fail("Error! No action was specified.\n")
    node = ctx.node
    version = _dkms_version(node)
    kernel = node.stack.kernel
    if node.stack.os_version < "24.04":
        return _ok(f"amdgpu, {version}, {kernel}, x86_64: installed\n")
    return _ok(f"amdgpu/{version}, {kernel}, x86_64: installed\n")


# --- RDMA NICs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _NicKind:
    """Per-family constants ibv_devinfo and lspci print."""

    vendor_id: str
    part_id: int
    fw: str
    board: str | None
    pci_name: str
    pci_id: str


_NIC_KINDS = {
    "mlx5": _NicKind(
        vendor_id="0x02c9",
        part_id=4129,
        fw="28.39.1002",
        board="MT_0000000838",
        pci_name="Mellanox Technologies MT2910 Family [ConnectX-7]",
        pci_id="15b3:1021",
    ),
    "bnxt": _NicKind(
        vendor_id="0x14e4",
        part_id=5984,
        fw="230.2.49.0",
        board=None,
        pci_name="Broadcom Inc. and subsidiaries BCM57608 10Gb/25Gb/50Gb/100Gb/200Gb/400Gb Ethernet",
        pci_id="14e4:1760",
    ),
    "ionic": _NicKind(
        vendor_id="0x1dd8",
        part_id=4098,
        fw="1.117.1-a-42",
        board=None,
        pci_name="Pensando Systems DSC Ethernet Controller",
        pci_id="1dd8:1002",
    ),
}


def _nic_kind(nic: SimNic) -> _NicKind:
    for prefix, kind in _NIC_KINDS.items():
        if nic.device.startswith(prefix):
            return kind
    return _NIC_KINDS["mlx5"]


# ibverbs' speed_str() per-lane words for the rates the fabrics run (4 lanes a port).
_LANE_SPEED = {25: "25.0 Gbps (32)", 50: "50.0 Gbps (64)", 100: "100.0 Gbps (128)", 200: "200.0 Gbps (256)"}


def _ibv_port_block(nic: SimNic, verbose: bool = False) -> list[str]:
    up = nic.up and not nic.ibv_down
    state = "PORT_ACTIVE (4)" if up else "PORT_DOWN (1)"
    mtu = "4096 (5)" if up else "1024 (3)"
    lines = [
        f"\t\tport:\t{nic.port}",
        f"\t\t\tstate:\t\t\t{state}",
        "\t\t\tmax_mtu:\t\t4096 (5)",
        f"\t\t\tactive_mtu:\t\t{mtu}",
        "\t\t\tsm_lid:\t\t\t0",
        "\t\t\tport_lid:\t\t0",
        "\t\t\tport_lmc:\t\t0x00",
        "\t\t\tlink_layer:\t\tEthernet",
    ]
    if verbose and up:
        lane = nic.rate_gbps // 4
        lines += [
            "\t\t\tmax_msg_sz:\t\t0x40000000",
            "\t\t\tport_cap_flags:\t\t0x04010000",
            "\t\t\tactive_width:\t\t4X (2)",
            f"\t\t\tactive_speed:\t\t{_LANE_SPEED.get(lane, f'{lane:.1f} Gbps (0)')}",
            "\t\t\tphys_state:\t\tLINK_UP (5)",
        ]
    elif verbose:
        lines += [
            "\t\t\tactive_width:\t\t4X (2)",
            "\t\t\tactive_speed:\t\tinvalid speed (0)",
            "\t\t\tphys_state:\t\tDISABLED (3)",
        ]
    return lines


def ibv_devinfo(nics: list[SimNic], verbose: bool = False) -> str:
    """``ibv_devinfo`` (``-v``: with the port's width, speed and physical state) for ``nics`` (one port each)."""
    lines: list[str] = []
    for nic in nics:
        kind = _nic_kind(nic)
        lines += [
            f"hca_id:\t{nic.device}",
            "\ttransport:\t\t\tInfiniBand (0)",
            f"\tfw_ver:\t\t\t\t{kind.fw}",
            f"\tnode_guid:\t\t\t{nic.guid}",
            f"\tsys_image_guid:\t\t\t{nic.guid}",
            f"\tvendor_id:\t\t\t{kind.vendor_id}",
            f"\tvendor_part_id:\t\t\t{kind.part_id}",
            "\thw_ver:\t\t\t\t0x0",
        ]
        if kind.board:
            lines.append(f"\tboard_id:\t\t\t{kind.board}")
        lines.append("\tphys_port_cnt:\t\t\t1")
        lines += _ibv_port_block(nic, verbose)
        lines.append("")
    return "\n".join(lines) + "\n" if lines else ""


def _ibv_devinfo(ctx: SimContext, args: list[str]) -> SimReply:
    nics = ctx.node.nics
    if "-l" in args or "--list" in args:
        return _ok(f"{len(nics)} HCAs found:\n" + "".join(f"\t{nic.device}\n" for nic in nics))
    device = None
    rest = iter(args)
    for arg in rest:
        if arg in ("-d", "--ib-dev"):
            device = next(rest, None)
        elif arg.startswith("--ib-dev="):
            device = arg.split("=", 1)[1]
    if device is not None:
        nics = [nic for nic in nics if nic.device == device]
        if not nics:
            return _fail(f"IB device '{device}' wasn't found\n", 255)
    if not nics:
        return _fail("No IB devices found\n", 255)
    return _ok(ibv_devinfo(nics, verbose="-v" in args or "--verbose" in args))


def rdma_link(nics: list[SimNic]) -> str:
    """``rdma link`` lines (iproute2 ends every field with a space)."""
    lines = []
    for nic in nics:
        state, physical = ("ACTIVE", "LINK_UP") if nic.up else ("DOWN", "DISABLED")
        physical = nic.rdma_physical_state or physical
        line = f"link {nic.device}/{nic.port} state {state} physical_state {physical} netdev {nic.netdev} \n"
        lines += [line] * nic.rdma_lines
    return "".join(lines)


def _rdma(ctx: SimContext, args: list[str]) -> SimReply:
    nics = ctx.node.nics
    words = [arg for arg in args if not arg.startswith("-")]
    obj = words[0] if words else ""
    if obj in ("link", "l"):
        if len(words) > 2 and words[1] == "show":
            wanted = words[2]
            nics = [nic for nic in nics if wanted in (nic.device, f"{nic.device}/{nic.port}")]
            if not nics:
                return _fail("Wrong device name\n")
        return _ok(rdma_link(nics))
    if obj in ("dev", "d"):
        return _ok(
            "".join(
                f"{i}: {nic.device}: node_type ca fw {_nic_kind(nic).fw} node_guid {nic.guid} "
                f"sys_image_guid {nic.guid} \n"
                for i, nic in enumerate(nics)
            )
        )
    if not obj:
        return _fail("Usage: rdma [ OPTIONS ] OBJECT { COMMAND | help }\nwhere  OBJECT := { dev | link | resource | "
                     "system | statistic | help }\n", 255)  # fmt: skip
    return _fail(f'Object "{obj}" is unknown, try "rdma help".\n', 255)


# --- lspci ---------------------------------------------------------------------------------------

_GPU_PCI_NAMES = {
    "74a1": "Aqua Vanjaram [Instinct MI300X]",
    "74a5": "Aqua Vanjaram [Instinct MI325X]",
    "740c": "Aldebaran/MI200 [Instinct MI250X/MI250]",
}
_AMD = "Advanced Micro Devices, Inc. [AMD/ATI]"


def _gts(gen: int) -> str:
    speed = pcie_gen_speed(gen)
    return f"{speed:g}GT/s"


def _gpu_class(node: SimNode) -> tuple[str, str]:
    if node.gpu_model is GpuModel.MI250X:
        return "Display controller", "0380"
    return "Processing accelerators", "1200"


def _lspci_gpu_line(node: SimNode, gpu: SimGpu, numeric: bool, domain: bool) -> str:
    spec = node.spec
    device_name = _GPU_PCI_NAMES.get(spec.device_id, f"Device {spec.device_id}")
    class_name, class_id = _gpu_class(node)
    address = gpu.bdf if domain else gpu.bdf.split(":", 1)[1]
    if numeric:
        return f"{address} {class_name} [{class_id}]: {_AMD} {device_name} [{AMD_VENDOR}:{spec.device_id}]"
    return f"{address} {class_name}: {_AMD} {device_name}"


def _link_status(gpu: SimGpu, node: SimNode) -> tuple[str, str]:
    """(LnkSta line, DevSta line) as pciutils >= 3.6 prints them for ``gpu``."""
    spec = node.spec
    speed_ok = "ok" if gpu.pcie_gen >= spec.pcie_gen else "downgraded"
    width_ok = "ok" if gpu.pcie_width >= spec.pcie_width else "downgraded"
    lnk = f"Speed {_gts(gpu.pcie_gen)} ({speed_ok}), Width x{gpu.pcie_width} ({width_ok})"
    corr = "+" if gpu.pcie_replay_count > 10 or gpu.pcie_l0_to_recovery_count > 100 else "-"
    dev = f"CorrErr{corr} NonFatalErr- FatalErr- UnsupReq- AuxPwr- TransPend-"
    return lnk, dev


def _lspci_gpu_verbose(node: SimNode, gpu: SimGpu) -> list[str]:
    spec = node.spec
    lnk_sta, dev_sta = _link_status(gpu, node)
    cap = _gts(spec.pcie_gen)
    lines = [
        f"\tSubsystem: {_AMD} Device {spec.subsystem_id}",
        f"\tPhysical Slot: {20 + gpu.slot}",
        "\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- FastB2B- DisINTx+",
        "\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- <PERR- INTx-",
        "\tLatency: 0, Cache Line Size: 64 bytes",
        f"\tInterrupt: pin A routed to IRQ {1030 + 8 * gpu.slot}",
        f"\tNUMA node: {gpu.numa_node}",
        f"\tIOMMU group: {35 + 4 * gpu.slot}",
        f"\tRegion 0: Memory at {0x22BE00000000 + gpu.slot * 0x4000000000:x} (64-bit, prefetchable) [size=256G]",
        f"\tRegion 2: Memory at {0x22BFE0000000 + gpu.slot * 0x4000000000:x} (64-bit, prefetchable) [size=2M]",
        f"\tRegion 5: Memory at {0xC4000000 + gpu.slot * 0x1000000:x} (32-bit, non-prefetchable) [size=512K]",
        "\tCapabilities: [50] Power Management version 3",
        "\t\tFlags: PMEClk- DSI- D1- D2- AuxCurrent=0mA PME(D0-,D1+,D2+,D3hot+,D3cold+)",
        "\t\tStatus: D0 NoSoftRst+ PME-Enable- DSel=0 DScale=0 PME-",
        "\tCapabilities: [64] Express (v2) Endpoint, MSI 00",
        "\t\tDevCap:\tMaxPayload 256 bytes, PhantFunc 0, Latency L0s <4us, L1 unlimited",
        "\t\t\tExtTag+ AttnBtn- AttnInd- PwrInd- RBE+ FLReset+ SlotPowerLimit 0W",
        "\t\tDevCtl:\tCorrErr- NonFatalErr- FatalErr- UnsupReq-",
        "\t\t\tRlxdOrd+ ExtTag+ PhantFunc- AuxPwr- NoSnoop+ FLReset-",
        "\t\t\tMaxPayload 256 bytes, MaxReadReq 512 bytes",
        f"\t\tDevSta:\t{dev_sta}",
        f"\t\tLnkCap:\tPort #0, Speed {cap}, Width x{spec.pcie_width}, ASPM not supported",
        "\t\t\tClockPM- Surprise- LLActRep- BwNot- ASPMOptComp+",
        "\t\tLnkCtl:\tASPM Disabled; RCB 64 bytes, Disabled- CommClk+",
        "\t\t\tExtSynch- ClockPM- AutWidDis- BWInt- AutBWInt-",
        f"\t\tLnkSta:\t{lnk_sta}",
        "\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-",
        f"\t\tLnkCap2: Supported Link Speeds: 2.5-{cap}, Crosslink- Retimer+ 2Retimers+ DRS-",
        f"\t\tLnkCtl2: Target Link Speed: {cap}, EnterCompliance- SpeedDis-",
        "\t\tLnkSta2: Current De-emphasis Level: -6dB, EqualizationComplete+ EqualizationPhase1+",
        "\t\t\t EqualizationPhase2+ EqualizationPhase3+ LinkEqualizationRequest-",
    ]
    if node.driver_loaded:
        lines.append("\tKernel driver in use: amdgpu")
    lines += ["\tKernel modules: amdgpu", ""]
    return lines


def _nic_line(nic: SimNic, numeric: bool, domain: bool) -> str:
    kind = _nic_kind(nic)
    address = nic.bdf if domain else nic.bdf.split(":", 1)[1]
    if numeric:
        return f"{address} Ethernet controller [0200]: {kind.pci_name} [{kind.pci_id}]"
    return f"{address} Ethernet controller: {kind.pci_name}"


def _lspci(ctx: SimContext, args: list[str]) -> SimReply:
    node = ctx.node
    verbose = numeric = domain = False
    vendor = device = slot = None
    rest = iter(args)
    for arg in rest:
        if arg in ("-d", "-s"):
            value = next(rest, "")
            if arg == "-s":
                slot = value
                continue
            vendor, _, device = value.partition(":")
            vendor, device = vendor.lower() or None, device.lower() or None
        elif arg.startswith("-") and not arg.startswith("--"):
            verbose = verbose or "v" in arg
            numeric = numeric or "n" in arg
            domain = domain or "D" in arg
    entries: list[tuple[str, list[str]]] = []
    for gpu in node.gpus:
        if vendor in (None, AMD_VENDOR) and device in (None, node.spec.device_id):
            block = _lspci_gpu_verbose(node, gpu) if verbose else []
            entries.append((gpu.bdf, [_lspci_gpu_line(node, gpu, numeric, domain), *block]))
    for nic in node.nics:
        nic_vendor, _, nic_device = _nic_kind(nic).pci_id.partition(":")
        if vendor in (None, nic_vendor) and device in (None, nic_device):
            entries.append((nic.bdf, [_nic_line(nic, numeric, domain), *([""] if verbose else [])]))
    if slot is not None:
        entries = [entry for entry in entries if entry[0].endswith(slot)]
    entries.sort(key=lambda entry: entry[0])
    return _ok("".join(line + "\n" for _, block in entries for line in block))


_HANDLERS: dict[str, Callable[[SimContext, list[str]], SimReply]] = {
    "cat": _cat,
    "stat": _stat,
    "uname": _uname,
    "hostname": _hostname,
    "modinfo": _modinfo,
    "dkms": _dkms,
    "ibv_devinfo": _ibv_devinfo,
    "rdma": _rdma,
    "lspci": _lspci,
}


def handle(ctx: SimContext, argv: list[str]) -> SimReply:
    """Answer one of the host-fact programs (dispatch on the program's basename)."""
    return _HANDLERS[program_name(argv)](ctx, argv[1:])
