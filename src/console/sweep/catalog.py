"""Every probe the console runs: its command, timeout, parser and the probe sets it belongs to.

This is the one place to read or change what the console executes on a node. Commands are argv
lists (quoted by the transport); nothing from inventory or operator input is spliced into them.
"""

from __future__ import annotations

import hashlib
import shlex
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from console.inventory.model import Pool
from console.model.family import Family
from console.probes import Tool, parse_output
from console.probes.base import ParseError
from console.probes.host import (
    complete,
    parse_dkms_status,
    parse_ibv_devinfo,
    parse_modinfo_version,
    parse_os_release,
    parse_rdma_link,
    parse_single_line,
    parse_uptime,
)
from console.probes.ids import ProbeId
from console.probes.pytorch.command import torch_probe_argv, torch_probe_shown
from console.sweep.packed import pack_screen, unpack_screen

# How a rerun's sweep records its level: ``rerun:standard`` (every probe of the level), ``rerun:ecc,xgmi``
# (some families only: no level's check).
RERUN_PREFIX = "rerun:"


class ProbeSet(StrEnum):
    """How deep a sweep goes. Each of quick, standard and full includes the ones before it.

    ``framework`` stands apart: the quick probes plus the framework probes (PyTorch), which need a
    Python environment many fleets keep only in containers and which occupy every GPU, so no other
    level runs them (docs/operator-guide.md, "Framework checks"). ``workload`` runs the quick probes,
    then the workloads the cluster file declares (docs/workloads.md; ``console.sweep.workloads``).
    """

    QUICK = "quick"
    STANDARD = "standard"
    FULL = "full"
    MULTINODE = "multinode"
    FRAMEWORK = "framework"
    WORKLOAD = "workload"


_SET_ORDER = [ProbeSet.QUICK, ProbeSet.STANDARD, ProbeSet.FULL]

Parser = Callable[[str], Any]


@dataclass(frozen=True)
class ProbeSpec:
    """One probe: ``argv`` run on the node under ``timeout_s``, its output read by ``parse``."""

    id: ProbeId
    family: Family
    argv: tuple[str, ...]
    timeout_s: float
    parse: Parser
    level: ProbeSet
    slow_changing: bool = False
    description: str = ""
    # For long tests (RCCL, TransferBench, RVS) what printed before a hang is evidence: a table without
    # its footer is a failed run, not a missing one.
    judge_partial: bool = False
    # Run instead when the node's tool refuses ``argv``'s options as unknown (an older release without the
    # narrower options): the same probe in the form that release knows.
    fallback: tuple[str, ...] | None = None
    # Exit statuses that still mean "this output is the answer" (``cat`` of several files prints what it
    # can and says 1 for the one missing). Any other status of a quick probe makes it UNKNOWN.
    ok_exit: frozenset[int] = frozenset({0})
    # How the command reads in findings and the history when its argv carries a whole script.
    shown: str | None = None
    # A test that occupies the GPUs for minutes runs in a bundle of its own, as the judged-partial long
    # tests do: its hang must not hold the quick probes queued behind it.
    alone: bool = False
    # Run before and after the probe in its bundle (output discarded): removes what the probe writes on
    # the node (``amd-smi ras --cper --folder``), also what an earlier run the console killed left.
    cleanup: tuple[str, ...] | None = None

    @property
    def program(self) -> str:
        """The tool the probe runs: ``amd-smi`` for ``sudo -n amd-smi ras ...``."""
        words = list(self.argv)
        if words and words[0] == "sudo":
            words = words[1:]
            while words and words[0].startswith("-"):
                words = words[1:]
        return words[0] if words else ""

    @property
    def command_line(self) -> str:
        """What runs on the node, as an operator would type it (a script in it named, not spelled out)."""
        return self.shown or shlex.join(self.argv)

    def fallback_spec(self) -> ProbeSpec | None:
        """This probe in its fallback form (None without one)."""
        return replace(self, argv=self.fallback, fallback=None) if self.fallback else None


def _tool(tool: Tool, kind: str) -> Parser:
    def parse(text: str) -> Any:
        return parse_output(text, tool=tool, kind=kind)

    return parse


class _ReusedWhenUnchanged:
    """A parser remembering its results by a digest of the text, for outputs that rarely change.

    A rerun still runs the probe (so a GPU that fell off the bus or a new driver shows up at once),
    but an ``amd-smi static`` identical to last time is not parsed again. Parsers are pure and their
    results are never modified afterwards (facts copy only what a merge fills in), so sharing one is safe.
    Failures are not remembered: ParseError is raised again each time. ``fresh`` parses without it.

    A result is remembered packed (``pack_screen``), with a weak reference to its objects while someone
    else holds them: an output identical on many nodes (firmware, bad pages) is one object for all of
    them, and one that differs on every node (``static`` names each GPU's serial) costs ~3 KiB here
    instead of ~90 KiB of objects per node, loaded again in ~0.2 ms instead of parsed in 3-5 ms.
    """

    def __init__(self, fresh: Parser, size: int = 8192) -> None:
        self.fresh = fresh
        self._size = size
        self._results: OrderedDict[bytes, tuple[bytes, weakref.ref[Any]]] = OrderedDict()

    def __call__(self, text: str) -> Any:
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        found = self._results.get(key)
        if found is not None:
            self._results.move_to_end(key)
            packed, held = found
            parsed = held()
            if parsed is None:
                parsed = unpack_screen(packed)
                self._results[key] = (packed, weakref.ref(parsed))
            return parsed
        parsed = self.fresh(text)
        self._results[key] = (pack_screen(parsed), weakref.ref(parsed))
        if len(self._results) > self._size:
            self._results.popitem(last=False)
        return parsed


def _steady_tool(tool: Tool, kind: str) -> Parser:
    return _ReusedWhenUnchanged(_tool(tool, kind))


def _whole_lines(parse: Parser, what: str) -> Parser:
    """``parse`` for a text answer that must end with its newline (a cut one does not: ``complete``)."""

    def whole(text: str) -> Any:
        complete(text, what)
        return parse(text)

    whole.fresh = getattr(parse, "fresh", parse)  # type: ignore[attr-defined]
    return whole


def _line(what: str, *, whole_line: bool = True) -> Parser:
    def parse(text: str) -> Any:
        return parse_single_line(text, what, whole_line=whole_line)

    return parse


def _uptime(text: str) -> Any:
    return parse_uptime(text)


def _os_release(text: str) -> Any:
    return parse_os_release(text)


def _modinfo(text: str) -> Any:
    return parse_modinfo_version(text)


def _rdma(text: str) -> Any:
    return parse_rdma_link(text)


def _ibv_devinfo(text: str) -> Any:
    return parse_ibv_devinfo(text)


def _dkms(text: str) -> Any:
    return parse_dkms_status(text)


def _verbatim(text: str) -> str:
    # A stamp is compared, never judged; but a node that printed nothing, or half a line, did not answer.
    if not text.strip():
        raise ParseError("empty output")
    complete(text, "the stamp")
    return text


def _transferbench(preset: str) -> ProbeSpec:
    """``TransferBench <preset>`` at the standard level (packs give each model's timeout)."""
    return ProbeSpec(
        ProbeId(f"tb.{preset}"),
        Family.TRANSFERBENCH,
        ("TransferBench", preset),
        300,
        _tool(Tool.TRANSFERBENCH, preset),
        ProbeSet.STANDARD,
        judge_partial=True,
    )


STACK_STAMP = ProbeId.HOST_STAMP
MODULE_STAMP = ProbeId.HOST_MODULE_STAMP
# Read together, their answers tell whether the slow-changing probes' last outcomes still hold.
STAMP_PROBES = (STACK_STAMP, MODULE_STAMP)


QUICK, STANDARD, FULL = ProbeSet.QUICK, ProbeSet.STANDARD, ProbeSet.FULL
# Where ``amd-smi ras --cper`` writes its record files for the moment of one probe.
CPER_FOLDER = "/run/instinct-console-cper"

PROBES: tuple[ProbeSpec, ...] = (
    ProbeSpec(
        ProbeId.AMDSMI_VERSION,
        Family.STACK,
        ("amd-smi", "version"),
        30,
        _whole_lines(_steady_tool(Tool.AMD_SMI, "version"), "amd-smi version"),
        QUICK,
        True,
    ),
    ProbeSpec(
        ProbeId.AMDSMI_LIST,
        Family.INVENTORY,
        ("amd-smi", "list", "--json"),
        30,
        _steady_tool(Tool.AMD_SMI, "list"),
        QUICK,
    ),
    ProbeSpec(
        ProbeId.AMDSMI_STATIC,
        Family.INVENTORY,
        ("amd-smi", "static", "--json"),
        30,
        _steady_tool(Tool.AMD_SMI, "static"),
        QUICK,
    ),
    ProbeSpec(
        ProbeId.AMDSMI_METRIC,
        Family.TELEMETRY,
        # Only the sections the checks read: the per-engine usage and clock arrays are three quarters of
        # a full ``metric`` (180 KiB on 8 MI300X) and of its parse time. ``-v`` (violations) came with
        # ROCm 6.3's amd-smi; an older one refuses it and the full metric runs instead.
        ("amd-smi", "metric", "-m", "-p", "-t", "-P", "-e", "-x", "-v", "--json"),
        30,
        _tool(Tool.AMD_SMI, "metric"),
        QUICK,
        fallback=("amd-smi", "metric", "--json"),
    ),
    ProbeSpec(
        ProbeId.AMDSMI_FIRMWARE,
        Family.FIRMWARE,
        ("amd-smi", "firmware", "--json"),
        30,
        _steady_tool(Tool.AMD_SMI, "firmware"),
        QUICK,
        True,
    ),
    ProbeSpec(
        ProbeId.AMDSMI_BAD_PAGES,
        Family.RAS,
        ("amd-smi", "bad-pages", "--json"),
        30,
        _steady_tool(Tool.AMD_SMI, "bad-pages"),
        QUICK,
    ),
    # Not reused: its per-link read/write counters move with any traffic, so it is never the same twice and
    # remembering it would only keep every node's old link tables in memory.
    ProbeSpec(ProbeId.AMDSMI_XGMI, Family.XGMI, ("amd-smi", "xgmi", "--json"), 30, _tool(Tool.AMD_SMI, "xgmi"), QUICK),
    ProbeSpec(
        ProbeId.AMDSMI_XGMI_STATUS,
        Family.XGMI,
        ("amd-smi", "xgmi", "-l", "--json"),
        30,
        _steady_tool(Tool.AMD_SMI, "xgmi"),
        QUICK,
    ),
    # CPER records of every GPU with their AFIDs. Reading them needs root (the library refuses anyone
    # else), and the AFIDs are printed only with ``--folder``, where amd-smi writes one file per record:
    # a directory under /run (root's, in RAM, gone at a reboot) that the cleanup removes before and after.
    # ``--severity`` takes separate words; ``all`` is fatal, non-fatal uncorrected and corrected.
    ProbeSpec(
        ProbeId.AMDSMI_CPER,
        Family.RAS,
        ("sudo", "-n", "amd-smi", "ras", "--cper", "--severity", "all", "--folder", CPER_FOLDER),
        30,
        # A table has no footer: a listing cut short ends mid-line, or it is indistinguishable from a whole one.
        _whole_lines(_tool(Tool.AMD_SMI, "ras"), "amd-smi ras --cper"),
        QUICK,
        description="CPER error records with their AFIDs (needs passwordless sudo for amd-smi)",
        cleanup=("sudo", "-n", "rm", "-rf", "--", CPER_FOLDER),
    ),
    # Seconds since boot: CPER records stamped before the node's last boot are not this boot's.
    ProbeSpec(ProbeId.HOST_UPTIME, Family.RAS, ("cat", "/proc/uptime"), 10, _uptime, QUICK),
    ProbeSpec(ProbeId.HOST_OS, Family.STACK, ("cat", "/etc/os-release"), 10, _os_release, QUICK, True),
    ProbeSpec(ProbeId.HOST_KERNEL, Family.STACK, ("uname", "-r"), 10, _line("kernel release"), QUICK, True),
    ProbeSpec(
        ProbeId.HOST_ROCM,
        Family.STACK,
        ("cat", "/opt/rocm/.info/version"),
        10,
        _line("ROCm release", whole_line=False),
        QUICK,
        True,
    ),
    # Not reused on reruns: both read the driver installed on disk, which a package install changes with
    # no reboot or reload, and no read cheaper than asking them tells that apart.
    ProbeSpec(ProbeId.HOST_AMDGPU, Family.STACK, ("modinfo", "amdgpu"), 10, _modinfo, QUICK),
    ProbeSpec(ProbeId.HOST_DKMS, Family.STACK, ("dkms", "status"), 10, _dkms, QUICK),
    ProbeSpec(ProbeId.HOST_NIC, Family.NIC, ("rdma", "link"), 10, _rdma, QUICK),
    # The ports' link rate: a NIC that trained at 200G on a 400G fabric is up, and slow.
    ProbeSpec(ProbeId.HOST_NIC_RATE, Family.NIC, ("ibv_devinfo", "-v"), 10, _ibv_devinfo, QUICK),
    # What the slow-changing probes above depend on, in two small reads: a warm rerun runs these instead
    # of them and runs them again only when an answer differs (console.sweep.steady). A new kernel or
    # flashed firmware takes effect at a reboot (a new boot_id); the loaded amdgpu version, the ROCm
    # release and the OS release are read as well. A missing file changes nothing: ``cat`` prints what
    # it can and the whole answer, complaint included, is what gets compared.
    ProbeSpec(
        STACK_STAMP,
        Family.STACK,
        (
            "cat",
            "/proc/sys/kernel/random/boot_id",
            "/sys/module/amdgpu/version",
            "/opt/rocm/.info/version",
            "/etc/os-release",
        ),
        10,
        _verbatim,
        QUICK,
        description="boot id, loaded amdgpu, ROCm and OS release: whether the slow-changing probes can be reused",
        ok_exit=frozenset({0, 1}),
    ),
    # The driver reloaded in place (new firmware files, the same boot): sysfs makes the module's directory
    # anew at every load, and its inode number is never handed out twice in a boot.
    ProbeSpec(
        MODULE_STAMP,
        Family.STACK,
        ("stat", "-L", "-c", "%n %i", "/sys/module/amdgpu"),
        10,
        _verbatim,
        QUICK,
        description="the amdgpu module's sysfs inode, new at every driver load",
        ok_exit=frozenset({0, 1}),
    ),
    _transferbench("a2a"),
    _transferbench("p2p"),
    # The preset judges HBM, host copies and all-to-all against its own criteria on MI300-series nodes
    # (8 x gfx942) and declines other hardware: its check SKIPs there, quoting the tool.
    _transferbench("healthcheck"),
    ProbeSpec(
        ProbeId.RCCL_ALL_REDUCE,
        Family.RCCL,
        ("all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "8", "-c", "1"),
        900,
        _tool(Tool.RCCL_TESTS, "all_reduce_perf"),
        STANDARD,
        judge_partial=True,
    ),
    ProbeSpec(
        ProbeId.RVS_LEVEL3, Family.RVS, ("rvs", "-r", "3"), 3600, _tool(Tool.RVS, "summary"), FULL, judge_partial=True
    ),
    # The node's own PyTorch: its build, the GPUs it sees, a BF16 and an FP8 GEMM per GPU and a one-node
    # all-reduce. One JSON document at the end, so not judged partial: the script bounds its own
    # all-reduce (a hung rank is reported, not waited for), and a probe cut short by this timeout is UNKNOWN.
    ProbeSpec(
        ProbeId.FRAMEWORK_TORCH,
        Family.FRAMEWORK,
        torch_probe_argv(),
        600,
        _tool(Tool.TORCH, "torch"),
        ProbeSet.FRAMEWORK,
        description="PyTorch on the node's python3: HIP build, devices, BF16/FP8 GEMM TFLOPs, all-reduce",
        shown=torch_probe_shown(torch_probe_argv()),
        alone=True,
    ),
)

PROBES_BY_ID: dict[str, ProbeSpec] = {p.id: p for p in PROBES}


def in_pool(spec: ProbeSpec, pool: Pool | None) -> ProbeSpec:
    """``spec`` as it runs on a node of ``pool``: the framework probe in the container the pool names for
    its framework (``[pools.framework] container``), every other probe (and a pool without one) as it is."""
    container = pool.framework.container if pool is not None else None
    if spec.id != ProbeId.FRAMEWORK_TORCH or container is None:
        return spec
    argv = torch_probe_argv(container=container)
    return replace(
        spec,
        argv=argv,
        shown=torch_probe_shown(argv),
        description=f"PyTorch in {container.runtime} image {container.image}: HIP build, devices, GEMMs, all-reduce",
    )


def probes_for(level: ProbeSet | str, families: set[str] | None = None) -> list[ProbeSpec]:
    """Probes of ``level`` (and the lighter sets), optionally only those of ``families``."""
    level = ProbeSet(level)
    if level is ProbeSet.MULTINODE:
        level = ProbeSet.STANDARD
    if level is ProbeSet.WORKLOAD:
        level = ProbeSet.QUICK  # the workloads themselves run after the node probes (console.sweep.workloads)
    if level is ProbeSet.FRAMEWORK:
        # The quick probes say what the node is (its GPUs, their model, its stack) for the framework checks.
        wanted = {ProbeSet.QUICK, ProbeSet.FRAMEWORK}
        return [p for p in PROBES if p.level in wanted and (families is None or p.family in families)]
    depth = _SET_ORDER.index(level)
    wanted = set(_SET_ORDER[: depth + 1])
    return [p for p in PROBES if p.level in wanted and (families is None or p.family in families)]
