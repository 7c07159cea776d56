"""Completion scripts for bash, zsh and fish, written from the command tree (``console.commands.cli_tree``).

Each script holds the commands, options and choices as data and one small function that finds the command
typed so far. Node names, pools and hostlists come from the cluster file at Tab time: the script runs
``instinct-console __complete KIND [--inventory FILE]`` (``console.commands.completion``) with the
``-i`` given on the line, else the default cluster file, so they follow the file as it changes.
"""

from __future__ import annotations

import shlex

from console.commands.cli_tree import Command, Kind

PROGRAM = "instinct-console"
HEADER = "generated from the argument definitions by `python -m console.commands.generate`; do not edit"
# What the cluster file completes: the kinds ``__complete`` answers.
FROM_CLUSTER = (Kind.NODE, Kind.NODES, Kind.SELECTION, Kind.POOL)


def _key(command: Command, *rest: str) -> str:
    """An associative array's key: ``_`` then the command's words (bash refuses an empty key; zsh reads
    ``[@]`` as every element)."""
    return " ".join([f"_{command.name}", *rest])


def _tables(root: Command) -> dict[str, dict[str, str]]:
    """The data every shell's script looks up, per command path: subcommands, options and value kinds."""
    tables: dict[str, dict[str, str]] = {n: {} for n in ("subcommands", "options", "valued", "kinds", "choices")}
    tables["positional"] = {}
    for command in root.walk():
        key = _key(command)
        tables["subcommands"][key] = " ".join(sub.path[-1] for sub in command.subcommands)
        tables["options"][key] = " ".join(flag for option in command.options for flag in option.flags)
        valued = [option for option in command.options if option.takes_value]
        tables["valued"][key] = " ".join(flag for option in valued for flag in option.flags)
        for option in valued:
            for flag in option.flags:
                tables["kinds"][_key(command, flag)] = option.kind.value
                if option.choices:
                    tables["choices"][_key(command, flag)] = " ".join(option.choices)
        first = next(iter(command.positionals), None)
        if first is not None:
            tables["positional"][key] = first.kind.value
            if first.choices:
                tables["choices"][_key(command, "")] = " ".join(first.choices)
    return tables


def _assoc(name: str, table: dict[str, str], declare: str) -> str:
    """An associative array, in ``key value`` pairs (the form both bash 4 and every zsh read)."""
    if declare.startswith("declare"):
        rows = "\n".join(f"    [{shlex.quote(k)}]={shlex.quote(v)}" for k, v in table.items())
    else:
        rows = "\n".join(f"    {shlex.quote(k)} {shlex.quote(v)}" for k, v in table.items())
    return f"{declare} _ic_{name}\n_ic_{name}=(\n{rows}\n)"


BASH_BODY = r"""
# The words the cluster file gives for $1 (node, nodes, selection, pool): -i/--inventory on the line,
# else the console's default cluster file.
_instinct_console_words() {
    local inventory="" i
    for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do
        case "${COMP_WORDS[i]}" in
            -i | --inventory) inventory="${COMP_WORDS[i + 1]}" ;;
        esac
    done
    inventory="${inventory/#\~/$HOME}"
    "${COMP_WORDS[0]}" __complete "$1" ${inventory:+--inventory "$inventory"} 2>/dev/null
}

_instinct_console() {
    # The line up to the cursor, split at spaces only: COMP_WORDS also splits at = and :, which
    # pool=NAME and host:port contain.
    local line="${COMP_LINE:0:COMP_POINT}"
    local cur="${line##*[[:space:]]}"
    local before="${line%"$cur"}"
    local -a words
    read -ra words <<<"$before"
    local prev="${words[${#words[@]} - 1]}"
    local cmd="" skip="" w
    for w in "${words[@]:1}"; do
        if [[ -n $skip ]]; then
            skip=""
            continue
        fi
        case "$w" in
            -*) [[ " ${_ic_valued["_$cmd"]} " == *" $w "* ]] && skip=1 ;;
            *) [[ " ${_ic_subcommands["_$cmd"]} " == *" $w "* ]] && cmd="${cmd:+$cmd }$w" ;;
        esac
    done
    local kind="" choices=""
    if [[ -n $prev && " ${_ic_valued["_$cmd"]} " == *" $prev "* ]]; then
        kind="${_ic_kinds["_$cmd $prev"]}"
        choices="${_ic_choices["_$cmd $prev"]}"
    elif [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "${_ic_options["_$cmd"]}" -- "$cur")
        return
    elif [[ -n ${_ic_subcommands["_$cmd"]} ]]; then
        mapfile -t COMPREPLY < <(compgen -W "${_ic_subcommands["_$cmd"]}" -- "$cur")
        return
    else
        kind="${_ic_positional["_$cmd"]}"
        choices="${_ic_choices["_$cmd "]}"
    fi
    local prefix="" last="$cur"
    if [[ ($kind == nodes || $kind == selection) && $cur == *,* ]]; then
        prefix="${cur%,*},"
        last="${cur##*,}"
    fi
    case "$kind" in
        file) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
        dir) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
        choice) mapfile -t COMPREPLY < <(compgen -W "$choices" -- "$cur") ;;
        node | nodes | selection | pool)
            mapfile -t COMPREPLY < <(compgen -P "$prefix" -W "$(_instinct_console_words "$kind")" -- "$last")
            ;;
        *) COMPREPLY=() ;;
    esac
    # Bash replaces only what follows the last = or : of the word: give it that part alone.
    if [[ $cur == *[=:]* ]]; then
        local cut="${cur%"${cur##*[=:]}"}"
        COMPREPLY=("${COMPREPLY[@]#"$cut"}")
    fi
}

complete -F _instinct_console instinct-console
"""


def bash_script(root: Command) -> str:
    """``instinct-console completion bash``: source it, or install it as bash-completion's file."""
    tables = _tables(root)
    data = "\n".join(_assoc(name, table, "declare -gA") for name, table in tables.items())
    return f"# bash completion for {PROGRAM}: {HEADER}\n{data}\n{BASH_BODY.lstrip()}"


ZSH_BODY = r"""
_instinct_console_words() {
    local inventory="" i
    for ((i = 2; i < CURRENT; i++)); do
        [[ ${words[i]} == (-i|--inventory) ]] && inventory=${words[i+1]}
    done
    ${words[1]} __complete $1 ${inventory:+--inventory} ${inventory:+${~inventory}} 2>/dev/null
}

_instinct-console() {
    local cmd="" skip="" w i cur=${words[CURRENT]} prev=${words[CURRENT-1]}
    for ((i = 2; i < CURRENT; i++)); do
        w=${words[i]}
        if [[ -n $skip ]]; then skip=""; continue; fi
        case $w in
            -*) [[ " ${_ic_valued[_$cmd]} " == *" $w "* ]] && skip=1 ;;
            *) [[ " ${_ic_subcommands[_$cmd]} " == *" $w "* ]] && cmd=${cmd:+$cmd }$w ;;
        esac
    done
    local kind="" choices=""
    local -a described
    if [[ " ${_ic_valued[_$cmd]} " == *" $prev "* ]]; then
        kind=${_ic_kinds[_$cmd $prev]}
        choices=${_ic_choices[_$cmd $prev]}
    elif [[ $cur == -* ]]; then
        described=("${(@f)_ic_option_help[_$cmd]}")
        _describe -t options option described
        return
    elif [[ -n ${_ic_subcommands[_$cmd]} ]]; then
        described=("${(@f)_ic_command_help[_$cmd]}")
        _describe -t commands command described
        return
    else
        kind=${_ic_positional[_$cmd]}
        choices=${_ic_choices[_$cmd ]}
    fi
    case $kind in
        file) _files ;;
        dir) _files -/ ;;
        choice) compadd -- ${=choices} ;;
        node|nodes|selection|pool)
            local -a found
            found=(${(f)"$(_instinct_console_words $kind)"})
            [[ $kind == (nodes|selection) ]] && compset -P '*,'
            compadd -- $found ;;
    esac
}

if [[ ${zsh_eval_context[-1]} == loadautofunc ]]; then
    _instinct-console "$@"
else
    compdef _instinct-console instinct-console
fi
"""


def _described(pairs: list[tuple[str, str]]) -> str:
    """``name:help`` lines for zsh's ``_describe`` (a colon in the name escaped)."""
    return "\n".join(f"{name.replace(':', chr(92) + ':')}:{' '.join(text.split())}" for name, text in pairs)


def zsh_script(root: Command) -> str:
    """``instinct-console completion zsh``: an autoloadable ``_instinct-console``, or sourced after compinit."""
    tables = _tables(root)
    tables["command_help"] = {
        _key(c): _described([(s.path[-1], s.help) for s in c.subcommands]) for c in root.walk() if c.subcommands
    }
    tables["option_help"] = {
        _key(c): _described([(flag, o.help) for o in c.options for flag in o.flags]) for c in root.walk()
    }
    data = "\n".join(_assoc(name, table, "typeset -gA") for name, table in tables.items())
    return f"#compdef {PROGRAM}\n# zsh completion for {PROGRAM}: {HEADER}\n{data}\n{ZSH_BODY.lstrip()}"


FISH_BODY = r"""
# The command typed so far (its words after the program's name), options and their values skipped.
function __instinct_console_command
    set -l tokens (commandline -opc)
    set -l cmd ''
    set -l skip 0
    for w in $tokens[2..-1]
        if test $skip = 1
            set skip 0
            continue
        end
        if string match -q -- '-*' $w
            contains -- $w (string split ' ' -- (__instinct_console_table valued $cmd)); and set skip 1
        else if contains -- $w (string split ' ' -- (__instinct_console_table subcommands $cmd))
            set cmd (string trim -- "$cmd $w")
        end
    end
    echo $cmd
end

function __instinct_console_is
    test (__instinct_console_command) = "$argv[1]"
end

# The words the cluster file gives for $argv[1]: -i/--inventory on the line, else the default file.
function __instinct_console_words
    set -l tokens (commandline -opc)
    set -l inventory
    for i in (seq 2 (math (count $tokens) - 1))
        contains -- $tokens[$i] -i --inventory; and set inventory --inventory $tokens[(math $i + 1)]
    end
    set -l prefix ''
    set -l cur (commandline -ct)
    if contains -- $argv[1] nodes selection; and string match -q -- '*,*' $cur
        set prefix (string replace -r -- '[^,]*$' '' $cur)
    end
    for word in ($tokens[1] __complete $argv[1] $inventory 2>/dev/null)
        echo $prefix$word
    end
end

complete -c instinct-console -f
"""


def _fish_table(tables: dict[str, dict[str, str]]) -> str:
    lines = ["function __instinct_console_table", "    switch $argv[1]"]
    for name in ("subcommands", "valued"):
        lines.append(f"        case {name}")
        lines.append('            switch "$argv[2..-1]"')
        for key, value in tables[name].items():
            lines.append(f"                case {shlex.quote(key[1:])}")
            lines.append(f"                    echo {shlex.quote(value)}")
        lines.append("            end")
    lines += ["    end", "end"]
    return "\n".join(lines)


def _fish_values(kind: Kind, choices: tuple[str, ...]) -> str:
    if kind is Kind.FILE:
        return "-r -F"
    if kind is Kind.DIR:
        return "-x -a '(__fish_complete_directories)'"
    if kind is Kind.CHOICE:
        return f"-x -a {shlex.quote(' '.join(choices))}"
    if kind in FROM_CLUSTER:
        return f"-x -a '(__instinct_console_words {kind.value})'"
    return "-x"


def _fish_lines(command: Command) -> list[str]:
    head = f"complete -c {PROGRAM} -n {shlex.quote('__instinct_console_is ' + shlex.quote(command.name))}"
    lines = [f"{head} -a {shlex.quote(sub.path[-1])} -d {shlex.quote(sub.help)}" for sub in command.subcommands]
    for option in command.options:
        flags = " ".join(
            f"-s {f[1:]}" if len(f) == 2 else f"-l {f[2:]}" for f in option.flags if not f.startswith("---")
        )
        values = _fish_values(option.kind, option.choices) if option.takes_value else ""
        lines.append(f"{head} {flags} {values} -d {shlex.quote(option.help)}".replace("  ", " "))
    first = next(iter(command.positionals), None)
    if first is not None and not command.subcommands and first.kind is not Kind.NONE:
        lines.append(f"{head} {_fish_values(first.kind, first.choices).replace('-x ', '')}")
    return lines


def fish_script(root: Command) -> str:
    """``instinct-console completion fish``: install as ``vendor_completions.d/instinct-console.fish``."""
    body = [line for command in root.walk() for line in _fish_lines(command)]
    return f"# fish completion for {PROGRAM}: {HEADER}\n{_fish_table(_tables(root))}\n{FISH_BODY.lstrip()}" + (
        "\n".join(body) + "\n"
    )


SCRIPTS = {"bash": bash_script, "zsh": zsh_script, "fish": fish_script}
