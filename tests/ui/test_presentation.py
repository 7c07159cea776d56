"""Pure presentation helpers: safe text, sparklines, numbers, themes, the link panel's heatmap and floors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from console.checks import CheckPack
from console.inventory.load import from_mapping
from console.model.findings import Status
from console.model.gpu import LinkStatus
from console.ui.state import GpuView, NodeRow, NodeView, PcieView
from console.ui.text import duration, number, safe, safe_block, sparkline, status_label
from console.ui.theme import (
    SEMANTIC_VARIABLES,
    ThemeError,
    builtin_themes_dir,
    load_theme_file,
    load_themes,
    resolve_theme_name,
)
from console.ui.widgets.link_panel import LinkFloors, floors_for, heat_style, matrix_content, pcie_content

ROOT = Path(__file__).resolve().parents[2]


def test_safe_replaces_control_and_format_characters() -> None:
    hostile = "ok [b]x[/b]\x1b[31m\x07\u202eend\tz"
    cleaned = safe(hostile)
    assert cleaned == "ok [b]x[/b]\ufffd[31m\ufffd\ufffdend z"
    assert safe("plain text") == "plain text"
    block = safe_block("line1\r\nline2\x1b]0;x\x07\n\tindented")
    assert block.split("\n") == ["line1", "line2␛]0;x␇", "        indented"]


def test_sparkline_numbers_and_durations() -> None:
    assert sparkline([1, 2, 3, 4, 5, 6, 7, 8]) == "▁▂▃▄▅▆▇█"
    assert sparkline([5.0, None, 5.0]) == "▅ ▅"
    assert sparkline([None, None]) == ""
    assert len(sparkline(list(range(40)), width=12)) == 12
    assert number(None) == "n/a" and number(0) == "0" and number(61.4, unit=" C") == "61 C"
    assert duration(None) == "--:--" and duration(65) == "1:05" and duration(3723) == "1:02:03"
    assert status_label(Status.FAIL) == "✗ FAIL" and status_label(None) == "· —"


def test_every_theme_defines_every_semantic_variable() -> None:
    themes = load_themes()
    assert set(themes) == {"instinct-dark", "instinct-light", "instinct-high-contrast"}
    for theme in themes.values():
        assert set(SEMANTIC_VARIABLES) <= set(theme.variables), theme.name
    assert not themes["instinct-light"].dark


def test_stylesheets_use_variables_never_colour_literals() -> None:
    sheets = list(builtin_themes_dir().glob("*.tcss"))
    assert sheets
    named = r"\b(red|green|blue|yellow|white|black|magenta|cyan|gr[ae]y|orange|purple)\b"
    for sheet in sheets:
        text = re.sub(r"/\*.*?\*/", "", sheet.read_text(), flags=re.DOTALL)
        assert not re.search(r"#[0-9a-fA-F]{3,8}\b|\brgba?\(|\bhsla?\(|" + named, text), sheet
        used = set(re.findall(r"\$([a-z][a-z0-9-]*)", text))
        textual = {"panel", "surface", "background", "accent", "primary"}
        assert used <= set(SEMANTIC_VARIABLES) | textual, used - set(SEMANTIC_VARIABLES) - textual


def test_themes_ship_in_the_wheel() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"themes" = "console/_data/themes"' in pyproject
    assert builtin_themes_dir() == ROOT / "themes"


def test_a_theme_missing_a_variable_names_the_file(tmp_path: Path) -> None:
    source = (builtin_themes_dir() / "dark.toml").read_text()
    broken = tmp_path / "broken.toml"
    broken.write_text(re.sub(r"^health-crit = .*$", "", source, flags=re.MULTILINE))
    with pytest.raises(ThemeError, match=r"broken\.toml: field variables: missing health-crit"):
        load_theme_file(broken)


def test_theme_names_and_aliases() -> None:
    names = set(load_themes())
    assert resolve_theme_name("high-contrast", names) == "instinct-high-contrast"
    assert resolve_theme_name("instinct-light", names) == "instinct-light"
    with pytest.raises(ThemeError, match="unknown theme 'sepia'"):
        resolve_theme_name("sepia", names)


def test_floors_come_from_the_check_packs(packs: dict[str, CheckPack]) -> None:
    mi300x = floors_for(packs, "MI300X")
    assert mi300x.pair_gbps == 43.65 and mi300x.pcie_gts == 32.0 and mi300x.pcie_width == 16
    assert floors_for(packs, "MI250X").pcie_gts == 16.0
    assert floors_for({}, "MI250X").pcie_gts == 16.0 and floors_for({}, "MI300X").pair_gbps is None


def test_heat_buckets() -> None:
    assert heat_style(40.0, 43.65) == "bold $heat-low"
    assert heat_style(44.0, 43.65) == "$heat-near"
    assert heat_style(47.0, 43.65) == "$heat-good"
    assert heat_style(47.0, None) == ""


def _row(view: NodeView) -> NodeRow:
    node = from_mapping({"name": "t", "pools": [{"name": "p", "gpu_model": "MI300X", "nodes": "gpu1"}]}).nodes[0]
    return NodeRow(node=node, view=view)


def _spans(content: object) -> list[tuple[str, str]]:
    text = content.plain  # type: ignore[attr-defined]
    return [(text[s.start : s.end], str(s.style)) for s in content.spans]  # type: ignore[attr-defined]


def test_matrix_marks_down_links_and_slow_pairs() -> None:
    view = NodeView(
        links={(0, 1): LinkStatus.DOWN, (1, 0): LinkStatus.DOWN, (0, 2): LinkStatus.UP},
        pair_gbps={"0-1": 12.0, "0-2": 47.0, "2-0": 40.0},
    )
    content = matrix_content(_row(view), LinkFloors(pair_gbps=43.65, pcie_gts=32.0))
    spans = _spans(content)
    assert (" ✗ 12.0", "bold $health-crit") in spans
    assert ("   47.0", "$heat-good") in spans
    assert ("   40.0", "bold $heat-low") in spans
    assert (" ✗ down", "bold $health-crit") in spans  # 1->0: down, no bandwidth measured
    assert "floor 43.65 GB/s" in content.plain


def test_pcie_lines_flag_downtrained_links() -> None:
    gpus = (
        GpuView(index=0, pcie=PcieView(32.0, 16, 0, 0, 0)),
        GpuView(index=1, pcie=PcieView(16.0, 8, 3, 150, None)),
        GpuView(index=2),
    )
    content = pcie_content(gpus, LinkFloors(pair_gbps=None, pcie_gts=32.0))
    spans = _spans(content)
    assert (" 16 GT/s", "bold $health-crit") in spans and (" x8", "bold $health-crit") in spans
    assert "gpu0   32 GT/s x16 replay 0" in content.plain
    assert not [text for text, _style in spans if "32 GT/s" in text and "expect" not in text]  # healthy: no style
    assert (" replay 3", "$health-warn") in spans and (" recov 150", "bold $health-crit") in spans
    assert (" nak n/a", "$muted") in spans and (" n/a", "$health-none") in spans
