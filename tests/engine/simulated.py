"""The simulator's answers to a sweep's own probe commands, parsed as the engine keeps them."""

from __future__ import annotations

from collections.abc import Collection

from console.checks import ProbeOutcome
from console.probes.base import ParseError
from console.sim.commands import context_for, run_program
from console.sim.models import ClusterSpec
from console.sweep.catalog import ProbeSet, probes_for
from console.sweep.engine import probe_problem


def simulated_outcomes(
    cluster: ClusterSpec, node: str, probe_ids: Collection[str], level: ProbeSet = ProbeSet.QUICK
) -> dict[str, ProbeOutcome]:
    """Each probe of ``level`` named in ``probe_ids``, run on the simulated ``node`` and parsed.

    The command must end as a healthy one (the faults these tests put lose a reading, not the probe); an
    output its parser refuses is kept as the engine keeps it: no data, and why.
    """
    outcomes = {}
    for probe in probes_for(level):
        if probe.id not in probe_ids:
            continue
        reply = run_program(context_for(cluster, node), list(probe.argv))
        problem = probe_problem(reply.exit_status, (reply.stdout + reply.stderr).encode(), probe)
        assert problem is None, f"{probe.id}: {problem}"
        parse = getattr(probe.parse, "fresh", probe.parse)
        try:
            outcomes[probe.id] = ProbeOutcome(probe.id, parse(reply.stdout + reply.stderr), None, 1)
        except ParseError as exc:
            outcomes[probe.id] = ProbeOutcome(probe.id, None, f"unreadable output: {exc.reason}", 1)
    return outcomes
