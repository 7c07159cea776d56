"""Fixtures for the remediation tests: the real Slurm lab (session) reset after each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.harness.slurm_lab import SlurmLab, slurm_lab

__all__ = ["slurm_lab"]  # the session fixture, shared by every test here


@pytest.fixture
def lab(slurm_lab: SlurmLab, monkeypatch: pytest.MonkeyPatch) -> Iterator[SlurmLab]:
    """The session lab with ``SLURM_CONF`` set for local runs; every node idle again afterwards."""
    monkeypatch.setenv("SLURM_CONF", str(slurm_lab.conf))
    yield slurm_lab
    slurm_lab.reset()
