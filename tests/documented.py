"""The workload examples of docs/workloads.md, as the tests that run them read them: from the page itself,
so the examples an operator copies are the ones tested."""

from __future__ import annotations

import re
from pathlib import Path

WORKLOADS_DOC = Path(__file__).resolve().parents[1] / "docs" / "workloads.md"


def workload_blocks() -> list[str]:
    """Every ```toml block of docs/workloads.md, in page order."""
    return re.findall(r"```toml\n(.*?)```", WORKLOADS_DOC.read_text(), re.DOTALL)


def workload_examples() -> str:
    """The page's TOML blocks as one cluster-file fragment."""
    return "\n".join(workload_blocks())
