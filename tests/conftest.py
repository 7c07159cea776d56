"""Shared test fixtures: paths to the real tool outputs copied from Instinct nodes."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).parent
REAL = TESTS / "fixtures" / "real"

# Session fixtures that start real infrastructure (a Slurm lab, sshd fleets): under pytest-xdist
# (``-n N --dist loadgroup``, as .ci/run runs) every test using one goes to a single worker, so each is
# started once per run instead of once per worker.
SHARED_SESSION_FIXTURES = ("slurm_lab", "sshd_fleet", "recording_sim")


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


@pytest.hookimpl(tryfirst=True)  # before xdist reads the marks to form its groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Keep tests that share an expensive fixture in one xdist group (see ``_xdist_group``)."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None and (group := _xdist_group(item)) is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def _xdist_group(item: pytest.Item) -> str | None:
    """The session infrastructure the test uses, else its module when it uses a module-wide fixture
    (a simulated cluster, a fleet): one worker starts it once, as a run without xdist would."""
    used = getattr(item, "fixturenames", ())
    shared = [name for name in SHARED_SESSION_FIXTURES if name in used]
    if len(shared) > 1:
        raise pytest.UsageError(f"{item.nodeid} uses {shared}: one xdist group cannot keep each started once")
    if shared:
        return shared[0]
    module = item.nodeid.split("::")[0]
    info = getattr(item, "_fixtureinfo", None)
    for defs in info.name2fixturedefs.values() if info is not None else ():
        if any(d.scope == "module" or (d.scope == "session" and d.baseid == module) for d in defs):
            return module
    return None


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
