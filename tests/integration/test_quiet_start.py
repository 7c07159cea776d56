"""A quiet start: nothing from a dependency reaches the operator's terminal.

An operator's first sight of every command, and a prolog's log of every gate, is its stderr. When
cryptography 51 deprecated DSA, asyncssh's import printed ten warning lines before every command's
output (``--version`` included) without any change here. The package filters that one notice narrowly
(``console/__init__.py``); these tests hold ``--version``, ``--help`` and a healthy sweep to an empty
stderr twice: on the locked install the suite runs on (``constraints.txt``), and on a fresh virtualenv
holding the wheel with the newest releases its ranges admit, as ``pipx install .`` gives an operator
today, so the next release that talks on import is seen here before an operator sees it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.sim.launcher import SimCluster, start_sim_cluster

ROOT = Path(__file__).resolve().parents[2]
# Both tests sweep one simulator: one worker takes them (tests/conftest.py's loadgroup).
pytestmark = pytest.mark.xdist_group("quiet-start")


@pytest.fixture(scope="module")
def healthy_sim() -> Iterator[SimCluster]:
    """Two healthy simulated nodes: a sweep of them passes and has nothing to complain about."""
    with start_sim_cluster(nodes=2, faults="none", time_factor=100) as sim:
        yield sim


def _step(argv: list[str], env: dict[str, str] | None = None) -> str:
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"{argv}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def _assert_quiet(script: Path, sim: SimCluster, work: Path) -> None:
    """--version, --help and a healthy sweep: each exits 0 with nothing at all on stderr."""
    drop = {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONWARNINGS"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(HOME=str(work), XDG_STATE_HOME=str(work / "state"), XDG_CONFIG_HOME=str(work / "config"))
    sweep = ["sweep", "-i", str(sim.inventory_path), "--probes", "quick", "--store", str(work / "h.sqlite")]
    for argv in (["--version"], ["--help"], sweep):
        done = subprocess.run(
            [str(script), *argv], cwd=work, env=env, capture_output=True, text=True, timeout=180, check=False
        )
        assert done.returncode == 0, f"{argv}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
        assert done.stderr == "", f"{argv} wrote to stderr:\n{done.stderr}"
    assert "PASS=2" in done.stdout, done.stdout


def test_the_locked_install_starts_quietly(healthy_sim: SimCluster, tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("instinct-console")
    _assert_quiet(script, healthy_sim, tmp_path)


@pytest.fixture(scope="module")
def newest_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with the console's wheel and the newest releases of what it needs, from PyPI.

    The wheel is built offline with the locked build backend; its dependencies are resolved anew, with
    no lock in the environment (``PIP_CONSTRAINT`` cleared), as an operator's ``pip install .`` does.
    """
    work = tmp_path_factory.mktemp("newest")
    _step([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
           "-q", "-w", str(work / "dist"), str(ROOT)])  # fmt: skip
    (wheel,) = (work / "dist").glob("instinct_console-*.whl")
    venv = work / "venv"
    _step([sys.executable, "-m", "venv", str(venv)])
    env = {**os.environ, "PIP_CONSTRAINT": "", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    _step([str(venv / "bin" / "pip"), "install", "-q", "--upgrade-strategy", "eager", str(wheel)], env)
    return venv / "bin" / "instinct-console"


def test_the_newest_releases_start_quietly(newest_install: Path, healthy_sim: SimCluster, tmp_path: Path) -> None:
    freeze = _step([str(newest_install.with_name("pip")), "freeze"])
    try:
        _assert_quiet(newest_install, healthy_sim, tmp_path)
    except AssertionError as failed:
        raise AssertionError(f"{failed}\non these releases:\n{freeze}") from None
