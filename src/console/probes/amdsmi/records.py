"""One amd-smi GPU entry (from JSON, text or CSV, keys lower_snake_case) -> typed GPU records.

The tables below name every place a fact is printed across releases: nested JSON/text paths first,
then the flattened leaf names of ``--csv`` and the column keys of ``monitor``/default-view tables.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from console.model.amdsmi import ClockLevels, EngineActivity, GpuStaticDetails, PartitionState
from console.model.gpu import (
    BadPage,
    BadPages,
    EccBlock,
    EccCounts,
    GpuIdentity,
    GpuMetrics,
    GpuProcess,
    GpuRecord,
    PcieLink,
    Violation,
)
from console.probes.amdsmi.fields import (
    ABSENT,
    Converter,
    assign_number,
    finite_int,
    is_mapping,
    leaves,
    lookup,
    max_of,
    number_field,
    pick,
    text_field,
    text_of,
    to_bytes_default,
    to_celsius,
    to_count,
    to_gbps,
    to_gts,
    to_int,
    to_joules,
    to_mbps,
    to_megabytes_as_bytes,
    to_mhz,
    to_pcie_gen,
    to_percent,
    to_watts,
)
from console.probes.values import na_reason, normalise_bdf, parse_quantity

Entry = Mapping[str, Any]
# (field, where it may be printed, converter or None for verbatim text, integer?)
FieldSpec = tuple[str, tuple[str, ...], Converter | None, bool]


class FieldTable:
    """Field specs indexed by the top-level key each of their paths starts with.

    An entry carries a handful of top-level keys; looking up only the specs that can match them
    (in their declared order, so the first present alias still wins) is most of a parse's CPU saved.
    """

    def __init__(self, specs: list[FieldSpec]) -> None:
        self.specs = specs
        self._by_head: dict[str, list[int]] = {}
        for position, (_, paths, _, _) in enumerate(specs):
            for path in paths:
                found = self._by_head.setdefault(path.split(".", 1)[0], [])
                if position not in found:
                    found.append(position)
        # The GPU entries of one output share their keys, and outputs their layouts: the specs for a set
        # of keys are found once. Bounded, and only for entries of a usual size (garbage makes big ones).
        self._for_keys = functools.lru_cache(maxsize=256)(self._relevant_to)

    def relevant(self, entry: Entry) -> tuple[FieldSpec, ...]:
        """The specs with a path under one of ``entry``'s keys, in declared order."""
        keys = tuple(entry)
        return self._for_keys(keys) if len(keys) <= _CACHED_KEYS else self._relevant_to(keys)

    def _relevant_to(self, keys: tuple[str, ...]) -> tuple[FieldSpec, ...]:
        by_head = self._by_head
        found = [positions for key in keys if (positions := by_head.get(key)) is not None]
        if not found:
            return ()
        # Most entries reach one head of a table: its positions are already in order, with no merge.
        positions = found[0] if len(found) == 1 else sorted(set().union(*found))
        specs = self.specs
        return tuple(specs[i] for i in positions)


_CACHED_KEYS = 64
_IDENTITY = FieldTable(
    [
        ("uuid", ("uuid", "gpu_uuid"), None, False),
        ("kfd_gpu_id", ("kfd_id",), to_int, True),
        ("kfd_node", ("node_id",), to_int, True),
        ("market_name", ("asic.market_name", "market_name", "gpu_name"), None, False),
        ("vendor_id", ("asic.vendor_id", "vendor_id"), None, False),
        ("device_id", ("asic.device_id", "device_id"), None, False),
        ("subsystem_id", ("asic.subsystem_id", "subsystem_id"), None, False),
        ("revision_id", ("asic.rev_id", "rev_id"), None, False),
        ("serial", ("asic.asic_serial", "asic_serial"), None, False),
        ("gfx_target", ("asic.target_graphics_version", "target_graphics_version"), None, False),
        ("compute_units", ("asic.num_compute_units", "num_compute_units"), to_int, True),
        ("oam_id", ("asic.oam_id", "oam_id"), to_int, True),
        ("product_name", ("board.product_name", "product_name"), None, False),
        ("vbios_version", ("ifwi.version", "vbios.version", "vbios.vbios_version"), None, False),
        ("vbios_part_number", ("ifwi.part_number", "vbios.part_number"), None, False),
        ("partition_id", ("partition.partition_id", "partition_id"), to_int, True),
    ]
)
_PARTITION_PATHS = {
    "compute_partition": (
        "partition.accelerator_partition",
        "partition.compute_partition",
        "accelerator_partition",
        "compute_partition",
        "partition_mode",
    ),
    "memory_partition": ("partition.memory_partition", "memory_partition", "memory"),
}
_PARTITION_HEADS = frozenset(path.split(".")[0] for paths in _PARTITION_PATHS.values() for path in paths)
_PARTITION_NAME = re.compile(r"\b(NPS\d+|SPX|DPX|TPX|QPX|CPX)\b", re.IGNORECASE)

_METRICS = FieldTable(
    [
        ("edge_temp_c", ("temperature.edge", "edge_temperature"), to_celsius, False),
        ("hotspot_temp_c", ("temperature.hotspot", "temperature.junction", "hotspot_temperature"), to_celsius, False),
        ("mem_temp_c", ("temperature.mem", "temperature.vram", "memory_temperature"), to_celsius, False),
        (
            "power_w",
            (
                "power.socket_power",
                "power.current_socket_power",
                "power.average_socket_power",
                "socket_power",
                "power_usage",
            ),
            to_watts,
            False,
        ),
        ("power_cap_w", ("power.power_limit", "power_cap", "max_power"), to_watts, False),
        (
            "gfx_clock_mhz",
            ("clock.gfx_0.clk", "clock.gfx.clk", "clock.gfx.cur_clk", "gfx_0_clk", "gfx_clk"),
            to_mhz,
            False,
        ),
        (
            "mem_clock_mhz",
            ("clock.mem_0.clk", "clock.mem.clk", "clock.mem.cur_clk", "mem_0_clk", "mem_clock"),
            to_mhz,
            False,
        ),
        ("gfx_util_pct", ("usage.gfx_activity", "usage.gfx_usage", "gfx_activity", "gfx"), to_percent, False),
        ("mem_util_pct", ("usage.umc_activity", "usage.mem_activity", "umc_activity", "mem"), to_percent, False),
        ("vram_total_bytes", ("mem_usage.total_vram", "total_vram", "vram_total"), to_megabytes_as_bytes, True),
        ("vram_used_bytes", ("mem_usage.used_vram", "used_vram", "vram_used"), to_megabytes_as_bytes, True),
        ("energy_j", ("energy.total_energy_consumption", "total_energy_consumption"), to_joules, False),
        ("fan_pct", ("fan.usage", "fan"), to_percent, False),
    ]
)
_PCIE = FieldTable(
    [
        ("width", ("pcie.width", "pcie_width"), to_int, True),
        ("speed_gts", ("pcie.speed", "pcie_speed"), to_gts, False),
        ("bandwidth_mbps", ("pcie.bandwidth", "pcie_bw", "pcie_bandwidth"), to_mbps, False),
        ("replay_count", ("pcie.replay_count", "replay_count", "pcie_replay"), to_count, True),
        ("replay_rollover_count", ("pcie.replay_roll_over_count", "replay_roll_over_count"), to_count, True),
        ("l0_to_recovery_count", ("pcie.l0_to_recovery_count", "l0_to_recovery_count"), to_count, True),
        ("nak_sent_count", ("pcie.nak_sent_count", "nak_sent_count"), to_count, True),
        ("nak_received_count", ("pcie.nak_received_count", "nak_received_count"), to_count, True),
    ]
)
_ECC = FieldTable(
    [
        (
            "correctable",
            ("ecc.total_correctable_count", "ecc.correctable_count", "total_correctable_count", "single_bit_ecc"),
            to_count,
            True,
        ),
        (
            "uncorrectable",
            (
                "ecc.total_uncorrectable_count",
                "ecc.uncorrectable_count",
                "total_uncorrectable_count",
                "double_bit_ecc",
                "uec",
            ),
            to_count,
            True,
        ),
        ("deferred", ("ecc.total_deferred_count", "ecc.deferred_count", "total_deferred_count"), to_count, True),
        ("cache_correctable", ("ecc.cache_correctable_count", "cache_correctable_count"), to_count, True),
        ("cache_uncorrectable", ("ecc.cache_uncorrectable_count", "cache_uncorrectable_count"), to_count, True),
    ]
)
_STATIC = FieldTable(
    [
        ("driver_name", ("driver.name", "driver.driver_name"), None, False),
        ("driver_version", ("driver.version", "driver.driver_version"), None, False),
        ("os_kernel_version", ("driver.os_kernel_version",), None, False),
        ("max_pcie_width", ("bus.max_pcie_width", "max_pcie_width"), to_int, True),
        ("max_pcie_speed_gts", ("bus.max_pcie_speed", "bus.pcie_speed", "max_pcie_speed"), to_gts, False),
        ("pcie_interface_gen", ("bus.pcie_interface_version", "pcie_interface_version"), to_pcie_gen, True),
        ("slot_type", ("bus.slot_type", "slot_type"), None, False),
        (
            "power_cap_w",
            ("limit.ppt0.socket_power_limit", "limit.socket_power", "limit.power", "limit.power_cap"),
            to_watts,
            False,
        ),
        (
            "power_cap_max_w",
            ("limit.ppt0.max_power_limit", "limit.max_power", "limit.max_power_limit"),
            to_watts,
            False,
        ),
        (
            "power_cap_min_w",
            ("limit.ppt0.min_power_limit", "limit.min_power", "limit.min_power_limit"),
            to_watts,
            False,
        ),
        ("slowdown_edge_temp_c", ("limit.slowdown_edge_temperature",), to_celsius, False),
        ("slowdown_hotspot_temp_c", ("limit.slowdown_hotspot_temperature",), to_celsius, False),
        ("slowdown_vram_temp_c", ("limit.slowdown_vram_temperature",), to_celsius, False),
        ("shutdown_edge_temp_c", ("limit.shutdown_edge_temperature",), to_celsius, False),
        ("shutdown_hotspot_temp_c", ("limit.shutdown_hotspot_temperature",), to_celsius, False),
        ("shutdown_vram_temp_c", ("limit.shutdown_vram_temperature",), to_celsius, False),
        ("vram_type", ("vram.type", "vram.vram_type"), None, False),
        ("vram_vendor", ("vram.vendor", "vram.vram_vendor"), None, False),
        ("vram_size_bytes", ("vram.size", "vram.vram_size"), to_megabytes_as_bytes, True),
        ("vram_bit_width", ("vram.bit_width", "vram.vram_bit_width"), to_int, True),
        ("vram_max_bandwidth_gbps", ("vram.max_bandwidth",), to_gbps, False),
        ("numa_node", ("numa.node",), to_int, True),
        ("numa_affinity", ("numa.affinity",), to_int, True),
        ("ras_eeprom_version", ("ras.eeprom_version",), None, False),
        ("process_isolation", ("process_isolation",), None, False),
    ]
)

# Violation counters: amd-smi key stem -> the name the docs and `monitor --violation` use.
_VIOLATION_NAMES = {
    "ppt": "PVIOL",
    "socket_thermal": "TVIOL",
    "prochot": "PHOT_TVIOL",
    "vr_thermal": "VR_TVIOL",
    "hbm_thermal": "HBM_TVIOL",
    "gfx_clk_below_host_limit": "GFX_CLKVIOL",
    "gfx_clk_below_host_limit_power": "GFXCLK_PVIOL",
    "gfx_clk_below_host_limit_thermal": "GFXCLK_TVIOL",
    "total_gfx_clk_below_host_limit": "GFXCLK_TOTALVIOL",
    "low_utilization": "LOW_UTILVIOL",
}
_VIOLATION_SUFFIXES = {
    "_violation_activity": "percent",
    "_violation_percentage": "percent",
    "_percentage": "percent",
    "_violation_status": "active",
    "_accumulated": "accumulated",
}
_METRIC_SECTIONS = {
    "usage", "power", "temperature", "pcie", "ecc", "ecc_blocks", "fan", "voltage_curve", "overdrive",
    "mem_overdrive", "perf_level", "xgmi_err", "energy", "mem_usage", "throttle", "violation", "voltage",
    "gpu_board", "base_board",
}  # fmt: skip
_METRIC_LEAVES = {
    "total_energy_consumption", "socket_power", "gfx_activity", "umc_activity", "total_correctable_count",
    "total_uncorrectable_count", "gfx_0_clk", "total_vram", "used_vram", "power_usage", "hotspot_temperature",
    "gfx_clk", "single_bit_ecc", "double_bit_ecc", "uec",
}  # fmt: skip
_STATIC_SECTIONS = {
    "asic", "bus", "vbios", "ifwi", "limit", "driver", "board", "ras", "numa", "vram", "cache_info", "cache",
    "soc_pstate", "xgmi_plpd", "process_isolation", "profile", "dfc_ucode", "fb_info", "num_vf", "mem_carveout",
}  # fmt: skip
_STATIC_LEAVES = {"market_name", "vendor_id", "device_id", "max_pcie_width", "max_pcie_speed", "asic_serial"}
_PARTITION_KEYS = {"partition", "memory_partition", "accelerator_partition", "compute_partition"}
_LIST_KEYS = {"bdf", "uuid", "kfd_id", "node_id", "gpu_bdf", "gpu_uuid", "hip_id", "hsa_id", "render", "card"}
_IGNORED_KEYS = {"gpu", "timestamp", "xcp"}


def _read(values: dict[str, Any], unavailable: dict[str, str], entry: Entry, table: FieldTable) -> None:
    """The table's fields found in ``entry``, into ``values`` (or why not into ``unavailable``).

    Gathered, and the model built from them once: assigning each field to a model validated it alone,
    ~1,000 validations per node.
    """
    for name, paths, convert, integer in table.relevant(entry):
        raw = pick(entry, paths)
        if convert is None:
            text_field(values, unavailable, name, raw)
        else:
            number_field(values, unavailable, name, raw, convert, integer=integer)


def identity_of(entry: Entry) -> GpuIdentity:
    """Who the entry is about: index, PCI address, ASIC/board/IFWI identity, partition."""
    values: dict[str, Any] = {}
    unavailable: dict[str, str] = {}
    number_field(values, unavailable, "index", lookup(entry, "gpu"), to_int, integer=True)
    raw_bdf = pick(entry, ("bus.bdf", "bdf", "gpu_bdf"))
    if raw_bdf is not ABSENT:
        bdf = normalise_bdf(text_of(raw_bdf))
        if bdf is None:
            unavailable["bdf"] = na_reason(raw_bdf) or f"not a PCI address: {str(raw_bdf)[:40]}"
        else:
            values["bdf"] = bdf
    _read(values, unavailable, entry, _IDENTITY)
    # Most entries print no partition at all: one test of their keys instead of eight absent aliases.
    for name, paths in _PARTITION_PATHS.items() if not _PARTITION_HEADS.isdisjoint(entry) else ():
        raw = pick(entry, paths)
        text = text_of(raw)
        # A set result holds a sentence ("Successfully set memory partition to NPS4"), not a mode.
        if text is not None and " " not in text and _PARTITION_NAME.fullmatch(text.split("/")[0]):
            values[name] = text.upper()
        elif raw is not ABSENT and text is None:
            unavailable[name] = na_reason(raw) or "N/A"
    return GpuIdentity(**values, unavailable=unavailable)


def metrics_of(entry: Entry) -> GpuMetrics | None:
    """Live telemetry, when the entry carries any."""
    # Read first, then judged present: a field read (or found N/A) is a field printed, and a test of
    # presence alone cost as much as the read.
    values: dict[str, Any] = {}
    unavailable: dict[str, str] = {}
    _read(values, unavailable, entry, _METRICS)
    pcie: dict[str, Any] = {}
    pcie_unavailable: dict[str, str] = {}
    _read(pcie, pcie_unavailable, entry, _PCIE)
    has_pcie = bool(pcie or pcie_unavailable)
    if not (has_pcie or values or unavailable or _violation_section(entry) is not ABSENT):
        return None
    text_field(values, unavailable, "throttle_status", pick(entry, ("power.throttle_status", "throttle_status")))
    _xgmi_error_status(values, unavailable, pick(entry, ("xgmi_err", "xgmi_err.status")))
    values["violations"] = violations_of(entry, unavailable)
    if has_pcie:
        values["pcie"] = PcieLink(**pcie, unavailable=pcie_unavailable)
    return GpuMetrics(**values, unavailable=unavailable)


_XGMI_STATUS = {"NO_ERRORS": "none", "ERROR": "error", "MULTIPLE_ERRORS": "multiple errors"}


def _xgmi_error_status(values: dict[str, Any], unavailable: dict[str, str], raw: Any) -> None:
    """``AMDSMI_XGMI_STATUS_NO_ERRORS`` (or ``NO_ERRORS``) -> ``none``; N/A and unknown words are unavailable."""
    if raw is ABSENT:
        return
    text = text_of(raw)
    status = _XGMI_STATUS.get((text or "").upper().removeprefix("AMDSMI_XGMI_STATUS_"))
    if status is None:
        unavailable["xgmi_error_status"] = na_reason(raw) or f"not an XGMI status: {str(raw)[:40]}"
    else:
        values["xgmi_error_status"] = status


def _violation_section(entry: Entry) -> Any:
    return pick(entry, ("throttle", "violation"))


def violations_of(entry: Entry, unavailable: dict[str, str] | None = None) -> list[Violation]:
    """PVIOL/TVIOL/... shares, active flags and accumulators (max over XCPs where per-partition).

    A share printed and not read as a number goes to ``unavailable`` as ``violation.<NAME>`` with why: a
    counter left out of the list would read as one never printed ("not supported"), and a garbled or NaN
    share is a reading lost. So is a number that is no share (-3 %, 250 %), even on one XCP of several,
    whose impossible share would vanish under the others' maximum.
    """
    section = _violation_section(entry)
    if not is_mapping(section):
        return []
    grouped: dict[str, dict[str, Any]] = {}
    for key, value in section.items():
        split = _violation_role(key)
        if split is not None:
            grouped.setdefault(split[0], {})[split[1]] = value
    found = []
    for stem, roles in grouped.items():
        name = _VIOLATION_NAMES.get(stem, stem.upper())
        percent = None
        if "percent" in roles:
            share = max_of(roles["percent"], to_percent)
            percent = share.value
            if unavailable is not None:
                unread = (share.reason or "N/A") if percent is None else _unreadable(roles["percent"], to_percent)
                if unread:
                    unavailable[f"violation.{name}"] = unread
        accumulated = finite_int(max_of(roles["accumulated"], to_count)) if "accumulated" in roles else None
        active = _any_active(roles["active"]) if "active" in roles else None
        if percent is None and accumulated is None and active is None:
            continue
        found.append(Violation(name=name, percent=percent, active=active, accumulated=accumulated))
    return found


def _unreadable(value: Any, convert: Converter) -> str | None:
    """Why a number printed under ``value`` is no reading (``convert`` refused it), or None. N/A and other
    no-value words are not counted: they say the counter is not there, not that its read failed."""
    for leaf in leaves(value):
        if na_reason(leaf) is None and parse_quantity(leaf).value is not None:
            q = convert(leaf)
            if q.value is None:
                return q.reason or "unreadable"
    return None


@functools.lru_cache(maxsize=1024)
def _violation_role(key: str) -> tuple[str, str] | None:
    """``ppt_violation_activity`` -> (``ppt``, ``percent``); None for a key of no violation counter.

    Cached: the same ~16 keys per GPU, every sweep, each tried against every suffix.
    """
    for suffix, role in _VIOLATION_SUFFIXES.items():
        if key.endswith(suffix):
            return key[: -len(suffix)], role
    return None


def _any_active(value: Any) -> bool | None:
    states = []
    for leaf in leaves(value):
        word = str(leaf).strip().upper().replace("_", " ")
        if word in ("ACTIVE", "TRUE", "1", "YES"):
            states.append(True)
        elif word in ("NOT ACTIVE", "INACTIVE", "FALSE", "0", "NO"):
            states.append(False)
    return any(states) if states else None


_ENGINE_KEYS = ("vcn_activity", "jpeg_activity", "gfx_busy_inst", "jpeg_busy", "vcn_busy", "gfx_busy_acc")
_XCP_KEY = re.compile(r"xcp_(\d+)")


def engines_of(entry: Entry, gpu_index: int | None) -> list[EngineActivity]:
    """Per-engine busy lists of ``metric --usage``; per-XCP dicts give one list per partition."""
    usage = lookup(entry, "usage")
    if not is_mapping(usage):
        return []
    found = []
    for key in _ENGINE_KEYS:
        value = usage.get(key)
        if is_mapping(value) and not ("value" in value and "unit" in value):
            for xcp_key, per_xcp in value.items():
                xcp = _XCP_KEY.fullmatch(xcp_key)
                percents = [to_percent(leaf).value for leaf in leaves(per_xcp)]
                found.append(
                    EngineActivity(
                        gpu_index=gpu_index, engine=key, xcp=int(xcp.group(1)) if xcp else None, percents=percents
                    )
                )
        elif value is not None and (isinstance(value, list) or str(value).strip().startswith("[")):
            percents = [to_percent(leaf).value for leaf in leaves(value)]
            found.append(EngineActivity(gpu_index=gpu_index, engine=key, percents=percents))
    return found


def ecc_of(entry: Entry) -> EccCounts | None:
    """ECC totals and per-block counts, when printed."""
    blocks = _ecc_blocks(entry)
    values: dict[str, Any] = {}
    unavailable: dict[str, str] = {}
    _read(values, unavailable, entry, _ECC)
    if not (values or unavailable or blocks):
        return None
    return EccCounts(blocks=blocks, **values, unavailable=unavailable)


_FLAT_BLOCK_COUNT = re.compile(r"^([a-z0-9_]+?)_(correctable|uncorrectable|deferred)_count$")
_BLOCK_COUNTS = frozenset({"correctable_count", "uncorrectable_count", "deferred_count"})


def _is_block_section(value: Any) -> bool:
    """``UMC: {CORRECTABLE_COUNT, UNCORRECTABLE_COUNT, DEFERRED_COUNT}``: one ECC block's counts."""
    return is_mapping(value) and bool(value) and value.keys() <= _BLOCK_COUNTS


def _ecc_blocks(entry: Entry) -> list[EccBlock]:
    section = lookup(entry, "ecc_blocks")
    if not is_mapping(section):
        # A grep-filtered copy (``grep -A3 UMC``) keeps a block's section without its ECC_BLOCKS line.
        section = {key: value for key, value in entry.items() if _is_block_section(value)} or None
    counts: dict[str, dict[str, Any]] = {}
    if is_mapping(section):
        for block, values in section.items():
            if is_mapping(values):
                counts[block.upper()] = {k.removesuffix("_count"): v for k, v in values.items()}
    else:
        # --csv flattens ecc_blocks to umc_correctable_count, sdma_deferred_count, ...
        for key, value in entry.items():
            match = _FLAT_BLOCK_COUNT.match(key) if key.endswith("_count") else None  # most keys: no regex
            if match and match.group(1) not in ("total", "cache"):
                counts.setdefault(match.group(1).upper(), {})[match.group(2)] = value
    return [
        EccBlock(
            block=block,
            correctable=finite_int(to_int(values.get("correctable"))),
            uncorrectable=finite_int(to_int(values.get("uncorrectable"))),
            deferred=finite_int(to_int(values.get("deferred"))),
        )
        for block, values in counts.items()
    ]


def firmware_of(entry: Entry) -> dict[str, str]:
    """Firmware block -> version from ``fw_list`` (a list in JSON, ``FW n:`` sections in text)."""
    fw_list = pick(entry, ("fw_list", "firmware"))
    items = fw_list.values() if is_mapping(fw_list) else fw_list if isinstance(fw_list, list) else []
    firmware: dict[str, str] = {}
    for item in items:
        if not is_mapping(item):
            continue
        name = text_of(pick(item, ("fw_id", "fw_name", "name")))
        version = text_of(pick(item, ("fw_version", "version")))
        if name and version:
            firmware[name.removeprefix("AMDSMI_FW_ID_").removeprefix("FW_ID_")] = version
    if "fw_id" in entry and "fw_version" in entry:  # one --csv row per firmware block
        name, version = text_of(entry["fw_id"]), text_of(entry["fw_version"])
        if name and version:
            firmware[name] = version
    return firmware


_BAD_PAGE_SECTIONS = {
    "retired": "retired",
    "pending": "pending",
    "un_res": "unreservable",
    "unreservable": "unreservable",
}


def bad_pages_of(entry: Entry) -> BadPages | None:
    """Retired/pending/unreservable pages (``bad-pages``) and the threshold (``static --ras``)."""
    present = [key for key in _BAD_PAGE_SECTIONS if key in entry]
    threshold = pick(entry, ("ras.bad_page_threshold", "bad_page_threshold"))
    if not present and threshold is ABSENT:
        return None
    pages = BadPages()
    assign_number(pages, "threshold", threshold, to_int, integer=True)
    raw_exceeded = pick(entry, ("ras.bad_page_threshold_exceeded", "bad_page_threshold_exceeded"))
    exceeded = text_of(raw_exceeded)
    if exceeded is not None and exceeded.lower() in ("true", "false"):
        pages.threshold_exceeded = exceeded.lower() == "true"
    elif raw_exceeded is not ABSENT:
        # Printed, and neither True nor False ("YES"): not the threshold left unexceeded.
        reason = na_reason(raw_exceeded) if exceeded is None else None
        pages.mark_unavailable("threshold_exceeded", reason or f"not true or false: {str(raw_exceeded)[:40]}")
    for key in present:
        status = _BAD_PAGE_SECTIONS[key]
        value = entry[key]
        reason = na_reason(value) if isinstance(value, str | type(None)) else None
        if reason is None and isinstance(value, str) and not _no_bad_pages(value):
            # Any other sentence ("Error reading bad pages") is no listing: read as none, it passed the GPU.
            reason = f"not a bad-page listing: {value.strip()[:60]}"
        if reason is not None:
            pages.mark_unavailable(status, reason)
            continue
        listed, problem = _pages(value, status)
        getattr(pages, status).extend(listed)
        if problem is not None:
            # One record not read is a count unknown: the pages read are kept, the listing is no count.
            pages.mark_unavailable(status, problem)
    return pages


def _no_bad_pages(text: str) -> bool:
    """amd-smi's sentence for an empty listing, ``No bad pages found.``, the only text that means none."""
    return " ".join(text.lower().split()).rstrip(".") == "no bad pages found"


def _pages(value: Any, status: str) -> tuple[list[BadPage], str | None]:
    """The pages of one listing, and what in it was not read (a record dropped would be a page uncounted)."""
    if isinstance(value, str):  # "No bad pages found." (any other sentence is unavailable, above)
        return [], None
    records = value if isinstance(value, list) else [value]
    pages = []
    problems = []
    for record in records:
        if not is_mapping(record):
            problems.append(f"a page record that is no mapping: {str(record)[:40]}")
            continue
        addresses = record.get("page_address")
        # Text output prints several pages as repeated keys at one level: zip them back.
        if isinstance(addresses, list):
            raw_sizes = record.get("page_size")
            sizes: list[Any] = raw_sizes if isinstance(raw_sizes, list) else []
            for i, address in enumerate(addresses):
                pages.append(_page(address, sizes[i] if i < len(sizes) else None, status))
        elif addresses is not None and text_of(addresses) is not None:
            pages.append(_page(addresses, record.get("page_size"), text_of(record.get("status")) or status))
        else:
            problems.append(f"a page record without its address: {str(dict(record))[:60]}")
    return pages, "; ".join(problems) or None


def _page(address: Any, size: Any, status: str) -> BadPage:
    return BadPage(address=str(address).strip(), size_bytes=finite_int(to_int(size)), status=status.lower())


def processes_of(entry: Entry, gpu_index: int | None, gpu_bdf: str | None) -> list[GpuProcess]:
    """Processes holding the GPU; ``process_info`` is a sentence when there are none."""
    raw = pick(entry, ("process_list", "process_info"))
    items = raw if isinstance(raw, list) else [raw] if raw is not ABSENT else [entry] if "pid" in entry else []
    found = []
    for item in items:
        info = item.get("process_info", item) if is_mapping(item) else item
        if not is_mapping(info):
            continue
        pid = finite_int(to_int(info.get("pid")))
        if pid is None:
            continue
        vram = pick(info, ("memory_usage.vram_mem", "vram_mem"))
        found.append(
            GpuProcess(
                gpu_index=gpu_index,
                gpu_bdf=gpu_bdf,
                pid=pid,
                name=text_of(info.get("name")),
                vram_bytes=finite_int(to_bytes_default(vram)) if vram is not ABSENT else None,
            )
        )
    return found


def details_of(entry: Entry, identity: GpuIdentity) -> GpuStaticDetails | None:
    """amd-smi ``static`` facts beyond identity (limits, VRAM, driver, RAS, clock levels)."""
    levels = clock_levels_of(entry)
    ras = lookup(entry, "ras")
    values: dict[str, Any] = {}
    unavailable: dict[str, str] = {}
    _read(values, unavailable, entry, _STATIC)
    if not (values or unavailable or is_mapping(ras) or levels):
        return None
    if is_mapping(ras):
        values["ras_schemas"] = {k: str(v) for k, v in ras.items() if k.endswith("_schema") and text_of(v)}
        states = ras.get("ecc_block_state")
        if is_mapping(states):
            values["ecc_block_state"] = {k.upper(): str(v) for k, v in states.items() if text_of(v)}
    return GpuStaticDetails(
        gpu_index=identity.index, bdf=identity.bdf, clock_levels=levels, **values, unavailable=unavailable
    )


_LEVEL_KEY = re.compile(r"level_(\d+)")


def clock_levels_of(entry: Entry) -> list[ClockLevels]:
    """DPM levels per clock domain from ``static --clock`` (``Level N`` keys, MHz strings or objects)."""
    clock = lookup(entry, "clock")
    if not is_mapping(clock):
        return []
    domains = []
    for domain, spec in clock.items():
        if not is_mapping(spec) or "frequency_levels" not in spec:
            continue
        levels = spec.get("frequency_levels")
        values: list[float | None] = []
        if is_mapping(levels):
            numbered = sorted(
                ((int(m.group(1)), v) for k, v in levels.items() if (m := _LEVEL_KEY.fullmatch(k))),
                key=lambda item: item[0],
            )
            values = [to_mhz(v).value for _, v in numbered[:64]]
        current = finite_int(to_int(pick(spec, ("current_level", "current"))))
        domains.append(ClockLevels(domain=domain, current_level=current, levels_mhz=values))
    return domains


def partition_of(entry: Entry, identity: GpuIdentity) -> PartitionState | None:
    """Partition modes, or the verbatim result of a ``set`` that changed them."""
    message = None
    for paths in _PARTITION_PATHS.values() if not _PARTITION_HEADS.isdisjoint(entry) else ():
        text = text_of(pick(entry, paths))
        if text and " " in text:
            message = text
    if identity.compute_partition is None and identity.memory_partition is None and message is None:
        return None
    memory = identity.memory_partition
    if memory is None and message and (found := _PARTITION_NAME.findall(message)):
        memory = found[-1].upper() if found[-1].upper().startswith("NPS") else None
    return PartitionState(
        gpu_index=identity.index,
        memory_partition=memory,
        compute_partition=identity.compute_partition,
        partition_ids=[identity.partition_id] if identity.partition_id is not None else [],
        message=message,
    )


def record_of(entry: Entry) -> GpuRecord:
    """The shared GPU record of one entry."""
    identity = identity_of(entry)
    return GpuRecord(
        identity=identity,
        metrics=metrics_of(entry),
        firmware=firmware_of(entry),
        ecc=ecc_of(entry),
        bad_pages=bad_pages_of(entry),
    )


def infer_kind(entries: Sequence[Entry]) -> str | None:
    """The amd-smi subcommand that prints entries with these keys."""
    keys: set[str] = set()
    for entry in entries:
        keys.update(k for k in entry if k not in _IGNORED_KEYS)
    if not keys:
        return None
    ordered = [
        ("firmware", {"fw_list", "fw_id"}),
        ("bad-pages", set(_BAD_PAGE_SECTIONS)),
        ("process", {"process_list", "process_info", "pid"}),
        ("xgmi", {"link_metrics"}),
        ("topology", {"links", "link_accessibility", "num_hops", "hops"}),
    ]
    for kind, markers in ordered:
        if keys & markers:
            return kind
    metric_score = len(keys & (_METRIC_SECTIONS | _METRIC_LEAVES))
    metric_score += any(_is_block_section(value) for entry in entries for value in entry.values())
    static_score = len(keys & (_STATIC_SECTIONS | _STATIC_LEAVES))
    if "clock" in keys:
        if any(clock_levels_of(entry) for entry in entries):
            static_score += 1
        else:
            metric_score += 1
    if metric_score or static_score:
        return "metric" if metric_score >= static_score else "static"
    if keys & _PARTITION_KEYS:
        return "partition"
    if keys & _LIST_KEYS:
        return "list"
    return None


def _sections_of_leaves(*tables: FieldTable) -> dict[str, str]:
    """Leaf key -> the one section the tables read it under (``hotspot`` -> ``temperature``); a leaf printed
    under several sections (``version``: IFWI and VBIOS) is left out, as its section cannot be told."""
    sections: dict[str, set[str]] = {}
    for table in tables:
        for _, paths, _, _ in table.specs:
            for path in paths:
                parts = path.split(".")
                if len(parts) == 2:
                    sections.setdefault(parts[1], set()).add(parts[0])
    return {leaf: next(iter(found)) for leaf, found in sections.items() if len(found) == 1}


# Identity and telemetry only: static sections share generic leaves (NAME, VERSION, TYPE) the tables do not
# all read, so a lone NAME could as well be IFWI's as the driver's. A lone CORRECTABLE_COUNT is an old
# release's ECC total or any ECC block's count (each block prints the same three keys): no section either.
_SECTION_OF_LEAF = {
    leaf: section
    for leaf, section in _sections_of_leaves(_IDENTITY, _METRICS, _PCIE, _ECC).items()
    if leaf not in _BLOCK_COUNTS
}


def adopt_orphans(entry: Entry) -> dict[str, Any]:
    """A fragment's entry with each orphaned leaf (its section line filtered out: ``HOTSPOT: 43 °C`` right
    under ``GPU: 0``) moved under the one section that prints it; leaves of no known section stay."""
    adopted = {key: dict(value) if is_mapping(value) else value for key, value in entry.items()}
    for key, value in entry.items():
        section = _SECTION_OF_LEAF.get(key)
        if section is None or is_mapping(value):
            continue
        holder = adopted.setdefault(section, {})
        if isinstance(holder, dict) and key not in holder:
            holder[key] = adopted.pop(key)
    return adopted
