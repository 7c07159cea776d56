"""The site's defaults: a system file under /etc and the user's under $XDG_CONFIG_HOME, over the built-ins.

An admin host serves one cluster most of the time; typing ``-i /etc/instinct-console/east.toml --store
...`` on every command is how a tired operator points a drain at the wrong cluster. The config files give
every command its defaults; the command line still wins, and ``instinct-console config`` says where each
effective value came from.

    # /etc/instinct-console/config.toml (the site), ~/.config/instinct-console/config.toml (the user)
    cluster = "/etc/instinct-console/east.toml"   # -i of every command that takes one
    store = "/var/lib/instinct-console/east.sqlite"
    theme = "high-contrast"
    checks = ["/etc/instinct-console/checks.d"]
    [sweep]                                        # a table per command: its options, as on the command line
    probes = "standard"
    allow-unknown = 0.05

The user's file overrides the system's key by key. A key the console does not know, or an option the
command does not have, is an error naming the file and the key: a misspelt default silently ignored is a
gate that runs with the wrong probes.
"""

from __future__ import annotations

import argparse
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from console.commands.arguments import UsageError

# Keys that apply to every command having the option, and the option's destination.
SHARED = {"cluster": "inventory", "store": "store", "theme": "theme", "checks": "checks"}


def config_paths() -> list[tuple[str, Path]]:
    """The files read, weakest first: the system's, then the user's (each may be absent)."""
    etc = Path(os.environ.get("INSTINCT_CONSOLE_ETC", "/etc"))
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return [("system", etc / "instinct-console" / "config.toml"), ("user", config / "instinct-console" / "config.toml")]


@dataclass
class Setting:
    """One default the config files give: for which command (None: every command), to what, from where."""

    command: str | None
    key: str
    value: Any
    source: Path


@dataclass
class SiteConfig:
    """What the config files say, strongest last."""

    read: list[Path] = field(default_factory=list)
    settings: list[Setting] = field(default_factory=list)

    def effective(self) -> dict[tuple[str | None, str], Setting]:
        """Each (command, key) once: the strongest file's setting."""
        return {(s.command, s.key): s for s in self.settings}


def load_site_config(paths: list[tuple[str, Path]] | None = None) -> SiteConfig:
    """Read the config files that exist (a file that does not parse is an error naming it)."""
    config = SiteConfig()
    for _, path in paths if paths is not None else config_paths():
        if not path.is_file():
            continue
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise UsageError(f"site config {path}: {exc}") from None
        config.read.append(path)
        for key, value in data.items():
            if isinstance(value, dict):
                config.settings += [Setting(key, name, inner, path) for name, inner in value.items()]
            elif key in SHARED:
                config.settings.append(Setting(None, key, value, path))
            else:
                known = ", ".join(sorted(SHARED))
                raise UsageError(
                    f"site config {path}: unknown key {key!r} (shared keys: {known}; or a [command] table)"
                )
    return config


def commands_of(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Each subcommand's parser, by name."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def apply_site_config(parser: argparse.ArgumentParser, config: SiteConfig) -> None:
    """Make the config's values the defaults of the commands they are for (the command line still wins)."""
    commands = commands_of(parser)
    for (command, key), setting in config.effective().items():
        if command is None:
            for sub in commands.values():
                action = _action(sub, SHARED[key])
                if action is not None:
                    _set_default(action, setting)
            continue
        if command == "keys":  # the console's key bindings have their own file (console.ui.keymap)
            raise UsageError(f"site config {setting.source}: [keys] goes in keys.toml beside it (the console's keys)")
        if command not in commands:
            raise UsageError(f"site config {setting.source}: [{command}] is not a command")
        sub = commands[command]
        action = _option(sub, key) or _action(sub, SHARED.get(key, ""))
        if action is None:
            raise UsageError(f"site config {setting.source}: [{command}] {key}: the command has no such option")
        if action.nargs == 0 and not isinstance(action.const, bool):  # a switch such as --verbose, --quiet
            _set_switch(sub, action, setting)
        else:
            _set_default(action, setting)


def _action(parser: argparse.ArgumentParser, dest: str) -> argparse.Action | None:
    return next((a for a in parser._actions if a.dest == dest and a.option_strings), None)


def _option(parser: argparse.ArgumentParser, key: str) -> argparse.Action | None:
    """The option a config key names: as on the command line (``allow-unknown``) or as its destination."""
    wanted = "--" + key.replace("_", "-")
    found = next((a for a in parser._actions if wanted in a.option_strings), None)
    return found or _action(parser, key.replace("-", "_"))


def _set_switch(parser: argparse.ArgumentParser, action: argparse.Action, setting: Setting) -> None:
    """``verbose = true``: the switch's value as the default of every option sharing its destination
    (argparse takes a destination's default from the first of them); ``false`` leaves it as it is."""
    if not isinstance(setting.value, bool):
        raise UsageError(f"site config {setting.source}: {setting.key}: give true or false")
    if setting.value:
        for other in parser._actions:
            if other.dest == action.dest:
                other.default = action.const


def _set_default(action: argparse.Action, setting: Setting) -> None:
    """The setting as the option's default, checked as the command line would check it."""
    where = f"site config {setting.source}: {setting.key}"
    value = setting.value
    if action.nargs == 0:  # a flag (store_true)
        if not isinstance(value, bool):
            raise UsageError(f"{where}: give true or false")
        action.default = value if action.const is True else not value
        return
    if isinstance(action, argparse._AppendAction) or action.nargs in ("*", "+"):
        items = value if isinstance(value, list) else [value]
        action.default = [_converted(action, item, where) for item in items]
    else:
        action.default = _converted(action, value, where)
    action.required = False  # the config answered it


def _converted(action: argparse.Action, value: Any, where: str) -> Any:
    if isinstance(value, (dict, list)):
        raise UsageError(f"{where}: give a single value")
    text = str(value).lower() if isinstance(value, bool) else str(value)
    convert = action.type if callable(action.type) else str
    try:
        converted = convert(text)
    except (argparse.ArgumentTypeError, TypeError, ValueError) as exc:
        raise UsageError(f"{where}: {exc}") from None
    if action.choices is not None and converted not in action.choices:
        raise UsageError(f"{where}: {value!r} is not one of {', '.join(map(str, action.choices))}")
    return converted
