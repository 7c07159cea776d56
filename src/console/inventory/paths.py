"""Where the console looks for a cluster file when none is given."""

from __future__ import annotations

import os
from pathlib import Path


def default_inventory_paths() -> list[Path]:
    """Where the console looks for a cluster file when ``-i`` is not given, in order."""
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return [Path("cluster.toml"), Path(config) / "instinct-console" / "cluster.toml"]
