"""Themes: TOML files in ``themes/`` that give each semantic colour variable a value.

Widgets and the stylesheet use only variable names (``$health-crit``, ``$drift``); a theme file
supplies Textual's base colours and the console's variables. The files ship inside the wheel as
``console/_data/themes``, located the way ``console.checks.loader`` locates the check packs.
"""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

from textual.theme import Theme

DEFAULT_THEME = "instinct-dark"
THEME_ALIASES = {
    "dark": "instinct-dark",
    "light": "instinct-light",
    "high-contrast": "instinct-high-contrast",
}
# Every variable the console's stylesheet and widgets use; each theme file must define them all.
SEMANTIC_VARIABLES: tuple[str, ...] = (
    "health-ok",
    "health-warn",
    "health-crit",
    "health-unknown",
    "health-skip",
    "health-none",
    "drained",
    "drift",
    "marked",
    "muted",
    "heat-good",
    "heat-near",
    "heat-low",
    "grid-cursor",
    "grid-marked",
    "grid-header",
)
_BASE_COLOURS = ("primary", "secondary", "accent", "warning", "error", "success", "foreground", "background")
_OPTIONAL_COLOURS = ("surface", "panel", "boost")


class ThemeError(ValueError):
    """A theme file that cannot be used; the message names the file and the field."""


def builtin_themes_dir() -> Path:
    """``themes/`` of the source tree, or the copy shipped inside the wheel."""
    source_tree = Path(__file__).resolve().parents[3] / "themes"
    if source_tree.is_dir():
        return source_tree
    return Path(str(resources.files("console") / "_data" / "themes"))


def stylesheet_path() -> Path:
    """The console's stylesheet (layout and variable references only, no colour literals)."""
    return builtin_themes_dir() / "console.tcss"


def load_theme_file(path: Path) -> Theme:
    """Read one theme file; every semantic variable must be there."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ThemeError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ThemeError(f"{path}: not valid TOML: {exc}") from None
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ThemeError(f"{path}: field name: a theme needs a name")
    for field in _BASE_COLOURS:
        if not isinstance(data.get(field), str):
            raise ThemeError(f"{path}: field {field}: missing colour")
    variables = data.get("variables", {})
    if not isinstance(variables, dict):
        raise ThemeError(f"{path}: field variables: expected a table")
    missing = [v for v in SEMANTIC_VARIABLES if not isinstance(variables.get(v), str)]
    if missing:
        raise ThemeError(f"{path}: field variables: missing {', '.join(missing)}")
    colours = {field: data[field] for field in (*_BASE_COLOURS, *_OPTIONAL_COLOURS) if field in data}
    return Theme(name=name, dark=bool(data.get("dark", True)), variables=dict(variables), **colours)


def load_themes(directory: Path | None = None) -> dict[str, Theme]:
    """Every ``*.toml`` theme of ``directory`` (the built-in themes by default), by theme name."""
    folder = directory or builtin_themes_dir()
    themes = {}
    for path in sorted(folder.glob("*.toml")):
        theme = load_theme_file(path)
        themes[theme.name] = theme
    return themes


def resolve_theme_name(name: str, available: set[str] | dict[str, Theme]) -> str:
    """Full theme name for ``name`` (an alias like ``light`` or a registered name); ThemeError if unknown."""
    full = THEME_ALIASES.get(name, name)
    if full not in available:
        choices = ", ".join(sorted({*THEME_ALIASES, *available}))
        raise ThemeError(f"unknown theme {name!r}; choose one of {choices}")
    return full
