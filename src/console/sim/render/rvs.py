"""ROCm Validation Suite (``rvs``) on a simulated node: module logs, ``rvs -g`` and the RVS >= 1.3 summary box.

A run is a list of actions, each running one module on every GPU; each module writes the
``[RESULT] [<uptime>] ...`` lines the real module writes (GPU ids are KFD ``gpu_id`` values from the
node model) and decides PASS/FAIL the way RVS does: GST ``met:`` against 0.95 x target, IET peak power
against 0.99 x target, PBQT ``peers:``, PEQT capability checks, MEM per-test verdicts.

Which actions run follows the command line: ``-c <conf>`` picks the module from the conf file name
(``conf/MI300X/gst_single.conf`` -> GST; ``rvs.conf`` -> the default set), ``-r <level>`` a level set,
no option the default ``rvs.conf``. Faults leave their evidence: ``rvs_gst_low`` (``met: FALSE``),
``hbm_bandwidth_low`` (low MEM/BABEL bandwidth), ``gpu_missing`` (one GPU fewer everywhere),
``xgmi_link_down`` (``peers:false``), ``power_throttle`` (IET ``pass: FALSE``), ``driver_not_loaded``
(no GPU: ``RVS-ERROR``). And what the console must not take for a verdict: ``rvs_peqt_word`` (peqt prints
a word other than true/false), ``rvs_gpu_unseen`` (one GPU absent from every module while amd-smi lists
it), ``rvs_stops_early`` (the run ends after its first actions, exit status 0).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from console.sim.commands import SimContext, SimReply
from console.sim.models import LinkState, SimGpu, SimNode
from console.sim.specs import pcie_gen_speed

__all__ = ["MODULE_SEQUENCE", "handle", "rvs_timestamp"]

# Modules of the default rvs.conf, in the order RVS 1.3 runs them.
MODULE_SEQUENCE = ("gpup", "peqt", "pebb", "pbqt", "iet", "gst", "babel", "mem", "pesm")
KNOWN_MODULES = (*MODULE_SEQUENCE, "gm", "tst", "rcqt", "smqt")
LEVELS: dict[str, tuple[str, ...]] = {
    "1": ("gpup", "peqt"),
    "2": ("peqt", "babel", "pbqt", "pebb"),
    "3": ("peqt", "babel", "pbqt", "pebb", "gst"),
    "4": ("peqt", "babel", "pbqt", "pebb", "gst", "mem", "iet"),
    "5": ("peqt", "babel", "pbqt", "pebb", "gst", "mem", "iet", "tst"),
}
GST_TOLERANCE = 0.05
IET_TOLERANCE = 0.01


def rvs_timestamp(seconds: float) -> str:
    """RVS's uptime stamp: seconds right-aligned in 6, microseconds without leading zeros, left-aligned in 6."""
    whole = int(seconds)
    micros = round((seconds - whole) * 1e6) % 1_000_000
    return f"[{whole:6d}.{micros!s:<6}]"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if part.isdigit())


@dataclass
class _Run:
    """One rvs invocation: the node, the GPUs in scope, a clock and the collected output."""

    node: SimNode
    gpus: list[SimGpu]
    rng: random.Random
    clock: float
    lines: list[str] = field(default_factory=list)
    simulated_s: float = 0.0

    def result(self, text: str, at: float | None = None) -> None:
        """Append one ``[RESULT]`` line (``text`` may hold newlines, printed raw as RVS does)."""
        self.lines.append(f"[RESULT] {rvs_timestamp(self.clock if at is None else at)} {text}")

    def header(self, action: str, module: str) -> None:
        self.result(f"Action name :{action}")
        self.tick(0.0021)
        self.result(f"Module name :{module}")
        self.tick(0.17)

    def tick(self, seconds: float) -> None:
        self.clock += seconds
        self.simulated_s += seconds

    def timed(self, events: list[tuple[float, str]]) -> None:
        """Append events stamped at clock + offset, in time order (parallel per-GPU workers interleave)."""
        for offset, text in sorted(events, key=lambda event: event[0]):
            self.result(text, self.clock + offset)
        if events:
            self.tick(max(offset for offset, _ in events) + 0.001)

    def jitter(self, low: float = 0.985, high: float = 1.015) -> float:
        return self.rng.uniform(low, high)


def _gpu_tag(gpu: SimGpu) -> str:
    return f"[GPU:: {gpu.kfd_node} - {gpu.kfd_gpu_id} - {gpu.bdf}]"


# --- modules: each appends its lines and returns whether the action passed ------------------------


def _gst_targets(node: SimNode) -> list[tuple[str, float]]:
    return [(dtype, target) for dtype, target in node.spec.gst_targets_gflops.items() if target > 0]


def _gst_dims(node: SimNode) -> str:
    return {"gfx942": "4K4K8K", "gfx950": "8K8K16K"}.get(node.spec.gfx_target, "8K8K8K")


def _gst(run: _Run, action: str, dtype: str, target: float) -> bool:
    run.header(action, "gst")
    events: list[tuple[float, str]] = []
    passed = True
    for gpu in run.gpus:
        start = run.rng.uniform(0.2, 1.2)
        achieved = target * run.rng.uniform(1.06, 1.16) * gpu.gst_factor
        prefix = f"[{action}] [GPU:: {gpu.kfd_gpu_id}]"
        events.append((start, f"{prefix} Start of GPU ramp up"))
        events.append((start + 5.2, f"{prefix} GFLOPS {int(achieved * run.jitter(0.97, 1.0))}"))
        events.append((start + 6.2, f"{prefix} End of GPU ramp up"))
        samples = [int(achieved * run.jitter(0.99, 1.0)) for _ in range(5)]
        for k, value in enumerate(samples):
            events.append((start + 9.3 + 3.1 * k, f"{prefix} GFLOPS {value}"))
        best = max(samples)
        met = best >= target * (1 - GST_TOLERANCE)
        passed = passed and met
        verdict = "TRUE" if met else "FALSE"
        events.append((start + 25.0, f"{prefix} GFLOPS {best} Target GFLOPS: {int(target)} met: {verdict}"))
    run.timed(events)
    return passed


def _iet(run: _Run, action: str) -> bool:
    target = run.node.spec.iet_target_w
    run.header(action, "iet")
    events: list[tuple[float, str]] = []
    passed = True
    for gpu in run.gpus:
        prefix = f"[{action}] [GPU:: {gpu.kfd_gpu_id}]"
        peak = min(gpu.power_cap_w, target) * run.jitter(0.995, 1.004)
        events.append((run.rng.uniform(0.1, 0.3), f"{prefix} Power(W) {round(gpu.power_w * run.jitter()):.6f}"))
        events.append((run.rng.uniform(20, 30), f"{prefix} Power(W) {round(peak * 0.93):.6f}"))
        events.append((run.rng.uniform(40, 55), f"{prefix} Power(W) {round(peak):.6f}"))
        ok = peak >= target * (1 - IET_TOLERANCE)
        passed = passed and ok
        events.append((run.rng.uniform(60.0, 60.1), f"{prefix} pass: {'TRUE' if ok else 'FALSE'}"))
    run.timed(events)
    return passed


def _pebb(run: _Run, action: str) -> bool:
    run.header(action, "pebb")
    spec = run.node.spec
    events: list[tuple[float, str]] = []
    for gpu in run.gpus:
        events.append(
            (0.01 * gpu.index, f"[{action}] pcie-bandwidth [CPU:: {gpu.numa_node}] {_gpu_tag(gpu)} distance:20 PCIe:20")
        )
    total = 2 * len(run.gpus)
    for k, (gpu, h2d) in enumerate(((gpu, h2d) for gpu in run.gpus for h2d in (True, False)), start=1):
        link = (pcie_gen_speed(gpu.pcie_gen) / spec.pcie_speed_gts) * (gpu.pcie_width / spec.pcie_width)
        peak = (54.8 if h2d else 56.1) * (spec.pcie_speed_gts / 32.0)
        bandwidth = peak * link * run.jitter()
        duration = 64 * 1.07374 / bandwidth
        direction = "h2d::true d2h::false" if h2d else "h2d::false d2h::true"
        events.append(
            (
                2.0 + 1.3 * k,
                f"[{action}] pcie-bandwidth [{k:2d}/{total}] [CPU:: {gpu.numa_node}] {_gpu_tag(gpu)} {direction} "
                f"{bandwidth:.3f} GBps duration: {duration:.6f} secs",
            )
        )
    run.timed(events)
    return True


def _pair_bandwidth(node: SimNode, gpu: SimGpu, peer: SimGpu) -> tuple[bool, float, int]:
    """(peers, unidirectional GB/s, distance) for the pair as PBQT measures it."""
    link = gpu.xgmi.get(peer.slot)
    if link is None:
        return True, 0.0, 72
    peers = link.state is not LinkState.DOWN
    base = node.spec.transferbench_pair_gbps * 1.052 * max(link.links, 1) ** 0.5
    return peers, base * link.bw_factor, 15 * link.hops


def _pbqt(run: _Run, action: str) -> bool:
    run.header(action, "pbqt")
    pairs = [(a, b) for a in run.gpus for b in run.gpus if a is not b]
    events: list[tuple[float, str]] = []
    passed = True
    measured = []
    for k, (gpu, peer) in enumerate(pairs):
        peers, bandwidth, distance = _pair_bandwidth(run.node, gpu, peer)
        state = f"peers:true distance:{distance} xGMI:{distance}" if peers else "peers:false distance:-1 xGMI:-1"
        events.append((0.00008 * k, f"[{action}] p2p {_gpu_tag(gpu)} {_gpu_tag(peer)} {state}"))
        passed = passed and peers
        if peers:
            measured.append((gpu, peer, bandwidth))
    for k, (gpu, peer, bandwidth) in enumerate(measured, start=1):
        value = bandwidth * run.jitter(0.992, 1.004)
        duration = 71.61 / value if value else 0.0
        events.append(
            (
                119.8 + 0.0011 * k,
                f"[{action}] p2p-bandwidth[{k:2d}/{len(measured)}] {_gpu_tag(gpu)} {_gpu_tag(peer)} "
                f"bidirectional: false {value:.3f} GBps duration: {duration:.6f} secs",
            )
        )
    run.timed(events)
    return passed


def _peqt(run: _Run, action: str) -> bool:
    """Capability, link speed and link width checks; one action each unless rvs.conf names a single one."""
    spec = run.node.spec
    checks: tuple[tuple[str, bool], ...] = (
        ("pcie_act_1", True),
        ("pcie_act_2", all(gpu.pcie_gen >= spec.pcie_gen for gpu in run.gpus)),
        ("pcie_act_3", all(gpu.pcie_width >= spec.pcie_width for gpu in run.gpus)),
    )
    if action != "peqt":
        checks = ((action, all(ok for _, ok in checks)),)
    for name, ok in checks:
        run.header(name, "peqt")
        run.result(f"[{name}] peqt {run.node.rvs_peqt_word or ('true' if ok else 'false')}")
        run.tick(0.0003)
    return all(ok for _, ok in checks)


def _gm(run: _Run, action: str) -> bool:
    run.header(action, "gm")
    slowdown = run.node.spec.slowdown_hotspot_c
    passed = True
    for gpu in run.gpus:
        hot = gpu.hotspot_c >= slowdown - 5
        counts = {"temp": run.rng.randrange(3, 9) if hot else 0, "clock": 0, "mem_clock": 0, "fan": 0, "power": 0}
        for metric, count in counts.items():
            run.result(f"[{action}] gm {gpu.kfd_gpu_id} {metric} violations {count}")
        passed = passed and not any(counts.values())
    run.tick(10.0)
    return passed


_MEM_TESTS = (
    (1, "Test 1: Change one bit memory addresss  ", "Test 1 : PASS"),
    (2, "Test 2: Each Memory location is filled with its own address", "Test 2 : PASS"),
    (3, "Test 3 [Moving inversions, ones&zeros] 0 and 4294967295\n", "Test 3 : PASS "),
    (4, "Test 4 [Moving inversions, 8 bit pat]2155905152 and 2139062143\n", "Test 4 : PASS"),
    (5, "Test 5 [Moving inversions, random pattern] \n", "Test 5 PASS, no errors detected , iterations are zero here"),
    (6, "Test 6 [Block move, 64 moves]", "Test 6 : PASS"),
    (7, "Test 7 [Moving inversions, 32 bit pat]", "Test 7 : PASS"),
    (8, "Test 8 [Random number sequence]", "TEST 8 : PASS \n no errors detected, iterations are zero here"),
    (9, " Test 9 [Modulo 20, random pattern]", "Test 9 : PASS \nno errors detected, iterations are zero here"),
    (11, "Test 11 [memory stress test]", "Test 11 : PASS "),
)


def _mem(run: _Run, action: str) -> bool:
    run.header(action, "mem")
    events: list[tuple[float, str]] = []
    nominal = run.node.spec.mem_test_bandwidth_gbps
    for position, gpu in enumerate(run.gpus):
        at = 0.187 * position
        for number, intro, verdict in _MEM_TESTS:
            events.append((at, f"[{action}] mem {intro}"))
            at += run.rng.uniform(0.02, 0.03) if number < 11 else 0.0
            if number == 11:
                bandwidth = nominal * gpu.hbm_factor * run.jitter(0.995, 1.003)
                elapsed = 12.8e6 / bandwidth
                at += elapsed / 1000 + run.rng.uniform(0.1, 0.4)
                events.append(
                    (at, f"[{action}] mem Test 11: elapsedtime = {elapsed:.6f} bandwidth = {bandwidth:.6f}GB/s ")
                )
            events.append((at, f"[{action}] mem {verdict}"))
            at += run.rng.uniform(1.0, 3.2)
    run.timed(events)
    return True


_BABEL_KERNELS = (("Copy", 2, 0.79), ("Mul", 2, 0.775), ("Add", 3, 0.745), ("Triad", 3, 0.742), ("Dot", 2, 0.69))
_BABEL_ELEMENTS = 67108864


def _babel(run: _Run, action: str) -> bool:
    run.header(action, "babel")
    peak_mbs = run.node.spec.hbm_bandwidth_gbps * 1000
    for gpu in run.gpus:
        run.result(f"[{action}] [GPU:: {gpu.kfd_gpu_id}] Starting the Babel memory stress test")
        size_mb = _BABEL_ELEMENTS * 4 * 1e-6
        table = [
            "Running kernels 1000 times",
            "Precision: float",
            f"Array size: {size_mb:.1f} MB (={size_mb / 1000:.1f} GB)",
            f"Total size: {3 * size_mb:.1f} MB (={3 * size_mb / 1000:.1f} GB)",
            "-" * 72,
            "".join(f"{title:<12}" for title in ("GPU Id", "Function", "MBytes/sec", "Min (sec)", "Max", "Average")),
        ]
        for kernel, arrays, efficiency in _BABEL_KERNELS:
            rate = peak_mbs * efficiency * gpu.hbm_factor * run.jitter(0.99, 1.01)
            fastest = arrays * 4 * _BABEL_ELEMENTS * 1e-6 / rate
            slowest = fastest * run.jitter(1.02, 1.08)
            average = (fastest + slowest) / 2
            cells = (str(gpu.kfd_gpu_id), kernel, f"{rate:.3f}", f"{fastest:.5f}", f"{slowest:.5f}", f"{average:.5f}")
            table.append("".join(f"{cell:<12}" for cell in cells))
        run.lines.extend(table)
        run.tick(run.rng.uniform(3.5, 4.5))
    return True


def _gpup(run: _Run, action: str) -> bool:
    run.header(action, "gpup")
    spec = run.node.spec
    for gpu in run.gpus:
        properties = {
            "cpu_cores_count": 0,
            "simd_count": spec.compute_units * spec.simds_per_cu,
            "mem_banks_count": 1,
            "io_links_count": len(gpu.xgmi) + 1,
            "max_waves_per_simd": 8,
            "lds_size_in_kb": 64 if spec.gfx_target != "gfx950" else 160,
            "wave_front_size": 64,
            "array_count": spec.compute_units // 19 if spec.xcds > 1 else 8,
            "cu_per_simd_array": 10,
            "simd_per_cu": spec.simds_per_cu,
            "vendor_id": 4098,
            "device_id": int(spec.device_id, 16),
            "location_id": gpu.bus << 8,
            "max_engine_clk_fcompute": spec.gfx_clock_max_mhz,
            "local_mem_size": 0,
        }
        for name, value in properties.items():
            run.result(f"[{action}] gpup {gpu.kfd_gpu_id} {name} {value}")
        for k, link in enumerate(sorted(gpu.xgmi.values(), key=lambda link: link.peer_slot)):
            run.result(f"[{action}] gpup {gpu.kfd_gpu_id} {k} type 11")
            run.result(f"[{action}] gpup {gpu.kfd_gpu_id} {k} max_bandwidth {link.max_bandwidth_gbps * 125}")
    run.tick(1.2)
    return True


def _tst(run: _Run, action: str) -> bool:
    run.header(action, "tst")
    run.timed([(run.rng.uniform(60, 61), f"[{action}] [GPU:: {gpu.kfd_gpu_id}] pass: TRUE") for gpu in run.gpus])
    return True


def _pesm(run: _Run, action: str) -> bool:
    run.header(action, "pesm")
    run.tick(1.0)
    return True


# --- action plans -----------------------------------------------------------------------------------

Action = tuple[str, str, Callable[[_Run], bool]]  # (action name, module, runner)


def _bind(runner: Callable[[_Run, str], bool], action: str) -> Callable[[_Run], bool]:
    def run_action(run: _Run) -> bool:
        return runner(run, action)

    return run_action


def _module_actions(node: SimNode, module: str, name: str | None = None) -> list[Action]:
    """The actions a module's own conf file runs (``name`` overrides the action names of rvs.conf)."""
    if module == "gst":
        targets = _gst_targets(node)
        if name is not None:
            dtype, target = targets[0]
            return [(name, "gst", partial(_gst, action=name, dtype=dtype, target=target))]
        actions: list[Action] = []
        for dtype, target in targets:
            action = f"gst-{round(target / 1000)}Tflops-{_gst_dims(node)}-rand-{dtype}"
            actions.append((action, "gst", partial(_gst, action=action, dtype=dtype, target=target)))
        return actions
    defaults: dict[str, tuple[str, Callable[[_Run, str], bool]]] = {
        "iet": (f"iet-{round(node.spec.iet_target_w)}W-1K-rand-dgemm", _iet),
        "pebb": ("h2d-d2h-sequential-64MB", _pebb),
        "pbqt": ("p2p-unidir-parallel-64MB", _pbqt),
        "peqt": ("peqt", _peqt),
        "gm": ("metrics_monitor", _gm),
        "mem": ("action_1", _mem),
        "babel": ("babel-float-256MiB", _babel),
        "gpup": ("RVS-GPUP-TC1", _gpup),
        "tst": ("tst-thermal-stress", _tst),
        "pesm": ("pesm-monitor", _pesm),
    }
    default_name, runner = defaults.get(module, (module, _pesm))
    action = name or default_name
    return [(action, module, _bind(runner, action))]


def _default_conf(node: SimNode) -> list[Action]:
    actions: list[Action] = []
    for number, module in enumerate(MODULE_SEQUENCE, start=1):
        actions += _module_actions(node, module, f"action_{number}")
    return actions


def _conf_module(path: str) -> str | None:
    """Module a conf file exercises, from its name (``gst_single.conf`` -> ``gst``); '' for rvs.conf."""
    base = os.path.basename(path).lower()
    if base == "rvs.conf":
        return ""
    stem = base.removesuffix(".conf")
    for module in KNOWN_MODULES:
        if stem == module or stem.startswith((module + "_", module + "-")):
            return module
    return None


# --- output framing ----------------------------------------------------------------------------------

_BOX = 69


def _box_row(*cells: tuple[str, int]) -> str:
    return "|" + "|".join(f" {text:<{width - 2}} " for text, width in cells) + "|"


def summary_box(node: SimNode, gpus: list[SimGpu], results: list[tuple[str, str, bool]]) -> list[str]:
    """The RVS >= 1.3 end-of-run summary: system overview, GPU grid, one row per action."""
    stack = node.stack
    rule, double = "+" + "-" * _BOX + "+", "+" + "=" * _BOX + "+"
    lines = [double, "|" + "ROCm Validation Suite (RVS) Summary".center(_BOX) + "|", double]
    lines += ["|" + "System Overview".center(_BOX) + "|", rule]
    overview = (
        ("Operating System", stack.os_pretty),
        ("RVS version", stack.rvs),
        ("ROCm version", stack.rocm_build),
        ("amdgpu version", stack.amdgpu_driver if node.driver_loaded else "N/A"),
        ("GPUs", str(len(gpus))),
    )
    lines += [_box_row((key, 34), (value, 34)) for key, value in overview]
    lines += [rule, _box_row(("GPU Name - GPU ID", 34), ("", 34)), _box_row(("ID - Node ID - BDF", 34), ("", 34)), rule]
    for start in range(0, len(gpus), 2):
        pair = gpus[start : start + 2]
        names = [f"{node.spec.market_name} - {gpu.kfd_gpu_id}" for gpu in pair] + [""] * (2 - len(pair))
        places = [f"{gpu.index} - {gpu.kfd_node} - {gpu.bdf}" for gpu in pair] + [""] * (2 - len(pair))
        lines += [_box_row((names[0], 34), (names[1], 34)), _box_row((places[0], 34), (places[1], 34))]
        lines.append(double if start + 2 >= len(gpus) else rule)
    if not gpus:
        lines.append(double)
    lines += [_box_row(("Action Name", 34), ("Module", 16), ("Result", 17)), double]
    lines += [
        _box_row((action, 34), (module.upper(), 16), ("PASS" if ok else "FAIL", 17)) for action, module, ok in results
    ]
    lines.append(rule)
    return lines


def gpu_list(node: SimNode) -> str:
    """``rvs -g``: the banner, then one line per GPU in KFD node order."""
    version = node.stack.rvs
    out = f"\nROCm Validation Suite (version {version})\n\n"
    if not node.driver_loaded or not node.gpus:
        return out + "\nNo supported GPUs available.\n"
    out += "Supported GPUs available:\n" + ("\n" if _version(version) < (1,) else "")
    for gpu in sorted(node.gpus, key=lambda gpu: gpu.kfd_node):
        out += (
            f"{gpu.bdf} - GPU[{gpu.kfd_node:2d} - {gpu.kfd_gpu_id:5d}] {node.spec.market_name} "
            f"(Device {int(node.spec.device_id, 16)})\n"
        )
    return out


_HELP = """
Usage: rvs [option]... [file]...

Options:

-c --config        Specify the test configuration file to use.

-d --debugLevel    Specify the debug level for the output log. The range is 0-5 with
                   5 being the highest verbose level.

-g --listGpus      List all the GPUs available in the machine, that RVS supports and
                   has visibility.

-i --indexes       Comma separated list of GPU ids/indexes to run test on. This overrides
                   the device/device_index values specified for every actions in the
                   configuration file, including the ‘all’ value.

-t --listTests     List the test modules present in RVS.

   --version       Display version information and exit.

-h --help          Display usage information and exit.

"""


@dataclass
class _Options:
    conf: str | None = None
    level: str | None = None
    indexes: list[str] = field(default_factory=list)
    list_gpus: bool = False
    help: bool = False
    version: bool = False
    list_tests: bool = False


_VALUE_OPTIONS = {"-c": "conf", "--config": "conf", "-r": "level", "--level": "level", "-i": "indexes",
                  "--indexes": "indexes", "-d": "", "--debugLevel": "", "-l": "", "--debugLogFile": "", "-n": "",
                  "--numTimes": "", "-p": "", "--parallel": ""}  # fmt: skip
_FLAG_OPTIONS = {"-g": "list_gpus", "--listGpus": "list_gpus", "-h": "help", "--help": "help", "--version": "version",
                 "-ver": "version", "-t": "list_tests", "--listTests": "list_tests"}  # fmt: skip


def _parse(args: list[str]) -> _Options:
    options = _Options()
    rest = iter(args)
    for arg in rest:
        if arg in _VALUE_OPTIONS:
            value = next(rest, "")
            target = _VALUE_OPTIONS[arg]
            if target == "indexes":
                options.indexes = [part for part in value.split(",") if part]
            elif target:
                setattr(options, target, value)
        elif arg in _FLAG_OPTIONS:
            setattr(options, _FLAG_OPTIONS[arg], True)
    return options


def _select_gpus(node: SimNode, indexes: list[str]) -> list[SimGpu]:
    if not indexes:
        return list(node.gpus)
    wanted = set(indexes)
    return [gpu for gpu in node.gpus if str(gpu.index) in wanted or str(gpu.kfd_gpu_id) in wanted]


def _error(text: str, stdout: str = "") -> SimReply:
    return SimReply(stdout=stdout, stderr=f"RVS-ERROR [CLI] {text}\n", exit_status=255)


def _plan(node: SimNode, options: _Options) -> tuple[list[Action], str] | SimReply:
    """The actions to run and any launcher preamble, or the error reply for a bad command line."""
    if options.level is not None:
        platform = node.gpu_model.value if node.driver_loaded and node.gpus else ""
        preamble = f"Detected platform is: {platform}\nTest level is: {options.level}\n"
        if not platform:
            return _error("Could not detect platform name", preamble)
        path = f"/opt/rocm/share/rocm-validation-suite/conf/{platform}/levels/rvs_level_{options.level}.conf"
        preamble += f"Using configuration file: {path}\nUsing configuration file: {path}\n"
        if options.level not in LEVELS:
            return _error(f"{path} file is missing.", preamble)
        actions: list[Action] = []
        for module in LEVELS[options.level]:
            actions += _module_actions(node, module)
        return actions, preamble
    if options.conf is None:
        return _default_conf(node), ""
    conf_module = _conf_module(options.conf)
    if conf_module is None:
        return _error(f"{options.conf} file is missing.")
    return (_default_conf(node) if conf_module == "" else _module_actions(node, conf_module)), ""


def _run(ctx: SimContext, options: _Options) -> SimReply:
    node = ctx.node
    plan = _plan(node, options)
    if isinstance(plan, SimReply):
        return plan
    actions, preamble = plan
    # A GPU RVS does not enumerate is skipped by every module, silently, as if the node had one fewer.
    gpus = [gpu for gpu in _select_gpus(node, options.indexes) if gpu.slot not in node.rvs_unseen_slots]
    if not node.driver_loaded or not gpus:
        return _error("No platform support for the detected GPU or no GPU detected !", preamble)
    uptime = 20_000 + random.Random(f"uptime:{node.boot_id}").uniform(0, 1_200_000)
    # Modules walk the GPUs in KFD node order; the summary box lists them by enumeration index.
    by_node = sorted(gpus, key=lambda gpu: gpu.kfd_node)
    run = _Run(node=node, gpus=by_node, rng=ctx.rng, clock=uptime + (ctx.invocation % 5000) * 61.7)
    if node.rvs_stop_after is not None:
        # A child that dies quietly: the actions so far, no more, no box, and exit status 0.
        actions = actions[: node.rvs_stop_after]
    results = [(name, module, runner(run)) for name, module, runner in actions]
    if _version(node.stack.rvs) >= (1, 3) and len(results) > 1:
        run.lines += summary_box(node, gpus, results)
        if any(module == "pesm" for _, module, _ in results):
            run.result("[module_terminate] PCIe monitoring ended after wait duration.")
    stdout = preamble + "".join(line + "\n" for line in run.lines)
    return SimReply(stdout=stdout, duration_s=ctx.duration(run.simulated_s))


def handle(ctx: SimContext, argv: list[str]) -> SimReply:
    """Run ``rvs`` with ``argv`` on the simulated node."""
    options = _parse(argv[1:])
    if options.help:
        return SimReply(stdout=_HELP)
    if options.version:
        return SimReply(stdout=ctx.node.stack.rvs + "\n")
    if options.list_gpus:
        return SimReply(stdout=gpu_list(ctx.node), duration_s=ctx.duration(1.5))
    if options.list_tests:
        banner = f"\nROCm Validation Suite (version {ctx.node.stack.rvs})\n\nModules available:\n"
        return SimReply(stdout=banner + "".join(f"  {module}\n" for module in KNOWN_MODULES))
    return _run(ctx, options)
