"""Simulated replies acted out by small ``/bin/sh`` tools on a real node, so a 64-node real-sshd fleet is cheap.

The simulator's own PATH shims (``console.sim.shims``) start a Python interpreter per command, about
0.45 s of CPU: 64 nodes x 14 probes would need minutes of CPU on a 2-core machine. Here the test
process asks the simulator once per node for the reply to every command the sweep will send
(``console.sim.commands.run_program``, the same renderers and fault effects), stores each reply as
files and writes one script per program that acts the reply out the way the simulator's shim does:

* normal and garbled replies: stdout, stderr, the tool's exit status;
* hang: the tool waits on a child ``sleep`` forever, so a kill must take the whole process group; one
  that ignores SIGTERM traps it (and its ``sleep`` inherits that), so only SIGKILL ends either;
* killed: part of the output, then the tool dies by its signal (SIGSEGV by default);
* filler: the output, then that many more bytes, made as they are written;
* trickle: the output arrives in chunks spread over the reply's duration;
* drop: half the output, then the tool kills the sshd process serving its own connection, so the
  client sees a real mid-command disconnect;
* missing tool: no script at all, so the node's own shell answers ``not found`` (127).

Every invocation is appended to an execution log (``program args``, one per line): what the node ran.
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

from console.sim.commands import FILLER_LINE, Delivery, SimReply, context_for, run_program
from console.sim.models import ClusterSpec

TRICKLE_CHUNKS = 6
SLEEP_MIN_S = 0.05  # shorter simulated durations are not worth a sleep process
# Absolute paths: the replay tools themselves (cat among them) come first on the node's PATH.
CAT, SLEEP = "/bin/cat", "/bin/sleep"
UNKNOWN_COMMAND_STATUS = 64
FILLER = FILLER_LINE.strip()

# Walk up from the tool to the sshd processes of its session and SIGKILL them (pid 1 is the node's
# listening sshd, which must live on). The [priv] monitor belongs to root and refuses; killing the
# session's own sshd closes the connection all the same.
_DROP_CONNECTION = """p=$$
while [ "$p" -gt 1 ]; do
  read -r _ comm _ pp _ < "/proc/$p/stat" || break
  [ "$comm" = "(sshd)" ] && kill -9 "$p" 2>/dev/null
  p=$pp
done
"""


def render_replies(cluster: ClusterSpec, node: str, argvs: Iterable[Sequence[str]]) -> dict[tuple[str, ...], SimReply]:
    """The simulator's reply on ``node`` to each command line (faults of the cluster applied)."""
    return {tuple(argv): run_program(context_for(cluster, node), list(argv)) for argv in argvs}


def _act(reply: SimReply, stem: Path) -> str:
    """Shell text acting out ``reply``; writes the payload files next to ``stem``."""
    out, err = stem.with_suffix(".out"), stem.with_suffix(".err")
    out.write_bytes(reply.stdout.encode("utf-8", "surrogateescape"))
    err.write_bytes(reply.stderr.encode("utf-8", "surrogateescape"))
    q_out, q_err = shlex.quote(str(out)), shlex.quote(str(err))
    trap = "trap '' TERM INT HUP\n" if reply.ignores_term else ""
    if reply.delivery is Delivery.HANG:
        return f"{trap}{CAT} {q_out}; {CAT} {q_err} >&2\n{SLEEP} 3600\nexit 0\n"
    if reply.delivery is Delivery.TRICKLE:
        lines = reply.stdout.splitlines(keepends=True)
        size = max(1, -(-len(lines) // TRICKLE_CHUNKS))
        pause = reply.duration_s / TRICKLE_CHUNKS
        steps = []
        for i in range(0, len(lines), size):
            chunk = stem.with_suffix(f".{i // size}")
            chunk.write_text("".join(lines[i : i + size]), encoding="utf-8")
            steps.append(f"{CAT} {shlex.quote(str(chunk))}; {SLEEP} {pause:.3f}")
        return "\n".join([*steps, f"{CAT} {q_err} >&2", f"exit {reply.exit_status}"]) + "\n"
    wait = f"{SLEEP} {reply.duration_s:.3f}\n" if reply.duration_s >= SLEEP_MIN_S else ""
    drop = _DROP_CONNECTION if reply.delivery is Delivery.DROP else ""
    filler = f"/usr/bin/yes {FILLER} | /usr/bin/head -c {reply.filler_bytes}\n" if reply.filler_bytes else ""
    killed = f"kill -{int(reply.kill_signal)} $$\n" if reply.delivery is Delivery.KILLED else ""
    return f"{trap}{wait}{CAT} {q_out}\n{filler}{CAT} {q_err} >&2\n{drop}{killed}exit {reply.exit_status}\n"


def install_replay_tools(bin_dir: Path, replies: dict[tuple[str, ...], SimReply], exec_log: Path) -> list[Path]:
    """One script per program in ``bin_dir`` acting out ``replies``; returns the scripts written.

    A program the simulator reports as not installed gets no script. A command line without a
    reply prints why on stderr and exits 64, so an unexpected command is visible, never silent.
    """
    store = bin_dir.with_name(f"{bin_dir.name}-replies")  # beside, not inside: fleets empty bin_dir on reset
    shutil.rmtree(store, ignore_errors=True)
    store.mkdir(parents=True)
    by_program: dict[str, list[tuple[str, Path]]] = {}
    for number, (argv, reply) in enumerate(sorted(replies.items())):
        if reply.exit_status == 127 and "not found" in reply.stderr:
            continue
        act = store / f"{number}.sh"
        act.write_text(_act(reply, store / str(number)), encoding="utf-8")
        by_program.setdefault(argv[0], []).append((" ".join(argv[1:]), act))
    written = []
    for program, cases in sorted(by_program.items()):
        lines = [
            "#!/bin/sh",
            f"# replay of a simulated node: {program}",
            f'printf "%s\\n" {shlex.quote(program)}" $*" >> {shlex.quote(str(exec_log))}',
            'case "$*" in',
            *(f"  {shlex.quote(args)}) . {shlex.quote(str(act))} ;;" for args, act in cases),
            f'  *) echo "{program}: no replay for: $*" >&2; exit {UNKNOWN_COMMAND_STATUS} ;;',
            "esac",
        ]
        path = bin_dir / program
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        path.chmod(0o755)
        written.append(path)
    return written
