"""``amd-smi`` on a simulated node: argument handling, init failures and dispatch to the renderers.

Supported: ``version``, ``list``, ``static``, ``metric``, ``firmware``/``ucode``, ``bad-pages``,
``process``, ``xgmi``, ``topology``, ``monitor``/``dmon`` and (ROCm 7) the bare default view, each with
``--json`` / ``--csv`` and ``-g/--gpu`` selection. The output layout follows the node's ROCm line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from console.sim.commands import SimContext, SimReply
from console.sim.models import SimGpu, SimNode
from console.sim.render.amdsmi_cper import ras as cper_ras
from console.sim.render.amdsmi_format import Fmt, dump_csv, dump_json, flatten, resolve
from console.sim.render.amdsmi_format import devices_text as text_blocks
from console.sim.render.amdsmi_metric import METRIC_SECTIONS, metric_section
from console.sim.render.amdsmi_sections import (
    STATIC_SECTIONS,
    Gen,
    bad_pages_section,
    firmware_section,
    list_section,
    process_section,
    static_section,
    version_fields,
    version_line,
)
from console.sim.render.amdsmi_tables import (
    MONITOR_DEFAULT,
    TOPOLOGY_TABLES,
    default_view,
    monitor,
    topology_json,
    topology_text,
    xgmi_json,
    xgmi_text,
)

NO_DRIVER = "ERROR:root:Unable to get devices, driver not initialized (amdgpu not found in modules)\n"
NO_GPU = "ERROR:root:Unable to detect any GPU devices, check amdgpu version and module status (sudo modprobe amdgpu)\n"
NO_CPU = (
    "ERROR:root:Unable to detect any CPU devices, check amd_hsmp version and module status (sudo modprobe amd_hsmp)\n"
)

# Simulated seconds one amd-smi call takes (Python start-up plus library init).
_CALL_S = (0.4, 1.6)


class UsageError(Exception):
    """An argument the real CLI's argparse would reject (exit 2, message on stderr)."""


@dataclass
class Options:
    """Parsed arguments of one subcommand."""

    fmt: Fmt = Fmt.TEXT
    gpus: list[str] | None = None
    flags: set[str] = field(default_factory=set)


def _flags(*groups: str) -> dict[str, str]:
    """Option spellings -> destination; each group is 'spellings... [=dest]' (dest defaults to the long name)."""
    table = {}
    for group in groups:
        words = group.split()
        dest = words.pop()[1:] if words[-1].startswith("=") else words[-1].lstrip("-").replace("-", "_")
        table.update(dict.fromkeys(words, dest))
    return table


# subcommand -> {option -> section}; section names follow the CLI's own keys
_FLAGS: dict[str, dict[str, str]] = {
    "static": _flags(
        "-a --asic",
        "-b --bus",
        "-V --vbios -I --ifwi =vbios",
        "-l --limit",
        "-d --driver",
        "-B --board",
        "-r --ras",
        "-p --partition",
        "-u --numa",
        "-v --vram",
        "-C --clock",
        "-c --cache",
    ),
    "metric": _flags(
        "-m --mem-usage",
        "-u --usage",
        "-p --power",
        "-c --clock",
        "-t --temperature",
        "-P --pcie",
        "-e --ecc",
        "-k --ecc-blocks",
        "-f --fan",
        "-C --voltage-curve",
        "-o --overdrive",
        "-l --perf-level",
        "-x --xgmi-err",
        "-E --energy",
        "-v --violation -T --throttle =throttle",
    ),
    "firmware": _flags("-f --fw-list --ucode-list =fw_list"),
    "bad-pages": _flags("-p --pending", "-r --retired", "-u --un-res"),
    "list": _flags("-e --enumeration"),
    "process": _flags("-G --general", "-e --engine"),
    "xgmi": _flags("-m --metric", "-l --link-status"),
    "topology": _flags("-a --access", "-w --weight", "-o --hops", "-t --link-type =type", "-b --numa-bw =bw"),
    "monitor": _flags(
        "-p --power-usage =p",
        "-t --temperature =t",
        "-u --gfx =u",
        "-m --mem =m",
        "-e --ecc =e",
        "-v --vram-usage =v",
        "-V --violation =V",
    ),
}
_ALIASES = {"ucode": "firmware", "dmon": "monitor"}
_WITH_VALUE = {"-w", "--watch", "-W", "--watch_time", "-i", "--iterations", "--file", "--loglevel"}


def _parse(sub: str, args: list[str], gen: Gen) -> Options:
    options = Options()
    known = _FLAGS[sub]
    args = list(args)
    position = 0
    while position < len(args):
        arg = args[position]
        position += 1
        if arg == "--json":
            options.fmt = Fmt.JSON
        elif arg == "--csv":
            options.fmt = Fmt.CSV
        elif arg in ("-g", "--gpu"):
            options.gpus = []
            while position < len(args) and not args[position].startswith("-"):
                options.gpus.append(args[position])
                position += 1
        elif arg in _WITH_VALUE:
            position += 1
        elif arg in known and _supported(sub, known[arg], gen):
            options.flags.add(known[arg])
        elif _bundle(arg, known):
            # argparse accepts bundled short flags such as ``monitor -putm``.
            args[position:position] = [f"-{letter}" for letter in arg[1:]]
        else:
            raise UsageError(f"amd-smi {sub}: error: unrecognized arguments: {arg}")
    return options


def _bundle(arg: str, known: dict[str, str]) -> bool:
    return len(arg) > 2 and arg[0] == "-" and arg[1] != "-" and all(f"-{letter}" in known for letter in arg[1:])


def _supported(sub: str, flag: str, gen: Gen) -> bool:
    """Flags that older amd-smi releases did not have yet."""
    if flag in ("throttle", "V"):
        return gen.violations
    if sub == "xgmi" and flag == "link_status":
        return gen.scaled_traffic
    return True


def _select(node: SimNode, wanted: list[str] | None) -> list[SimGpu]:
    if wanted is None or "all" in wanted:
        return list(node.gpus)
    chosen = []
    for token in wanted:
        match = next((gpu for gpu in node.gpus if token in (str(gpu.index), gpu.bdf, gpu.uuid)), None)
        if match is None:
            raise UsageError(
                f"amd-smi: error: argument -g/--gpu: Invalid value: '{token}'; "
                f"choose a GPU ID from 0 to {len(node.gpus) - 1}, a BDF, a UUID or all"
            )
        chosen.append(match)
    return chosen


def _per_gpu(gpus: list[SimGpu], build: Callable[[SimGpu], dict[str, Any]], fmt: Fmt, gen: Gen, wrap: bool) -> str:
    """Print per-GPU dicts the way the logger does for the chosen format."""
    trees = [(gpu.index, build(gpu)) for gpu in gpus]
    if fmt is Fmt.JSON:
        rows = [{"gpu": index, **resolve(tree, Fmt.JSON)} for index, tree in trees]
        return dump_json({"gpu_data": rows} if wrap and gen.gpu_data else rows)
    if fmt is Fmt.CSV:
        return dump_csv([{"gpu": index, **flatten(resolve(tree, Fmt.CSV))} for index, tree in trees])
    return text_blocks([(index, resolve(tree, Fmt.TEXT)) for index, tree in trees], gen.folds_text)


def _unread(sub: str, gpu: SimGpu, tree: dict[str, Any]) -> dict[str, Any]:
    """``tree`` with what a fault makes amd-smi print instead of a value (``SimGpu.unread``) put in its place."""
    for where, text in gpu.unread.items():
        command, _, path = where.partition(":")
        if command == sub:
            # A NaN is printed as amd-smi's JSON prints a float NaN; anything else verbatim.
            _put(tree, path.split("."), float("nan") if text == "NaN" else text)
    return tree


def _put(holder: Any, path: list[str], value: Any) -> None:
    """Set the leaf at ``path`` (``*`` stands for every item of a list or dict: ``fw_list.*.fw_version``)."""
    key, rest = path[0], path[1:]
    items = (holder.values() if isinstance(holder, dict) else holder) if key == "*" else None
    if items is None:
        if not isinstance(holder, dict) or key not in holder:
            return
        if not rest:
            holder[key] = value
            return
        items = [holder[key]]
    for item in list(items):
        if not rest:
            continue
        _put(item, rest, value)


def _render(ctx: SimContext, sub: str, options: Options, gen: Gen) -> str:
    node, rng, fmt = ctx.node, ctx.rng, options.fmt
    # A fault may leave a GPU out of one subcommand's output while the others name it.
    gpus = [gpu for gpu in _select(node, options.gpus) if sub not in gpu.left_out_of]
    flags = options.flags
    if sub == "static":
        sections = list(flags or STATIC_SECTIONS)
        return _per_gpu(gpus, lambda gpu: _unread(sub, gpu, static_section(node, gpu, sections, gen)), fmt, gen, True)
    if sub == "metric":
        sections = list(flags or METRIC_SECTIONS)
        build = metric_section
        return _per_gpu(gpus, lambda gpu: _unread(sub, gpu, build(node, gpu, sections, gen, rng)), fmt, gen, True)
    if sub == "firmware":
        return _per_gpu(gpus, lambda gpu: _unread(sub, gpu, firmware_section(gpu, fmt)), fmt, gen, wrap=True)
    if sub == "bad-pages":
        kinds = list(flags or ("retired", "pending", "un_res"))
        return _per_gpu(gpus, lambda gpu: _unread(sub, gpu, bad_pages_section(gpu, kinds)), fmt, gen, wrap=False)
    if sub == "list":
        return _per_gpu(gpus, lambda gpu: list_section(gpu, fmt), fmt, gen, wrap=False)
    if sub == "process":
        return _per_gpu(gpus, process_section, fmt, gen, wrap=False)
    if sub == "xgmi":
        metric, status = ("metric" in flags or not flags), ("link_status" in flags or not flags)
        if fmt is Fmt.JSON:
            return dump_json(xgmi_json(node, gen, rng, metric, status))
        return xgmi_text(node, gen, rng, metric, status)
    if sub == "topology":
        if fmt is Fmt.JSON:
            return dump_json(topology_json(node))
        return topology_text(node, list(flags or (key for key, _ in TOPOLOGY_TABLES)))
    order: tuple[str, ...] = ("p", "t", "u", "m", "e", "v", "V")
    groups = [group for group in order if group in flags] or list(MONITOR_DEFAULT)
    table = monitor(node, gen, rng, groups, fmt)
    if isinstance(table, str):
        return table
    return dump_json(table) if fmt is Fmt.JSON else dump_csv(table)


def handle(ctx: SimContext, argv: list[str]) -> SimReply:
    """Answer one ``amd-smi`` invocation on ``ctx.node``."""
    node = ctx.node
    gen = Gen.of(node.stack)
    duration = ctx.duration(ctx.rng.uniform(*_CALL_S))
    args = argv[1:]
    sub = _ALIASES.get(args[0], args[0]) if args else ""
    if not node.driver_loaded or not node.gpus:
        # Init fails before any subcommand runs; only the short version line follows the errors.
        errors = (NO_GPU if node.driver_loaded else NO_DRIVER + NO_GPU) + NO_CPU
        return SimReply(version_line(node, gen, drivers=False) + "\n", errors, 255, duration)
    if sub in ("version", "--version"):
        if "--json" in args:
            return SimReply(dump_json([version_fields(node, gen)]), duration_s=duration)
        return SimReply(version_line(node, gen) + "\n", duration_s=duration)
    if not sub:
        if gen.gpu_data:
            return SimReply(default_view(node, ctx.rng), duration_s=duration)
        return SimReply(_usage(), duration_s=duration)
    if sub == "ras" and gen.rocm >= (6, 4, 1):
        return cper_ras(ctx, args[1:], duration, gen.rocm)
    if sub not in _FLAGS:
        return SimReply("", _usage() + f"amd-smi: error: argument : invalid choice: '{args[0]}'\n", 2, duration)
    try:
        return SimReply(_render(ctx, sub, _parse(sub, args[1:], gen), gen), duration_s=duration)
    except UsageError as error:
        return SimReply("", f"{error}\n", 2, duration)


def _usage() -> str:
    commands = "version,list,static,firmware,ucode,bad-pages,metric,process,event,topology,set,reset,monitor,dmon,xgmi"
    return f"usage: amd-smi [-h] {{{commands}}} ...\n"
