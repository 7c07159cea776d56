"""One CLI front door: usage and configuration errors become exit 2 in one place, said in one line."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.cli import build_parser, main
from console.commands import sweep
from console.commands.arguments import options_of

COMMANDS = [
    ["sweep"],
    ["drift"],
    ["accept"],
    ["diff"],
    ["pin"],
    ["drain", "gpu001", "--reason", "test"],
    ["check-local", "--node", "gpu001"],
    ["tui"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_a_missing_cluster_file_is_one_line_and_exit_2(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "history.sqlite").touch()  # accept and diff would complain of a missing database first
    missing = tmp_path / "nope.toml"
    store = [] if command[0] == "check-local" else ["--store", str(tmp_path / "history.sqlite")]
    code = main([*command, "-i", str(missing), *store])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"instinct-console {command[0]}: error: ") and "nope.toml" in err, err
    assert err.count("\n") == 1, err


def test_a_bad_selection_is_said_by_the_front_door(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("gpu[001-004]\n")
    assert main(["sweep", "-i", str(hosts), "--store", str(tmp_path / "h.sqlite"), "--nodes", "gpu009"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("instinct-console sweep: error: ") and "gpu009" in err, err


def test_options_of_gives_the_command_lines_defaults() -> None:
    args = options_of(sweep.add_arguments, inventory="c.toml", probes="standard")
    assert (args.inventory, args.probes, args.allow_unknown, args.checks, args.store) == (
        "c.toml",
        "standard",
        0.0,
        [],
        None,
    )
    with pytest.raises(TypeError, match="no such option: colour"):
        options_of(sweep.add_arguments, colour="red")


def _commands(parser: argparse.ArgumentParser, prog: str = "") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every command an operator can run, ``sim serve`` included, with its parser."""
    for action in parser._actions:  # argparse keeps its subcommands there and nowhere public
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, f"{prog} {name}".strip())
                if not any(isinstance(a, argparse._SubParsersAction) for a in sub._actions):
                    yield f"{prog} {name}".strip(), sub


HELPED = list(_commands(build_parser()))


@pytest.mark.parametrize(("name", "parser"), HELPED, ids=[name for name, _ in HELPED])
def test_every_commands_help_says_what_it_does_its_options_and_its_exit_codes(
    name: str, parser: argparse.ArgumentParser
) -> None:
    """A new operator reads ``--help`` first: a command with no description, an option with no help or no
    exit codes leaves them to guess what a gate will see."""
    text = parser.format_help()
    assert parser.description, f"{name}: no description"
    assert "exit codes" in text, f"{name}: no exit codes"
    unexplained = [a.option_strings or [a.dest] for a in parser._actions if not a.help]
    assert not unexplained, f"{name}: options without help: {unexplained}"
