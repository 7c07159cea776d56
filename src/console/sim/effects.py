"""How each fault kind changes a node's state, with the default strength of every effect.

Every effect leaves evidence a parser can see: a counter, a state word, a version string or a
reduced value. Behaviour faults (``BEHAVIOUR_KINDS``: hang, kill, garbage, empty, cut, huge, ...)
name the program they hit with ``params["program"]`` (default ``amd-smi``, which every sweep runs) and,
optionally, the arguments that select one of its subcommands with ``params["args"]``; the program
runner (``console.sim.commands``) acts them out.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from console.sim.faults import BEHAVIOUR_KINDS, Fault, FaultKind
from console.sim.models import LinkState, SimBadPage, SimBehaviour, SimCperRecord, SimGpu, SimNic, SimNode
from console.sim.specs import STACK_PRESETS

Effect = Callable[[SimNode, Fault, random.Random], None]

DEFAULT_PROGRAM = "amd-smi"


def _float(fault: Fault, key: str, default: float) -> float:
    return float(fault.params.get(key, default))


def _int(fault: Fault, key: str, default: int) -> int:
    return int(fault.params.get(key, default))


def _str(fault: Fault, key: str, default: str) -> str:
    return str(fault.params.get(key, default))


def _gpu(node: SimNode, fault: Fault) -> SimGpu | None:
    # A GPU fault on a slot another fault removed has nothing left to change.
    return node.gpu_by_slot(fault.gpu) if fault.gpu is not None else None


def _links(node: SimNode, fault: Fault) -> list[tuple[SimGpu, int]]:
    """Both directions of the faulted pair, as (gpu, peer slot), for GPUs still present.

    On MI250X some GCD pairs have no direct link; the fault then lands on the link to the peer's
    package sibling, which is direct, so its evidence is never lost.
    """
    if fault.gpu is None or fault.peer is None:
        return []
    first, second = fault.gpu, fault.peer
    source = node.gpu_by_slot(first)
    if source is not None and second in source.xgmi and not source.xgmi[second].links:
        second ^= 1
    pairs = []
    for slot, peer in ((first, second), (second, first)):
        gpu = node.gpu_by_slot(slot)
        if gpu is not None and peer in gpu.xgmi:
            pairs.append((gpu, peer))
    return pairs


def _xgmi_down(node: SimNode, fault: Fault, rng: random.Random) -> None:
    for gpu, peer in _links(node, fault):
        link = gpu.xgmi[peer]
        link.state = LinkState.DOWN
        link.error_count += _int(fault, "errors", 12)
        # Traffic between the pair detours through a third GPU.
        link.bw_factor = _float(fault, "bw_factor", 0.3)
        gpu.ecc["XGMI_WAFL"].correctable += _int(fault, "errors", 12)


def _xgmi_degraded(node: SimNode, fault: Fault, rng: random.Random) -> None:
    for gpu, peer in _links(node, fault):
        link = gpu.xgmi[peer]
        link.state = LinkState.DEGRADED
        link.bit_rate_gbps = _int(fault, "bit_rate_gbps", link.bit_rate_gbps // 2)
        link.max_bandwidth_gbps = link.bit_rate_gbps * 16 * max(link.links, 1)
        link.error_count += _int(fault, "errors", 3)
        link.bw_factor = _float(fault, "bw_factor", 0.55)


def _xgmi_state_na(node: SimNode, fault: Fault, rng: random.Random) -> None:
    # The link works and carries traffic (its counters stay); only its state is printed N/A.
    for gpu, peer in _links(node, fault):
        gpu.xgmi[peer].state_reported = False


def _xgmi_status_row_missing(node: SimNode, fault: Fault, rng: random.Random) -> None:
    # ``all = true``: the table has its header and no row at all, while amd-smi exits 0.
    gpus = node.gpus if fault.params.get("all") else [gpu for gpu in [_gpu(node, fault)] if gpu is not None]
    for gpu in gpus:
        gpu.xgmi_status_row = False


def _value_unread(node: SimNode, fault: Fault, rng: random.Random) -> None:
    # Default: the deferred ECC count (how MI300 reports uncorrectable errors) printed N/A on this GPU alone.
    gpu = _gpu(node, fault)
    if gpu is not None:
        where = _str(fault, "field", "metric:ecc.total_deferred_count")
        gpu.unread[where] = _str(fault, "text", "N/A")


def _bad_pages_unread(node: SimNode, fault: Fault, rng: random.Random) -> None:
    # The GPU's retired and pending listings printed as ``text`` (N/A, "Error reading bad pages") instead.
    gpu = _gpu(node, fault)
    if gpu is not None:
        for listing in ("retired", "pending"):
            gpu.unread[f"bad-pages:{listing}"] = _str(fault, "text", "N/A")


def _left_out(node: SimNode, fault: Fault, rng: random.Random) -> None:
    # ``args``: the subcommand that leaves the GPU out (bad-pages, static, metric, firmware).
    gpu = _gpu(node, fault)
    if gpu is not None:
        gpu.left_out_of.append(_str(fault, "args", "bad-pages"))


def _xgmi_gpu_unlisted(node: SimNode, fault: Fault, rng: random.Random) -> None:
    gpu = _gpu(node, fault)
    if gpu is not None:
        gpu.xgmi_listed = False


def _xgmi_flap(node: SimNode, fault: Fault, rng: random.Random) -> None:
    # ``status``: what ``xgmi -l`` prints for the pair, D (down) or N/A; ``xgmi``'s own table still says U.
    word = _str(fault, "status", "D")
    for gpu, peer in _links(node, fault):
        link = gpu.xgmi[peer]
        link.link_status_word = "/".join([word] * link.links) if word != "N/A" else word


def _xgmi_row_repeated(node: SimNode, fault: Fault, rng: random.Random) -> None:
    gpu = _gpu(node, fault)
    if gpu is not None and fault.peer is not None:
        gpu.xgmi_row_repeated = fault.peer


def _pair_slow(node: SimNode, fault: Fault, rng: random.Random) -> None:
    for gpu, peer in _links(node, fault):
        gpu.xgmi[peer].bw_factor = _float(fault, "bw_factor", 0.6)


def _pair_na(node: SimNode, fault: Fault, rng: random.Random) -> None:
    for gpu, peer in _links(node, fault):
        gpu.xgmi[peer].tb_measured = False


def _gpu_unseen(node: SimNode, fault: Fault, rng: random.Random) -> None:
    gpu = _gpu(node, fault)
    if gpu is not None:
        gpu.hip_visible = False


def _p2p_row_lost(node: SimNode, fault: Fault, rng: random.Random) -> None:
    gpu = _gpu(node, fault)
    if gpu is not None:
        node.tb_p2p_row_lost = gpu.index


def _ecc_uncorrectable(node: SimNode, fault: Fault, rng: random.Random) -> None:
    gpu = _gpu(node, fault)
    if gpu is None:
        return
    count = _int(fault, "count", 2)
    block = gpu.ecc[_str(fault, "block", "UMC")]
    block.uncorrectable += count
    block.deferred += count
    block.correctable += rng.randrange(3, 20)
    # Uncorrectable HBM errors queue their pages for retirement.
    gpu.bad_pages.extend(
        SimBadPage(address=rng.randrange(0x1000, 0x2FFFFFF) << 12, status="pending") for _ in range(count)
    )


def _ecc_storm(node: SimNode, fault: Fault, rng: random.Random) -> None:
    gpu = _gpu(node, fault)
    if gpu is not None:
        gpu.ecc[_str(fault, "block", "UMC")].correctable += _int(fault, "count", 2400 + rng.randrange(0, 300))


def _bad_pages(node: SimNode, fault: Fault, rng: random.Random) -> None:
    gpu = _gpu(node, fault)
    if gpu is None:
        return
    count = gpu.bad_page_threshold + _int(fault, "extra", 4)
    addresses = sorted(rng.sample(range(0x1000, 0x2FFFFFF), count))
    gpu.bad_pages.extend(SimBadPage(address=address << 12) for address in addresses)
    gpu.ecc["UMC"].correctable += count * 3
    gpu.ecc["UMC"].deferred += count


def _gpu_missing(node: SimNode, fault: Fault, rng: random.Random) -> None:
    gpu = _gpu(node, fault)
    if gpu is not None:
        node.gpus.remove(gpu)
        node.missing_slots.append(gpu.slot)


def _hbm_low(node: SimNode, fault: Fault, rng: random.Random) -> None:
    gpu = _gpu(node, fault)
    if gpu is not None:
        gpu.hbm_factor = _float(fault, "factor", 0.7)


def _thermal(node: SimNode, fault: Fault, rng: random.Random) -> None:
    gpu = _gpu(node, fault)
    if gpu is None:
        return
    spec = node.spec
    gpu.hotspot_c = _float(fault, "hotspot_c", spec.slowdown_hotspot_c - 2 + rng.uniform(0, 1.5))
    gpu.mem_c = round(gpu.mem_c + 30, 1)
    if gpu.edge_c is not None:
        gpu.edge_c = round(gpu.hotspot_c - 9, 1)
    gpu.throttle_status = "THROTTLED"
    if gpu.violations_pct:
        gpu.violations_pct["TVIOL"] = _float(fault, "percent", 35.0)
        gpu.violations_pct["HBM_TVIOL"] = round(gpu.violations_pct["TVIOL"] / 3, 1)
    gpu.gst_factor = min(gpu.gst_factor, 0.88)


def _power(node: SimNode, fault: Fault, rng: random.Random) -> None:
    gpu = _gpu(node, fault)
    if gpu is None:
        return
    gpu.power_cap_w = _float(fault, "cap_w", round(node.spec.power_cap_w * 0.7))
    gpu.throttle_status = "THROTTLED"
    if gpu.violations_pct:
        gpu.violations_pct["PVIOL"] = _float(fault, "percent", 42.0)
    gpu.gst_factor = min(gpu.gst_factor, 0.9)


def _pcie_gen(node: SimNode, fault: Fault, rng: random.Random) -> None:
    gpu = _gpu(node, fault)
    if gpu is not None:
        gpu.pcie_gen = _int(fault, "gen", node.spec.pcie_gen - 2)
        gpu.pcie_replay_count += rng.randrange(30, 90)


def _pcie_width(node: SimNode, fault: Fault, rng: random.Random) -> None:
    gpu = _gpu(node, fault)
    if gpu is not None:
        gpu.pcie_width = _int(fault, "width", 8)
        gpu.pcie_l0_to_recovery_count += rng.randrange(120, 400)


_ROCM_FIELDS = ("rocm", "rocm_build", "amdsmi_tool", "amdsmi_lib", "rocm_smi", "rocm_smi_lib", "hip", "rccl", "rvs")


def _rocm_drift(node: SimNode, fault: Fault, rng: random.Random) -> None:
    stack = node.stack
    major, minor, patch = (int(part) for part in stack.rocm.split(".")[:3])
    target = _str(fault, "rocm", f"{major}.{minor}.{patch - 1}" if patch else f"{major}.{minor - 1}.2")
    preset = STACK_PRESETS.get(target)
    if preset is not None:
        for name in _ROCM_FIELDS:
            setattr(stack, name, getattr(preset, name))
        return
    build = stack.rocm_build.rsplit("-", 1)[-1]
    stack.rocm = target
    stack.rocm_build = f"{target}-{max(int(build) - 17, 1)}"


def _driver_drift(node: SimNode, fault: Fault, rng: random.Random) -> None:
    stack = node.stack
    default = "6.10.5" if stack.amdgpu_driver != "6.10.5" else "6.8.5"
    stack.amdgpu_driver = _str(fault, "amdgpu", default)
    stack.amdgpu_package = f"1:{stack.amdgpu_driver}.60300-2084815.{stack.os_version}"


def _older_version(version: str) -> str:
    """A plausible older firmware version: the last decimal component >= 2 lowered by 2, width kept."""
    parts = version.split(".")
    for position in reversed(range(len(parts))):
        part = parts[position]
        if part.isdigit() and int(part) >= 2:
            parts[position] = f"{int(part) - 2:0{len(part)}d}"
            return ".".join(parts)
    return version + "-old"


def _firmware_drift(node: SimNode, fault: Fault, rng: random.Random) -> None:
    gpu = _gpu(node, fault)
    if gpu is not None:
        block = _str(fault, "block", "PM")
        gpu.firmware[block] = _str(fault, "version", _older_version(gpu.firmware.get(block, "0")))


def _gst_low(node: SimNode, fault: Fault, rng: random.Random) -> None:
    gpu = _gpu(node, fault)
    if gpu is not None:
        gpu.gst_factor = _float(fault, "factor", 0.8)


def _rvs_peqt_word(node: SimNode, fault: Fault, rng: random.Random) -> None:
    node.rvs_peqt_word = _str(fault, "word", "FAILED")


def _rvs_gpu_unseen(node: SimNode, fault: Fault, rng: random.Random) -> None:
    gpu = _gpu(node, fault)
    if gpu is not None:
        node.rvs_unseen_slots.append(gpu.slot)


def _rvs_stops_early(node: SimNode, fault: Fault, rng: random.Random) -> None:
    node.rvs_stop_after = max(1, _int(fault, "actions", 1))


def _torch_entry_lost(node: SimNode, fault: Fault, rng: random.Random) -> None:
    node.torch.entry_lost = "repeat" if fault.params.get("repeat") else "drop"


def _torch_few_ranks(node: SimNode, fault: Fault, rng: random.Random) -> None:
    # A WORLD_SIZE left in the environment: the all-reduce is correct, over half the devices.
    node.torch.all_reduce_world = max(1, _int(fault, "world", len(node.gpus) // 2))


def _torch_fp8_skipped(node: SimNode, fault: Fault, rng: random.Random) -> None:
    gpu = _gpu(node, fault)
    if gpu is not None:
        node.torch.fp8_skipped.append(gpu.slot)


def _impossible_reading(node: SimNode, fault: Fault, rng: random.Random) -> None:
    gpu = _gpu(node, fault)
    if gpu is not None:
        gpu.impossible = _str(fault, "field", "ecc")


def _rccl_wrong(node: SimNode, fault: Fault, rng: random.Random) -> None:
    node.rccl_wrong = True


def _rccl_unvalidated(node: SimNode, fault: Fault, rng: random.Random) -> None:
    node.rccl_unvalidated = True


def _rccl_fewer_ranks(node: SimNode, fault: Fault, rng: random.Random) -> None:
    # A wrapper or a leftover HIP_VISIBLE_DEVICES: the test runs, and passes, on half the node's GPUs.
    node.rccl_gpus = max(1, _int(fault, "gpus", len(node.gpus) // 2))


def _rccl_row_repeated(node: SimNode, fault: Fault, rng: random.Random) -> None:
    # A site wrapper that retries the largest size and appends its row to the same table: the retry is slow.
    node.rccl_repeat_factor = _float(fault, "factor", 0.04)


def _rccl_header_lost(node: SimNode, fault: Fault, rng: random.Random) -> None:
    # A log shipper that drops or rewrites a line: the run is clean, its output is not the tool's.
    node.rccl_header_lost = min(3, max(1, _int(fault, "line", 3)))


def _rccl_low(node: SimNode, fault: Fault, rng: random.Random) -> None:
    node.rccl_busbw_factor = _float(fault, "factor", 0.72)


def _rccl_latency(node: SimNode, fault: Fault, rng: random.Random) -> None:
    node.rccl_latency_us = _float(fault, "extra_us", 150.0)


def _rccl_hang(node: SimNode, fault: Fault, rng: random.Random) -> None:
    node.rccl_hang = True


def _nic_down(node: SimNode, fault: Fault, rng: random.Random) -> None:
    if node.nics:
        node.nics[_int(fault, "nic", rng.randrange(len(node.nics))) % len(node.nics)].up = False


def _nic_missing(node: SimNode, fault: Fault, rng: random.Random) -> None:
    if node.nics:
        node.nics.pop(_int(fault, "nic", rng.randrange(len(node.nics))) % len(node.nics))


def _nic(node: SimNode, fault: Fault, rng: random.Random) -> SimNic | None:
    return node.nics[_int(fault, "nic", rng.randrange(len(node.nics))) % len(node.nics)] if node.nics else None


def _nic_listed_twice(node: SimNode, fault: Fault, rng: random.Random) -> None:
    if (nic := _nic(node, fault, rng)) is not None:
        nic.rdma_lines = 2


def _nic_phys_disabled(node: SimNode, fault: Fault, rng: random.Random) -> None:
    if (nic := _nic(node, fault, rng)) is not None:
        nic.rdma_physical_state = _str(fault, "physical_state", "DISABLED")


def _nic_flap(node: SimNode, fault: Fault, rng: random.Random) -> None:
    if (nic := _nic(node, fault, rng)) is not None:
        nic.ibv_down = True


def _nic_slow(node: SimNode, fault: Fault, rng: random.Random) -> None:
    if node.nics:
        nic = node.nics[_int(fault, "nic", rng.randrange(len(node.nics))) % len(node.nics)]
        nic.rate_gbps = _int(fault, "rate_gbps", nic.rate_gbps // 2)


def _torch_missing(node: SimNode, fault: Fault, rng: random.Random) -> None:
    node.torch.installed = False


def _torch_cpu_only(node: SimNode, fault: Fault, rng: random.Random) -> None:
    node.torch.hip_build = False


def _torch_device_count(node: SimNode, fault: Fault, rng: random.Random) -> None:
    # A GPU the HIP runtime cannot open, or a leftover HIP_VISIBLE_DEVICES: one device fewer by default.
    node.torch.visible_devices = _int(fault, "visible", max(len(node.gpus) - 1, 0))


def _torch_gemm_slow(node: SimNode, fault: Fault, rng: random.Random) -> None:
    if fault.gpu is not None:
        node.torch.gemm_factor[fault.gpu] = _float(fault, "factor", 0.6)
        # A new image's torch build that is slower: the same GPUs keep their pace in the accepted image.
        node.torch.gemm_image = _str(fault, "image", "") or None


def _torch_gemm_nan(node: SimNode, fault: Fault, rng: random.Random) -> None:
    if fault.gpu is not None:
        node.torch.nonfinite[fault.gpu] = _int(fault, "count", 4096)


def _torch_all_reduce(outcome: str) -> Effect:
    def effect(node: SimNode, fault: Fault, rng: random.Random) -> None:
        node.torch.all_reduce = outcome

    return effect


def _container_image_missing(node: SimNode, fault: Fault, rng: random.Random) -> None:
    node.container.image_missing = True


def _container_no_gpu(node: SimNode, fault: Fault, rng: random.Random) -> None:
    # A runtime that does not pass /dev/kfd and /dev/dri through (rootless without the groups, an
    # SELinux label, a CDI spec gone): the container's torch sees no GPU.
    node.container.no_gpu = True


def _behaviour(node: SimNode, fault: Fault, rng: random.Random) -> None:
    args = _str(fault, "args", "")
    node.behaviours.append(
        SimBehaviour(
            kind=fault.kind,
            program=_str(fault, "program", DEFAULT_PROGRAM),
            args=tuple(args.split()),
            params=dict(fault.params),
        )
    )


# The AFID a simulated record carries unless the fault names one: a typical id of each severity class.
_CPER_AFIDS = {"fatal": 25, "boot": 4, "uncorrected": 22, "corrected": 24}
# amdsmi gives AFID 33 to a record any of whose inputs (its severity among them) is UNKNOWN.
_UNCLASSIFIED_AFID = 33
_SEVERITY_WORD = re.compile(r"[a-z][a-z_-]*")


def _cper_record(node: SimNode, fault: Fault, rng: random.Random) -> None:
    """``count`` records of ``severity`` on the GPU, ``age_h`` old (``before_boot``: older than the node's
    uptime; ``time = "unreadable"`` or ``"future"``: a clock the console cannot trust)."""
    gpu = _gpu(node, fault)
    if gpu is None:
        return
    severity = _str(fault, "severity", "fatal").lower()
    # Any other word is a severity amd-smi prints that the console does not know: ``unknown`` (amd-smi's
    # UNKNOWN, a value outside its enum) or a name a later release might add (``informational``).
    if severity not in _CPER_AFIDS and not _SEVERITY_WORD.fullmatch(severity):
        raise ValueError(f"cper_record severity must be one of {', '.join(_CPER_AFIDS)} or a word, got {severity!r}")
    afid = _int(fault, "afid", _CPER_AFIDS.get(severity, _UNCLASSIFIED_AFID))
    age_s = _float(fault, "age_h", 1.0) * 3600
    if fault.params.get("before_boot"):
        age_s = node.uptime_s + 3600
    time_text = {"unreadable": "--/--/-- --:--:--", "future": "2070/01/01 00:26:21"}.get(_str(fault, "time", ""))
    for _ in range(_int(fault, "count", 1)):
        gpu.cper.append(SimCperRecord(severity=severity, afids=[afid], age_s=age_s, time_text=time_text))


def _cper_undecodable(node: SimNode, fault: Fault, rng: random.Random) -> None:
    """A fatal record amd-smi cannot decode, ``age_h`` old: its AFIDs print as 2^64-1 before 7.2.1."""
    gpu = _gpu(node, fault)
    if gpu is not None:
        age_s = _float(fault, "age_h", 1.0) * 3600
        gpu.cper.append(SimCperRecord(severity="fatal", afids=[], age_s=age_s, undecodable=True))


def _cper_flood(node: SimNode, fault: Fault, rng: random.Random) -> None:
    """``count`` (default 20) corrected records, then one fatal record after them: an amd-smi before 7.0.2
    lists the first 20 of the device only, so the fatal one is not shown."""
    gpu = _gpu(node, fault)
    if gpu is None:
        return
    count = _int(fault, "count", 20)
    newest_h = _float(fault, "age_h", 1.0)
    for position in range(count):  # older than the fatal record, one minute apart, oldest first
        age_s = newest_h * 3600 + (count - position) * 60
        gpu.cper.append(SimCperRecord(severity="corrected", afids=[_CPER_AFIDS["corrected"]], age_s=age_s))
    gpu.cper.append(SimCperRecord(severity="fatal", afids=[_int(fault, "afid", 30)], age_s=newest_h * 3600))


def _uplink_slow(node: SimNode, fault: Fault, rng: random.Random) -> None:
    # Every node behind the uplink carries the fault with the same ``uplink`` name (the rack's, say).
    node.uplink = str(fault.params.get("uplink", "uplink"))
    node.uplink_factor = _float(fault, "factor", 0.55)


def _rccl_flaky(node: SimNode, fault: Fault, rng: random.Random) -> None:
    node.rccl_flaky_every = max(1, _int(fault, "every", 3))
    node.rccl_flaky_first = max(1, _int(fault, "first", node.rccl_flaky_every))


def _flag(attribute: str, value: bool) -> Effect:
    def effect(node: SimNode, fault: Fault, rng: random.Random) -> None:
        setattr(node, attribute, value)

    return effect


EFFECTS: dict[FaultKind, Effect] = {
    FaultKind.XGMI_LINK_DOWN: _xgmi_down,
    FaultKind.XGMI_LINK_DEGRADED: _xgmi_degraded,
    FaultKind.XGMI_LINK_STATE_NA: _xgmi_state_na,
    FaultKind.XGMI_STATUS_ROW_MISSING: _xgmi_status_row_missing,
    FaultKind.AMDSMI_VALUE_UNREAD: _value_unread,
    FaultKind.BAD_PAGES_UNREAD: _bad_pages_unread,
    FaultKind.AMDSMI_GPU_LEFT_OUT: _left_out,
    FaultKind.XGMI_GPU_UNLISTED: _xgmi_gpu_unlisted,
    FaultKind.XGMI_LINK_FLAP: _xgmi_flap,
    FaultKind.XGMI_STATUS_ROW_REPEATED: _xgmi_row_repeated,
    FaultKind.ECC_UNCORRECTABLE: _ecc_uncorrectable,
    FaultKind.ECC_CORRECTABLE_STORM: _ecc_storm,
    FaultKind.BAD_PAGES_OVER_THRESHOLD: _bad_pages,
    FaultKind.GPU_MISSING: _gpu_missing,
    FaultKind.HBM_BANDWIDTH_LOW: _hbm_low,
    FaultKind.THERMAL_THROTTLE: _thermal,
    FaultKind.POWER_THROTTLE: _power,
    FaultKind.PCIE_DOWNTRAINED_GEN: _pcie_gen,
    FaultKind.PCIE_DOWNTRAINED_WIDTH: _pcie_width,
    FaultKind.ROCM_DRIFT: _rocm_drift,
    FaultKind.DRIVER_DRIFT: _driver_drift,
    FaultKind.FIRMWARE_DRIFT: _firmware_drift,
    FaultKind.RVS_GST_LOW: _gst_low,
    FaultKind.RCCL_WRONG: _rccl_wrong,
    FaultKind.RVS_PEQT_WORD: _rvs_peqt_word,
    FaultKind.RVS_GPU_UNSEEN: _rvs_gpu_unseen,
    FaultKind.RVS_STOPS_EARLY: _rvs_stops_early,
    FaultKind.TORCH_DEVICE_ENTRY_LOST: _torch_entry_lost,
    FaultKind.TORCH_ALLREDUCE_FEW_RANKS: _torch_few_ranks,
    FaultKind.TORCH_FP8_SKIPPED: _torch_fp8_skipped,
    FaultKind.RCCL_LOW_BUSBW: _rccl_low,
    FaultKind.RCCL_UNVALIDATED: _rccl_unvalidated,
    FaultKind.RCCL_FEWER_RANKS: _rccl_fewer_ranks,
    FaultKind.RCCL_ROW_REPEATED: _rccl_row_repeated,
    FaultKind.RCCL_HEADER_LINE_LOST: _rccl_header_lost,
    FaultKind.AMDSMI_IMPOSSIBLE_READING: _impossible_reading,
    FaultKind.RCCL_HANG: _rccl_hang,
    FaultKind.RCCL_LATENCY_HIGH: _rccl_latency,
    FaultKind.TRANSFERBENCH_PAIR_SLOW: _pair_slow,
    FaultKind.TRANSFERBENCH_PAIR_NA: _pair_na,
    FaultKind.TRANSFERBENCH_GPU_UNSEEN: _gpu_unseen,
    FaultKind.TRANSFERBENCH_P2P_ROW_LOST: _p2p_row_lost,
    FaultKind.TRANSFERBENCH_HEALTHCHECK_SHORT: _flag("tb_healthcheck_ends_early", True),
    FaultKind.NIC_PORT_DOWN: _nic_down,
    FaultKind.NIC_MISSING: _nic_missing,
    FaultKind.NIC_SLOW: _nic_slow,
    FaultKind.NIC_LISTED_TWICE: _nic_listed_twice,
    FaultKind.NIC_PHYS_DISABLED: _nic_phys_disabled,
    FaultKind.NIC_PORT_FLAP: _nic_flap,
    FaultKind.TORCH_MISSING: _torch_missing,
    FaultKind.TORCH_CPU_ONLY: _torch_cpu_only,
    FaultKind.TORCH_DEVICE_COUNT: _torch_device_count,
    FaultKind.TORCH_GEMM_SLOW: _torch_gemm_slow,
    FaultKind.TORCH_GEMM_NAN: _torch_gemm_nan,
    FaultKind.TORCH_ALLREDUCE_WRONG: _torch_all_reduce("wrong"),
    FaultKind.TORCH_ALLREDUCE_HANG: _torch_all_reduce("hang"),
    FaultKind.CONTAINER_IMAGE_MISSING: _container_image_missing,
    FaultKind.CONTAINER_NO_GPU: _container_no_gpu,
    FaultKind.UPLINK_SLOW: _uplink_slow,
    FaultKind.RCCL_FLAKY: _rccl_flaky,
    FaultKind.DRIVER_NOT_LOADED: _flag("driver_loaded", False),
    FaultKind.SSH_REFUSED: _flag("ssh_refused", True),
    FaultKind.AUTH_FAILURE: _flag("auth_failure", True),
    FaultKind.HOST_KEY_CHANGED: _flag("host_key_changed", True),
    FaultKind.CPER_RECORD: _cper_record,
    FaultKind.CPER_NOT_ENABLED: _flag("cper_enabled", False),
    FaultKind.CPER_UNDECODABLE: _cper_undecodable,
    FaultKind.CPER_FLOOD: _cper_flood,
    FaultKind.SUDO_DENIED: _flag("sudo_denied", True),
    **{kind: _behaviour for kind in BEHAVIOUR_KINDS},
}


def apply_fault(node: SimNode, fault: Fault, rng: random.Random) -> None:
    """Change ``node`` the way ``fault`` shows on hardware (``rng`` draws any incidental detail)."""
    EFFECTS[fault.kind](node, fault, rng)
