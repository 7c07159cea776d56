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


# CI runs as root with every Debian package installed, so a skip there means a real-infrastructure
# test (sshd fleet, Slurm lab, network namespaces) silently did not run: ``--fail-on-skip`` fails the run.
_SKIPPED: list[str] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fail-on-skip", action="store_true", help="fail the run when any test is skipped (CI: nothing may skip)"
    )


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _SKIPPED.append(f"{report.nodeid}: {reason}")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    if config.getoption("--fail-on-skip") and _SKIPPED:
        terminalreporter.write_line(f"--fail-on-skip: {len(_SKIPPED)} skipped, which CI does not allow:", red=True)
        for line in _SKIPPED[:50]:
            terminalreporter.write_line(f"  {line}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if session.config.getoption("--fail-on-skip") and _SKIPPED and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
