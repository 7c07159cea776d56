"""The node-pair view of a multi-node phase: a nodes x nodes heatmap of busbw against the floor, the
straggler ranking (nodes by their worst run), and the one-line summary the link panel shows otherwise.

Pure: a ``PairBoard`` in, ``Content`` out. Colours are the link heatmap's, so "below the floor" reads
the same for a GPU pair and a node pair.
"""

from __future__ import annotations

import textwrap

from textual.content import Content

from console.model.findings import Status
from console.model.multinode import CollectiveRun
from console.ui.pairs import PairBoard, Standing
from console.ui.text import safe

# Above this many nodes the heatmap keeps the worst-ranked ones (a 170-column terminal fits ~14).
MAX_HEAT_NODES = 12
MAX_STRAGGLERS = 8  # each named node takes two or three lines; the panel is 22 high
CELL = 6
REASON_WIDTH = 88  # beside a 12-node heatmap (~84 columns) in a 170-column terminal
# Within this fraction above the floor a pair is "near the floor", as for GPU pairs.
NEAR_FLOOR = 0.03

Part = str | tuple[str, str]

_STATUS_STYLE = {
    Status.FAIL: "bold $health-crit",
    Status.UNKNOWN: "$health-none",
    Status.WARN: "$health-warn",
    Status.PASS: "$health-ok",
}


def ratio_style(ratio: float) -> str:
    """Style of a busbw ratio (1.0: exactly the floor)."""
    if ratio < 1.0:
        return "bold $heat-low"
    if ratio < 1.0 + NEAR_FLOOR:
        return "$heat-near"
    return "$heat-good"


def _cell(run: CollectiveRun | None) -> Part:
    if run is None:
        return (f"{'·':>{CELL}}", "$muted")
    ratio = run.ratio
    if ratio is not None:
        return (f"{ratio:>{CELL}.2f}", ratio_style(ratio))
    if run.status is Status.FAIL:
        return (f"{'✗':>{CELL}}", "bold $health-crit")  # hung or broken: no busbw at all
    if run.status is Status.PASS:
        return (f"{'ok':>{CELL}}", "$heat-good")  # no floor known for the model
    return (f"{'?':>{CELL}}", "$health-none")


def heatmap_content(board: PairBoard) -> Content:
    """Nodes x nodes: each cell is the pair's busbw over the floor (the latest run of that pair)."""
    title = "Multi-node RCCL · node pairs, busbw / floor"
    parts: list[Part] = [(title, "bold")]
    if board.running:
        parts.append((f"  running: {len(board.runs)} run(s) done", "$accent"))
    elif board.stopped:
        parts.append(("  stopped before every node was judged", "$health-warn"))
    axis = board.axis()
    if not axis:
        return Content.assemble(*parts, "\n", ("no run has finished yet", "$muted"))
    shown = axis
    if len(axis) > MAX_HEAT_NODES:
        worst = [s.node for s in board.standings()][:MAX_HEAT_NODES]
        shown = [node for node in axis if node in worst]
    width = max(len(node) for node in shown)
    cells = board.pair_runs()
    parts += ["\n", (" " * (width + 4) + "".join(f"{i + 1:>{CELL}}" for i in range(len(shown))), "$muted")]
    for i, node in enumerate(shown):
        parts += ["\n", (f"{i + 1:>2} {safe(node):<{width}} ", "$muted")]
        for j, other in enumerate(shown):
            if i == j:
                parts.append((f"{'·':>{CELL}}", "$muted"))
            else:
                parts.append(_cell(cells.get(frozenset((node, other)))))
    groups = sum(1 for run in board.runs if len(run.nodes) > 2)
    parts += ["\n", ("■ ≥ floor ", "$heat-good"), ("■ near ", "$heat-near"), ("■ below ", "$heat-low")]
    parts += [("✗ hung/failed ", "$health-crit"), ("? not judged", "$health-none")]
    if len(shown) < len(axis):
        parts += ["\n", (f"{len(axis) - len(shown)} better-ranked node(s) not drawn", "$muted")]
    if groups:
        parts += ["\n", (f"{groups} group run(s) of 3+ nodes: in the ranking, not in the cells", "$muted")]
    return Content.assemble(*parts)


def _runs(seqs: tuple[int, ...]) -> str:
    return " ".join(f"#{seq}" for seq in seqs)


def _explained(head: str, text: str) -> list[Part]:
    """``head`` and ``text`` under a line of the ranking, wrapped: the view sits beside the heatmap."""
    lines = textwrap.wrap(f"{head}{text}", width=REASON_WIDTH, subsequent_indent="  ")
    parts: list[Part] = []
    for i, line in enumerate(lines):
        if i == 0:
            parts += ["\n", (f"{'':7}{line[: len(head)]}", "$health-crit"), safe(line[len(head) :])]
        else:
            parts += ["\n", f"{'':7}{safe(line)}"]
    return parts


def _standing_line(standing: Standing) -> list[Part]:
    ratio = f"{standing.worst_ratio:5.2f}" if standing.worst_ratio is not None else "  n/a"
    style = ratio_style(standing.worst_ratio) if standing.worst_ratio is not None else "$muted"
    status = standing.status.value if standing.status is not None else "…"
    line: list[Part] = [
        (f"{status:<7}", _STATUS_STYLE.get(standing.status, "$muted") if standing.status else "$muted"),
        (f"{safe(standing.node):<12}", "bold" if standing.status is Status.FAIL else ""),
        (ratio, style),
    ]
    if standing.worst_with:
        line.append((f" with {safe(', '.join(standing.worst_with))}", "$muted"))
    if standing.convicting:
        # Who convicted it: the pairing mode, and each run's partner with where that partner came from
        # (this sweep, or the accepted baseline); the reason's figures are in the node's detail.
        line += _explained(f"named by runs {_runs(standing.convicting)}: ", standing.found_by or standing.named)
        if standing.layer and standing.layer != "unknown":
            line += ["\n", (f"{'':7}layer: {standing.layer}", "$muted")]
    elif standing.decided and standing.status is not None:
        verb = "cleared by" if standing.status is Status.PASS else "runs"
        line.append((f"  {verb} {_runs(standing.decided)}", "$muted"))
    return line


def stragglers_content(board: PairBoard) -> Content:
    """Nodes ranked by their worst run (busbw / floor), the named ones with the runs that convicted them."""
    parts: list[Part] = [("Stragglers · worst run first", "bold")]
    standings = board.standings()
    if not standings:
        return Content.assemble(*parts, "\n", ("no run has finished yet", "$muted"))
    for rack in board.result.racks if board.result is not None else []:
        parts += ["\n", (f"{rack.label.upper():<7}", "bold $health-crit"), (f"{safe(rack.rack)} uplink", "bold")]
        parts += _explained(f"named by runs {_runs(tuple(rack.runs))}: ", rack.reason)
        for line in textwrap.wrap(rack.found_by, width=REASON_WIDTH, subsequent_indent="  "):
            parts += ["\n", (f"{'':7}{safe(line)}", "$muted")]  # which mode and pass found it
    for standing in standings[:MAX_STRAGGLERS]:
        parts += ["\n", *_standing_line(standing)]
    if len(standings) > MAX_STRAGGLERS:
        parts += ["\n", (f"and {len(standings) - MAX_STRAGGLERS} more", "$muted")]
    if board.result is not None:
        passes = sum(1 for run in board.runs if run.purpose == "confirm")
        mode = safe(board.result.pairing)
        parts += ["\n", (f"{len(board.runs)} runs ({mode} pairing), {passes} in the second pass; "
                         "enter on a node: who named or cleared it", "$muted")]  # fmt: skip
    return Content.assemble(*parts)


def summary_content(board: PairBoard, keys: str) -> Content:
    """The link panel's one line about the multi-node phase while it shows a node's links."""
    head: Part = ("Multi-node RCCL ", "bold")
    if not board.started:
        return Content.assemble(head, (f"pairs: none run yet. {keys}", "$muted"))
    named = [c.node for c in board.result.culprits] if board.result is not None else []
    named += [f"{r.label} {r.rack} uplink" for r in board.result.racks] if board.result is not None else []
    state = "running" if board.running else "done"
    parts: list[Part] = [head, (f"{state}: {len(board.runs)} run(s)", "$accent" if board.running else "")]
    if board.result is not None:
        parts.append(
            (f", named {safe(', '.join(named))}", "bold $health-crit") if named else (", no node named", "$health-ok")
        )
    parts.append((f"  {keys}", "$muted"))
    return Content.assemble(*parts)
