"""Long fuzz mode: every property test of the parsers and config loaders with 10,000+ cases each.

CI runs the same tests with small counts (FUZZ_EXAMPLES unset). This runner sets FUZZ_EXAMPLES,
runs only the hypothesis tests of the test files that use the shared fuzz settings, and prints how
many cases each one ran, how long it took and how it ended:

    .venv/bin/python bench/fuzz_long.py                    # 10,000 cases per test, derandomized
    .venv/bin/python bench/fuzz_long.py --random -n 20000  # new random cases each run
    .venv/bin/python bench/fuzz_long.py -k inventory --json fuzz.json

Exit status 0 when every test passed (known defects marked xfail count as expected), 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# A test file takes part when it uses one of the shared fuzz settings (tests/probes/fuzz.py or the config ones).
FUZZ_MARKERS = ("FUZZ_SETTINGS", "CONFIG_FUZZ_SETTINGS", "DETECT_SETTINGS")
_CASES = re.compile(r"- (\d+) passing, (\d+) failing, and (\d+) invalid test cases")


@dataclass
class FuzzResult:
    """One property test's run in long mode."""

    test: str
    cases: int
    invalid: int
    seconds: float
    outcome: str


def fuzz_files() -> list[Path]:
    """Test files using the shared fuzz settings."""
    files = sorted((ROOT / "tests").rglob("test_*.py"))
    return [f for f in files if any(marker in f.read_text(encoding="utf-8") for marker in FUZZ_MARKERS)]


class _Collector:
    """pytest plugin: keep only hypothesis tests, and read each one's case count from its statistics."""

    def __init__(self) -> None:
        self.results: list[FuzzResult] = []
        self._started: dict[str, float] = {}

    def pytest_collection_modifyitems(self, config: Any, items: list[Any]) -> None:
        from hypothesis import is_hypothesis_test

        keep = [item for item in items if is_hypothesis_test(getattr(item, "obj", None))]
        config.hook.pytest_deselected(items=[item for item in items if item not in keep])
        items[:] = keep

    def pytest_runtest_setup(self, item: Any) -> None:
        self._started[item.nodeid] = time.monotonic()

    def pytest_runtest_makereport(self, item: Any, call: Any) -> None:
        if call.when != "call":
            return
        stats = getattr(item, "hypothesis_statistics", "")
        counts = [tuple(map(int, m.groups())) for m in _CASES.finditer(stats)]
        outcome = "passed" if call.excinfo is None else "failed"
        if call.excinfo is not None and item.get_closest_marker("xfail") is not None:
            outcome = "xfail (known defect)"
        self.results.append(
            FuzzResult(
                test=item.nodeid,
                cases=sum(c[0] + c[1] for c in counts),
                invalid=sum(c[2] for c in counts),
                seconds=round(time.monotonic() - self._started[item.nodeid], 1),
                outcome=outcome,
            )
        )


def main(argv: list[str] | None = None) -> int:
    """Run the long fuzz mode; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--examples", type=int, default=10_000, help="cases per test (default 10000)")
    parser.add_argument("--random", action="store_true", help="new random cases instead of the derandomized ones")
    parser.add_argument("-k", dest="keyword", help="only tests matching this pytest -k expression")
    parser.add_argument("--json", type=Path, help="also write the results as JSON")
    args = parser.parse_args(argv)

    # The test modules read these when pytest imports them below.
    os.environ["FUZZ_EXAMPLES"] = str(args.examples)
    if args.random:
        os.environ["FUZZ_RANDOM"] = "1"
    import pytest

    collector = _Collector()
    pytest_args = ["-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT), *map(str, fuzz_files())]
    if args.keyword:
        pytest_args += ["-k", args.keyword]
    os.chdir(ROOT)
    started = time.monotonic()
    status = pytest.main(pytest_args, plugins=[collector])
    elapsed = time.monotonic() - started

    width = max((len(r.test) for r in collector.results), default=10)
    print(f"\n{'test':{width}}  {'cases':>7}  {'invalid':>7}  {'seconds':>8}  outcome")
    for r in collector.results:
        print(f"{r.test:{width}}  {r.cases:>7}  {r.invalid:>7}  {r.seconds:>8.1f}  {r.outcome}")
    total = sum(r.cases for r in collector.results)
    print(f"{len(collector.results)} property tests, {total} cases in {elapsed:.0f} s")
    short = [r.test for r in collector.results if r.outcome == "passed" and r.cases < args.examples]
    if short:
        print(f"fewer than {args.examples} cases (a test's own share of the budget, or no more distinct inputs):")
        print("  " + "\n  ".join(short))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in collector.results], indent=2) + "\n")
    return 0 if status in (pytest.ExitCode.OK, 0) else 1


if __name__ == "__main__":
    sys.exit(main())
