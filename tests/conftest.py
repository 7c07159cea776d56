"""Shared test fixtures: paths to the real tool outputs copied from Instinct nodes."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).parent
REAL = TESTS / "fixtures" / "real"


@pytest.fixture(scope="session")
def real_dir() -> Path:
    """Folder of real tool outputs (see fixtures/real/INDEX.md for where each came from)."""
    return REAL
