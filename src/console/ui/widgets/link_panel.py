"""The link panel of the node under the cursor: XGMI status with TransferBench GB/s per GPU pair as a
heatmap against the model's floor, PCIe per GPU, NIC ports, and a line about the multi-node phase.

The panel has a second face, the fleet's node-pair view (``pair_view``): the multi-node heatmap and the
straggler ranking in place of the cursor node's boxes, filled live as the runs finish.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Static

from console.checks import CheckPack
from console.model.gpu import LinkStatus
from console.model.host import NicPort
from console.ui.pairs import PairBoard
from console.ui.state import GpuView, NodeRow
from console.ui.text import safe
from console.ui.widgets.pair_view import heatmap_content, stragglers_content, summary_content

PCIE_WIDTH = 16
# Within this fraction above the floor a pair is drawn as "near the floor" (healthy MI300X pairs run ~5 % above it).
NEAR_FLOOR = 0.03
PCIE_COUNTER_FAIL = 100  # CVS verify_lib: recovery/NAK counters above 100 fail

Part = str | tuple[str, str]


@dataclass(frozen=True)
class LinkFloors:
    """What a healthy node of a model shows: TransferBench pair floor, PCIe speed and width."""

    pair_gbps: float | None
    pcie_gts: float
    pcie_width: int = PCIE_WIDTH


def floors_for(packs: dict[str, CheckPack], model: str) -> LinkFloors:
    """Floors from the model's check pack variables (so the heatmap and the checks agree)."""
    pack = packs.get(model)
    values = pack.pack.values() if pack is not None else {}
    pair = values.get("tb_a2a_pair_min_gbps")
    pcie = values.get("pcie_gts")
    default_pcie = 16.0 if model == "MI250X" else 32.0
    return LinkFloors(
        pair_gbps=float(pair) if isinstance(pair, int | float) and not isinstance(pair, bool) else None,
        pcie_gts=float(pcie) if isinstance(pcie, int | float) and not isinstance(pcie, bool) else default_pcie,
    )


# Without a published floor, a pair is compared with this share of the node's own median pair.
MEDIAN_SHARE = 0.9


def reference_floor(pairs: dict[str, float], floors: LinkFloors) -> tuple[float | None, str]:
    """The floor the heatmap colours against, and how to label it."""
    if floors.pair_gbps is not None:
        return floors.pair_gbps, f"floor {floors.pair_gbps:g} GB/s (model check pack)"
    values = sorted(pairs.values())
    if not values:
        return None, "no floor for this model"
    median = values[len(values) // 2]
    return median * MEDIAN_SHARE, f"no model floor: {MEDIAN_SHARE:.0%} of this node's median {median:.1f} GB/s"


def heat_style(gbps: float, floor: float | None) -> str:
    """Style of one pair's bandwidth against the floor."""
    if floor is None:
        return ""
    if gbps < floor:
        return "bold $heat-low"
    if gbps < floor * (1 + NEAR_FLOOR):
        return "$heat-near"
    return "$heat-good"


def matrix_content(row: NodeRow, floors: LinkFloors) -> Content:
    """The GPU x GPU matrix: each cell is the pair's GB/s (or the link state), ✗ marks a down link."""
    parts: list[Part] = [("XGMI links · TransferBench GB/s per pair", "bold"), "\n"]
    view = row.view
    count = view.gpu_count if view is not None else 0
    if view is None or count == 0:
        return Content.assemble(*parts, ("no GPU data for this node yet", "$muted"))
    status = view.links
    pairs = view.pair_gbps
    floor, floor_label = reference_floor(pairs, floors)
    parts.append(("src\\dst " + "".join(f"{j:>7}" for j in range(count)), "$muted"))
    for i in range(count):
        parts += ["\n", (f"gpu{i:<4}", "$muted"), "  "]
        for j in range(count):
            if i == j:
                parts.append(("      ·", "$muted"))
                continue
            link = status.get((i, j)) or status.get((j, i)) or LinkStatus.UNKNOWN
            gbps = pairs.get(f"{i}-{j}")
            down = link in (LinkStatus.DOWN, LinkStatus.DISABLED)
            mark = "✗" if down else " "
            if gbps is not None:
                style = "bold $health-crit" if down else heat_style(gbps, floor)
                parts.append((f" {mark}{gbps:5.1f}", style))
            elif down:
                parts.append((f" {mark} down", "bold $health-crit"))
            elif link is LinkStatus.UP:
                parts.append(("     up", "$health-ok"))
            else:
                parts.append(("      ?", "$health-none"))
    parts += [
        "\n",
        (floor_label + "  ", "$muted"),
        ("■ ok ", "$heat-good"),
        ("■ near ", "$heat-near"),
        ("■ below ", "$heat-low"),
        ("✗ link down ", "$health-crit"),
        # amd-smi before ROCm 6.4 prints no link state; on MI250X that includes pairs with no direct link.
        ("? no state", "$health-none"),
    ]
    return Content.assemble(*parts)


def _counter(label: str, value: int | None) -> list[Part]:
    if value is None:
        return [(f" {label} n/a", "$muted")]
    style = "bold $health-crit" if value > PCIE_COUNTER_FAIL else "$health-warn" if value > 0 else "$muted"
    return [(f" {label} {value}", style)]


def pcie_content(gpus: tuple[GpuView, ...], floors: LinkFloors) -> Content:
    """One line per GPU: link speed and width against the expected Gen/width, and error counters."""
    expected = f"expect {floors.pcie_gts:g} GT/s x{floors.pcie_width}"
    parts: list[Part] = [("PCIe per GPU", "bold"), (f"  {expected}", "$muted")]
    if not gpus:
        return Content.assemble(*parts, "\n", ("no GPU data", "$muted"))
    for gpu in gpus:
        link = gpu.pcie
        parts += ["\n", (f"gpu{gpu.index:<3}", "$muted")]
        if link is None:
            parts.append((" n/a", "$health-none"))
            continue
        speed, width = link.speed_gts, link.width
        speed_style = "$health-none" if speed is None else "bold $health-crit" if speed < floors.pcie_gts else ""
        width_style = "$health-none" if width is None else "bold $health-crit" if width < floors.pcie_width else ""
        parts.append((f" {speed:g} GT/s" if speed is not None else " n/a GT/s", speed_style))
        parts.append((f" x{width}" if width is not None else " x?", width_style))
        parts += _counter("replay", link.replay)
        parts += _counter("recov", link.recovery)
        parts += _counter("nak", link.naks)
    return Content.assemble(*parts)


def nic_content(nics: tuple[NicPort, ...]) -> Content:
    """One line per RDMA port with its state."""
    parts: list[Part] = [("NIC ports", "bold")]
    if not nics:
        return Content.assemble(*parts, "\n", ("no RDMA ports reported", "$muted"))
    for port in nics:
        active = port.state.upper() == "ACTIVE"
        parts += [
            "\n",
            (f"{safe(port.label):<12}", ""),
            (f" {safe(port.state):<8}", "$health-ok" if active else "bold $health-crit"),
            (f" {safe(port.physical_state or '')}", "$muted"),
            (f" {safe(port.netdev or '')}", "$muted"),
        ]
    return Content.assemble(*parts)


def _size(content: Content) -> tuple[int, int]:
    lines = content.plain.split("\n")
    return len(lines), max((cell_len(line) for line in lines), default=0)


class LinkPanel(Vertical):
    """Links of one node; ``show(row)`` repaints it for another node or fresher data."""

    def __init__(self, packs: dict[str, CheckPack], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.packs = packs
        self.current: str | None = None
        self._sizes: dict[str, tuple[int, int]] = {}
        self.pair_view = False
        self._pairs_version = -1

    def _put(self, box: str, content: Content) -> None:
        # A layout pass of the whole screen costs ~10x the paint (up to 100 ms at 1,024 rows while
        # verdicts stream): a box only ever grows, to the largest content it has shown, so moving the
        # cursor over nodes of other sizes repaints it in place and the panel does not jump.
        height, width = _size(content)
        known_height, known_width = self._sizes.get(box, (0, 0))
        static = self.query_one(f"#{box}", Static)
        grows = height > known_height or width > known_width
        if grows:
            known_height, known_width = max(height, known_height), max(width, known_width)
            self._sizes[box] = (known_height, known_width)
            static.styles.min_height = known_height
            static.styles.min_width = known_width + static.styles.padding.width
        static.update(content, layout=grows)

    def compose(self) -> ComposeResult:
        """Matrix, PCIe and NICs side by side, the multi-node line under them; the pair view, hidden."""
        with Horizontal(id="link-row"):
            yield Static(id="link-matrix", classes="link-box")
            yield Static(id="link-pcie", classes="link-box")
            yield Static(id="link-nics", classes="link-box")
        with Horizontal(id="link-pairs"):
            yield Static(id="pair-heatmap", classes="link-box")
            yield Static(id="pair-stragglers", classes="link-box")
        yield Static(id="link-rccl")

    def on_mount(self) -> None:
        """Start on the cursor node's links."""
        self.query_one("#link-pairs").display = False

    def set_pair_view(self, on: bool, board: PairBoard, keys: str) -> None:
        """Show the fleet's node-pair view (True) or the cursor node's links (False)."""
        self.pair_view = on
        self.query_one("#link-row").display = not on
        self.query_one("#link-pairs").display = on
        self._pairs_version = -1
        self.show_pairs(board, keys)

    def show_pairs(self, board: PairBoard, keys: str) -> None:
        """Repaint the multi-node parts if ``board`` changed since they were drawn."""
        if board.version == self._pairs_version:
            return
        self._pairs_version = board.version
        self.query_one("#link-rccl", Static).update(summary_content(board, keys))
        if self.pair_view:
            self._put("pair-heatmap", heatmap_content(board))
            self._put("pair-stragglers", stragglers_content(board))

    def show(self, row: NodeRow | None) -> None:
        """Repaint for ``row`` (None: nothing selected)."""
        self.current = row.name if row is not None else None
        if row is None:
            self._put("link-matrix", Content.styled("no node selected", "$muted"))
            self._put("link-pcie", Content(""))
            self._put("link-nics", Content(""))
            return
        floors = floors_for(self.packs, row.node.gpu_model)
        view = row.view
        self._put("link-matrix", Content.assemble((f"{safe(row.name)}  ", "bold $accent"), matrix_content(row, floors)))
        self._put("link-pcie", pcie_content(view.gpus if view is not None else (), floors))
        self._put("link-nics", nic_content(view.nics if view is not None else ()))
