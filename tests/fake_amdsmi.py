"""A stand-in for AMD's ``amdsmi`` Python module, written to a test's own directory (never the console's path).

It answers the calls the console makes with the real library's names, arguments and value shapes
(ROCm/amdsmi ``py-interface/amdsmi_interface.py``): enum members for firmware blocks and page states,
the ``AmdSmiTemperatureType`` / ``AmdSmiTemperatureMetric`` / ``AmdSmiMemoryType`` / ``AmdSmiGpuBlock``
arguments, ``AmdSmiXgmiStatus`` values, and ``AmdSmiLibraryException`` with ``err_code`` for a failed
call (2 is ``AMDSMI_STATUS_NOT_SUPPORTED``). The values come from a JSON file the test writes, keyed by
function name per GPU (a function taking enums: by ``"EDGE.CURRENT"``-style keys of their names), built
here from the numbers of real or simulated ``amd-smi ... --json`` outputs. A function without a value
for the GPU answers "not supported", as the real library does for what the GPU lacks.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from console.probes.ids import ProbeId
from console.sweep.catalog import PROBES_BY_ID
from tests.multinode.localnodes import amdsmi_json

_SOURCE = """
import enum, json, threading

VALUES = json.loads(open({values!r}).read())
RAISE = {raise_on!r}
INIT_ERROR = {init_error!r}
HANG = {hang_on!r}


class AmdSmiException(Exception):
    pass


class AmdSmiLibraryException(AmdSmiException):
    def __init__(self, err_code):
        self.err_code = err_code
        name = "AMDSMI_STATUS_NOT_SUPPORTED" if err_code == 2 else "AMDSMI_STATUS_UNKNOWN_ERROR"
        super().__init__(f"Error code:\\n\\t{{err_code}} | {{name}}")


# The real enums' members (amdsmi_interface.py); only their names matter to the console.
class AmdSmiTemperatureType(enum.IntEnum):
    EDGE = 0
    HOTSPOT = 1
    VRAM = 2


class AmdSmiTemperatureMetric(enum.IntEnum):
    CURRENT = 0
    CRITICAL = 5
    EMERGENCY = 7


class AmdSmiMemoryType(enum.IntEnum):
    VRAM = 0
    VIS_VRAM = 1
    GTT = 2


class AmdSmiGpuBlock(enum.IntEnum):
    UMC = 1
    SDMA = 2
    GFX = 4


class AmdSmiXgmiStatus(enum.IntEnum):
    NO_ERRORS = 0
    ERROR = 1
    MULTIPLE_ERRORS = 2


def _enum(name):
    # The real AmdSmiFwBlock / AmdSmiMemoryPageStatus members: only .name matters to the console.
    return enum.Enum("Member", [name])[name]


def amdsmi_init(*flags):
    if INIT_ERROR is not None:
        raise AmdSmiLibraryException(INIT_ERROR)


def amdsmi_shut_down():
    pass


def amdsmi_get_processor_handles():
    return list(range(len(VALUES["gpus"])))


def _answer(name, handle, *args):
    if name in HANG:
        threading.Event().wait()  # a call blocked in the driver, as on a wedged GPU
    if name in RAISE:
        raise AmdSmiLibraryException(RAISE[name])
    values = VALUES["gpus"][handle]
    if name not in values:
        raise AmdSmiLibraryException(2)
    value = values[name]
    if args:
        key = ".".join(arg.name for arg in args)
        if key not in value:
            raise AmdSmiLibraryException(2)
        value = value[key]
    return value


def _plain(name):
    def call(handle, *args):
        return _answer(name, handle, *args)
    call.__name__ = name
    return call


for _name in {plain!r}:
    globals()[_name] = _plain(_name)


def amdsmi_get_fw_info(handle):
    info = _answer("amdsmi_get_fw_info", handle)
    return {{"fw_list": [{{"fw_name": _enum("FW_ID_" + b["fw"]), "fw_version": b["version"]}} for b in info]}}


def amdsmi_get_gpu_bad_page_info(handle):
    pages = _answer("amdsmi_get_gpu_bad_page_info", handle)
    return [
        {{"value": i, "page_address": p["address"], "page_size": p["size"], "status": _enum(p["status"])}}
        for i, p in enumerate(pages)
    ]
"""

# Calls answered with their value as stored (enum arguments select it by name).
PLAIN_CALLS = (
    "amdsmi_get_gpu_device_bdf", "amdsmi_get_gpu_device_uuid", "amdsmi_get_gpu_kfd_info",
    "amdsmi_get_gpu_asic_info", "amdsmi_get_gpu_subsystem_id", "amdsmi_get_pcie_info", "amdsmi_get_gpu_vbios_info",
    "amdsmi_get_power_cap_info", "amdsmi_get_temp_metric", "amdsmi_get_gpu_driver_info", "amdsmi_get_gpu_board_info",
    "amdsmi_get_gpu_ras_feature_info", "amdsmi_get_gpu_bad_page_threshold", "amdsmi_get_gpu_ras_block_features_enabled",
    "amdsmi_get_gpu_compute_partition", "amdsmi_get_gpu_memory_partition", "amdsmi_topo_get_numa_node_number",
    "amdsmi_get_gpu_topo_numa_affinity", "amdsmi_get_gpu_vram_info", "amdsmi_get_power_info",
    "amdsmi_get_gpu_metrics_info", "amdsmi_get_gpu_total_ecc_count", "amdsmi_get_gpu_ecc_count",
    "amdsmi_gpu_xgmi_error_status", "amdsmi_get_gpu_memory_total", "amdsmi_get_gpu_memory_usage",
    "amdsmi_get_violation_status", "amdsmi_get_gpu_process_isolation", "amdsmi_get_link_metrics",
    "amdsmi_get_gpu_xgmi_link_status",
)  # fmt: skip


def write_fake_amdsmi(
    root: Path,
    gpus: list[dict[str, Any]],
    *,
    raise_on: dict[str, int] | None = None,
    init_error: int | None = None,
    hang_on: frozenset[str] = frozenset(),
    missing: frozenset[str] = frozenset(),
) -> Path:
    """Write ``root/amdsmi/__init__.py`` answering with ``gpus`` (per GPU: function name -> value;
    ``amdsmi_get_fw_info`` as [{fw, version}], ``amdsmi_get_gpu_bad_page_info`` as [{address, size, status}]).
    ``raise_on`` maps a function name to the error code it raises; ``hang_on`` names the functions that
    never return; ``missing`` the functions this library does not have (an older release)."""
    package = root / "amdsmi"
    package.mkdir(parents=True, exist_ok=True)
    values = root / "amdsmi-values.json"
    values.write_text(json.dumps({"gpus": gpus}))
    source = _SOURCE.format(
        values=str(values),
        raise_on=raise_on or {},
        init_error=init_error,
        hang_on=set(hang_on),
        plain=[name for name in PLAIN_CALLS if name not in missing],
    )
    (package / "__init__.py").write_text(source)
    return root


@pytest.fixture
def fake_amdsmi_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory put first on ``sys.path`` for this test only, ``amdsmi`` unimported before and after."""
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    sys.modules.pop("amdsmi", None)
    yield root
    sys.modules.pop("amdsmi", None)


# --- the library's values, read back from what amd-smi printed for them -------------------------------

NA = "N/A"
_MEBIBYTE = 1024 * 1024
_VRAM_TYPES = {"HBM": 1, "HBM2": 2, "HBM2E": 3, "HBM3": 4, "GDDR6": 22}
_VIOLATIONS = {
    "prochot_thrm": "prochot", "ppt_pwr": "ppt", "socket_thrm": "socket_thermal", "vr_thrm": "vr_thermal",
    "hbm_thrm": "hbm_thermal",
}  # fmt: skip


# The subcommands the library serves, as the probes run them (the metric probe's sections only).
SERVED: dict[str, tuple[str, ...]] = {
    "firmware": ("firmware",),
    "bad-pages": ("bad-pages",),
    "list": ("list",),
    "static": ("static",),
    "metric": PROBES_BY_ID[ProbeId.AMDSMI_METRIC].argv[1:-1],
    "xgmi": ("xgmi",),
    "xgmi -l": ("xgmi", "-l"),
}


def node_outputs(root: Path, node: str) -> dict[str, list[dict[str, Any]]]:
    """The ``--json`` outputs of the served subcommands on a simulated node of ``root``."""
    return {sub: amdsmi_json(root, node, *argv) for sub, argv in SERVED.items()}


def node_values(outputs: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The library's values per GPU, read back from what amd-smi printed for them (``outputs``: subcommand of
    ``SERVED`` -> its ``--json`` entries; ``firmware``, ``bad-pages`` and ``list`` are needed, the rest may
    be left out)."""
    gpus = []
    for position, (fw_entry, pages_entry, list_entry) in enumerate(
        zip(outputs["firmware"], outputs["bad-pages"], outputs["list"], strict=True)
    ):
        fw = [{"fw": b["fw_id"], "version": _number(b["fw_version"])} for b in fw_entry["fw_list"]]
        parts: list[Mapping[str, Any]] = [
            {
                "amdsmi_get_fw_info": fw,
                "amdsmi_get_gpu_bad_page_info": _pages(pages_entry),
                "amdsmi_get_gpu_device_bdf": list_entry["bdf"],
                "amdsmi_get_gpu_device_uuid": list_entry["uuid"],
                "amdsmi_get_gpu_kfd_info": {
                    "kfd_id": list_entry["kfd_id"],
                    "node_id": list_entry["node_id"],
                    "current_partition_id": list_entry["partition_id"],
                },
            }
        ]
        for sub, read_back in (("static", static_values), ("metric", metric_values), ("xgmi", xgmi_values)):
            if sub in outputs:
                parts.append(read_back(outputs[sub][position]))
        gpus.append(merge_values(*parts))
    return gpus


def merge_values(*parts: Mapping[str, Any]) -> dict[str, Any]:
    """One GPU's values from several outputs: dict values of one function (enum-keyed) are joined."""
    merged: dict[str, Any] = {}
    for part in parts:
        for name, value in part.items():
            if isinstance(value, dict) and isinstance(merged.get(name), dict):
                merged[name] = {**merged[name], **value}
            else:
                merged[name] = value
    return merged


def _pages(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    groups = {"retired": "RESERVED", "pending": "PENDING", "un_res": "UNRESERVABLE"}
    pages = []
    for key, status in groups.items():
        found = entry.get(key)
        records = found if isinstance(found, list) else [found] if isinstance(found, dict) else []
        pages += [{"address": _number(r["page_address"]), "size": r["page_size"], "status": status} for r in records]
    return pages


def static_values(entry: Mapping[str, Any]) -> dict[str, Any]:
    """What the library returned for the sections of one ``amd-smi static --json`` entry (a section or key
    the entry lacks is left out: the fake then answers "not supported")."""
    values: dict[str, Any] = {}
    asic = entry.get("asic")
    if isinstance(asic, dict):
        values["amdsmi_get_gpu_asic_info"] = {k: v for k, v in asic.items() if k != "subsystem_id"}
        _put(values, "amdsmi_get_gpu_subsystem_id", asic.get("subsystem_id"))
    bus = entry.get("bus")
    if isinstance(bus, dict):
        _put(values, "amdsmi_get_gpu_device_bdf", bus.get("bdf"))
        version = str(bus.get("pcie_interface_version", ""))
        values["amdsmi_get_pcie_info"] = {
            "pcie_static": {
                "max_pcie_width": bus.get("max_pcie_width", NA),
                "max_pcie_speed": _mega(bus.get("max_pcie_speed")),
                "pcie_interface_version": int(version.rsplit(maxsplit=1)[-1]) if version.startswith("Gen") else NA,
                "slot_type": bus.get("slot_type", NA),
            }
        }
    for section, call in (("vbios", "amdsmi_get_gpu_vbios_info"), ("board", "amdsmi_get_gpu_board_info")):
        if isinstance(entry.get(section), dict):  # the library leaves a blank string where the CLI prints N/A
            values[call] = {k: "" if v == NA else v for k, v in entry[section].items()}
    limit = entry.get("limit")
    if isinstance(limit, dict):
        caps = {"power_cap": "socket_power", "min_power_cap": "min_power", "max_power_cap": "max_power"}
        values["amdsmi_get_power_cap_info"] = {
            field: _value(limit.get(key)) * 1_000_000 for field, key in caps.items() if _value(limit.get(key)) != NA
        }
        temps = {}
        for stage, metric in (("slowdown", "CRITICAL"), ("shutdown", "EMERGENCY")):
            for sensor, name in (("edge", "EDGE"), ("hotspot", "HOTSPOT"), ("vram", "VRAM")):
                found = _value(limit.get(f"{stage}_{sensor}_temperature"))
                if found != NA:
                    temps[f"{name}.{metric}"] = found
        values["amdsmi_get_temp_metric"] = temps
    driver = entry.get("driver")
    if isinstance(driver, dict):
        values["amdsmi_get_gpu_driver_info"] = {"driver_name": driver["name"], "driver_version": driver["version"]}
    ras = entry.get("ras")
    if isinstance(ras, dict):
        flags = ("parity_schema", "single_bit_schema", "double_bit_schema", "poison_schema")
        values["amdsmi_get_gpu_ras_feature_info"] = {
            "eeprom_version": ras.get("eeprom_version", NA),
            **{flag: ras[flag] == "ENABLED" for flag in flags if flag in ras},
        }
        _put(values, "amdsmi_get_gpu_bad_page_threshold", ras.get("bad_page_threshold"))
        states = ras.get("ecc_block_state")
        if isinstance(states, dict):
            values["amdsmi_get_gpu_ras_block_features_enabled"] = [
                {"block": block, "status": status} for block, status in states.items()
            ]
    partition = entry.get("partition")
    if isinstance(partition, dict):
        compute = partition.get("compute_partition", partition.get("accelerator_partition"))
        _put(values, "amdsmi_get_gpu_compute_partition", compute)
        _put(values, "amdsmi_get_gpu_memory_partition", partition.get("memory_partition"))
        _put(values, "amdsmi_get_gpu_kfd_info", {"current_partition_id": partition.get("partition_id", NA)})
    numa = entry.get("numa")
    if isinstance(numa, dict):
        _put(values, "amdsmi_topo_get_numa_node_number", numa.get("node"))
        _put(values, "amdsmi_get_gpu_topo_numa_affinity", numa.get("affinity"))
    vram = entry.get("vram")
    if isinstance(vram, dict):
        info = {
            "vram_type": _VRAM_TYPES.get(str(vram.get("type")), 0),
            "vram_vendor": vram.get("vendor", NA),
            "vram_size": _value(vram.get("size")),
            "vram_bit_width": vram.get("bit_width", NA),
        }
        if "max_bandwidth" in vram:
            info["vram_max_bandwidth"] = _value(vram["max_bandwidth"])
        values["amdsmi_get_gpu_vram_info"] = info
    isolation = entry.get("process_isolation")
    if isolation in ("Enabled", "Disabled"):
        values["amdsmi_get_gpu_process_isolation"] = int(isolation == "Enabled")
    return values


def metric_values(entry: Mapping[str, Any]) -> dict[str, Any]:
    """What the library returned for the sections of one ``amd-smi metric --json`` entry."""
    values: dict[str, Any] = {}
    power = entry.get("power")
    if isinstance(power, dict):
        values["amdsmi_get_power_info"] = {
            "current_socket_power": NA,  # MI300's: the CLI then prints the average
            "average_socket_power": _value(power.get("socket_power")),
            **{key: _value(power.get(key)) for key in ("gfx_voltage", "soc_voltage", "mem_voltage")},
        }
        throttled = {"THROTTLED": True, "UNTHROTTLED": False}.get(str(power.get("throttle_status")), NA)
        values["amdsmi_get_gpu_metrics_info"] = {"throttle_status": throttled}
    temperature = entry.get("temperature")
    if isinstance(temperature, dict):
        temps = {}
        for key, name in (("edge", "EDGE"), ("hotspot", "HOTSPOT"), ("mem", "VRAM")):
            if _value(temperature.get(key)) != NA:
                temps[f"{name}.CURRENT"] = _value(temperature[key])
        values["amdsmi_get_temp_metric"] = temps
    pcie = entry.get("pcie")
    if isinstance(pcie, dict):
        counters = (
            "replay_count",
            "l0_to_recovery_count",
            "replay_roll_over_count",
            "nak_sent_count",
            "nak_received_count",
        )
        values["amdsmi_get_pcie_info"] = {
            "pcie_metric": {
                "pcie_width": pcie.get("width", NA),
                "pcie_speed": _mega(pcie.get("speed")),
                "pcie_bandwidth": _value(pcie.get("bandwidth")),
                **{f"pcie_{key}": pcie[key] for key in counters if key in pcie},
            }
        }
    ecc = entry.get("ecc")
    if isinstance(ecc, dict):
        kinds = ("correctable", "uncorrectable", "deferred")
        values["amdsmi_get_gpu_total_ecc_count"] = {f"{k}_count": ecc.get(f"total_{k}_count", NA) for k in kinds}
        values["amdsmi_get_gpu_ecc_count"] = {
            "UMC": {
                f"{k}_count": ecc[f"total_{k}_count"] - ecc[f"cache_{k}_count"]
                for k in ("correctable", "uncorrectable")
                if isinstance(ecc.get(f"cache_{k}_count"), int)
            }
        }
    status = entry.get("xgmi_err")
    if isinstance(status, str) and status != NA:
        names = {"NO_ERRORS": 0, "ERROR": 1, "MULTIPLE_ERRORS": 2}
        values["amdsmi_gpu_xgmi_error_status"] = names[status.removeprefix("AMDSMI_XGMI_STATUS_")]
    memory = entry.get("mem_usage")
    if isinstance(memory, dict):
        values["amdsmi_get_gpu_memory_total"] = {"VRAM": _value(memory["total_vram"]) * _MEBIBYTE}
        values["amdsmi_get_gpu_memory_usage"] = {"VRAM": _value(memory["used_vram"]) * _MEBIBYTE}
    throttle = entry.get("throttle")
    if isinstance(throttle, dict):
        violation: dict[str, Any] = {"acc_counter": throttle.get("accumulation_counter", NA)}
        for suffix, stem in _VIOLATIONS.items():
            violation[f"acc_{suffix}"] = throttle.get(f"{stem}_accumulated", NA)
            active = throttle.get(f"{stem}_violation_status", NA)
            violation[f"active_{suffix}"] = {"ACTIVE": True, "NOT ACTIVE": False}.get(active, NA)
            violation[f"per_{suffix}"] = _value(throttle.get(f"{stem}_violation_activity"))
        values["amdsmi_get_violation_status"] = violation
    return values


def xgmi_values(entry: Mapping[str, Any]) -> dict[str, Any]:
    """What the library returned for one ``amd-smi xgmi --json`` entry (link metrics with their U/D states).

    One port per state letter of a peer (``U/U`` is two ports), its counters on the first; the simulated
    amd-smi prints N/A counters for a link that is down, where the library counts from 0.
    """
    metrics = entry.get("link_metrics")
    if not isinstance(metrics, dict):
        return {}
    words = entry.get("link_status") or []
    ports: list[dict[str, Any]] = []
    states: list[str] = []
    for position, dest in enumerate(metrics.get("links", [])):
        word = str(words[position]) if position < len(words) else NA
        letters = [] if word in (NA, "SELF") else word.split("/")
        if not letters and dest.get("read", NA) == NA:
            continue  # no port reaches this peer (or it is this GPU)
        for number, letter in enumerate(letters or [NA]):
            counts = {key: _count(dest.get(key)) if number == 0 else 0 for key in ("read", "write")}
            ports.append(
                {
                    "bdf": dest["bdf"],
                    "bit_rate": _value(metrics.get("bit_rate")),
                    "max_bandwidth": _value(metrics.get("max_bandwidth")),
                    **counts,
                }
            )
            states.append(letter)
    values: dict[str, Any] = {"amdsmi_get_link_metrics": {"num_links": len(ports), "links": ports}}
    if words:
        values["amdsmi_get_gpu_xgmi_link_status"] = {"status": states, "total_links": len(states)}
    return values


def _count(printed: Any) -> int:
    value = _value(printed)
    return value if isinstance(value, int) else 0


def _put(values: dict[str, Any], call: str, value: Any) -> None:
    """A call's value where the output states one; left out (not supported) where it says N/A or nothing."""
    if value is not None and value != NA:
        values[call] = value


def _value(printed: Any) -> Any:
    """The number behind ``{"value": 750, "unit": "W"}`` (N/A where the output has none)."""
    if isinstance(printed, dict):
        return printed.get("value", NA)
    return NA if printed is None else printed


def _mega(printed: Any) -> Any:
    """A PCIe speed the CLI printed in GT/s, as the library gives it: MT/s."""
    value = _value(printed)
    return round(value * 1000) if isinstance(value, int | float) else value


def _number(text: Any) -> Any:
    """What the library returns where the command printed a number: an int (hex addresses included)."""
    if isinstance(text, str) and text.lower().startswith("0x"):
        return int(text, 16)
    return int(text) if isinstance(text, str) and text.isdigit() else text
