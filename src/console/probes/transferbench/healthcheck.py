"""TransferBench ``healthcheck`` preset: ``Testing <what> ........PASS|FAIL (N test(s))`` and its items.

Non-verbose runs print the verdict on the ``Testing`` line after one dot per GPU, then one
line per failing GPU or GPU pair. With ``VERBOSE=1`` every measurement gets a line before the
verdict, which then stands on a line of its own.
"""

from __future__ import annotations

import re

from console.model.transferbench import HealthcheckItem, HealthcheckTest

_TESTING = re.compile(
    r"^\s*Testing\s+(?P<name>.*?)\s*(?P<dots>\.*)(?P<verdict>PASS|FAIL)?(?:\s*\((?P<count>\d+) test\(s\)\))?\s*$"
)
_VERDICT = re.compile(r"^[\s.]*(?P<verdict>PASS|FAIL)(?:\s*\((?P<count>\d+) test\(s\)\))?\s*$")
# " GPU 00: Measured:  86.17 GB/s      Criteria:  87.30 GB/s" (failure) and
# "   GPU 00 to GPU 01: : Measured  40.30 Limit  43.65" (verbose).
_ITEM = re.compile(
    r"^\s*GPU\s*(?P<gpu>\d+)(?:\s+to\s+GPU\s*(?P<dst>\d+))?\s*:[\s:]*(?:Measured:?)?\s*(?P<measured>\d+(?:\.\d+)?)"
    r"\s*(?:GB/s)?\s*(?:Criteria:|Limit)\s*(?P<criteria>\d+(?:\.\d+)?)"
)
# The tests every release of the preset runs on the hardware it supports, all-to-all last (the HBM tests
# came later, with v1.63).
HEALTHCHECK_TESTS = (
    "unidirectional host to device copy",
    "unidirectional device to host copy",
    "bidirectional host<->device copies",
    "all-to-all XGMI copies",
)
# The preset declines to run (and exits) on hardware it has no criteria for.
UNSUPPORTED = re.compile(r"healthcheck preset (?:is currently not supported|is currently only supported|not supported)")


def healthcheck_tests(lines: list[str]) -> list[HealthcheckTest]:
    """Every ``Testing ...`` section with its verdict (None when the output stops before it) and items."""
    tests: list[HealthcheckTest] = []
    for line in lines:
        if (match := _TESTING.match(line)) and match.group("name"):
            # Dots and interleaved [ERROR]/[WARN] messages follow the name on the same line.
            name = re.split(r"\s*\.{2,}|\s*\[(?:ERROR|WARN)\]", match.group("name"))[0]
            dots = len(match.group("dots"))
            tests.append(
                HealthcheckTest(name=name.strip(), gpus_tested=dots if dots and match.group("verdict") else None)
            )
            _set_verdict(tests[-1], match)
        elif tests and tests[-1].passed is None and (match := _VERDICT.match(line)):
            _set_verdict(tests[-1], match)
        elif tests and (match := _ITEM.match(line)):
            measured, criteria = float(match.group("measured")), float(match.group("criteria"))
            item = HealthcheckItem(
                gpu=int(match.group("gpu")),
                dst_gpu=int(match.group("dst")) if match.group("dst") else None,
                measured_gbps=measured,
                criteria_gbps=criteria,
                passed=measured >= criteria,
            )
            # Verbose runs list a failing item twice: as a measurement and again under FAIL.
            if item not in tests[-1].items:
                tests[-1].items.append(item)
    return tests


def _set_verdict(test: HealthcheckTest, match: re.Match[str]) -> None:
    if match.group("verdict"):
        test.passed = match.group("verdict") == "PASS"
        test.failed_count = int(match.group("count")) if match.group("count") else (0 if test.passed else None)
