"""The site's and the user's config files give every command its defaults; the command line still wins."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from console.cli import build_parser, main
from console.commands.site_config import apply_site_config, load_site_config


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    etc, home = tmp_path / "etc", tmp_path / "home"
    (etc / "instinct-console").mkdir(parents=True)
    (home / "instinct-console").mkdir(parents=True)
    monkeypatch.setenv("INSTINCT_CONSOLE_ETC", str(etc))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return etc / "instinct-console" / "config.toml", home / "instinct-console" / "config.toml"


def _parsed(*argv: str) -> argparse.Namespace:
    parser = build_parser()
    apply_site_config(parser, load_site_config())
    return parser.parse_args(list(argv))


def test_the_users_file_overrides_the_sites_and_the_command_line_both(files: tuple[Path, Path]) -> None:
    system, user = files
    system.write_text(
        'cluster = "/etc/ic/east.toml"\nstore = "/var/lib/ic/east.sqlite"\n[sweep]\nprobes = "standard"\n'
    )
    user.write_text('store = "/home/ops/east.sqlite"\n[sweep]\nallow-unknown = 0.05\naccept-new = true\n')
    args = _parsed("sweep")
    assert args.inventory == "/etc/ic/east.toml" and args.store == Path("/home/ops/east.sqlite")
    assert (args.probes, args.allow_unknown, args.accept_new) == ("standard", 0.05, True)
    given = _parsed("sweep", "-i", "west.toml", "--probes", "quick", "--allow-unknown", "0")
    assert (given.inventory, given.probes, given.allow_unknown) == ("west.toml", "quick", 0.0)
    assert _parsed("drift").inventory == "/etc/ic/east.toml"


def test_a_configured_cluster_answers_a_required_cluster_file(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    files[0].write_text('cluster = "/nonexistent/east.toml"\n')
    assert main(["sweep"]) == 2
    err = capsys.readouterr().err
    assert "/nonexistent/east.toml" in err and "required" not in err


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('clustr = "x"\n', "unknown key 'clustr'"),
        ('[sweep]\nprobes = "everything"\n', "'everything' is not one of"),
        ('[sweep]\nallow-unknown = "lots"\n', "allow-unknown"),
        ("[sweep]\nno-such-option = 1\n", "[sweep] no-such-option: the command has no such option"),
        ('[swep]\nprobes = "quick"\n', "[swep] is not a command"),
        ('[keys]\ndrain = "ctrl+d"\n', "[keys] goes in keys.toml beside it"),
        ("cluster = \n", "config.toml"),
    ],
)
def test_a_default_the_console_cannot_use_is_an_error_naming_file_and_key(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str], text: str, said: str
) -> None:
    """A misspelt default silently ignored is a gate that runs with the wrong probes."""
    files[1].write_text(text)
    assert main(["history"]) == 2
    err = capsys.readouterr().err
    assert said in err and str(files[1]) in err, err


def test_config_says_where_each_value_comes_from(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    system, user = files
    system.write_text('theme = "light"\n[sweep]\nprobes = "standard"\n')
    user.write_text('theme = "high-contrast"\n')
    assert main(["config", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [f["read"] for f in shown["files"]] == [True, True]
    by_key = {(s["command"], s["key"]): s for s in shown["settings"]}
    assert by_key[(None, "theme")] == {"command": None, "key": "theme", "value": "high-contrast", "source": str(user)}
    assert by_key[("sweep", "probes")]["source"] == str(system)
    assert "cluster" in shown["built_in"] and "theme" not in shown["built_in"]


def test_the_guides_example_is_a_config_the_console_takes(files: tuple[Path, Path]) -> None:
    guide = (Path(__file__).resolve().parents[1] / "docs" / "operator-guide.md").read_text()
    section = guide.split("### Site and user defaults", 1)[1]
    example = section.split("```toml\n", 1)[1].split("```", 1)[0]
    files[0].write_text(example)
    args = _parsed("watch")
    assert args.inventory == "/etc/instinct-console/east.toml" and args.every == 900
    assert _parsed("sweep").checks == [Path("/etc/instinct-console/checks.d")]


def test_a_switch_in_the_config_is_on_until_the_command_line_says_otherwise(files: tuple[Path, Path]) -> None:
    files[0].write_text('cluster = "east.toml"\n')
    files[1].write_text("[sweep]\nquiet = true\n")
    assert _parsed("sweep").detail == "quiet"
    assert _parsed("sweep", "--verbose").detail == "findings"
    files[1].write_text("[sweep]\nverbose = false\n")
    assert _parsed("sweep").detail == "nodes"
