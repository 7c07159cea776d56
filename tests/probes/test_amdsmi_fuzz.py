"""Property tests: any input to the amd-smi parser gives a ParsedOutput or a ParseError, nothing else."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from console.probes import amdsmi
from tests.probes.fuzz import FUZZ_EXAMPLES, FUZZ_SETTINGS, assert_total, mangled_outputs

SAMPLES = sorted((Path(__file__).parents[1] / "fixtures" / "real" / "amd-smi").iterdir())

# Leaves amd-smi really prints: numbers, value/unit objects with N/A, unit strings, N/A arrays.
_LEAF = st.one_of(
    st.integers(-(2**64), 2**64),
    st.sampled_from(
        [
            *("N/A", "n/a", "Not supported", "", "0x74a1", "32 GT/s", "750 W", "55 °C", "Gen 5", "1e309", "[0 %, N/A]"),
            *("No bad pages found.", "ENABLED", "0000:0c:00.0", "U", "D", "50000-50000", "2 KB", "SPX", "NPS4"),
        ]
    ),
    st.sampled_from([0.5, -1.0, 1e308, float("nan"), float("inf"), True, False, None]),
    st.fixed_dictionaries(
        {
            "value": st.sampled_from([0, 42, "N/A", 1e308, -1, "x"]),
            "unit": st.sampled_from(["W", "C", "MHz", "%", "MB", "KB", "GT/s", "Gb/s", "", "N/A"]),
        }
    ),
)
# Keys amd-smi uses, so random structures reach the real mapping code paths.
_KEYS = st.sampled_from(
    [
        "gpu", "bdf", "uuid", "asic", "market_name", "bus", "max_pcie_speed", "usage", "gfx_activity", "jpeg_activity",
        "gfx_busy_inst", "xcp_0", "power", "socket_power", "temperature", "hotspot", "ecc", "total_correctable_count",
        "ecc_blocks", "UMC", "correctable_count", "pcie", "replay_count", "clock", "gfx_0", "clk", "frequency_levels",
        "Level 0", "current level", "mem_usage", "total_vram", "throttle", "ppt_violation_activity", "fw_list",
        "fw_id", "fw_version", "retired", "page_address", "process_list", "process_info", "pid", "link_metrics",
        "links", "read", "bit_rate", "link_status", "num_hops", "weight", "partition", "memory_partition", "limit",
        "ppt0", "socket_power_limit", "vram", "size", "ras", "bad_page_threshold", "timestamp", "energy",
    ]
)  # fmt: skip
_TREE = st.recursive(
    _LEAF,
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(_KEYS, children, max_size=4)),
    max_leaves=10,
)
_ENTRY = st.dictionaries(_KEYS, _TREE, max_size=6).map(lambda d: {"gpu": 0, **d})


def _dump(value: Any) -> str:
    return json.dumps(value, allow_nan=True)


@FUZZ_SETTINGS
@given(mangled_outputs(SAMPLES))
def test_mangled_real_outputs_never_crash(data: bytes) -> None:
    assert_total(amdsmi.parse, data.decode("utf-8", "replace"))


# The structure fuzzers build whole JSON trees per example (slow to generate); CI runs a quarter of the
# budget for them, the long mode (FUZZ_EXAMPLES=10000+) the full count. The 2000-case floor per parser is
# met by the mangled-real-outputs property above.
STRUCTURE_SETTINGS = settings(FUZZ_SETTINGS, max_examples=max(FUZZ_EXAMPLES // 4, 100))


@STRUCTURE_SETTINGS
@given(st.lists(_ENTRY, max_size=4), st.sampled_from(["gpu_data", "list", "xgmi_metric", "current_partition"]))
def test_random_json_structures_never_crash(entries: list[dict[str, Any]], shape: str) -> None:
    document: Any = entries if shape == "list" else {shape: entries}
    assert_total(amdsmi.parse, _dump(document))


@STRUCTURE_SETTINGS
@given(st.lists(_ENTRY, min_size=1, max_size=3))
def test_random_entries_as_text_blocks_never_crash(entries: list[dict[str, Any]]) -> None:
    # The same trees rendered the way amd-smi renders text: upper-case keys, 4-space nesting.
    assert_total(amdsmi.parse, "\n".join(_render(entry) for entry in entries))


def _render(value: Any, indent: int = 0) -> str:
    if not isinstance(value, dict):
        return f"{value}"
    lines = []
    for key, child in value.items():
        pad = " " * indent
        if isinstance(child, dict):
            lines.append(f"{pad}{str(key).upper()}:\n{_render(child, indent + 4)}")
        else:
            lines.append(f"{pad}{str(key).upper()}: {child}")
    return "\n".join(lines)
