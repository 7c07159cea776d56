"""Write every file generated from the console's own definitions: the JSON schemas, the man page and the
shell completion scripts, which the wheel installs (pyproject.toml) and the tests hold to this output.

    .venv/bin/python -m console.commands.generate        # after changing a command, an option or an output

The files must not depend on who generates them: the parser is built with the history database's
default written as ``~/.local/state`` and usage lines wrapped at 80 columns, whatever the environment.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from console.commands.cli_tree import Command, command_tree
from console.commands.manpage import man_page
from console.commands.schemas import PUBLISHED, schema_text
from console.commands.shells import SCRIPTS

ROOT = Path(__file__).resolve().parents[3]
# Where each shell looks for completions under a prefix (the wheel's shared data maps them there).
COMPLETION_FILES = {
    "bash": "completions/instinct-console.bash",
    "zsh": "completions/_instinct-console",
    "fish": "completions/instinct-console.fish",
}
MAN_PAGE = "man/instinct-console.1"


@contextlib.contextmanager
def _reproducible() -> Iterator[None]:
    """The environment the generated files are written in, restored after."""
    fixed = {"XDG_STATE_HOME": "~/.local/state", "COLUMNS": "80"}
    saved = {name: os.environ.get(name) for name in fixed}
    os.environ.update(fixed)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def shipped_tree() -> Command:
    """The command tree as the shipped files show it."""
    from console.cli import build_parser

    with _reproducible():
        return command_tree(build_parser())


def generated_files() -> dict[str, str]:
    """Every generated file, by its path in the repository, with its text."""
    tree = shipped_tree()
    files = {f"schemas/{item.name}.schema.json": schema_text(item) for item in PUBLISHED}
    files[MAN_PAGE] = man_page(tree)
    files.update({path: SCRIPTS[shell](tree) for shell, path in COMPLETION_FILES.items()})
    return files


def main(argv: list[str]) -> int:
    """Write the files under ``argv[0]`` (default: the source tree)."""
    root = Path(argv[0]) if argv else ROOT
    for relative, text in generated_files().items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
