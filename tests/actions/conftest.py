"""Fixtures for the action tests: the real Slurm lab (session) reset after each test, and a fresh store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from console.store import Store
from tests.harness.slurm_lab import SlurmLab, slurm_lab

__all__ = ["slurm_lab"]  # the session fixture, shared by every test here

DATA = Path(__file__).parent / "data"


@pytest.fixture
def lab(slurm_lab: SlurmLab, monkeypatch: pytest.MonkeyPatch) -> Iterator[SlurmLab]:
    """The session lab with ``SLURM_CONF`` set for local runs; every node idle again afterwards."""
    monkeypatch.setenv("SLURM_CONF", str(slurm_lab.conf))
    yield slurm_lab
    slurm_lab.reset()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """An empty history database."""
    opened = Store(tmp_path / "history.sqlite")
    yield opened
    opened.close()
