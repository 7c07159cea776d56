# bash completion for instinct-console: generated from the argument definitions by `python -m console.commands.generate`; do not edit
declare -gA _ic_subcommands
_ic_subcommands=(
    [_]='tui demo sweep check-local parse workload-check history accept diff acceptance sim drain resume undrain cordon uncordon repaired escalate pin rollback drift audit cases revalidate watch bundle completion help config'
    [_tui]=''
    [_demo]=''
    [_sweep]=''
    [_check-local]=''
    [_parse]=''
    [_workload-check]=''
    [_history]=''
    [_accept]=''
    [_diff]=''
    [_acceptance]=''
    [_sim]='serve inject repair faults'
    ['_sim serve']=''
    ['_sim inject']=''
    ['_sim repair']=''
    ['_sim faults']=''
    [_drain]=''
    [_resume]=''
    [_undrain]=''
    [_cordon]=''
    [_uncordon]=''
    [_repaired]=''
    [_escalate]=''
    [_pin]=''
    [_rollback]=''
    [_drift]=''
    [_audit]=''
    [_cases]=''
    [_revalidate]=''
    [_watch]=''
    [_bundle]=''
    [_completion]=''
    [_help]=''
    [_config]=''
)
declare -gA _ic_options
_ic_options=(
    [_]='-h --help --version'
    [_tui]='-h --help -i --inventory --store --checks --accept-new --probe-timeout --workers --read-only --probes --theme --no-sweep --pairing --pairing-seed --no-baseline-partners --engine'
    [_demo]='-h --help --nodes --seed --probes --time-factor --address-base --headless --store --json --read-only --scenario'
    [_sweep]='-h --help -i --inventory --store --checks --accept-new --probe-timeout --workers --nodes --probes --json --junit --prom --exclude-out --exclude-unknown --force-overwrite --deadline -v --verbose -q --quiet --store-wait --allow-unknown --fail-on-warn --group-size --pairing --pairing-seed --no-baseline-partners --via-slurm --slurm-command --slurm-raw --cap --cap-fraction --force --every --count --max-age'
    [_check-local]='-h --help -i --inventory --model --gpu-count --node --probes --json --force-overwrite --raw --pins --images --checks --from-cache --max-age --gpus --no-amdsmi-library --deadline --fail-on-warn'
    [_parse]='-h --help --as --model --checks --json'
    [_workload-check]='-h --help -i --inventory --exit-status --node --json --command --hosts'
    [_history]='-h --help --store --node --limit --json'
    [_accept]='-h --help --store -i --inventory --sweep --pool --workload --reason --rebaseline --allow-failing'
    [_diff]='-h --help --store -i --inventory --pool --sweep --json'
    [_acceptance]='-h --help --store -i --inventory --workload --pool --json --junit --force-overwrite --require-accepted'
    [_sim]='-h --help'
    ['_sim serve']='-h --help --nodes --model --pools --faults --seed --time-factor --state-dir --inventory-out --listen --address-base --port --user --max-sessions --scenario'
    ['_sim inject']='-h --help --kind --gpu --peer --param --state-dir'
    ['_sim repair']='-h --help --kind --gpu --peer --param --state-dir'
    ['_sim faults']='-h --help --state-dir'
    [_drain]='-h --help -i --inventory --store --read-only --json --reason --sweep --force --yes --dry-run --cap --cap-fraction --kubeconfig --wait-lease'
    [_resume]='-h --help -i --inventory --store --read-only --json --reason --sweep --force --yes --dry-run --cap --cap-fraction --kubeconfig --wait-lease'
    [_undrain]='-h --help -i --inventory --store --read-only --json --reason --sweep --force --yes --dry-run --cap --cap-fraction --kubeconfig --wait-lease'
    [_cordon]='-h --help -i --inventory --store --read-only --json --reason --sweep --force --yes --dry-run --cap --cap-fraction --kubeconfig --wait-lease'
    [_uncordon]='-h --help -i --inventory --store --read-only --json --reason --sweep --force --yes --dry-run --cap --cap-fraction --kubeconfig --wait-lease'
    [_repaired]='-h --help -i --inventory --store --read-only --json --reason --yes --dry-run --kubeconfig --wait-lease'
    [_escalate]='-h --help -i --inventory --store --read-only --json --reason --yes --dry-run --kubeconfig --wait-lease'
    [_pin]='-h --help -i --inventory --store --read-only --json --pool --from-node --image-digest --enforce --apply --yes --dry-run --clear'
    [_rollback]='-h --help -i --inventory --store --read-only --json --pool --reason --workload --apply --yes --dry-run'
    [_drift]='-h --help -i --inventory --store --read-only --json --nodes --checks --all --accept-new --probe-timeout'
    [_audit]='-h --help --store --limit --json'
    [_cases]='-h --help --store -i --inventory --node --all --json --policy'
    [_revalidate]='-h --help -i --inventory --store --checks --accept-new --probe-timeout --yes --dry-run --level --json --kubeconfig --wait-lease'
    [_watch]='-h --help -i --inventory --store --checks --accept-new --probe-timeout --every --level --store-wait --rounds --auto --dry-run --reservation --normal-priority --proposals --freshness --approve --reject --clear-breaker --wait-lease --yes --reason'
    [_bundle]='-h --help --store --sweep -o --output --redact --force-overwrite'
    [_completion]='-h --help'
    [_help]='-h --help'
    [_config]='-h --help --json'
)
declare -gA _ic_valued
_ic_valued=(
    [_]=''
    [_tui]='-i --inventory --store --checks --probe-timeout --workers --probes --theme --pairing --pairing-seed --engine'
    [_demo]='--nodes --seed --probes --time-factor --address-base --store --json --scenario'
    [_sweep]='-i --inventory --store --checks --probe-timeout --workers --nodes --probes --json --junit --prom --exclude-out --deadline --store-wait --allow-unknown --group-size --pairing --pairing-seed --slurm-command --cap --cap-fraction --every --count --max-age'
    [_check-local]='-i --inventory --model --gpu-count --node --probes --json --pins --images --checks --from-cache --max-age --gpus --deadline'
    [_parse]='--as --model --checks'
    [_workload-check]='-i --inventory --exit-status --node --hosts'
    [_history]='--store --node --limit'
    [_accept]='--store -i --inventory --sweep --pool --workload --reason'
    [_diff]='--store -i --inventory --pool --sweep'
    [_acceptance]='--store -i --inventory --workload --pool --junit'
    [_sim]=''
    ['_sim serve']='--nodes --model --pools --faults --seed --time-factor --state-dir --inventory-out --listen --address-base --port --user --max-sessions --scenario'
    ['_sim inject']='--kind --gpu --peer --param --state-dir'
    ['_sim repair']='--kind --gpu --peer --param --state-dir'
    ['_sim faults']=--state-dir
    [_drain]='-i --inventory --store --reason --sweep --cap --cap-fraction --kubeconfig --wait-lease'
    [_resume]='-i --inventory --store --reason --sweep --cap --cap-fraction --kubeconfig --wait-lease'
    [_undrain]='-i --inventory --store --reason --sweep --cap --cap-fraction --kubeconfig --wait-lease'
    [_cordon]='-i --inventory --store --reason --sweep --cap --cap-fraction --kubeconfig --wait-lease'
    [_uncordon]='-i --inventory --store --reason --sweep --cap --cap-fraction --kubeconfig --wait-lease'
    [_repaired]='-i --inventory --store --reason --kubeconfig --wait-lease'
    [_escalate]='-i --inventory --store --reason --kubeconfig --wait-lease'
    [_pin]='-i --inventory --store --pool --from-node --image-digest --enforce'
    [_rollback]='-i --inventory --store --pool --reason --workload'
    [_drift]='-i --inventory --store --nodes --checks --probe-timeout'
    [_audit]='--store --limit'
    [_cases]='--store -i --inventory --node'
    [_revalidate]='-i --inventory --store --checks --probe-timeout --level --kubeconfig --wait-lease'
    [_watch]='-i --inventory --store --checks --probe-timeout --every --level --store-wait --rounds --reservation --approve --reject --wait-lease --reason'
    [_bundle]='--store --sweep -o --output'
    [_completion]=''
    [_help]=''
    [_config]=''
)
declare -gA _ic_kinds
_ic_kinds=(
    ['_tui -i']=file
    ['_tui --inventory']=file
    ['_tui --store']=file
    ['_tui --checks']=dir
    ['_tui --probe-timeout']=none
    ['_tui --workers']=none
    ['_tui --probes']=choice
    ['_tui --theme']=none
    ['_tui --pairing']=choice
    ['_tui --pairing-seed']=none
    ['_tui --engine']=choice
    ['_demo --nodes']=selection
    ['_demo --seed']=none
    ['_demo --probes']=choice
    ['_demo --time-factor']=none
    ['_demo --address-base']=none
    ['_demo --store']=file
    ['_demo --json']=file
    ['_demo --scenario']=file
    ['_sweep -i']=file
    ['_sweep --inventory']=file
    ['_sweep --store']=file
    ['_sweep --checks']=dir
    ['_sweep --probe-timeout']=none
    ['_sweep --workers']=none
    ['_sweep --nodes']=selection
    ['_sweep --probes']=choice
    ['_sweep --json']=file
    ['_sweep --junit']=file
    ['_sweep --prom']=file
    ['_sweep --exclude-out']=file
    ['_sweep --deadline']=none
    ['_sweep --store-wait']=none
    ['_sweep --allow-unknown']=none
    ['_sweep --group-size']=none
    ['_sweep --pairing']=choice
    ['_sweep --pairing-seed']=none
    ['_sweep --slurm-command']=none
    ['_sweep --cap']=none
    ['_sweep --cap-fraction']=none
    ['_sweep --every']=none
    ['_sweep --count']=none
    ['_sweep --max-age']=none
    ['_check-local -i']=file
    ['_check-local --inventory']=file
    ['_check-local --model']=choice
    ['_check-local --gpu-count']=none
    ['_check-local --node']=node
    ['_check-local --probes']=choice
    ['_check-local --json']=file
    ['_check-local --pins']=none
    ['_check-local --images']=none
    ['_check-local --checks']=dir
    ['_check-local --from-cache']=file
    ['_check-local --max-age']=none
    ['_check-local --gpus']=none
    ['_check-local --deadline']=none
    ['_parse --as']=none
    ['_parse --model']=none
    ['_parse --checks']=dir
    ['_workload-check -i']=file
    ['_workload-check --inventory']=file
    ['_workload-check --exit-status']=none
    ['_workload-check --node']=node
    ['_workload-check --hosts']=nodes
    ['_history --store']=file
    ['_history --node']=node
    ['_history --limit']=none
    ['_accept --store']=file
    ['_accept -i']=file
    ['_accept --inventory']=file
    ['_accept --sweep']=none
    ['_accept --pool']=pool
    ['_accept --workload']=none
    ['_accept --reason']=none
    ['_diff --store']=file
    ['_diff -i']=file
    ['_diff --inventory']=file
    ['_diff --pool']=pool
    ['_diff --sweep']=none
    ['_acceptance --store']=file
    ['_acceptance -i']=file
    ['_acceptance --inventory']=file
    ['_acceptance --workload']=none
    ['_acceptance --pool']=pool
    ['_acceptance --junit']=file
    ['_sim serve --nodes']=selection
    ['_sim serve --model']=none
    ['_sim serve --pools']=none
    ['_sim serve --faults']=none
    ['_sim serve --seed']=none
    ['_sim serve --time-factor']=none
    ['_sim serve --state-dir']=dir
    ['_sim serve --inventory-out']=file
    ['_sim serve --listen']=choice
    ['_sim serve --address-base']=none
    ['_sim serve --port']=none
    ['_sim serve --user']=none
    ['_sim serve --max-sessions']=none
    ['_sim serve --scenario']=file
    ['_sim inject --kind']=none
    ['_sim inject --gpu']=none
    ['_sim inject --peer']=none
    ['_sim inject --param']=none
    ['_sim inject --state-dir']=dir
    ['_sim repair --kind']=none
    ['_sim repair --gpu']=none
    ['_sim repair --peer']=none
    ['_sim repair --param']=none
    ['_sim repair --state-dir']=dir
    ['_sim faults --state-dir']=dir
    ['_drain -i']=file
    ['_drain --inventory']=file
    ['_drain --store']=file
    ['_drain --reason']=none
    ['_drain --sweep']=none
    ['_drain --cap']=none
    ['_drain --cap-fraction']=none
    ['_drain --kubeconfig']=file
    ['_drain --wait-lease']=none
    ['_resume -i']=file
    ['_resume --inventory']=file
    ['_resume --store']=file
    ['_resume --reason']=none
    ['_resume --sweep']=none
    ['_resume --cap']=none
    ['_resume --cap-fraction']=none
    ['_resume --kubeconfig']=file
    ['_resume --wait-lease']=none
    ['_undrain -i']=file
    ['_undrain --inventory']=file
    ['_undrain --store']=file
    ['_undrain --reason']=none
    ['_undrain --sweep']=none
    ['_undrain --cap']=none
    ['_undrain --cap-fraction']=none
    ['_undrain --kubeconfig']=file
    ['_undrain --wait-lease']=none
    ['_cordon -i']=file
    ['_cordon --inventory']=file
    ['_cordon --store']=file
    ['_cordon --reason']=none
    ['_cordon --sweep']=none
    ['_cordon --cap']=none
    ['_cordon --cap-fraction']=none
    ['_cordon --kubeconfig']=file
    ['_cordon --wait-lease']=none
    ['_uncordon -i']=file
    ['_uncordon --inventory']=file
    ['_uncordon --store']=file
    ['_uncordon --reason']=none
    ['_uncordon --sweep']=none
    ['_uncordon --cap']=none
    ['_uncordon --cap-fraction']=none
    ['_uncordon --kubeconfig']=file
    ['_uncordon --wait-lease']=none
    ['_repaired -i']=file
    ['_repaired --inventory']=file
    ['_repaired --store']=file
    ['_repaired --reason']=none
    ['_repaired --kubeconfig']=file
    ['_repaired --wait-lease']=none
    ['_escalate -i']=file
    ['_escalate --inventory']=file
    ['_escalate --store']=file
    ['_escalate --reason']=none
    ['_escalate --kubeconfig']=file
    ['_escalate --wait-lease']=none
    ['_pin -i']=file
    ['_pin --inventory']=file
    ['_pin --store']=file
    ['_pin --pool']=pool
    ['_pin --from-node']=node
    ['_pin --image-digest']=none
    ['_pin --enforce']=nodes
    ['_rollback -i']=file
    ['_rollback --inventory']=file
    ['_rollback --store']=file
    ['_rollback --pool']=pool
    ['_rollback --reason']=none
    ['_rollback --workload']=none
    ['_drift -i']=file
    ['_drift --inventory']=file
    ['_drift --store']=file
    ['_drift --nodes']=selection
    ['_drift --checks']=dir
    ['_drift --probe-timeout']=none
    ['_audit --store']=file
    ['_audit --limit']=none
    ['_cases --store']=file
    ['_cases -i']=file
    ['_cases --inventory']=file
    ['_cases --node']=node
    ['_revalidate -i']=file
    ['_revalidate --inventory']=file
    ['_revalidate --store']=file
    ['_revalidate --checks']=dir
    ['_revalidate --probe-timeout']=none
    ['_revalidate --level']=choice
    ['_revalidate --kubeconfig']=file
    ['_revalidate --wait-lease']=none
    ['_watch -i']=file
    ['_watch --inventory']=file
    ['_watch --store']=file
    ['_watch --checks']=dir
    ['_watch --probe-timeout']=none
    ['_watch --every']=none
    ['_watch --level']=choice
    ['_watch --store-wait']=none
    ['_watch --rounds']=none
    ['_watch --reservation']=none
    ['_watch --approve']=none
    ['_watch --reject']=none
    ['_watch --wait-lease']=none
    ['_watch --reason']=none
    ['_bundle --store']=file
    ['_bundle --sweep']=none
    ['_bundle -o']=file
    ['_bundle --output']=file
)
declare -gA _ic_choices
_ic_choices=(
    ['_tui --probes']='quick standard full'
    ['_tui --pairing']='reference random rack across switch across-switches rail'
    ['_tui --engine']='process thread'
    ['_demo --probes']='quick standard full'
    ['_sweep --probes']='quick standard full multinode framework workload'
    ['_sweep --pairing']='reference random rack across switch across-switches rail'
    ['_check-local --model']='MI300X MI325X MI350X MI355X MI250X MI210 MI300A'
    ['_check-local --probes']='quick standard full framework'
    ['_sim serve --listen']='addresses ports'
    ['_revalidate --level']='quick standard full multinode framework workload'
    ['_watch --level']='quick standard full framework workload'
    ['_completion ']='bash zsh fish'
)
declare -gA _ic_positional
_ic_positional=(
    [_parse]=file
    [_workload-check]=none
    ['_sim inject']=nodes
    ['_sim repair']=nodes
    [_drain]=nodes
    [_resume]=nodes
    [_undrain]=nodes
    [_cordon]=nodes
    [_uncordon]=nodes
    [_repaired]=nodes
    [_escalate]=nodes
    [_revalidate]=nodes
    [_bundle]=node
    [_completion]=choice
    [_help]=none
)
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
