"""The operator's own keys: a TOML file maps the registry's stable binding ids to keys.

``$XDG_CONFIG_HOME/instinct-console/keys.toml`` (``~/.config/...`` by default), read when the console
opens; a missing file changes nothing. Textual's keymap does the rebinding (``App.set_keymap``), so
the footer, palette and help show the keys the operator chose (docs/operator-guide.md, "Your own keys").

    [keys]
    drain = "ctrl+d"        # an id of the help screen's list (``?``): the catalogue's action names...
    rerun = "r,f5"          # ...and the console's own; several keys separated by commas

A dangerous action's read-only refusal (``read-only-<id>``) follows its key. A file that is not TOML,
an unknown id or an empty key is an error naming the file, the line and the field: the console does
not open on a keymap it cannot follow.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path

from console.ui.registry import BY_ID

KEYS_FILE = "keys.toml"
TABLE = "keys"
_KEY = re.compile(r"^[A-Za-z0-9_+\-]+$")  # a Textual key name: letters, digits, "_", "+" (ctrl+d), "-"


class KeymapError(ValueError):
    """The key file cannot be followed; the text names the file, the line and the field."""


def default_keys_path() -> Path:
    """Where the console looks for the operator's key file."""
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "instinct-console" / KEYS_FILE


def load_keymap(path: Path | None = None) -> dict[str, str]:
    """Binding id -> keys from ``path`` (default: ``default_keys_path``); empty when there is no file."""
    path = path or default_keys_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise KeymapError(f"{path}: cannot be read: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise KeymapError(f"{path}: not TOML: {exc}") from None
    extra = sorted(set(data) - {TABLE})
    if extra:
        raise KeymapError(f"{path}:{_line_of(text, extra[0])}: {extra[0]}: only a [{TABLE}] table is read")
    table = data.get(TABLE, {})
    if not isinstance(table, dict):
        raise KeymapError(f'{path}:{_line_of(text, TABLE)}: {TABLE}: a table of binding id = "keys"')
    return with_refusals(_checked(path, text, table))


def _checked(path: Path, text: str, table: Mapping[str, object]) -> dict[str, str]:
    keymap: dict[str, str] = {}
    for binding_id, value in table.items():
        where = f"{path}:{_line_of(text, binding_id)}: {TABLE}.{binding_id}"
        if binding_id not in BY_ID:
            raise KeymapError(f"{where}: no such binding id (the help screen, ?, lists them)")
        keys = [k.strip() for k in value.split(",")] if isinstance(value, str) else []
        if not keys or not all(_KEY.match(k) for k in keys):
            raise KeymapError(f'{where}: {value!r} is no key: a Textual key name, e.g. "ctrl+d" or "r,f5"')
        keymap[binding_id] = ",".join(keys)
    return keymap


def with_refusals(keymap: Mapping[str, str]) -> dict[str, str]:
    """``keymap`` with each dangerous action's read-only refusal on the same keys as the action."""
    out = dict(keymap)
    for binding_id, keys in keymap.items():
        if BY_ID[binding_id].dangerous:
            out[f"read-only-{binding_id}"] = keys
    return out


def _line_of(text: str, name: str) -> int:
    """The line that sets ``name`` (or opens its table), for the error; 1 when it cannot be told."""
    pattern = re.compile(rf"^\s*(\[\s*{re.escape(name)}\s*\]|\"?{re.escape(name)}\"?\s*=)")
    for number, line in enumerate(text.splitlines(), 1):
        if pattern.match(line):
            return number
    return 1
