"""Score ``instinct-console parse`` on the corpus of real tool outputs (tests/fixtures/real/ and corpus/).

For every file named in ``tests/fixtures/expected.toml`` (``real/`` and ``corpus/``) this does what ``instinct-console
parse --model M FILE`` does: detect and parse the text, then judge it with the check pack of the
model the expert names (M, as an operator who knows the node would give it), when there is a pack
for it, else with the model the output names.
It prints, per file, whether the detected tool, ``ok`` and the verdict match what the expert
expects, then the totals. A file is "fully right" when all three match.

The console's verdict, for comparison with the expert's:

- judged by a pack: the roll-up status (PASS, WARN, FAIL, UNKNOWN);
- not judged, the tool reported a failure or did not finish (``ok`` false): FAIL, as the exit code 1;
- not judged otherwise: ``n/a`` (the console gives no health verdict);
- not recognised or unreadable (``ParseError``): UNKNOWN, as the exit code 2.

This is a measurement, not a test: it never fails. Run it from the repository root:

    .venv/bin/python bench/corpus_score.py [--only SUBSTRING] [--why]
"""

from __future__ import annotations

import argparse
import re
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from console.checks import CheckPack, load_packs
from console.commands.parse import judge
from console.probes import ParseError, parse_output

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
# The model the expert names, when the entry starts with one ("MI300X (196300 MB)"); an entry that
# only guesses ("not stated (MI300-class)") gives none, and the output must name its model itself.
_MODEL = re.compile(r"(MI\d{3}[A-Z]?)\b")


@dataclass(frozen=True)
class Outcome:
    """What the console made of one file."""

    tool: str  # "none" when nothing recognised it
    kind: str
    ok: bool | None  # None when it did not parse
    verdict: str
    reason: str


def console_outcome(path: Path, expert_model: str, packs: dict[str, CheckPack]) -> Outcome:
    """Parse ``path`` and judge it as ``instinct-console parse [--model M]`` does."""
    named = _MODEL.match(expert_model)
    model = named.group(1) if named and named.group(1) in packs else None
    try:
        result = parse_output(path.read_bytes())
    except ParseError as exc:
        return Outcome(exc.tool or "none", "-", None, "UNKNOWN", f"parse error: {exc.reason}")
    judgement = judge(result, model, packs)
    if judgement.judged is not None:
        verdict = judgement.judged.verdict
        return Outcome(result.tool.value, result.kind, result.ok, verdict.status.value, verdict.reason)
    why = f"not judged: {judgement.reason}"
    return Outcome(result.tool.value, result.kind, result.ok, "n/a" if result.ok else "FAIL", why)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="score only files whose name contains this")
    parser.add_argument("--why", action="store_true", help="print the console's reason under each mismatch")
    args = parser.parse_args()
    expected = tomllib.loads((CORPUS / "expected.toml").read_text(encoding="utf-8"))
    packs = load_packs([])
    totals: Counter[str] = Counter()
    by_tool: dict[str, Counter[str]] = {}
    print(f"{'file':78} {'tool':5} {'ok':5} {'verdict (console/expert)':28}")
    for name, want in expected.items():
        if args.only not in name:
            continue
        got = console_outcome(CORPUS / name, str(want.get("model", "")), packs)
        tool_ok = got.tool == want["tool"]
        ok_ok = got.ok == want["ok"]
        verdict_ok = got.verdict == want["verdict"]
        marks = ["yes" if tool_ok else "NO", "yes" if ok_ok else "NO", "yes" if verdict_ok else "NO"]
        print(f"{name:78} {marks[0]:5} {marks[1]:5} {marks[2]:3} {got.verdict}/{want['verdict']}")
        if args.why and not (tool_ok and ok_ok and verdict_ok):
            print(f"{'':4}console: tool={got.tool} kind={got.kind} ok={got.ok}; {got.reason[:160]}")
            print(f"{'':4}expert: {want['why']}")
        right = {"tool": tool_ok, "ok": ok_ok, "verdict": verdict_ok, "all": tool_ok and ok_ok and verdict_ok}
        counts = by_tool.setdefault(want["tool"], Counter())
        for key, value in right.items():
            totals[key] += value
            counts[key] += value
        totals["files"] += 1
        counts["files"] += 1
    print()
    print(f"{'tool':14} {'files':>5} {'tool':>5} {'ok':>5} {'verdict':>7} {'all 3':>5}")
    for tool, counts in [*sorted(by_tool.items()), ("TOTAL", totals)]:
        cols = [counts[k] for k in ("files", "tool", "ok", "verdict", "all")]
        print(f"{tool:14} {cols[0]:5} {cols[1]:5} {cols[2]:5} {cols[3]:7} {cols[4]:5}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
