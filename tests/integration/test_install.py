"""The wheel is all an operator needs: built, installed in a fresh virtualenv and run far from the repository.

``pipx install .`` or ``pip install .`` gives the console a copy of the package without the source tree
beside it, so the check packs, themes and report schema must travel inside the wheel
(``console/_data``). The virtualenv here borrows the dependencies already installed for the tests
through a ``.pth`` line, which adds their directory without running its ``.pth`` files: the editable
install's path to ``src/`` stays out, and ``console`` can only come from the wheel. Nothing is
downloaded and nothing needs root.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GPU_MODELS = ["MI210", "MI250X", "MI300A", "MI300X", "MI325X", "MI350X", "MI355X"]
THEMES = ["instinct-dark", "instinct-high-contrast", "instinct-light"]
# What the installed package says about itself: where it is, and where it found its data.
WHERE_CODE = """
import json, console
from console.checks.loader import builtin_checks_dir, load_packs
from console.ui.theme import builtin_themes_dir, load_themes, stylesheet_path
print(json.dumps({
    "package": console.__file__,
    "checks": str(builtin_checks_dir()),
    "themes": str(builtin_themes_dir()),
    "stylesheet": str(stylesheet_path()),
    "packs": sorted(load_packs()),
    "theme_names": sorted(load_themes()),
}))
"""


@dataclass(frozen=True)
class Installed:
    """The virtualenv holding the wheel: its interpreter, its console script and its site-packages."""

    python: Path
    script: Path
    site: Path


def _run(argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    """Run a step that must succeed; its stdout."""
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, f"{argv}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """A virtualenv outside the repository with the wheel installed, and the tests' dependencies borrowed."""
    work = tmp_path_factory.mktemp("install")
    # No build isolation and no index: hatchling comes with the dev extra (scripts/setup.sh).
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
          "-q", "-w", str(work / "dist"), str(ROOT)])  # fmt: skip
    (wheel,) = (work / "dist").glob("instinct_console-*.whl")
    venv = work / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)])
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip())
    (site / "_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return Installed(python, venv / "bin" / "instinct-console", site)


def _environment(home: Path) -> dict[str, str]:
    """A new user's environment: their own home and XDG folders, no Python path of the test run."""
    drop = {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    return {**env, "HOME": str(home)}


def test_the_installed_console_finds_its_packs_themes_and_schema_in_the_install(
    installed: Installed, tmp_path: Path
) -> None:
    where = json.loads(_run([str(installed.python), "-c", WHERE_CODE], cwd=tmp_path, env=_environment(tmp_path)))
    data = installed.site / "console" / "_data"
    assert Path(where["package"]).parent == installed.site / "console", where
    assert (where["checks"], where["themes"]) == (str(data / "checks"), str(data / "themes")), where
    assert Path(where["stylesheet"]).is_file()
    assert where["packs"] == GPU_MODELS and where["theme_names"] == THEMES, where
    for schema in (ROOT / "schemas").glob("*.schema.json"):
        assert (data / "schemas" / schema.name).read_text() == schema.read_text(), schema.name


def test_the_install_has_the_man_page_the_completions_and_the_guide(installed: Installed, tmp_path: Path) -> None:
    prefix = installed.python.parent.parent  # where pip puts a wheel's shared data: the environment's root
    shipped = {
        "share/man/man1/instinct-console.1": "man/instinct-console.1",
        "share/bash-completion/completions/instinct-console": "completions/instinct-console.bash",
        "share/zsh/site-functions/_instinct-console": "completions/_instinct-console",
        "share/fish/vendor_completions.d/instinct-console.fish": "completions/instinct-console.fish",
    }
    for where, source in shipped.items():
        assert (prefix / where).read_text() == (ROOT / source).read_text(), where
    env = {**_environment(tmp_path), "MANPATH": str(prefix / "share" / "man"), "MANPAGER": "cat", "PAGER": "cat"}
    assert "instinct-console sweep" in _run(["man", "instinct-console"], cwd=tmp_path, env=env)
    said = _run([str(installed.script), "help", "8"], cwd=tmp_path, env=_environment(tmp_path))
    assert said.startswith("## 8. Exit codes\n"), said[:200]
    guide = installed.site / "console" / "_data" / "docs" / "operator-guide.md"
    assert guide.read_text() == (ROOT / "docs" / "operator-guide.md").read_text()


def test_the_installed_demo_sweeps_from_a_directory_that_is_not_the_repository(
    installed: Installed, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        [str(installed.script), "demo", "--headless", "--nodes", "4", "--time-factor", "400"],
        cwd=home, env=_environment(home), capture_output=True, text=True, timeout=150, check=False,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode in (0, 1), output
    assert "Traceback" not in output, output
    assert any(line.startswith("sweep 1: 4 nodes in ") for line in done.stdout.splitlines()), output
    assert done.stdout.splitlines()[-1].startswith(f"exit {done.returncode} ("), output
