"""``instinct-console parse``: read a pasted or saved tool output and say what it shows, and with a GPU
model (``--model``, or the one the output names) what that model's check pack says of it."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from rich.markup import escape
from rich.table import Table

from console.checks import CheckPack, load_packs
from console.checks.afid import afid, describe_afid
from console.checks.single import NODE, OutputVerdict, is_fragment, judge_output, named_models, probes_reading
from console.commands.arguments import UsageError, add_checks
from console.commands.terminal import plain_console
from console.exitcodes import exit_code_for
from console.inert import printable
from console.model.findings import Finding, Scope, Status, Subject
from console.probes import ParsedOutput, ParseError, Tool, parse_output

EXIT_HELP = """verdicts:
  --model MODEL judges the output against that GPU model's check pack, as a sweep judges a node that
  ran only the probe printing it: amd-smi version/list/static/metric/firmware/bad-pages/xgmi, rccl-tests
  all_reduce_perf, TransferBench a2a/p2p/healthcheck, any RVS log. Without --model, the model the output
  names (amd-smi's market name, RVS's GPU list, an RCCL rank line) is used; when it names none, nothing
  is judged. Checks needing more than this output (other probes, the pool's median or pins, the cluster
  file's GPU count) are counted as not applicable. A fragment (grep-filtered amd-smi text, the tail of
  an RVS JSON log) is judged for what it shows only; docs/verdicts.md says more.

exit codes:
  0  judged: no check failed (a WARN does not change it)
     not judged: parsed and the tool reported success
  1  judged: a check failed
     not judged: the tool reported a failure, did not finish, or declined to test (nothing measured)
  2  not recognised or unreadable, or --model names no check pack (one-line reason on stderr)
  3  judged: none failed, but one that applies could not be judged (UNKNOWN), or none was"""


def register(sub: Any) -> None:
    """Add the ``parse`` subcommand."""
    p = sub.add_parser(
        "parse",
        help="parse output of amd-smi, rocm-smi, rocminfo, rvs, rccl-tests or TransferBench",
        description="Detect the tool and kind of an output from its text alone, summarise it and judge it.",
        epilog=EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", nargs="?", default="-", help="file to read, or - for standard input")
    p.add_argument(
        "--as",
        dest="as_",
        metavar="TOOL[:KIND]",
        help=f"skip detection; TOOL is one of {', '.join(t.value for t in Tool)}",
    )
    p.add_argument(
        "--model",
        metavar="MODEL",
        help="judge against this GPU model's check pack (MI300X, ...); default: the model the output names",
    )
    add_checks(p)
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.set_defaults(func=run)


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    with open(path, "rb") as fh:
        return fh.read()


def _override(value: str | None) -> tuple[Tool | None, str | None]:
    if not value:
        return None, None
    tool_name, _, kind = value.partition(":")
    try:
        return Tool(tool_name.strip().lower()), (kind.strip() or None)
    except ValueError:
        raise ParseError(f"unknown tool {tool_name!r}; expected one of {', '.join(t.value for t in Tool)}") from None


@dataclass
class Judgement:
    """What was judged of one output, or why nothing was."""

    named: list[str] = field(default_factory=list)  # GPU models the output names
    model: str | None = None
    model_from: str | None = None  # "--model" or "output"
    judged: OutputVerdict | None = None
    reason: str = ""  # why nothing was judged


def to_json_object(result: ParsedOutput, judgement: Judgement | None = None) -> dict[str, Any]:
    """The ``--json`` object: tool, kind, ok, errors, summary, data (plus warnings and version), then
    ``verdict`` (its ``status`` null when nothing was judged, with the ``reason``) and ``findings``."""
    obj: dict[str, Any] = result.model_dump(mode="json")
    for record in (obj.get("data") or {}).get("cper") or []:
        record["afid_meanings"] = [_afid_json(int(number)) for number in record.get("afids", [])]
    if judgement is None:
        return obj
    judged = judgement.judged
    obj["verdict"] = {
        "model": judgement.model,
        "model_from": judgement.model_from,
        "named_models": judgement.named,
        "probes": list(judged.probes) if judged else [],
        "status": judged.verdict.status.value if judged else None,
        "reason": judged.verdict.reason if judged else judgement.reason,
        "fragment": is_fragment(result),
        "counts": judged.counts() if judged else {},
        "not_applicable": judged.not_applicable if judged else {},
    }
    obj["findings"] = [f.model_dump(mode="json") for f in judged.findings] if judged else []
    return obj


def _afid_json(number: int) -> dict[str, Any]:
    row = afid(number)
    if row is None:
        return {"afid": number, "known": False}
    fields = ("category", "error_type", "severity", "physical", "what_to_do", "doc")
    return {"afid": number, "known": True, "action": row.action.value, **{f: getattr(row, f) for f in fields}}


def run(args: argparse.Namespace) -> int:
    """Parse the input, print a summary and the verdict; returns the exit code documented above."""
    try:
        raw = _read(args.file)
        tool, kind = _override(args.as_)
        result = parse_output(raw, tool=tool, kind=kind)
    except OSError as exc:
        print(printable(f"instinct-console parse: cannot read {args.file}: {exc.strerror or exc}"), file=sys.stderr)
        return 2
    except ParseError as exc:
        print(f"instinct-console parse: {printable(exc.reason)}", file=sys.stderr)
        return 2
    judgement = judge(result, args.model, load_packs(list(args.checks)))
    if args.json:
        json.dump(to_json_object(result, judgement), sys.stdout, indent=2, sort_keys=False)
        sys.stdout.write("\n")
    else:
        _print_summary(result)
        _print_verdict(judgement)
    if judgement.judged is not None:
        judged = judgement.judged
        return int(exit_code_for([f.status for f in judged.findings] or [judged.verdict.status]))
    return 0 if result.ok and not _declined(result) else 1


def judge(result: ParsedOutput, model: str | None, packs: dict[str, CheckPack]) -> Judgement:
    """``result`` judged against ``model``'s pack, else the one pack the output names; raises ``UsageError``
    when ``model`` names no pack."""
    judgement = Judgement(named=named_models(result))
    if model is not None:
        if model.upper() not in packs:
            raise UsageError(f"--model {model}: no check pack for it; the packs are {', '.join(sorted(packs))}")
        judgement.model, judgement.model_from = model.upper(), "--model"
    else:
        packed = [name for name in judgement.named if name in packs]
        if len(packed) == 1:
            judgement.model, judgement.model_from = packed[0], "output"
        elif packed:
            judgement.reason = f"the output names several GPU models ({', '.join(packed)}): give --model"
        elif judgement.named:
            judgement.reason = f"the output names {', '.join(judgement.named)}, for which there is no check pack"
        else:
            judgement.reason = "no GPU model known: the output names none; give --model to judge it"
    if judgement.model is None:
        return judgement
    probes = probes_reading(result)
    if not probes:
        judgement.reason = f"no check reads {result.tool.value} {result.kind} output"
        return judgement
    judgement.judged = judge_output(packs[judgement.model], result, probes)
    return judgement


def _declined(result: ParsedOutput) -> bool:
    """The tool refused to test this hardware (TransferBench's healthcheck off MI300): nothing was measured."""
    return bool(result.summary.get("unsupported"))


# Everything below comes from the pasted output: escape Rich markup and make control characters visible,
# so a paste can neither restyle nor drive the operator's terminal.
def _safe(value: object) -> str:
    return escape(printable(str(value)))


def _print_summary(result: ParsedOutput) -> None:
    console = plain_console()
    verdict = "[green]OK[/]" if result.ok else "[red]NOT OK[/]"
    if _declined(result):
        verdict = "[yellow]DECLINED: nothing measured[/]"
    version = f" {_safe(result.tool_version)}" if result.tool_version else ""
    console.print(f"[bold]{result.tool.value}[/]{version}  kind=[bold]{_safe(result.kind)}[/]  {verdict}")
    if result.summary:
        table = Table(show_header=False, box=None, pad_edge=False)
        for key, value in result.summary.items():
            table.add_row(f"  {_safe(key)}", _safe(value))
        console.print(table)
    for error in result.errors:
        console.print(f"  [red]error:[/] {_safe(error)}")
    for warning in result.warnings[:20]:
        console.print(f"  [yellow]warning:[/] {_safe(warning)}")
    for line in cper_lines(result):
        console.print(f"  {_safe(line)}")


def cper_lines(result: ParsedOutput) -> list[str]:
    """``amd-smi ras --cper`` records with what each AFID means and the action it calls for."""
    lines = []
    for record in getattr(result.data, "cper", None) or []:
        gpu = f"gpu{record.gpu_index}" if record.gpu_index is not None else "gpu ?"
        head = f"CPER {record.timestamp or '(no time)'} {gpu} {record.severity}"
        lines.append(head + (f" ({record.file_name})" if record.file_name else ""))
        lines += [f"    {describe_afid(int(number))}" for number in record.afids]
        if record.afid_note:
            lines.append(f"    {record.afid_note}")
    return lines


_STYLE = {
    Status.FAIL: "red",
    Status.UNKNOWN: "magenta",
    Status.WARN: "yellow",
    Status.PASS: "green",
    Status.SKIP: "dim",
}


def _print_verdict(judgement: Judgement) -> None:
    console = plain_console()
    judged = judgement.judged
    if judged is None:
        console.print(f"verdict  not judged: {_safe(judgement.reason)}")
        return
    status = judged.verdict.status
    source = "--model" if judgement.model_from == "--model" else "named by the output"
    others = [name for name in judgement.named if name != judged.model]
    if others and judgement.model_from == "--model":
        source += f"; the output names {', '.join(others)}"
    console.print(
        f"verdict  [bold {_STYLE[status]}]{status.value}[/]  {judged.model} pack ({_safe(source)}),"
        f" as probe {', '.join(judged.probes)}"
    )
    if judged.fragment:
        console.print("  read as a fragment: only what it shows is judged")
    for line in _finding_lines(judged.findings):
        console.print(line)
    counts = ", ".join(f"{n} {status}" for status, n in judged.counts().items()) or "nothing"
    console.print(f"  judged: {counts}")
    if judged.not_applicable:
        why = Counter("read other probes" if w.startswith("reads ") else w for w in judged.not_applicable.values())
        said = "; ".join(f"{n} {w}" for w, n in why.most_common())
        console.print(f"  not applicable to this one output: {len(judged.not_applicable)} checks ({_safe(said)})")


def _finding_lines(findings: list[Finding]) -> list[str]:
    """Every finding but PASS, worst first; the same message on several GPUs or links is one line."""
    grouped: dict[tuple[Status, str, str], list[str]] = {}
    for finding in findings:
        if finding.status is not Status.PASS:
            grouped.setdefault((finding.status, finding.check_id, finding.message), []).append(_where(finding.subject))
    lines = []
    for (status, check_id, message), places in sorted(grouped.items(), key=lambda item: -item[0][0].severity):
        named = [p for p in places if p]
        shown = ", ".join(named[:4]) + (f" and {len(named) - 4} more" if len(named) > 4 else "")
        where = f"{shown}: " if shown else ""
        lines.append(f"  [{_STYLE[status]}]{status.value:7}[/]  {_safe(where + message)}  [dim]\\[{check_id}][/]")
    return lines


def _where(subject: Subject) -> str:
    label = subject.label()[len(NODE) :].strip()
    if not label and subject.scope is Scope.GPU:
        return "a GPU the output does not number"
    return label
