"""What one probe's run gives to judge: its problem (exit status, cut output, refusal), its parse, its outcome.

Pure functions over a probe's bytes, shared by every way a node is checked (``console.sweep.checker``):
a node checked in this process, in an engine worker, or the raw outputs a Slurm job's task sent.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass
from typing import Any

from console.checks import ProbeOutcome
from console.checks.facts import UNSUPPORTED
from console.inert import redact
from console.probes.base import ParsedOutput, ParseError
from console.sweep.bundle import Section
from console.sweep.catalog import PROBES_BY_ID, ProbeSpec
from console.sweep.packed import PackedOutcome
from console.transport import ErrorKind, TransportError

# Transport failures that mean the node itself could not be reached or trusted; every probe would
# fail the same way, so the node gets one UNKNOWN finding with this reason instead of one per check.
CONNECTION_KINDS = {
    ErrorKind.UNREACHABLE,
    ErrorKind.REFUSED,
    ErrorKind.CONNECT_TIMEOUT,
    ErrorKind.AUTH_FAILED,
    ErrorKind.HOST_KEY_CHANGED,
    ErrorKind.HOST_KEY_UNKNOWN,
}


@dataclass(frozen=True)
class ProbeRun:
    """What came back for one probe of a bundle, before parsing."""

    spec: ProbeSpec
    output: bytes | None
    exit_status: int | None
    problem: str | None
    started_at: float
    duration_s: float


def describe(error: TransportError) -> str:
    """One line an operator can act on: ``auth-failed: Permission denied (publickey)``.

    A password in an address or jump host (``ssh://ops:secret@host``) is redacted: this line goes to
    the store, the reports and the screen.
    """
    return redact(f"{error.kind.value}: {error.detail}")


# How argparse-based tools (amd-smi, rvs wrappers) refuse a subcommand or option they do not have, with
# usage status 2: the line naming what was refused.
_USAGE_ERROR = re.compile(rb"^.*error: (?:unrecognized arguments|argument .*invalid choice).*$", re.MULTILINE)
# A driver that does not offer what the probe reads (amd-smi on a GPU or kernel without the CPER ring):
# the same as an older tool, whatever the exit status. Looked for as lower-case bytes, then its line taken:
# a multi-line ``^.*...`` pattern tried at every line of a 108 KiB output cost 1.3 ms of a node's CPU.
_NOT_OFFERED = b"requires cper to be enabled"


OUTPUT_CUT = "output cut"  # how a probe's problem starts when its output was past the limit


def probe_problem(exit_status: int | None, output: bytes, spec: ProbeSpec, dropped_bytes: int = 0) -> str | None:
    """Why a probe's run gives nothing to judge, from its exit status and output; None when it may be parsed.

    A cut output is never judged, whatever it says: the part that was not kept may hold the failure.
    Timeouts, signals and a missing tool are problems; any other status is read with the output.
    """
    if dropped_bytes:
        kept = len(output)
        return (
            f"{OUTPUT_CUT}: {_mib(kept + dropped_bytes)} printed, the console keeps {_mib(kept)} of one probe's output"
        )
    if exit_status == 2 and (refusal := _USAGE_ERROR.search(output)) is not None:
        return f"{UNSUPPORTED}: {refusal.group(0).decode(errors='replace').strip()}"
    if (said := _line_saying(output, _NOT_OFFERED)) is not None:
        return f"{UNSUPPORTED}: {said.decode(errors='replace').strip()}"
    if exit_status is None:
        return "no result: the connection or the bundle ended before the probe finished"
    if exit_status == 127 or (exit_status == 126 and b"not found" in output):
        return f"{spec.argv[0]}: command not found on the node"
    if exit_status == 124:
        return f"timed out on the node after {spec.timeout_s:g} s"
    if exit_status == 128 + signal.SIGKILL:
        # GNU timeout's -k: the probe ignored SIGTERM at its timeout; else the kernel (out of memory).
        return (
            f"killed on the node (SIGKILL): it ignored SIGTERM at its {spec.timeout_s:g} s timeout, "
            "or ran out of memory"
        )
    if exit_status > 128 and (name := _signal_name(exit_status - 128)) is not None:
        return f"{spec.argv[0]} was killed by {name} on the node"
    return None  # another status is read with the output (``_judged``): the tool may say why it failed


def _line_saying(output: bytes, lowered: bytes) -> bytes | None:
    """The line of ``output`` that holds ``lowered`` in any case, or None."""
    at = output.lower().find(lowered)
    if at < 0:
        return None
    start = output.rfind(b"\n", 0, at) + 1
    end = output.find(b"\n", at)
    return output[start : end if end >= 0 else len(output)]


def exit_problem(spec: ProbeSpec, exit_status: int, output: bytes) -> str:
    """A quick probe whose tool said it failed without its parser recognising why: its own last words."""
    return f"{spec.argv[0]} exited with status {exit_status}: {_last_line(output)}"


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


def _signal_name(number: int) -> str | None:
    try:
        return signal.Signals(number).name
    except ValueError:
        return None


def _last_line(output: bytes) -> str:
    """The tool's own last words (what an operator would read first), one line, bounded."""
    lines = [line.strip() for line in output[-4096:].decode("utf-8", errors="replace").splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no output"


# What a run that was not parsed (no output, a problem before parsing) has for its parse result.
UNPARSED = object()


def judged_run(run: ProbeRun, result: Any) -> tuple[Any, str | None]:
    """(parsed output or None, problem) of a run given its parse result.

    A non-zero exit is judged only where the output says what failed: a long test's table (a failed
    run), or a tool error its parser recognised (amd-smi saying the driver is not loaded). Anything
    else that exited non-zero is UNKNOWN with the tool's own last line, however complete it looks.
    """
    problem = run.problem
    failed = run.exit_status is not None and run.exit_status not in run.spec.ok_exit and problem is None
    if isinstance(result, ParseError):
        if failed:
            return None, exit_problem(run.spec, run.exit_status or 0, run.output or b"")
        return None, problem or f"unreadable output: {result.reason}"
    if result is UNPARSED:
        return None, problem
    stopped = run.exit_status not in (None, 0)
    if stopped and isinstance(result, ParsedOutput) and (run.spec.judge_partial or not result.ok):
        said = problem or f"{run.spec.argv[0]} exited with status {run.exit_status}"
        return result.model_copy(update={"ok": False, "errors": [*result.errors, said]}), None
    if failed:
        return None, exit_problem(run.spec, run.exit_status or 0, run.output or b"")
    return result, problem


def running_one(group: list[ProbeSpec], sections: dict[str, Section]) -> str:
    """Why the probes after the one a lost connection interrupted have no answer."""
    running = next((s.id for s in group if s.id in sections and sections[s.id].exit_status is None), None)
    return f"not run: the connection was lost while {running} ran" if running else "not run: the connection was lost"


def runs_of(
    group: list[ProbeSpec],
    sections: dict[str, Section],
    started: float,
    share: float,
    unfinished: str | None,
    *,
    not_started: str = "no result: the bundle ended before the probe started",
) -> list[ProbeRun]:
    """Each probe's run from its section of the bundle's output; ``unfinished`` is why a probe without
    an end marker has none (None: the bundle itself ended normally, so the probe's own output says);
    ``not_started`` why a probe the bundle never reached has none."""
    runs = []
    for spec in group:
        section = sections.get(spec.id)
        output = section.output if section else None
        exit_status = section.exit_status if section else None
        problem: str | None
        if section is not None and (section.exit_status is not None or section.dropped_bytes):
            problem = probe_problem(section.exit_status, section.output, spec, section.dropped_bytes)
        elif unfinished is not None:
            problem = unfinished
        elif section is None:
            problem = not_started
        else:
            problem = probe_problem(None, section.output, spec)
        runs.append(ProbeRun(spec, output, exit_status, problem, started, share))
    return runs


def dropped_connection(outcomes: dict[str, ProbeOutcome]) -> ProbeOutcome | None:
    """A probe whose connection dropped under it: the node's reachability is in doubt, whatever answered."""
    signs = (f"{ErrorKind.DISCONNECTED.value}:", "connection lost")
    return next((o for o in outcomes.values() if (o.problem or "").startswith(signs)), None)


def kept_packed(outcome: ProbeOutcome) -> ProbeOutcome:
    """``outcome`` as the engine keeps it between sweeps: a parsed output kept packed, unless it is a short
    text or figure, or a slow-changing probe's, reused under an unchanged stamp and read at every sweep
    (and identical on most nodes, one object for all through the parse cache)."""
    if isinstance(outcome, PackedOutcome) or isinstance(outcome.parsed, str | int | float | type(None)):
        return outcome
    spec = PROBES_BY_ID.get(outcome.probe)
    return outcome if spec is not None and spec.slow_changing else PackedOutcome.of(outcome)


def wants_parse(run: ProbeRun) -> bool:
    # A long test that timed out or was killed on the node is judged on what it printed (a table
    # without its footer fails). A cut output never is.
    stopped = run.exit_status in (124, 128 + signal.SIGKILL) and run.spec.judge_partial and bool(run.output)
    cut = (run.problem or "").startswith(OUTPUT_CUT)
    return (run.problem is None or stopped) and not cut and run.output is not None


def parse_output(spec: ProbeSpec, output: bytes) -> Any:
    try:
        text = output.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Every tool the console runs prints ASCII or UTF-8: other bytes mean a corrupted output (a
        # wrong locale, a broken pipe, a failing disk), and a version read through them is not a version.
        bad = output[exc.start : exc.start + 4].hex(" ")
        raise ParseError(f"not UTF-8 text: bytes {bad} at offset {exc.start}", output) from None
    if (nul := output.find(b"\0")) >= 0:
        # No text tool prints a NUL byte: the output was corrupted on its way.
        raise ParseError(f"a NUL byte at offset {nul}: the output is corrupted", output)
    return spec.parse(text)


def parse_runs(runs: list[ProbeRun]) -> list[Any]:
    """Each run's parsed output, the ParseError saying why it could not be read, or UNPARSED."""
    results: list[Any] = []
    for run in runs:
        if not wants_parse(run):
            results.append(UNPARSED)
            continue
        try:
            results.append(parse_output(run.spec, run.output or b""))
        except ParseError as exc:
            results.append(exc)
    return results
