"""``instinct-console config``: every default the site and user config files give, and where it came from."""

from __future__ import annotations

import argparse
import json
from typing import Any

from console.commands.site_config import SHARED, config_paths, load_site_config
from console.exitcodes import ExitCode
from console.inert import printable

EPILOG = """files (the user's overrides the system's key by key; the command line overrides both):
  /etc/instinct-console/config.toml             the site's
  $XDG_CONFIG_HOME/instinct-console/config.toml  the user's (~/.config/... when unset)

  cluster = "/etc/instinct-console/east.toml"   -i of every command that takes one
  store = "/var/lib/instinct-console/east.sqlite"
  theme = "high-contrast"
  checks = ["/etc/instinct-console/checks.d"]
  [sweep]                                        a command's options, as on its command line
  probes = "standard"

exit codes:
  0    printed
  2    a config file does not parse, or names a key or option the console does not have"""


def register(sub: Any) -> None:
    """Add ``config``."""
    p = sub.add_parser(
        "config",
        help="show the defaults the site and user config files give, and which file each comes from",
        description="Show every default the config files give (the command line still overrides each),\n"
        "and the files read.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--json", action="store_true", help="print it as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the files looked at and each effective setting with its source."""
    config = load_site_config()  # the front door has applied it already; read again to show it
    effective = config.effective()
    rows = [
        {
            "command": command,
            "key": key,
            "value": setting.value,
            "source": str(setting.source),
        }
        for (command, key), setting in effective.items()
    ]
    unset = [key for key in SHARED if (None, key) not in effective]
    files = [{"scope": scope, "path": str(path), "read": path in config.read} for scope, path in config_paths()]
    if args.json:
        print(json.dumps({"files": files, "settings": rows, "built_in": unset}, indent=2))
        return int(ExitCode.OK)
    for entry in files:
        state = "read" if entry["read"] else "absent"
        print(f"{entry['scope']:7} {printable(str(entry['path']))} ({state})")
    for row in rows:
        where = f"[{row['command']}] " if row["command"] else ""
        print(f"{where}{row['key']} = {printable(json.dumps(row['value']))}   # from {printable(row['source'])}")
    for key in unset:
        print(f"{key}: built-in default")
    return int(ExitCode.OK)
