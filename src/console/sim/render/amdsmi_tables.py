"""amd-smi's table-shaped outputs: ``xgmi``, ``topology``, ``monitor`` and the 7.x default box view.

Column widths follow the CLI's tabular logger: cells are left- or right-justified to fixed widths and
every row is right-stripped. The ROCm 6.4 rewrite widened the XGMI columns and added the link-status
table with its legend; the monitor headers were shortened at the same time.
"""

from __future__ import annotations

import random
from typing import Any

from console.sim.models import LinkState, SimGpu, SimNode
from console.sim.render.amdsmi_format import NA, Fmt, Q, celsius, resolve
from console.sim.render.amdsmi_metric import Reading
from console.sim.render.amdsmi_sections import MB, Gen, link_state_letter

KB = 1024


# ---------------------------------------------------------------------------------------------
# xgmi


def _traffic_kb(gpu: SimGpu, peer: SimGpu, rng: random.Random, write: bool) -> int:
    """Accumulated XGMI traffic since boot: small at idle, never zero on a trained link."""
    base = (gpu.kfd_gpu_id * 7 + peer.kfd_gpu_id * (3 if write else 5)) % 900
    return base + rng.randrange(1, 64)


def _readable(kb: int) -> str:
    """6.4+ auto-scaled traffic: KB, MB, GB with up to two decimals."""
    value, unit = float(kb), "KB"
    for bigger in ("MB", "GB", "TB", "PB"):
        if value < KB:
            break
        value, unit = value / KB, bigger
    return f"{round(value, 2):g} {unit}"


def _gpu_bit_rate(gpu: SimGpu) -> tuple[int, int]:
    """(bit rate, max bandwidth) amd-smi shows for a GPU: the slowest of its trained links."""
    direct = [link for link in gpu.xgmi.values() if link.links]
    slowest = min(direct, key=lambda link: link.bit_rate_gbps)
    return slowest.bit_rate_gbps, slowest.max_bandwidth_gbps // max(slowest.links, 1)


def _xgmi_gpus(node: SimNode) -> list[SimGpu]:
    """The GPUs amd-smi's xgmi tables name, as rows and as columns (a fault may leave one out of both)."""
    return [gpu for gpu in node.gpus if gpu.xgmi_listed]


def xgmi_metric(node: SimNode, gen: Gen, rng: random.Random) -> list[dict[str, Any]]:
    """Per-GPU link metrics with read/write totals to every enumerated GPU (``Q`` leaves)."""
    rows = []
    for gpu in _xgmi_gpus(node):
        bit_rate, max_bw = _gpu_bit_rate(gpu)
        links = []
        for peer in _xgmi_gpus(node):
            read: Q | str = NA
            write: Q | str = NA
            link = gpu.xgmi.get(peer.slot)
            # The library lists only trained links; a link that is down has no counters.
            if link is not None and link.links and link.state is not LinkState.DOWN:
                read = Q(_traffic_kb(gpu, peer, rng, False), "KB")
                write = Q(_traffic_kb(gpu, peer, rng, True), "KB")
            links.append({"gpu": peer.index, "bdf": peer.bdf, "read": read, "write": write})
        rows.append(
            {
                "gpu": gpu.index,
                "bdf": gpu.bdf,
                "link_metrics": {
                    "bit_rate": Q(bit_rate, "Gb/s"),
                    "max_bandwidth": Q(max_bw, "Gb/s"),
                    "link_type": "XGMI",
                    "links": links,
                },
            }
        )
    return rows


def _status_words(node: SimNode, dedicated: bool) -> list[tuple[SimGpu, list[str]]]:
    """Each printed row of the link-status table: a GPU and its words (a fault may print a row twice, the
    first time with one link down)."""
    rows = []
    for gpu in _status_rows(node):
        words = link_status(node, gpu, dedicated)
        if dedicated and gpu.xgmi_row_repeated is not None:
            peers = [peer.slot for peer in _xgmi_gpus(node)]
            if gpu.xgmi_row_repeated in peers:
                down = list(words)
                down[peers.index(gpu.xgmi_row_repeated)] = "D"
                rows.append((gpu, down))
        rows.append((gpu, words))
    return rows


def link_status(node: SimNode, gpu: SimGpu, dedicated: bool = True) -> list[str]:
    """Status of the links from ``gpu`` to every enumerated GPU: SELF, U, D (one letter per physical link).

    ``dedicated``: for ``xgmi -l``, which reads the states again after ``xgmi``'s table did (a link that
    dropped in between shows there only).
    """
    statuses = []
    for peer in _xgmi_gpus(node):
        link = gpu.xgmi.get(peer.slot)
        if peer is gpu:
            statuses.append("SELF")
        elif link is None or not link.links or not link.state_reported:
            statuses.append(NA)
        elif dedicated and link.link_status_word is not None:
            statuses.append(link.link_status_word)
        else:
            statuses.append("/".join([link_state_letter(link.state)] * link.links))
    return statuses


def _traffic_text(value: Any, gen: Gen) -> str:
    if isinstance(value, Q):
        return _readable(int(value.value)) if gen.scaled_traffic else f"{value.value} KB"
    return str(value)


def _metric_table(node: SimNode, gen: Gen, rows: list[dict[str, Any]]) -> list[str]:
    # (gpu#, bdf, bit_rate, max_bandwidth, link_type, read/write label) widths before and after 6.4
    widths = (7, 14, 10, 15, 11, 57) if gen.scaled_traffic else (7, 13, 9, 14, 10, 52)
    cell = 13
    head = "".join(
        name.ljust(w) for name, w in zip(("", "bdf", "bit_rate", "max_bandwidth", "link_type"), widths[:5], strict=True)
    )
    lines = [head + " ".join(gpu.bdf for gpu in _xgmi_gpus(node))]
    for row in rows:
        metrics = row["link_metrics"]
        first = (
            f"GPU{row['gpu']}".ljust(widths[0])
            + row["bdf"].ljust(widths[1])
            + f"{metrics['bit_rate'].value} Gb/s".ljust(widths[2])
            + f"{metrics['max_bandwidth'].value} Gb/s".ljust(widths[3])
            + metrics["link_type"]
        )
        lines.append(first.rstrip())
        for label, key in (("Read", "read"), ("Write", "write")):
            cells = "".join(_traffic_text(link[key], gen).ljust(cell) for link in metrics["links"])
            lines.append((" " + label.ljust(widths[5]) + cells).rstrip())
    return lines


def _status_rows(node: SimNode) -> list[SimGpu]:
    """The GPUs whose row the link-status table prints (a fault may leave rows out)."""
    return [gpu for gpu in _xgmi_gpus(node) if gpu.xgmi_status_row]


def _status_table(node: SimNode, dedicated: bool) -> list[str]:
    lines = ["       " + "bdf".ljust(14) + "".join(f"GPU{gpu.index}".ljust(14) for gpu in _xgmi_gpus(node))]
    for gpu, words in _status_words(node, dedicated):
        cells = "".join(status.ljust(14) for status in words)
        lines.append((f"GPU{gpu.index}".ljust(7) + gpu.bdf.ljust(14) + cells).rstrip())
    lines[0] = lines[0].rstrip()
    return lines


_LEGEND = (
    "Legend:",
    "  SELF = Current GPU",
    "  N/A = Not supported",
    "  U / D / X = Link is Up / Down / Disabled",
    "  Read / Write = GPU Metric Accumulated Read / Write",
)


def xgmi_text(node: SimNode, gen: Gen, rng: random.Random, metric: bool, status: bool) -> str:
    """``amd-smi xgmi`` as text: LINK METRIC TABLE, then (6.4+) XGMI LINK STATUS and the legend."""
    out: list[str] = []
    if metric:
        title = ["", "LINK METRIC TABLE:"] if gen.scaled_traffic else ["LINK METRIC TABLE:"]
        out += [*title, *_metric_table(node, gen, xgmi_metric(node, gen, rng)), ""]
    if status and gen.scaled_traffic:
        out += ["", "XGMI LINK STATUS:", *_status_table(node, dedicated=not metric), ""]
    if gen.scaled_traffic:
        out += ["", *_LEGEND]
    return "\n".join(out) + "\n"


def xgmi_json(node: SimNode, gen: Gen, rng: random.Random, metric: bool, status: bool) -> Any:
    """``amd-smi xgmi --json``: a list per GPU before ROCm 7, ``{"xgmi_metric", "link_status"}`` after."""
    metrics = resolve(xgmi_metric(node, gen, rng), Fmt.JSON) if metric else []
    dedicated = not metric  # ``xgmi -l`` alone; plain ``xgmi`` prints both tables from one read
    statuses = [
        {"gpu": gpu.index, "bdf": gpu.bdf, "link_status": words} for gpu, words in _status_words(node, dedicated)
    ]
    if gen.gpu_data:
        document: dict[str, Any] = {}
        if metric:
            document["xgmi_metric"] = [metrics]
        if status:
            document["link_status"] = statuses
        return document
    if not metric:
        return statuses
    if status and gen.scaled_traffic:
        by_gpu = {entry["gpu"]: entry["link_status"] for entry in statuses}
        for row in metrics:
            if row["gpu"] in by_gpu:
                row["link_status"] = by_gpu[row["gpu"]]
    return metrics


# ---------------------------------------------------------------------------------------------
# topology


def _pair(gpu: SimGpu, peer: SimGpu) -> dict[str, Any]:
    if peer is gpu:
        return {"access": "ENABLED", "weight": 0, "hops": 0, "type": "SELF", "bw": NA}
    link = gpu.xgmi[peer.slot]
    hops = link.hops
    return {"access": "ENABLED", "weight": 15 * hops, "hops": 1, "type": "XGMI", "bw": None}


TOPOLOGY_TABLES = (
    ("access", "ACCESS TABLE"),
    ("weight", "WEIGHT TABLE"),
    ("hops", "HOPS TABLE"),
    ("type", "LINK TYPE TABLE"),
    ("bw", "NUMA BW TABLE"),
)


def _numa_bw(node: SimNode) -> str:
    mbps = round(node.spec.xgmi_max_bandwidth_gbps * 97.65625)
    return f"{mbps}-{mbps}"


def topology_text(node: SimNode, tables: list[str]) -> str:
    """``amd-smi topology``: one BDF matrix per requested table, separated by blank lines."""
    blocks = []
    for key, title in TOPOLOGY_TABLES:
        if key not in tables:
            continue
        lines = [f"{title}:", " " * 13 + " ".join(gpu.bdf for gpu in node.gpus)]
        for gpu in node.gpus:
            cells = []
            for peer in node.gpus:
                value = _pair(gpu, peer)[key]
                cells.append(str(_numa_bw(node) if value is None else value).ljust(13))
            lines.append((gpu.bdf.ljust(13) + "".join(cells)).rstrip())
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def topology_json(node: SimNode) -> list[dict[str, Any]]:
    """``amd-smi topology --json``: per GPU, one entry per peer with every table's value."""
    result = []
    for gpu in node.gpus:
        links = []
        for peer in node.gpus:
            pair = _pair(gpu, peer)
            links.append(
                {
                    "gpu": peer.index,
                    "bdf": peer.bdf,
                    "weight": pair["weight"],
                    "link_status": pair["access"],
                    "link_type": pair["type"],
                    "num_hops": pair["hops"],
                    "bandwidth": _numa_bw(node) if pair["bw"] is None else NA,
                }
            )
        result.append({"gpu": gpu.index, "bdf": gpu.bdf, "links": links})
    return result


# ---------------------------------------------------------------------------------------------
# monitor


# group flag -> [(header, json key, width)]; ROCm 6.4 renamed and reordered the columns.
_MONITOR_COLUMNS: dict[str, list[tuple[str, str, int]]] = {
    "p": [("POWER", "power_usage", 7), ("PWR_CAP", "max_power", 9)],
    "t": [("GPU_T", "hotspot_temperature", 8), ("MEM_T", "memory_temperature", 8)],
    "u": [("GFX_CLK", "gfx_clk", 10), ("GFX%", "gfx", 7)],
    "m": [("MEM%", "mem", 7), ("MEM_CLOCK", "mem_clock", 11)],
    "e": [
        ("SINGLE_ECC", "single_bit_ecc", 12),
        ("DOUBLE_ECC", "double_bit_ecc", 12),
        ("PCIE_REPLAY", "pcie_replay", 13),
    ],
    "v": [("VRAM_USED", "vram_used", 11), ("VRAM_TOTAL", "vram_total", 12)],
    "V": [
        ("PVIOL", "pviol", 7),
        ("TVIOL", "tviol", 7),
        ("PHOT_TVIOL", "phot_tviol", 12),
        ("VR_TVIOL", "vr_tviol", 10),
        ("HBM_TVIOL", "hbm_tviol", 11),
    ],
}
_MONITOR_COLUMNS_6X: dict[str, list[tuple[str, str, int]]] = {
    **_MONITOR_COLUMNS,
    "p": [("POWER", "power_usage", 7)],
    "t": [("GPU_TEMP", "hotspot_temperature", 10), ("MEM_TEMP", "memory_temperature", 10)],
    "u": [("GFX_UTIL", "gfx", 10), ("GFX_CLOCK", "gfx_clk", 11)],
    "m": [("MEM_UTIL", "mem", 10), ("MEM_CLOCK", "mem_clock", 11)],
}
MONITOR_DEFAULT = ("p", "t", "u", "m", "e", "v")


def _monitor_values(node: SimNode, gpu: SimGpu, rng: random.Random) -> dict[str, Q | str | int]:
    reading = Reading.take(gpu, rng)
    pct = gpu.violations_pct

    def viol(key: str) -> Q | str:
        return Q(round(pct[key]), "%") if pct else NA

    return {
        "power_usage": Q(reading.power_w, "W"),
        "max_power": Q(int(gpu.power_cap_w), "W"),
        "hotspot_temperature": celsius(reading.hotspot_c),
        "memory_temperature": celsius(reading.mem_c),
        "gfx_clk": Q(reading.gfx_mhz, "MHz"),
        "gfx": Q(round(gpu.gfx_util_pct), "%"),
        "mem": Q(round(gpu.mem_util_pct), "%"),
        "mem_clock": Q(reading.mem_mhz, "MHz"),
        "single_bit_ecc": gpu.ecc_total("correctable"),
        "double_bit_ecc": gpu.ecc_total("uncorrectable"),
        "pcie_replay": gpu.pcie_replay_count,
        "vram_used": Q(reading.vram_used_mb, "MB"),
        "vram_total": Q(node.spec.vram_bytes // MB, "MB"),
        "pviol": viol("PVIOL"),
        "tviol": viol("TVIOL"),
        "phot_tviol": viol("PHOT_TVIOL"),
        "vr_tviol": viol("VR_TVIOL"),
        "hbm_tviol": viol("HBM_TVIOL"),
    }


def monitor(node: SimNode, gen: Gen, rng: random.Random, groups: list[str], fmt: Fmt) -> str | list[dict[str, Any]]:
    """``amd-smi monitor``: a fixed-width table in text, one object (or CSV row) per GPU otherwise."""
    table = _MONITOR_COLUMNS if gen.rocm >= (6, 4) else _MONITOR_COLUMNS_6X
    columns = [column for group in groups if group != "V" or gen.violations for column in table[group]]
    rows = []
    for gpu in node.gpus:
        values = _monitor_values(node, gpu, rng)
        rows.append({"gpu": gpu.index, **{key: values[key] for _, key, _ in columns}})
    if fmt is not Fmt.TEXT:
        resolved: list[dict[str, Any]] = resolve(rows, fmt)
        return resolved
    header = "GPU" + "".join(name.rjust(width) for name, _, width in columns)
    lines = [header]
    for row in resolve(rows, Fmt.TEXT):
        cells = "".join(str(row[key]).rjust(width) for _, key, width in columns)
        lines.append((str(row["gpu"]).rjust(3) + cells).rstrip())
    return "\n".join(lines) + "\n\n"


# ---------------------------------------------------------------------------------------------
# default view (ROCm 7)


_BOX = "+" + "-" * 78 + "+"
_SPLIT = "|" + "-" * 37 + "+" + "-" * 40 + "|"


def default_view(node: SimNode, rng: random.Random) -> str:
    """``amd-smi`` with no arguments on ROCm 7: the version box, two lines per GPU, the process box."""
    stack = node.stack
    head = f" AMD-SMI {stack.amdsmi_tool:<21}amdgpu version: {stack.amdgpu_driver:<9}ROCm version: {stack.rocm}"
    lines = [
        _BOX,
        f"|{head:<78}|",
        f"|{' Platform: Linux Baremetal':<78}|",
        _SPLIT,
        "| BDF                        GPU-Name | Mem-Uti   Temp   UEC       Power-Usage |",
        "| GPU  HIP-ID  OAM-ID  Partition-Mode | GFX-Uti    Fan               Mem-Usage |",
        "|" + "=" * 37 + "+" + "=" * 40 + "|",
    ]
    for number, gpu in enumerate(node.gpus):
        reading = Reading.take(gpu, rng)
        left1 = f" {gpu.bdf}{node.spec.market_name:>23} "
        body1 = f"{round(gpu.mem_util_pct)} %".ljust(9) + f"{reading.hotspot_c} °C".ljust(8)
        body1 += str(gpu.ecc_total("uncorrectable"))
        power = f"{reading.power_w}/{int(gpu.power_cap_w)} W"
        left2 = f" {gpu.index:>3}{gpu.index:>8}{gpu.oam_id:>8}{'SPX/NPS1':>16} "
        body2 = f"{round(gpu.gfx_util_pct)} %".ljust(11) + NA
        memory = f"{reading.vram_used_mb}/{node.spec.vram_bytes // MB - 16} MB"
        lines.append(f"|{left1}| {body1}{power.rjust(38 - len(body1))} |")
        lines.append(f"|{left2}| {body2}{memory.rjust(38 - len(body2))} |")
        last = number == len(node.gpus) - 1
        lines.append("+" + "-" * 37 + "+" + "-" * 40 + "+" if last else _SPLIT)
    lines += [
        _BOX,
        f"|{' Processes:':<78}|",
        "|  GPU        PID  Process Name          GTT_MEM  VRAM_MEM  MEM_USAGE     CU % |",
        "|" + "=" * 78 + "|",
        f"|{'  No running processes found':<78}|",
        _BOX,
    ]
    return "\n".join(lines) + "\n"
