"""Parse + check cost per node for a full 8-GPU quick probe set, per probe, with a profile summary.

The simulator renders every quick probe's output for one node once; the timed loop then does what
the sweep engine does with a node's outputs: ``spec.parse`` for each probe, ``build_facts`` and
``evaluate_node`` with the pool's check pack. No SSH, no store: this is the CPU the console spends
per node on top of the transport.

    .venv/bin/python bench/parse.py [--model mi300x] [--repeat 50] [--profile 25]
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import pstats
import statistics
import time
from collections import Counter
from collections.abc import Callable

from console.checks import CheckPack, ProbeOutcome, build_facts, evaluate_node, load_packs
from console.inventory.model import Node, StackPin
from console.sim.commands import context_for, run_program
from console.sim.models import example_cluster
from console.sim.specs import GpuModel
from console.sweep.catalog import Parser, ProbeSet, ProbeSpec, probes_for


def render_outputs(model: GpuModel) -> tuple[Node, dict[str, str]]:
    """One healthy simulated node of ``model`` and the text each quick probe prints on it."""
    cluster = example_cluster(nodes_per_model={model: 1}, with_faults=False)
    spec = cluster.nodes[0]
    outputs = {}
    for probe in probes_for(ProbeSet.QUICK):
        reply = run_program(context_for(cluster, spec.name), list(probe.argv))
        outputs[probe.id] = reply.stdout + reply.stderr
    node = Node(name=spec.name, pool=spec.pool, gpu_model=model.value, gpu_count=8, address="127.0.0.1")
    return node, outputs


def fresh(spec: ProbeSpec) -> Parser:
    """The probe's parser without the reuse of unchanged outputs: what a first sweep pays."""
    parser: Parser = getattr(spec.parse, "fresh", spec.parse)
    return parser


def judge_node(
    node: Node, outputs: dict[str, str], specs: dict[str, ProbeSpec], packs: dict[str, CheckPack], *, reuse: bool
) -> int:
    """Parse every output, build the facts and evaluate the pack; returns the number of findings.

    ``reuse`` parses as a rerun does (unchanged outputs are not parsed again), else as a first sweep.
    """
    parsers = {pid: spec.parse if reuse else fresh(spec) for pid, spec in specs.items()}
    outcomes = {pid: ProbeOutcome(pid, parsers[pid](text), None, 1) for pid, text in outputs.items()}
    facts = build_facts(node, StackPin(), outcomes)
    passed = Counter[str]()
    findings = evaluate_node(packs[node.gpu_model], facts, {pid: 1 for pid in outcomes}, counted=passed)
    return len(findings) + passed.total()


def main() -> None:
    """Time parsing and checking per probe and per node, then print the top of a profile."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="MI300X", help="GPU model of the simulated node (default MI300X)")
    ap.add_argument("--repeat", type=int, default=30, help="timed repetitions (default 30)")
    ap.add_argument("--profile", type=int, default=20, help="profile rows to print (0: none)")
    args = ap.parse_args()
    model = GpuModel(args.model.upper())
    node, outputs = render_outputs(model)
    specs = {p.id: p for p in probes_for(ProbeSet.QUICK)}
    packs = load_packs()
    judge_node(node, outputs, specs, packs, reuse=True)  # warm imports and remember the steady outputs

    def cpu_ms(work: Callable[[], object]) -> float:
        times = []
        for _ in range(args.repeat):
            t0 = time.process_time()
            work()
            times.append(time.process_time() - t0)
        return statistics.median(times) * 1000

    size_kib = sum(len(t) for t in outputs.values()) / 1024
    print(f"{model.value}: {len(outputs)} quick probes, {size_kib:.0f} KiB of output; CPU ms, median of {args.repeat}")
    print(f"{'probe':<22}{'bytes':>9}{'first':>10}{'rerun':>10}")
    first = rerun = 0.0
    for pid, text in outputs.items():
        spec = specs[pid]
        once = cpu_ms(functools.partial(fresh(spec), text))
        again = cpu_ms(functools.partial(spec.parse, text))
        first, rerun = first + once, rerun + again
        print(f"{pid:<22}{len(text):>9}{once:>10.2f}{again:>10.2f}")
    node_first = cpu_ms(lambda: judge_node(node, outputs, specs, packs, reuse=False))
    node_rerun = cpu_ms(lambda: judge_node(node, outputs, specs, packs, reuse=True))
    print(f"{'parse (sum)':<22}{'':>9}{first:>10.2f}{rerun:>10.2f}")
    print(f"{'facts + checks':<22}{'':>9}{node_first - first:>10.2f}{node_rerun - rerun:>10.2f}")
    print(f"{'per node':<22}{'':>9}{node_first:>10.2f}{node_rerun:>10.2f}")
    print(f"1,024 nodes: {node_first * 1.024:.1f} s (first sweep), {node_rerun * 1.024:.1f} s (rerun) of one core")

    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(10):
            judge_node(node, outputs, specs, packs, reuse=False)
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(args.profile)
        print("\nprofile (10 nodes, by own time):")
        print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[:6000])


if __name__ == "__main__":
    main()
