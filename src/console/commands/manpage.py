"""``instinct-console(1)`` in roff, written from the command tree (``console.commands.cli_tree``).

One page: every command with its usage, what it does, its options and its exit codes, then what the
console reads from the environment and where it keeps its files. ``man -l`` renders it; the wheel
installs it as ``share/man/man1/instinct-console.1``.
"""

from __future__ import annotations

from console import __version__
from console.commands.cli_tree import Command, Option, Positional
from console.commands.shells import HEADER, PROGRAM


def _text(text: str) -> str:
    """Running text as roff: backslashes escaped, a line starting with a control character made literal."""
    escaped = text.replace("\\", "\\e")
    return "\n".join("\\&" + line if line.startswith((".", "'")) else line for line in escaped.splitlines())


def _bold(text: str) -> str:
    return "\\fB" + _text(text).replace("-", "\\-") + "\\fR"


def _literal(text: str) -> str:
    """A block printed as it is (usage lines, exit code tables): no filling, no adjusting."""
    return f".PP\n.nf\n{_text(text)}\n.fi"


def _option(option: Option) -> str:
    flags = ", ".join(_bold(flag) for flag in option.flags)
    value = f" \\fI{_text(option.metavar)}\\fR" if option.takes_value else ""
    choices = f" (one of: {', '.join(option.choices)})" if option.choices and "{" not in option.help else ""
    return f".TP\n{flags}{value}\n{_text(' '.join(option.help.split()) + choices)}"


def _positional(positional: Positional) -> str:
    said = " ".join(positional.help.split())
    return f".TP\n\\fI{_text(positional.name)}\\fR\n{_text(said)}"


def _command(command: Command) -> str:
    parts = [f'.SS "{PROGRAM} {command.name}"', _text(command.help or command.description)]
    if command.description and command.description.rstrip(".") != command.help.rstrip("."):
        parts.append(".PP\n" + _text(" ".join(command.description.split())))
    parts.append(_literal(command.usage))
    parts += [_positional(p) for p in command.positionals]
    parts += [_option(o) for o in command.options if o.flags != ("-h", "--help")]
    if command.subcommands:
        names = ", ".join(f"{PROGRAM} {s.name}" for s in command.subcommands)
        parts.append(f".PP\nCommands: {_text(names)} (below).")
    if command.epilog:
        parts.append(_literal(command.epilog))
    return "\n".join(parts)


FILES_AND_ENVIRONMENT = r""".SH ENVIRONMENT
.TP
.B NO_COLOR
When set (to anything), nothing is coloured: the headless output, the summaries and the progress bar.
.TP
.B XDG_STATE_HOME
The history database is $XDG_STATE_HOME/instinct-console/history.sqlite (default ~/.local/state).
.TP
.B XDG_CONFIG_HOME
The default cluster file is ./cluster.toml, else $XDG_CONFIG_HOME/instinct-console/cluster.toml
(default ~/.config).
.SH FILES
.TP
.I /etc/instinct-console/config.toml
The site's defaults for every command (cluster, store, theme, checks, and a table per command of its
options); \fBinstinct-console config\fR shows each and where it comes from.
.TP
.I ~/.config/instinct-console/config.toml
The user's defaults, over the site's key by key; the command line overrides both.
.TP
.I ~/.local/state/instinct-console/history.sqlite
Sweeps, verdicts, findings, pins, cases and the audit log (\fB\-\-store\fR for another).
.TP
.I console/_data/schemas/*.schema.json
In the installed package: the JSON schema of every \fB\-\-json\fR output.
.SH SEE ALSO
\fBinstinct\-console help\fR prints a section of the operator guide;
\fBinstinct\-console completion bash|zsh|fish\fR prints the shell completion script.
"""


def man_page(root: Command) -> str:
    """The whole page: name, synopsis, description, every command, exit status, environment, files."""
    commands = [c for c in root.walk() if c.path]
    head = [
        f'.\\" {HEADER}',
        f'.TH INSTINCT\\-CONSOLE 1 "" "{PROGRAM} {__version__}" "User Commands"',
        ".SH NAME",
        f"{PROGRAM} \\- {_text(root.description.rstrip('.'))}",
        ".SH SYNOPSIS",
        f"{_bold(PROGRAM)} [\\fB\\-\\-version\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR]",
        ".SH DESCRIPTION",
        _text(root.description),
        f"Without a command, {_bold('tui')} opens the live console. The commands:",
        _literal("\n".join(f"{c.name:<16}{c.help}" for c in root.subcommands)),
        ".SH COMMANDS",
    ]
    tail = [".SH EXIT STATUS", _literal(root.epilog), FILES_AND_ENVIRONMENT]
    return "\n".join([*head, *(_command(c) for c in commands), *tail]).rstrip("\n") + "\n"
