"""Shell completion, the man page and ``help TOPIC``, each driven by the real program that reads it.

bash completes through the script ``instinct-console completion bash`` prints, called as bash calls it
(``COMP_LINE``, ``COMP_POINT``, ``COMP_WORDS``, ``COMP_CWORD``) in a bash subprocess; fish through
``complete -C``; zsh is loaded by its own ``compinit``. ``man -l`` renders the page. The shipped files
(``man/``, ``completions/``) must be what ``python -m console.commands.generate`` writes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from console.cli import main
from console.commands.generate import ROOT, generated_files, shipped_tree
from console.commands.guide import guide_path, sections

BIN = Path(sys.executable).parent  # where the console script of this environment is
CLUSTER = """name = "lab"
[[pools]]
name = "mi300x-a"
gpu_model = "MI300X"
nodes = "gpu[001-004]"
[[pools]]
name = "mi355x-b"
gpu_model = "MI355X"
nodes = "big[01-02]"
"""
# Calls the completion function as bash does for the line in $1, then prints what it offers, one a line.
BASH_DRIVER = r"""
source "$2"
complete -p instinct-console
line="$1"
COMP_LINE="$line"
COMP_POINT=${#line}
read -ra COMP_WORDS <<<"$line"
[[ $line == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
_instinct_console
if ((${#COMPREPLY[@]})); then printf '%s\n' "${COMPREPLY[@]}"; fi
"""


def _environment(home: Path) -> dict[str, str]:
    drop = {"XDG_CONFIG_HOME", "XDG_STATE_HOME", "COLUMNS", "LINES"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    return {**env, "HOME": str(home), "PATH": f"{BIN}:{env['PATH']}"}


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What ``instinct-console completion bash`` prints, as the guide has the operator save it."""
    home = tmp_path_factory.mktemp("home")
    done = subprocess.run(
        ["instinct-console", "completion", "bash"], cwd=home, env=_environment(home), capture_output=True,
        text=True, timeout=60, check=True,
    )  # fmt: skip
    script = home / "instinct-console"
    script.write_text(done.stdout)
    return script


@pytest.fixture
def site(tmp_path: Path, bash_script: Path) -> Path:
    """A working directory holding the default cluster file (./cluster.toml), and another one elsewhere."""
    (tmp_path / "cluster.toml").write_text(CLUSTER)
    (tmp_path / ".completion.bash").write_text(bash_script.read_text())
    other = tmp_path / "other.toml"
    other.write_text(CLUSTER.replace("gpu[001-004]", "node[7-8]"))
    return tmp_path


def bash_completes(site: Path, line: str) -> list[str]:
    done = subprocess.run(
        ["bash", "--norc", "-c", BASH_DRIVER, "driver", line, str(site / ".completion.bash")],
        cwd=site, env=_environment(site), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and not done.stderr, done.stderr
    registered, *offered = done.stdout.splitlines()
    assert registered == "complete -F _instinct_console instinct-console"
    return offered


def test_the_shipped_man_page_and_scripts_are_what_the_generator_writes() -> None:
    for relative, text in generated_files().items():
        assert (ROOT / relative).read_text() == text, f"regenerate: python -m console.commands.generate ({relative})"


def test_bash_completes_commands_options_and_choices(site: Path) -> None:
    assert bash_completes(site, "instinct-console sw") == ["sweep"]
    assert bash_completes(site, "instinct-console sim s") == ["serve"]
    assert bash_completes(site, "instinct-console sweep --pro") == ["--probe-timeout", "--probes", "--prom"]
    assert "multinode" in bash_completes(site, "instinct-console sweep --probes ")
    assert bash_completes(site, "instinct-console sweep -i oth") == ["other.toml"]


def test_bash_completes_nodes_pools_and_hostlists_from_the_cluster_file(site: Path) -> None:
    assert bash_completes(site, "instinct-console drain gpu00") == ["gpu001", "gpu002", "gpu003", "gpu004"]
    assert bash_completes(site, "instinct-console drain gpu[") == ["gpu[001-004]"]
    assert bash_completes(site, "instinct-console history --node b") == ["big01", "big02"]
    assert bash_completes(site, "instinct-console diff --pool mi30") == ["mi300x-a"]
    # pool=NAME: bash replaces what follows the '=', so the reply is that part alone.
    assert bash_completes(site, "instinct-console sweep --nodes pool=mi35") == ["mi355x-b"]
    # A comma list: the next term completes after the ones typed.
    assert bash_completes(site, "instinct-console sweep --nodes gpu001,big0") == ["gpu001,big01", "gpu001,big02"]
    # -i on the line names another cluster file.
    assert bash_completes(site, "instinct-console drain -i other.toml node") == ["node[7-8]", "node7", "node8"]


def test_without_a_cluster_file_a_tab_offers_no_node_and_prints_nothing(tmp_path: Path, bash_script: Path) -> None:
    (tmp_path / ".completion.bash").write_text(bash_script.read_text())
    assert bash_completes(tmp_path, "instinct-console drain gpu") == []


@pytest.mark.skipif(shutil.which("fish") is None, reason="needs fish")
def test_fish_completes_a_command_and_a_node(site: Path) -> None:
    script = site / "instinct-console.fish"
    script.write_text(generated_files()["completions/instinct-console.fish"])

    def fish(line: str) -> list[str]:
        done = subprocess.run(
            ["fish", "--no-config", "-c", f"source {script}; complete -C '{line}'"],
            cwd=site, env=_environment(site), capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0 and not done.stderr, done.stderr
        return [row.split("\t")[0] for row in done.stdout.splitlines()]

    assert fish("instinct-console sw") == ["sweep"]
    assert fish("instinct-console drain gpu00") == ["gpu001", "gpu002", "gpu003", "gpu004"]
    assert fish("instinct-console sweep --nodes gpu001,big0") == ["gpu001,big01", "gpu001,big02"]
    assert "--probes" in fish("instinct-console sweep --pro")


@pytest.mark.skipif(shutil.which("zsh") is None, reason="needs zsh")
def test_zsh_loads_the_script_and_binds_it(site: Path) -> None:
    load = 'eval "$(instinct-console completion zsh)"'
    code = f"autoload -U compinit && compinit -u -D && {load} && print $_comps[instinct-console]"
    done = subprocess.run(
        ["zsh", "-f", "-c", code], cwd=site, env=_environment(site), capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0 and not done.stderr, done.stderr
    assert done.stdout.strip() == "_instinct-console"


@pytest.mark.skipif(shutil.which("zsh") is None or shutil.which("tmux") is None, reason="needs zsh and tmux")
def test_zsh_completes_a_command_and_the_nodes_at_a_real_prompt(site: Path) -> None:
    """An interactive zsh in tmux, the script autoloaded from fpath as the guide installs it, and Tab typed."""
    functions = site / "zfunc"
    functions.mkdir()
    (functions / "_instinct-console").write_text(generated_files()["completions/_instinct-console"])
    (site / ".zshrc").write_text(f"fpath=({functions} $fpath)\nautoload -U compinit && compinit -u -D\nPS1='zsh> '\n")
    socket = f"ic-zsh-{os.getpid()}"
    env = {**_environment(site), "ZDOTDIR": str(site), "TERM": "xterm"}

    def tmux(*args: str) -> str:
        argv = ["tmux", "-L", socket, *args]
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30, check=False).stdout

    def screen_shows(text: str) -> str:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if text in (shown := tmux("capture-pane", "-p", "-t", "z")):
                return shown
            time.sleep(0.2)
        raise AssertionError(f"{text!r} never shown:\n{tmux('capture-pane', '-p', '-t', 'z')}")

    tmux("new-session", "-d", "-s", "z", "-x", "150", "-y", "30", "-c", str(site), "zsh -i")
    try:
        screen_shows("zsh>")
        tmux("send-keys", "-t", "z", "instinct-console sw", "Tab")
        screen_shows("instinct-console sweep")
        tmux("send-keys", "-t", "z", "-l", "--", "--nodes gpu00")  # literal text: tmux would read --nodes as flags
        tmux("send-keys", "-t", "z", "Tab")
        assert "gpu001  gpu002  gpu003  gpu004" in screen_shows("gpu004")
    finally:
        tmux("kill-server")


@pytest.mark.skipif(shutil.which("man") is None, reason="needs man (man-db)")
def test_the_man_page_renders_every_command_and_option(tmp_path: Path) -> None:
    page = tmp_path / "instinct-console.1"
    page.write_text(generated_files()["man/instinct-console.1"])
    env = {**os.environ, "MANWIDTH": "100", "MANPAGER": "cat", "PAGER": "cat"}
    done = subprocess.run(["man", "-l", str(page)], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and not done.stderr, done.stderr
    text = done.stdout
    assert text.startswith("INSTINCT-CONSOLE(1)")
    for heading in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXIT STATUS", "ENVIRONMENT", "FILES"):
        assert f"\n{heading}\n" in text, heading
    for command in shipped_tree().walk()[1:]:
        assert f"instinct-console {command.name}\n" in text, command.name
    assert "--address-base ADDRESS_BASE" in text and "NO_COLOR" in text


def test_help_finds_each_top_level_section_by_number_and_by_title(capsys: pytest.CaptureFixture[str]) -> None:
    top = [s for s in sections(guide_path().read_text()) if s.level == 2]
    assert len(top) >= 15
    for section in top:
        assert main(["help", str(section.number)]) == 0
        assert capsys.readouterr().out == section.text
        title = section.title.split(". ", 1)[1]
        assert main(["help", *title.split()]) == 0, title
        assert capsys.readouterr().out.startswith(f"## {section.title}\n")
    assert main(["help", "exit", "codes"]) == 0 and "| code | meaning |" in capsys.readouterr().out


def test_help_lists_the_sections_and_says_when_a_topic_matches_none_or_several(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["help"]) == 0
    listed = capsys.readouterr().out
    assert "8. Exit codes" in listed and "  The remediation view (`H`)" in listed
    assert main(["help", "no-such-topic"]) == 2
    assert "no section of the guide matches 'no-such-topic'" in capsys.readouterr().err
    assert main(["help", "console"]) == 2
    assert "several sections match" in capsys.readouterr().err
