"""``instinct-console help [TOPIC]``: a section of the operator guide, offline.

The guide (docs/operator-guide.md) travels in the wheel as ``console/_data/docs``. Without a topic the
sections are listed; a topic is a section's number (``8``) or words of its title (``exit codes``,
``slurm``), a top-level section before a subsection.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from console.commands.arguments import UsageError
from console.exitcodes import ExitCode

EPILOG = """examples:
  instinct-console help                 list the sections
  instinct-console help 8               section 8 (exit codes)
  instinct-console help slurm           the section whose title has these words

exit codes:
  0    printed
  2    no section, or several, match the topic (their titles on stderr)"""

_HEADING = re.compile(r"^(#{2,3}) (\S.*)$")
_NUMBER = re.compile(r"^(\d+)\.\s+")


@dataclass(frozen=True)
class Section:
    """One heading of the guide (level 2 or 3) and its text up to the next heading as high."""

    level: int
    title: str
    text: str

    @property
    def number(self) -> str | None:
        """``8`` for ``8. Exit codes``; None for a subsection."""
        found = _NUMBER.match(self.title)
        return found.group(1) if found else None


def guide_path() -> Path:
    """docs/operator-guide.md of the source tree, or the copy shipped inside the wheel."""
    source_tree = Path(__file__).resolve().parents[3] / "docs" / "operator-guide.md"
    if source_tree.is_file():
        return source_tree
    return Path(str(resources.files("console") / "_data" / "docs" / "operator-guide.md"))


def sections(text: str) -> list[Section]:
    """The guide's level-2 and level-3 sections, in order; a ``#`` inside a fenced code block is no heading."""
    lines = text.splitlines()
    heads: list[tuple[int, int, str]] = []
    fenced = False
    for index, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (found := _HEADING.match(line)):
            heads.append((index, len(found.group(1)), found.group(2).strip()))
    found_sections = []
    for position, (start, level, title) in enumerate(heads):
        end = next((i for i, lv, _ in heads[position + 1 :] if lv <= level), len(lines))
        found_sections.append(Section(level, title, "\n".join(lines[start:end]).rstrip() + "\n"))
    return found_sections


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def find(topic: str, among: list[Section]) -> list[Section]:
    """The sections ``topic`` names: its number, its whole title, else every title holding all its words
    (top-level sections first: a subsection only when no top-level one matches)."""
    wanted = _words(topic)
    if not wanted:
        return []
    by_number = [s for s in among if s.number == topic.strip().rstrip(".")]
    if by_number:
        return by_number
    exact = [s for s in among if _words(_NUMBER.sub("", s.title)) == wanted]
    if exact:
        return exact[:1]
    for level in (2, 3):
        matching = [s for s in among if s.level == level and all(w in _words(s.title) for w in wanted)]
        if matching:
            return matching
    return []


def register(sub: Any) -> None:
    """Add the ``help`` subcommand."""
    p = sub.add_parser(
        "help",
        help="print a section of the operator guide (offline); without a topic, list them",
        description="Print a section of the operator guide, which is installed with the console.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("topic", nargs="*", help="a section's number or words of its title")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """List the sections, or print the one the topic names."""
    path = guide_path()
    try:
        among = sections(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read the operator guide at {path}: {exc.strerror or exc}") from None
    topic = " ".join(args.topic)
    if not topic:
        for section in among:
            print(("  " if section.level == 3 else "") + section.title)
        print(f"\n(from {path}; instinct-console help TOPIC prints one)")
        return int(ExitCode.OK)
    matches = find(topic, among)
    if len(matches) != 1:
        said = "no section of the guide matches" if not matches else "several sections match"
        listed = "".join(f"\n  {s.title}" for s in matches)
        print(f"instinct-console help: {said} {topic!r}{listed}", file=sys.stderr)
        return int(ExitCode.USAGE)
    sys.stdout.write(matches[0].text)
    return int(ExitCode.OK)
