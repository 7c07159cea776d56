"""The operator's own keys: a key file rebinds actions by their stable binding ids (Textual's keymap)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import Static

from console.cli import main
from console.exitcodes import ExitCode
from console.ui.app import ConsoleApp
from console.ui.keymap import KeymapError, default_keys_path, load_keymap
from console.ui.registry import ACTIONS
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.help import help_content
from console.ui.screens.main import MainScreen
from console.ui.widgets.key_bar import KeyBar
from tests.ui.helpers import feed, main_screen, wait_until
from tests.ui.synthetic import SyntheticFleet

SIZE = (170, 50)
GUIDE = Path(__file__).parents[2] / "docs" / "operator-guide.md"


def _keys(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "keys.toml"
    path.write_text(text)
    return path


def test_a_key_file_maps_binding_ids_to_keys(tmp_path: Path) -> None:
    keymap = load_keymap(_keys(tmp_path, '[keys]\ndrain = "ctrl+d"\nrerun = "r, f5"\n'))
    # A dangerous action's read-only refusal moves with it: its key still says why nothing happens.
    assert keymap == {"drain": "ctrl+d", "read-only-drain": "ctrl+d", "rerun": "r,f5"}
    assert load_keymap(tmp_path / "none.toml") == {}


def test_the_key_file_is_found_in_the_xdg_config_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert default_keys_path() == tmp_path / "instinct-console" / "keys.toml"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('[keys]\nrerun = "r"\ndrian = "d"\n', r"keys\.toml:3: keys\.drian: no such binding id"),
        ('[keys]\n\ndrain = ""\n', r"keys\.toml:3: keys\.drain: '' is no key"),
        ("[keys]\ndrain = 4\n", r"keys\.toml:2: keys\.drain: 4 is no key"),
        ('[keys]\ndrain = "ctrl d"\n', r"keys\.drain: 'ctrl d' is no key"),
        ('[colours]\naccent = "red"\n', r"keys\.toml:1: colours: only a \[keys\] table is read"),
        ('[keys\ndrain = "d"\n', r"keys\.toml: not TOML: "),
    ],
)
def test_a_key_file_that_cannot_be_followed_names_the_file_line_and_field(tmp_path: Path, text: str, said: str) -> None:
    with pytest.raises(KeymapError, match=said):
        load_keymap(_keys(tmp_path, text))


def test_the_console_does_not_open_on_a_bad_key_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "instinct-console").mkdir()
    (tmp_path / "instinct-console" / "keys.toml").write_text('[keys]\ndrian = "d"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    cluster = tmp_path / "c.toml"
    cluster.write_text('[[pools]]\nname = "p"\ngpu_model = "MI300X"\nnodes = "gpu[001-002]"\n')
    assert main(["tui", "-i", str(cluster), "--store", str(tmp_path / "h.sqlite")]) == ExitCode.USAGE
    assert "keys.toml:2: keys.drian: no such binding id" in capsys.readouterr().err
    assert not (tmp_path / "h.sqlite").exists()  # refused before anything was opened


async def test_a_rebound_action_answers_its_new_key_only(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, tmp_path: Path
) -> None:
    app = make_app()
    app.use_keymap(load_keymap(_keys(tmp_path, '[keys]\ndrain = "ctrl+d"\nhelp = "f1"\n')))
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        screen = main_screen(pilot)
        assert "ctrl+d Drain" in str(screen.query_one(KeyBar).render())
        await pilot.press("d")  # its old key does nothing now
        assert isinstance(app.screen, MainScreen)
        await pilot.press("ctrl+d")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert app.screen.action_spec.id == "drain"  # type: ignore[attr-defined]
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen))
        await pilot.press("f1")
        await wait_until(pilot, lambda: not isinstance(app.screen, MainScreen))
        shown = " ".join(str(s.render()) for s in app.screen.query(Static))
        assert re.search(r"ctrl\+d\s+Drain", shown), shown
    assert "ctrl+d" in help_content(False, app.keymap).plain


def test_the_operator_guide_lists_every_binding_id() -> None:
    section = GUIDE.read_text().split("### Your own keys", 1)[1].split("\n### ", 1)[0]
    listed = set(re.findall(r"^\| `([a-z0-9-]+)` \|", section, flags=re.MULTILINE))
    assert listed == {a.id for a in ACTIONS}


async def test_in_read_only_mode_the_moved_key_of_a_dangerous_action_says_why_it_does_nothing(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, tmp_path: Path
) -> None:
    app = make_app(read_only=True)
    app.use_keymap(load_keymap(_keys(tmp_path, '[keys]\ndrain = "ctrl+d"\n')))
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        await pilot.press("ctrl+d")
        await wait_until(pilot, lambda: bool(app._notifications))
        assert [n.message for n in app._notifications] == ["Drain: not available in read-only mode (--read-only)"]
        assert isinstance(app.screen, MainScreen)
