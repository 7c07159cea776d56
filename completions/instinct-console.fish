# fish completion for instinct-console: generated from the argument definitions by `python -m console.commands.generate`; do not edit
function __instinct_console_table
    switch $argv[1]
        case subcommands
            switch "$argv[2..-1]"
                case ''
                    echo 'tui demo sweep check-local parse workload-check history accept diff acceptance sim drain resume undrain cordon uncordon repaired escalate pin rollback drift audit cases revalidate watch bundle completion help'
                case tui
                    echo ''
                case demo
                    echo ''
                case sweep
                    echo ''
                case check-local
                    echo ''
                case parse
                    echo ''
                case workload-check
                    echo ''
                case history
                    echo ''
                case accept
                    echo ''
                case diff
                    echo ''
                case acceptance
                    echo ''
                case sim
                    echo 'serve inject repair faults'
                case 'sim serve'
                    echo ''
                case 'sim inject'
                    echo ''
                case 'sim repair'
                    echo ''
                case 'sim faults'
                    echo ''
                case drain
                    echo ''
                case resume
                    echo ''
                case undrain
                    echo ''
                case cordon
                    echo ''
                case uncordon
                    echo ''
                case repaired
                    echo ''
                case escalate
                    echo ''
                case pin
                    echo ''
                case rollback
                    echo ''
                case drift
                    echo ''
                case audit
                    echo ''
                case cases
                    echo ''
                case revalidate
                    echo ''
                case watch
                    echo ''
                case bundle
                    echo ''
                case completion
                    echo ''
                case help
                    echo ''
            end
        case valued
            switch "$argv[2..-1]"
                case ''
                    echo ''
                case tui
                    echo '-i --inventory --store --checks --probe-timeout --workers --probes --theme --pairing --pairing-seed --engine'
                case demo
                    echo '--nodes --seed --probes --time-factor --address-base --store --json --scenario'
                case sweep
                    echo '-i --inventory --store --checks --probe-timeout --workers --nodes --probes --json --junit --prom --exclude-out --deadline --allow-unknown --group-size --pairing --pairing-seed --slurm-command --cap --cap-fraction --every --count --max-age'
                case check-local
                    echo '-i --inventory --model --gpu-count --node --probes --json --pins --images --checks --from-cache --max-age --gpus --deadline'
                case parse
                    echo '--as --model --checks'
                case workload-check
                    echo '-i --inventory --exit-status --node --hosts'
                case history
                    echo '--store --node --limit'
                case accept
                    echo '--store -i --inventory --sweep --pool --workload --reason'
                case diff
                    echo '--store -i --inventory --pool --sweep'
                case acceptance
                    echo '--store -i --inventory --workload --pool --junit'
                case sim
                    echo ''
                case 'sim serve'
                    echo '--nodes --model --pools --faults --seed --time-factor --state-dir --inventory-out --listen --address-base --port --user --max-sessions --scenario'
                case 'sim inject'
                    echo '--kind --gpu --peer --param --state-dir'
                case 'sim repair'
                    echo '--kind --gpu --peer --param --state-dir'
                case 'sim faults'
                    echo --state-dir
                case drain
                    echo '-i --inventory --store --reason --sweep --cap --cap-fraction --kubeconfig'
                case resume
                    echo '-i --inventory --store --reason --sweep --cap --cap-fraction --kubeconfig'
                case undrain
                    echo '-i --inventory --store --reason --sweep --cap --cap-fraction --kubeconfig'
                case cordon
                    echo '-i --inventory --store --reason --sweep --cap --cap-fraction --kubeconfig'
                case uncordon
                    echo '-i --inventory --store --reason --sweep --cap --cap-fraction --kubeconfig'
                case repaired
                    echo '-i --inventory --store --reason --kubeconfig'
                case escalate
                    echo '-i --inventory --store --reason --kubeconfig'
                case pin
                    echo '-i --inventory --store --pool --from-node --image-digest --enforce'
                case rollback
                    echo '-i --inventory --store --pool --reason --workload'
                case drift
                    echo '-i --inventory --store --nodes --checks --probe-timeout'
                case audit
                    echo '--store --limit'
                case cases
                    echo '--store -i --inventory --node'
                case revalidate
                    echo '-i --inventory --store --checks --probe-timeout --level --kubeconfig'
                case watch
                    echo '-i --inventory --store --checks --probe-timeout --every --level --rounds --reservation --approve --reject --reason'
                case bundle
                    echo '--store --sweep -o --output'
                case completion
                    echo ''
                case help
                    echo ''
            end
    end
end
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
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a tui -d 'open the live console: sweep, watch verdicts, drill into evidence, drain and rerun'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a demo -d 'start a simulated cluster with faults and open the console on it'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a sweep -d 'sweep nodes headless: verdicts, reports and an exit code for a scheduler prolog'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a check-local -d 'check this node on the node itself (Slurm prolog, HealthCheckProgram, sweep --via-slurm)'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a parse -d 'parse output of amd-smi, rocm-smi, rocminfo, rvs, rccl-tests or TransferBench'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a workload-check -d 'judge the output of a declared workload'"'"'s run against its criteria'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a history -d 'list recent sweeps, or one node'"'"'s verdicts over time'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a accept -d 'mark a sweep as the accepted baseline of its pools'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a diff -d 'what changed since a pool'"'"'s accepted baseline'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a acceptance -d 'each workload'"'"'s acceptance state on each pool (accepted, due, regressed)'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a sim -d 'run a simulated Instinct cluster'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a drain -d 'drain nodes in Slurm with a tagged reason (running jobs finish)'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a resume -d 'return nodes the console drained to service, once their case is revalidated (else --force)'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a undrain -d 'clear the drain flag of nodes the console drained, leaving DOWN alone'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a cordon -d 'cordon and taint Kubernetes nodes and set the console'"'"'s node condition (pods keep running)'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a uncordon -d 'return Kubernetes nodes the console cordoned, once their case is revalidated (else --force)'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a repaired -d 'say the repair a drained node'"'"'s case calls for is done (who and what): it is revalidated next'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a escalate -d 'send a drained node to the vendor (RMA): its case closes'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a pin -d 'show, set (--from-node) or enforce (--enforce) a pool'"'"'s stack pin'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a rollback -d 'set a pool'"'"'s pin and workload images back to its last accepted stack, and hold its packages'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a drift -d 'sweep the stack and firmware, judge each pinned field against its pool'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a audit -d 'list the audit log of operator actions'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a cases -d 'list drained nodes'"'"' remediation cases: stage, action, passes, strikes, next step'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a revalidate -d 'sweep repaired nodes and record a pass or a strike on their cases'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a watch -d 'every --every seconds: sweep idle nodes not checked lately, drain FAIL nodes, revalidate and resume'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a bundle -d 'write one archive of a node'"'"'s evidence (raw outputs, CPER, findings, audit)'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a completion -d 'print the shell completion script for bash, zsh or fish'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -a help -d 'print a section of the operator guide (offline); without a topic, list them'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is '"'"''"'"'' -l version -d 'show program'"'"'s version number and exit'
complete -c instinct-console -n '__instinct_console_is tui' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is tui' -s i -l inventory -r -F -d 'cluster file (TOML, hostfile or cvs cluster.json)'
complete -c instinct-console -n '__instinct_console_is tui' -l store -r -F -d 'history database (default ~/.local/state/instinct-console/history.sqlite)'
complete -c instinct-console -n '__instinct_console_is tui' -l checks -x -a '(__fish_complete_directories)' -d 'extra check directory (repeatable)'
complete -c instinct-console -n '__instinct_console_is tui' -l accept-new -d 'accept and record host keys of first contact'
complete -c instinct-console -n '__instinct_console_is tui' -l probe-timeout -x -d 'cap every probe'"'"'s timeout; a node still busy after this long is UNKNOWN (default: per probe)'
complete -c instinct-console -n '__instinct_console_is tui' -l workers -x -d 'processes that check and judge the nodes, each on a core (default: one per core but one, from 64 nodes on a host of 4 cores or more; else 0: the engine'"'"'s own process)'
complete -c instinct-console -n '__instinct_console_is tui' -l read-only -d 'hide every action that changes the cluster'
complete -c instinct-console -n '__instinct_console_is tui' -l probes -x -a 'quick standard full' -d 'probe set (default quick)'
complete -c instinct-console -n '__instinct_console_is tui' -l theme -x -d 'dark (default), light, high-contrast or a Textual theme name'
complete -c instinct-console -n '__instinct_console_is tui' -l no-sweep -d 'open without sweeping (S starts a sweep)'
complete -c instinct-console -n '__instinct_console_is tui' -l pairing -x -a 'reference random rack across switch across-switches rail' -d 'the multinode level'"'"'s first pass (keys m, M): each node with a known-good one (default), or nodes with each other at random, within a rack or across racks, within a switch or across switches, or rail-aligned (the cluster file'"'"'s rack, switch and rail labels)'
complete -c instinct-console -n '__instinct_console_is tui' -l pairing-seed -x -d 'seed of the random pairs (default 0)'
complete -c instinct-console -n '__instinct_console_is tui' -l no-baseline-partners -d 'multinode: never borrow a node known-good in the pool'"'"'s accepted baseline as a second-pass partner (by default one is borrowed, its GPUs taken for that run, when no selected node can partner)'
complete -c instinct-console -n '__instinct_console_is tui' -l engine -x -a 'process thread' -d 'where the sweep engine runs: its own process (default) or a thread of the console'"'"'s (debugging)'
complete -c instinct-console -n '__instinct_console_is demo' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is demo' -l nodes -x -a '(__instinct_console_words selection)' -d 'simulated nodes (default 32)'
complete -c instinct-console -n '__instinct_console_is demo' -l seed -x -d 'seed of the fault set and node state (default 7)'
complete -c instinct-console -n '__instinct_console_is demo' -l probes -x -a 'quick standard full' -d 'probe set (default standard)'
complete -c instinct-console -n '__instinct_console_is demo' -l time-factor -x -d 'simulated tool durations divided by this'
complete -c instinct-console -n '__instinct_console_is demo' -l address-base -x -d 'nodes listen on base+1, base+2... of 127.0.0.0/8, as sim serve'"'"'s (default: a free 127.2.B.0 block)'
complete -c instinct-console -n '__instinct_console_is demo' -l headless -d 'run the headless sweep instead of the TUI'
complete -c instinct-console -n '__instinct_console_is demo' -l store -r -F -d 'history database (default: inside the demo'"'"'s temporary state)'
complete -c instinct-console -n '__instinct_console_is demo' -l json -r -F -d 'headless: write the JSON report'
complete -c instinct-console -n '__instinct_console_is demo' -l read-only -d 'TUI: hide actions that change the cluster'
complete -c instinct-console -n '__instinct_console_is demo' -l scenario -r -F -d 'serve this scenario file (docs/simulator.md) instead of the demo'"'"'s own nodes and faults'
complete -c instinct-console -n '__instinct_console_is sweep' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is sweep' -s i -l inventory -r -F -d 'cluster file (TOML, hostfile or cvs cluster.json)'
complete -c instinct-console -n '__instinct_console_is sweep' -l store -r -F -d 'history database (default ~/.local/state/instinct-console/history.sqlite)'
complete -c instinct-console -n '__instinct_console_is sweep' -l checks -x -a '(__fish_complete_directories)' -d 'extra check directory (repeatable)'
complete -c instinct-console -n '__instinct_console_is sweep' -l accept-new -d 'accept and record host keys of first contact'
complete -c instinct-console -n '__instinct_console_is sweep' -l probe-timeout -x -d 'cap every probe'"'"'s timeout; a node still busy after this long is UNKNOWN (default: per probe)'
complete -c instinct-console -n '__instinct_console_is sweep' -l workers -x -d 'processes that check and judge the nodes, each on a core (default: one per core but one, from 64 nodes on a host of 4 cores or more; else 0: the engine'"'"'s own process)'
complete -c instinct-console -n '__instinct_console_is sweep' -l nodes -x -a '(__instinct_console_words selection)' -d 'a union of hostlists, node names, pool=NAME and key=value labels (spaces or commas); '"'"'!term'"'"' takes out, '"'"'a&b'"'"' needs both'
complete -c instinct-console -n '__instinct_console_is sweep' -l probes -x -a 'quick standard full multinode framework workload' -d 'probe set (default quick)'
complete -c instinct-console -n '__instinct_console_is sweep' -l json -r -F -d 'write the JSON report to FILE ('"'"'-'"'"' for stdout)'
complete -c instinct-console -n '__instinct_console_is sweep' -l junit -r -F -d 'write a JUnit XML report'
complete -c instinct-console -n '__instinct_console_is sweep' -l prom -r -F -d 'write a Prometheus node_exporter textfile'
complete -c instinct-console -n '__instinct_console_is sweep' -l exclude-out -r -F -d 'write a hostlist of failed nodes (for sbatch --exclude)'
complete -c instinct-console -n '__instinct_console_is sweep' -l exclude-unknown -d 'with --exclude-out: list nodes that could not be checked too'
complete -c instinct-console -n '__instinct_console_is sweep' -l deadline -x -d 'give up and exit 4 after this long'
complete -c instinct-console -n '__instinct_console_is sweep' -l allow-unknown -x -d 'fraction of nodes that may be UNKNOWN before the exit code is 3 (default 0)'
complete -c instinct-console -n '__instinct_console_is sweep' -l fail-on-warn -d 'exit 1 when a node has a WARN verdict too (e.g. its stack drifted from the pool pin)'
complete -c instinct-console -n '__instinct_console_is sweep' -l group-size -x -d 'multinode: nodes per first run with the pool'"'"'s reference; failing runs are bisected (default 1: pairs)'
complete -c instinct-console -n '__instinct_console_is sweep' -l pairing -x -a 'reference random rack across switch across-switches rail' -d 'multinode: first pass pairs each node with a known-good one (reference, default), or nodes with each other: random, within a rack, across racks, within a switch, across switches, rail-aligned (the cluster file'"'"'s rack, switch and rail labels); failed pairs get a second pass'
complete -c instinct-console -n '__instinct_console_is sweep' -l pairing-seed -x -d 'multinode: seed of the random pairs (default 0)'
complete -c instinct-console -n '__instinct_console_is sweep' -l no-baseline-partners -d 'multinode: never borrow a node known-good in the pool'"'"'s accepted baseline as a second-pass partner (by default one is borrowed, its GPUs taken for that run, when no selected node can partner)'
complete -c instinct-console -n '__instinct_console_is sweep' -l via-slurm -d 'run every node'"'"'s probes as one Slurm job (srun ... check-local); the inventory must be on shared storage'
complete -c instinct-console -n '__instinct_console_is sweep' -l slurm-command -x -d 'with --via-slurm: the command that runs instinct-console on the nodes (default instinct-console)'
complete -c instinct-console -n '__instinct_console_is sweep' -l slurm-raw -d 'with --via-slurm: every node sends its raw outputs, judged and stored here (default: not-PASS nodes)'
complete -c instinct-console -n '__instinct_console_is sweep' -l cap -x -d 'workload: most nodes per pool out of service at once, the run'"'"'s own and those already out (default: 10%% of the pool or 2, one always stays in); the rest wait their turn'
complete -c instinct-console -n '__instinct_console_is sweep' -l cap-fraction -x -d 'workload: cap as a fraction of the pool (default 0.10)'
complete -c instinct-console -n '__instinct_console_is sweep' -l force -d 'workload: run on every node at once, past the cap'
complete -c instinct-console -n '__instinct_console_is sweep' -l every -x -d 'sweep again every SECONDS; busy ticks are skipped'
complete -c instinct-console -n '__instinct_console_is sweep' -l count -x -d 'with --every: stop after N sweeps'
complete -c instinct-console -n '__instinct_console_is sweep' -l max-age -x -d 'gate from the history, running nothing: a node'"'"'s last check at --probes or deeper counts if at most DURATION old (90, 30m, 12h, 1d); older or none is UNKNOWN, never PASS'
complete -c instinct-console -n '__instinct_console_is check-local' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is check-local' -s i -l inventory -r -F -d 'cluster file naming this node (its pool, model and pin)'
complete -c instinct-console -n '__instinct_console_is check-local' -l model -x -a 'MI300X MI325X MI350X MI355X MI250X' -d 'GPU model, when there is no cluster file'
complete -c instinct-console -n '__instinct_console_is check-local' -l gpu-count -x -d 'expected GPUs with --model (default 8)'
complete -c instinct-console -n '__instinct_console_is check-local' -l node -x -a '(__instinct_console_words node)' -d 'this node'"'"'s name (default $SLURMD_NODENAME, else the short hostname)'
complete -c instinct-console -n '__instinct_console_is check-local' -l probes -x -a 'quick standard full framework' -d 'probe set (default quick)'
complete -c instinct-console -n '__instinct_console_is check-local' -l json -r -F -d 'write the compact report (verdict, findings, digest) as JSON ('"'"'-'"'"' for stdout)'
complete -c instinct-console -n '__instinct_console_is check-local' -l raw -d 'put every probe'"'"'s raw output in the JSON report even on a PASS'
complete -c instinct-console -n '__instinct_console_is check-local' -l pins -x -d 'judge pools against these pins, {pool: {field: value}} (sweep --via-slurm passes the console'"'"'s)'
complete -c instinct-console -n '__instinct_console_is check-local' -l images -x -d 'images over the cluster file'"'"'s, {pool: {workload: image}}: the framework probe runs in its pool'"'"'s (sweep --via-slurm passes the ones rollback set back)'
complete -c instinct-console -n '__instinct_console_is check-local' -l checks -x -a '(__fish_complete_directories)' -d 'extra check directory (repeatable)'
complete -c instinct-console -n '__instinct_console_is check-local' -l from-cache -r -F -d 'answer at once from the report a periodic '"'"'check-local --json FILE'"'"' keeps there (HealthCheckProgram); it needs -i too (or --model, as the periodic check ran): a report judged in another pool than the node'"'"'s is no answer'
complete -c instinct-console -n '__instinct_console_is check-local' -l max-age -x -d 'with --from-cache: an older report is no answer, UNKNOWN (90, 30m, 12h, 1d; default 1800 s)'
complete -c instinct-console -n '__instinct_console_is check-local' -l gpus -x -d 'judge only these GPUs'"'"' findings (a prolog: --gpus "$SLURM_JOB_GPUS"); the node'"'"'s own always count'
complete -c instinct-console -n '__instinct_console_is check-local' -l no-amdsmi-library -d 'run the amd-smi command for every probe even where the amdsmi Python library is importable'
complete -c instinct-console -n '__instinct_console_is check-local' -l deadline -x -d 'give up and exit 4 after this long'
complete -c instinct-console -n '__instinct_console_is check-local' -l fail-on-warn -d 'exit 1 on a WARN verdict too (e.g. stack drift)'
complete -c instinct-console -n '__instinct_console_is parse' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is parse' -l as -x -d 'skip detection; TOOL is one of amd-smi, rocm-smi, rocminfo, rvs, rccl-tests, transferbench, torch'
complete -c instinct-console -n '__instinct_console_is parse' -l model -x -d 'judge against this GPU model'"'"'s check pack (MI300X, ...); default: the model the output names'
complete -c instinct-console -n '__instinct_console_is parse' -l checks -x -a '(__fish_complete_directories)' -d 'extra check directory (repeatable)'
complete -c instinct-console -n '__instinct_console_is parse' -l json -d 'print exactly one JSON object'
complete -c instinct-console -n '__instinct_console_is parse' -r -F
complete -c instinct-console -n '__instinct_console_is workload-check' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is workload-check' -s i -l inventory -r -F -d 'cluster file declaring the workload ([[workloads]])'
complete -c instinct-console -n '__instinct_console_is workload-check' -l exit-status -x -d 'the run'"'"'s exit status (required to judge)'
complete -c instinct-console -n '__instinct_console_is workload-check' -l node -x -a '(__instinct_console_words node)' -d 'the node (or job) the run was on, as findings name it'
complete -c instinct-console -n '__instinct_console_is workload-check' -l json -d 'print the findings as one JSON object'
complete -c instinct-console -n '__instinct_console_is workload-check' -l command -d 'print the argv the console would run, and exit'
complete -c instinct-console -n '__instinct_console_is workload-check' -l hosts -x -a '(__instinct_console_words nodes)' -d 'for a workload on more than one node: the group it runs on (srun'"'"'s --nodelist with --command; the node of each task when judging)'
complete -c instinct-console -n '__instinct_console_is history' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is history' -l store -r -F -d 'history database (default ~/.local/state/instinct-console/history.sqlite)'
complete -c instinct-console -n '__instinct_console_is history' -l node -x -a '(__instinct_console_words node)' -d 'show this node'"'"'s verdict history'
complete -c instinct-console -n '__instinct_console_is history' -l limit -x -d 'show the newest N (default 20)'
complete -c instinct-console -n '__instinct_console_is history' -l json -d 'print JSON'
complete -c instinct-console -n '__instinct_console_is accept' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is accept' -l store -r -F -d 'history database (default ~/.local/state/instinct-console/history.sqlite)'
complete -c instinct-console -n '__instinct_console_is accept' -s i -l inventory -r -F -d 'cluster file (to know the pools)'
complete -c instinct-console -n '__instinct_console_is accept' -l sweep -x -d 'sweep id (default: the newest sweep, not a drift check or rerun)'
complete -c instinct-console -n '__instinct_console_is accept' -l pool -x -a '(__instinct_console_words pool)' -d 'only these pools (default: every pool in the sweep)'
complete -c instinct-console -n '__instinct_console_is accept' -l workload -x -d 'accept this workload'"'"'s run in the sweep on its pools instead ('"'"'framework'"'"' is the built-in one; docs/workloads.md, Acceptance)'
complete -c instinct-console -n '__instinct_console_is accept' -l reason -x -d 'why: the upgrade or change this acceptance is for (audited)'
complete -c instinct-console -n '__instinct_console_is diff' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is diff' -l store -r -F -d 'history database (default ~/.local/state/instinct-console/history.sqlite)'
complete -c instinct-console -n '__instinct_console_is diff' -s i -l inventory -r -F -d 'cluster file (to know the pools)'
complete -c instinct-console -n '__instinct_console_is diff' -l pool -x -a '(__instinct_console_words pool)' -d 'pool whose baseline to compare with (default: every pool with one)'
complete -c instinct-console -n '__instinct_console_is diff' -l sweep -x -d 'sweep to compare (default: the pool'"'"'s newest full sweep, not a drift check)'
complete -c instinct-console -n '__instinct_console_is diff' -l json -d 'print JSON'
complete -c instinct-console -n '__instinct_console_is acceptance' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is acceptance' -l store -r -F -d 'history database (default ~/.local/state/instinct-console/history.sqlite)'
complete -c instinct-console -n '__instinct_console_is acceptance' -s i -l inventory -r -F -d 'cluster file declaring the pools and workloads'
complete -c instinct-console -n '__instinct_console_is acceptance' -l workload -x -d 'only these workloads ('"'"'framework'"'"' is the built-in one)'
complete -c instinct-console -n '__instinct_console_is acceptance' -l pool -x -a '(__instinct_console_words pool)' -d 'only these pools'
complete -c instinct-console -n '__instinct_console_is acceptance' -l json -d 'print JSON'
complete -c instinct-console -n '__instinct_console_is acceptance' -l junit -r -F -d 'write a JUnit XML file: one test case per workload and pool'
complete -c instinct-console -n '__instinct_console_is acceptance' -l require-accepted -d 'exit 1 when a workload is due or was never accepted'
complete -c instinct-console -n '__instinct_console_is sim' -a serve -d 'serve simulated nodes over SSH and write an inventory for them'
complete -c instinct-console -n '__instinct_console_is sim' -a inject -d 'add a fault to nodes of a running simulator'
complete -c instinct-console -n '__instinct_console_is sim' -a repair -d 'remove faults'
complete -c instinct-console -n '__instinct_console_is sim' -a faults -d 'what a running simulator injects now'
complete -c instinct-console -n '__instinct_console_is sim' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is '"'"'sim serve'"'"'' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is '"'"'sim serve'"'"'' -l nodes -x -a '(__instinct_console_words selection)' -d 'number of nodes (default 64)'
complete -c instinct-console -n '__instinct_console_is '"'"'sim serve'"'"'' -l model -x -d 'GPU model, or a comma list cycled over the pools (default mi300x)'
complete -c instinct-console -n '__instinct_console_is '"'"'sim serve'"'"'' -l pools -x -d 'number of pools (default: one per model)'
complete -c instinct-console -n '__instinct_console_is '"'"'sim serve'"'"'' -l faults -x -d 'demo, none or random:<fraction> (default demo)'
complete -c instinct-console -n '__instinct_console_is '"'"'sim serve'"'"'' -l seed -x -d 'seed of node state and faults (default 0)'
complete -c instinct-console -n '__instinct_console_is '"'"'sim serve'"'"'' -l time-factor -x -d 'simulated tool durations are divided by this (default 20)'
complete -c instinct-console -n '__instinct_console_is '"'"'sim serve'"'"'' -l state-dir -x -a '(__fish_complete_directories)' -d 'keys, cluster.json, known_hosts, Slurm state'
complete -c instinct-console -n '__instinct_console_is '"'"'sim serve'"'"'' -l inventory-out -r -F -d 'inventory TOML (default <state-dir>/inventory.toml)'
complete -c instinct-console -n '__instinct_console_is '"'"'sim serve'"'"'' -l listen -x -a 'addresses ports' -d 'address or port per node'
complete -c instinct-console -n '__instinct_console_is '"'"'sim serve'"'"'' -l address-base -x -d 'nodes get base+1, base+2... (default 127.2.0.0)'
complete -c instinct-console -n '__instinct_console_is '"'"'sim serve'"'"'' -l port -x -d 'SSH port; first port with --listen ports (0: any)'
complete -c instinct-console -n '__instinct_console_is '"'"'sim serve'"'"'' -l user -x -d 'login user the nodes accept (default node)'
complete -c instinct-console -n '__instinct_console_is '"'"'sim serve'"'"'' -l max-sessions -x -d 'channels per connection, like sshd (default 10)'
complete -c instinct-console -n '__instinct_console_is '"'"'sim serve'"'"'' -l scenario -r -F -d 'scenario TOML: nodes, stacks and faults (watched)'
complete -c instinct-console -n '__instinct_console_is '"'"'sim inject'"'"'' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is '"'"'sim inject'"'"'' -l kind -x -d 'fault kind (repair: all kinds if omitted)'
complete -c instinct-console -n '__instinct_console_is '"'"'sim inject'"'"'' -l gpu -x -d 'GPU slot, for GPU and link faults'
complete -c instinct-console -n '__instinct_console_is '"'"'sim inject'"'"'' -l peer -x -d 'second GPU slot, for link faults'
complete -c instinct-console -n '__instinct_console_is '"'"'sim inject'"'"'' -l param -x -d 'fault parameter (repeatable)'
complete -c instinct-console -n '__instinct_console_is '"'"'sim inject'"'"'' -l state-dir -x -a '(__fish_complete_directories)' -d 'the running simulator'"'"'s state directory'
complete -c instinct-console -n '__instinct_console_is '"'"'sim inject'"'"'' -a '(__instinct_console_words nodes)'
complete -c instinct-console -n '__instinct_console_is '"'"'sim repair'"'"'' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is '"'"'sim repair'"'"'' -l kind -x -d 'fault kind (repair: all kinds if omitted)'
complete -c instinct-console -n '__instinct_console_is '"'"'sim repair'"'"'' -l gpu -x -d 'GPU slot, for GPU and link faults'
complete -c instinct-console -n '__instinct_console_is '"'"'sim repair'"'"'' -l peer -x -d 'second GPU slot, for link faults'
complete -c instinct-console -n '__instinct_console_is '"'"'sim repair'"'"'' -l param -x -d 'fault parameter (repeatable)'
complete -c instinct-console -n '__instinct_console_is '"'"'sim repair'"'"'' -l state-dir -x -a '(__fish_complete_directories)' -d 'the running simulator'"'"'s state directory'
complete -c instinct-console -n '__instinct_console_is '"'"'sim repair'"'"'' -a '(__instinct_console_words nodes)'
complete -c instinct-console -n '__instinct_console_is '"'"'sim faults'"'"'' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is '"'"'sim faults'"'"'' -l state-dir -x -a '(__fish_complete_directories)' -d 'the running simulator'"'"'s state directory'
complete -c instinct-console -n '__instinct_console_is drain' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is drain' -s i -l inventory -r -F -d 'cluster file; without one, Slurm commands run here with SLURM_CONF'
complete -c instinct-console -n '__instinct_console_is drain' -l store -r -F -d 'history database (default ~/.local/state/instinct-console/history.sqlite)'
complete -c instinct-console -n '__instinct_console_is drain' -l read-only -d 'refuse every action (plans may still be shown)'
complete -c instinct-console -n '__instinct_console_is drain' -l json -d 'print the plan and result as JSON'
complete -c instinct-console -n '__instinct_console_is drain' -l reason -x -d 'why (kept in Slurm/annotations and the audit log)'
complete -c instinct-console -n '__instinct_console_is drain' -l sweep -x -d 'sweep id the decision comes from (added to the reason)'
complete -c instinct-console -n '__instinct_console_is drain' -l force -d 'act on nodes held by others and past the cap'
complete -c instinct-console -n '__instinct_console_is drain' -l yes -d 'do not ask for confirmation'
complete -c instinct-console -n '__instinct_console_is drain' -l dry-run -d 'show the plan only'
complete -c instinct-console -n '__instinct_console_is drain' -l cap -x -d 'most nodes per pool out of service at once, whoever took them out; one always stays in'
complete -c instinct-console -n '__instinct_console_is drain' -l cap-fraction -x -d 'cap as a fraction of the pool (default 0.10)'
complete -c instinct-console -n '__instinct_console_is drain' -l kubeconfig -r -F -d 'kubeconfig file (default: $KUBECONFIG or ~/.kube/config)'
complete -c instinct-console -n '__instinct_console_is drain' -a '(__instinct_console_words nodes)'
complete -c instinct-console -n '__instinct_console_is resume' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is resume' -s i -l inventory -r -F -d 'cluster file; without one, Slurm commands run here with SLURM_CONF'
complete -c instinct-console -n '__instinct_console_is resume' -l store -r -F -d 'history database (default ~/.local/state/instinct-console/history.sqlite)'
complete -c instinct-console -n '__instinct_console_is resume' -l read-only -d 'refuse every action (plans may still be shown)'
complete -c instinct-console -n '__instinct_console_is resume' -l json -d 'print the plan and result as JSON'
complete -c instinct-console -n '__instinct_console_is resume' -l reason -x -d 'why (kept in Slurm/annotations and the audit log)'
complete -c instinct-console -n '__instinct_console_is resume' -l sweep -x -d 'sweep id the decision comes from (added to the reason)'
complete -c instinct-console -n '__instinct_console_is resume' -l force -d 'act on nodes held by others and past the cap'
complete -c instinct-console -n '__instinct_console_is resume' -l yes -d 'do not ask for confirmation'
complete -c instinct-console -n '__instinct_console_is resume' -l dry-run -d 'show the plan only'
complete -c instinct-console -n '__instinct_console_is resume' -l cap -x -d 'most nodes per pool out of service at once, whoever took them out; one always stays in'
complete -c instinct-console -n '__instinct_console_is resume' -l cap-fraction -x -d 'cap as a fraction of the pool (default 0.10)'
complete -c instinct-console -n '__instinct_console_is resume' -l kubeconfig -r -F -d 'kubeconfig file (default: $KUBECONFIG or ~/.kube/config)'
complete -c instinct-console -n '__instinct_console_is resume' -a '(__instinct_console_words nodes)'
complete -c instinct-console -n '__instinct_console_is undrain' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is undrain' -s i -l inventory -r -F -d 'cluster file; without one, Slurm commands run here with SLURM_CONF'
complete -c instinct-console -n '__instinct_console_is undrain' -l store -r -F -d 'history database (default ~/.local/state/instinct-console/history.sqlite)'
complete -c instinct-console -n '__instinct_console_is undrain' -l read-only -d 'refuse every action (plans may still be shown)'
complete -c instinct-console -n '__instinct_console_is undrain' -l json -d 'print the plan and result as JSON'
complete -c instinct-console -n '__instinct_console_is undrain' -l reason -x -d 'why (kept in Slurm/annotations and the audit log)'
complete -c instinct-console -n '__instinct_console_is undrain' -l sweep -x -d 'sweep id the decision comes from (added to the reason)'
complete -c instinct-console -n '__instinct_console_is undrain' -l force -d 'act on nodes held by others and past the cap'
complete -c instinct-console -n '__instinct_console_is undrain' -l yes -d 'do not ask for confirmation'
complete -c instinct-console -n '__instinct_console_is undrain' -l dry-run -d 'show the plan only'
complete -c instinct-console -n '__instinct_console_is undrain' -l cap -x -d 'most nodes per pool out of service at once, whoever took them out; one always stays in'
complete -c instinct-console -n '__instinct_console_is undrain' -l cap-fraction -x -d 'cap as a fraction of the pool (default 0.10)'
complete -c instinct-console -n '__instinct_console_is undrain' -l kubeconfig -r -F -d 'kubeconfig file (default: $KUBECONFIG or ~/.kube/config)'
complete -c instinct-console -n '__instinct_console_is undrain' -a '(__instinct_console_words nodes)'
complete -c instinct-console -n '__instinct_console_is cordon' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is cordon' -s i -l inventory -r -F -d 'cluster file; without one, Slurm commands run here with SLURM_CONF'
complete -c instinct-console -n '__instinct_console_is cordon' -l store -r -F -d 'history database (default ~/.local/state/instinct-console/history.sqlite)'
complete -c instinct-console -n '__instinct_console_is cordon' -l read-only -d 'refuse every action (plans may still be shown)'
complete -c instinct-console -n '__instinct_console_is cordon' -l json -d 'print the plan and result as JSON'
complete -c instinct-console -n '__instinct_console_is cordon' -l reason -x -d 'why (kept in Slurm/annotations and the audit log)'
complete -c instinct-console -n '__instinct_console_is cordon' -l sweep -x -d 'sweep id the decision comes from (added to the reason)'
complete -c instinct-console -n '__instinct_console_is cordon' -l force -d 'act on nodes held by others and past the cap'
complete -c instinct-console -n '__instinct_console_is cordon' -l yes -d 'do not ask for confirmation'
complete -c instinct-console -n '__instinct_console_is cordon' -l dry-run -d 'show the plan only'
complete -c instinct-console -n '__instinct_console_is cordon' -l cap -x -d 'most nodes per pool out of service at once, whoever took them out; one always stays in'
complete -c instinct-console -n '__instinct_console_is cordon' -l cap-fraction -x -d 'cap as a fraction of the pool (default 0.10)'
complete -c instinct-console -n '__instinct_console_is cordon' -l kubeconfig -r -F -d 'kubeconfig file (default: $KUBECONFIG or ~/.kube/config)'
complete -c instinct-console -n '__instinct_console_is cordon' -a '(__instinct_console_words nodes)'
complete -c instinct-console -n '__instinct_console_is uncordon' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is uncordon' -s i -l inventory -r -F -d 'cluster file; without one, Slurm commands run here with SLURM_CONF'
complete -c instinct-console -n '__instinct_console_is uncordon' -l store -r -F -d 'history database (default ~/.local/state/instinct-console/history.sqlite)'
complete -c instinct-console -n '__instinct_console_is uncordon' -l read-only -d 'refuse every action (plans may still be shown)'
complete -c instinct-console -n '__instinct_console_is uncordon' -l json -d 'print the plan and result as JSON'
complete -c instinct-console -n '__instinct_console_is uncordon' -l reason -x -d 'why (kept in Slurm/annotations and the audit log)'
complete -c instinct-console -n '__instinct_console_is uncordon' -l sweep -x -d 'sweep id the decision comes from (added to the reason)'
complete -c instinct-console -n '__instinct_console_is uncordon' -l force -d 'act on nodes held by others and past the cap'
complete -c instinct-console -n '__instinct_console_is uncordon' -l yes -d 'do not ask for confirmation'
complete -c instinct-console -n '__instinct_console_is uncordon' -l dry-run -d 'show the plan only'
complete -c instinct-console -n '__instinct_console_is uncordon' -l cap -x -d 'most nodes per pool out of service at once, whoever took them out; one always stays in'
complete -c instinct-console -n '__instinct_console_is uncordon' -l cap-fraction -x -d 'cap as a fraction of the pool (default 0.10)'
complete -c instinct-console -n '__instinct_console_is uncordon' -l kubeconfig -r -F -d 'kubeconfig file (default: $KUBECONFIG or ~/.kube/config)'
complete -c instinct-console -n '__instinct_console_is uncordon' -a '(__instinct_console_words nodes)'
complete -c instinct-console -n '__instinct_console_is repaired' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is repaired' -s i -l inventory -r -F -d 'cluster file; without one, Slurm commands run here with SLURM_CONF'
complete -c instinct-console -n '__instinct_console_is repaired' -l store -r -F -d 'history database (default ~/.local/state/instinct-console/history.sqlite)'
complete -c instinct-console -n '__instinct_console_is repaired' -l read-only -d 'refuse every action (plans may still be shown)'
complete -c instinct-console -n '__instinct_console_is repaired' -l json -d 'print the plan and result as JSON'
complete -c instinct-console -n '__instinct_console_is repaired' -l reason -x -d 'what was done, or why (kept in the case and the audit log)'
complete -c instinct-console -n '__instinct_console_is repaired' -l yes -d 'do not ask for confirmation'
complete -c instinct-console -n '__instinct_console_is repaired' -l dry-run -d 'show the plan only'
complete -c instinct-console -n '__instinct_console_is repaired' -l kubeconfig -r -F -d 'kubeconfig file (default: $KUBECONFIG or ~/.kube/config)'
complete -c instinct-console -n '__instinct_console_is repaired' -a '(__instinct_console_words nodes)'
complete -c instinct-console -n '__instinct_console_is escalate' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is escalate' -s i -l inventory -r -F -d 'cluster file; without one, Slurm commands run here with SLURM_CONF'
complete -c instinct-console -n '__instinct_console_is escalate' -l store -r -F -d 'history database (default ~/.local/state/instinct-console/history.sqlite)'
complete -c instinct-console -n '__instinct_console_is escalate' -l read-only -d 'refuse every action (plans may still be shown)'
complete -c instinct-console -n '__instinct_console_is escalate' -l json -d 'print the plan and result as JSON'
complete -c instinct-console -n '__instinct_console_is escalate' -l reason -x -d 'what was done, or why (kept in the case and the audit log)'
complete -c instinct-console -n '__instinct_console_is escalate' -l yes -d 'do not ask for confirmation'
complete -c instinct-console -n '__instinct_console_is escalate' -l dry-run -d 'show the plan only'
complete -c instinct-console -n '__instinct_console_is escalate' -l kubeconfig -r -F -d 'kubeconfig file (default: $KUBECONFIG or ~/.kube/config)'
complete -c instinct-console -n '__instinct_console_is escalate' -a '(__instinct_console_words nodes)'
complete -c instinct-console -n '__instinct_console_is pin' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is pin' -s i -l inventory -r -F -d 'cluster file; without one, Slurm commands run here with SLURM_CONF'
complete -c instinct-console -n '__instinct_console_is pin' -l store -r -F -d 'history database (default ~/.local/state/instinct-console/history.sqlite)'
complete -c instinct-console -n '__instinct_console_is pin' -l read-only -d 'refuse every action (plans may still be shown)'
complete -c instinct-console -n '__instinct_console_is pin' -l json -d 'print the plan and result as JSON'
complete -c instinct-console -n '__instinct_console_is pin' -l pool -x -a '(__instinct_console_words pool)' -d 'pool to pin (default: the pool of --from-node)'
complete -c instinct-console -n '__instinct_console_is pin' -l from-node -x -a '(__instinct_console_words node)' -d 'known-good node whose stack becomes the pool'"'"'s pin'
complete -c instinct-console -n '__instinct_console_is pin' -l image-digest -x -d 'container image digest to pin with the stack'
complete -c instinct-console -n '__instinct_console_is pin' -l enforce -x -a '(__instinct_console_words nodes)' -d 'package holds for the pool (or NODES)'
complete -c instinct-console -n '__instinct_console_is pin' -l apply -d 'with --enforce: run the holds (default: dry run)'
complete -c instinct-console -n '__instinct_console_is pin' -l yes -d 'do not ask for confirmation'
complete -c instinct-console -n '__instinct_console_is pin' -l dry-run -d 'show the plan only'
complete -c instinct-console -n '__instinct_console_is pin' -l clear -d 'drop the pin stored for --pool: the inventory'"'"'s applies'
complete -c instinct-console -n '__instinct_console_is rollback' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is rollback' -s i -l inventory -r -F -d 'cluster file; without one, Slurm commands run here with SLURM_CONF'
complete -c instinct-console -n '__instinct_console_is rollback' -l store -r -F -d 'history database (default ~/.local/state/instinct-console/history.sqlite)'
complete -c instinct-console -n '__instinct_console_is rollback' -l read-only -d 'refuse every action (plans may still be shown)'
complete -c instinct-console -n '__instinct_console_is rollback' -l json -d 'print the plan and result as JSON'
complete -c instinct-console -n '__instinct_console_is rollback' -l pool -x -a '(__instinct_console_words pool)' -d 'the pool to roll back'
complete -c instinct-console -n '__instinct_console_is rollback' -l reason -x -d 'why (kept in the audit log)'
complete -c instinct-console -n '__instinct_console_is rollback' -l workload -x -d 'back to this workload'"'"'s accepted stack (default: the pool'"'"'s newest accepted)'
complete -c instinct-console -n '__instinct_console_is rollback' -l apply -d 'set the pin and images and run the holds (default: dry run)'
complete -c instinct-console -n '__instinct_console_is rollback' -l yes -d 'do not ask for confirmation'
complete -c instinct-console -n '__instinct_console_is rollback' -l dry-run -d 'show the plan only'
complete -c instinct-console -n '__instinct_console_is drift' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is drift' -s i -l inventory -r -F -d 'cluster file; without one, Slurm commands run here with SLURM_CONF'
complete -c instinct-console -n '__instinct_console_is drift' -l store -r -F -d 'history database (default ~/.local/state/instinct-console/history.sqlite)'
complete -c instinct-console -n '__instinct_console_is drift' -l read-only -d 'refuse every action (plans may still be shown)'
complete -c instinct-console -n '__instinct_console_is drift' -l json -d 'print the plan and result as JSON'
complete -c instinct-console -n '__instinct_console_is drift' -l nodes -x -a '(__instinct_console_words selection)' -d 'as sweep'"'"'s: a union of hostlists, names, pool=NAME, key=value; '"'"'!'"'"' takes out'
complete -c instinct-console -n '__instinct_console_is drift' -l checks -x -a '(__fish_complete_directories)' -d 'extra check directory (repeatable)'
complete -c instinct-console -n '__instinct_console_is drift' -l all -d 'list matching fields too, not only drift'
complete -c instinct-console -n '__instinct_console_is drift' -l accept-new -d 'accept and record host keys of first contact'
complete -c instinct-console -n '__instinct_console_is drift' -l probe-timeout -x -d 'cap every probe'"'"'s timeout; a node still busy after this long is UNKNOWN (default: per probe)'
complete -c instinct-console -n '__instinct_console_is audit' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is audit' -l store -r -F -d 'history database (default ~/.local/state/instinct-console/history.sqlite)'
complete -c instinct-console -n '__instinct_console_is audit' -l limit -x -d 'show the newest N entries (default 50)'
complete -c instinct-console -n '__instinct_console_is audit' -l json -d 'print JSON'
complete -c instinct-console -n '__instinct_console_is cases' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is cases' -l store -r -F -d 'history database (default ~/.local/state/instinct-console/history.sqlite)'
complete -c instinct-console -n '__instinct_console_is cases' -s i -l inventory -r -F -d 'cluster file (its [lifecycle] policy; default policy without one)'
complete -c instinct-console -n '__instinct_console_is cases' -l node -x -a '(__instinct_console_words node)' -d 'only this node'"'"'s cases, with their steps'
complete -c instinct-console -n '__instinct_console_is cases' -l all -d 'closed cases too'
complete -c instinct-console -n '__instinct_console_is cases' -l json -d 'print JSON'
complete -c instinct-console -n '__instinct_console_is cases' -l policy -d 'print the lifecycle policy of each pool, each value with where it comes from, then exit'
complete -c instinct-console -n '__instinct_console_is revalidate' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is revalidate' -s i -l inventory -r -F -d 'cluster file (TOML, hostfile or cvs cluster.json)'
complete -c instinct-console -n '__instinct_console_is revalidate' -l store -r -F -d 'history database (default ~/.local/state/instinct-console/history.sqlite)'
complete -c instinct-console -n '__instinct_console_is revalidate' -l checks -x -a '(__fish_complete_directories)' -d 'extra check directory (repeatable)'
complete -c instinct-console -n '__instinct_console_is revalidate' -l accept-new -d 'accept and record host keys of first contact'
complete -c instinct-console -n '__instinct_console_is revalidate' -l probe-timeout -x -d 'cap every probe'"'"'s timeout; a node still busy after this long is UNKNOWN (default: per probe)'
complete -c instinct-console -n '__instinct_console_is revalidate' -l yes -d 'do not ask for confirmation'
complete -c instinct-console -n '__instinct_console_is revalidate' -l dry-run -d 'show the plan only: which nodes, at which level'
complete -c instinct-console -n '__instinct_console_is revalidate' -l level -x -a 'quick standard full multinode framework workload' -d 'probe level (default: each node'"'"'s pool'"'"'s lifecycle level: [pools.lifecycle] over [lifecycle], standard); multinode: standard, then one pair run with a known-good node of the pool'
complete -c instinct-console -n '__instinct_console_is revalidate' -l json -d 'print each node'"'"'s outcome and case as JSON'
complete -c instinct-console -n '__instinct_console_is revalidate' -l kubeconfig -r -F -d 'Kubernetes pools: kubeconfig file (default: $KUBECONFIG or ~/.kube/config)'
complete -c instinct-console -n '__instinct_console_is revalidate' -a '(__instinct_console_words nodes)'
complete -c instinct-console -n '__instinct_console_is watch' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is watch' -s i -l inventory -r -F -d 'cluster file (TOML, hostfile or cvs cluster.json)'
complete -c instinct-console -n '__instinct_console_is watch' -l store -r -F -d 'history database (default ~/.local/state/instinct-console/history.sqlite)'
complete -c instinct-console -n '__instinct_console_is watch' -l checks -x -a '(__fish_complete_directories)' -d 'extra check directory (repeatable)'
complete -c instinct-console -n '__instinct_console_is watch' -l accept-new -d 'accept and record host keys of first contact'
complete -c instinct-console -n '__instinct_console_is watch' -l probe-timeout -x -d 'cap every probe'"'"'s timeout; a node still busy after this long is UNKNOWN (default: per probe)'
complete -c instinct-console -n '__instinct_console_is watch' -l every -x -d 'seconds between rounds, and how old a node'"'"'s last check must be to sweep it again (default 3600)'
complete -c instinct-console -n '__instinct_console_is watch' -l level -x -a 'quick standard full framework workload' -d 'probe level of the idle-node sweeps (default quick; revalidations use each pool'"'"'s lifecycle level)'
complete -c instinct-console -n '__instinct_console_is watch' -l rounds -x -d 'stop after N rounds (default: run until stopped)'
complete -c instinct-console -n '__instinct_console_is watch' -l auto -d 'carry out drains and resumes itself (default: store them as proposals for --approve)'
complete -c instinct-console -n '__instinct_console_is watch' -l dry-run -d 'show what each round would sweep and do; change nothing'
complete -c instinct-console -n '__instinct_console_is watch' -l reservation -x -d 'hold each round'"'"'s swept nodes in a Slurm maintenance reservation NAME (flags MAINT,IGNORE_JOBS), created before the sweep and deleted after it, also on SIGTERM'
complete -c instinct-console -n '__instinct_console_is watch' -l normal-priority -d 'run the probes at normal priority (default: nice -n 19 ionice -c 3 on the node, so jobs come first)'
complete -c instinct-console -n '__instinct_console_is watch' -l proposals -d 'list the open proposals and the breaker'"'"'s state, then exit'
complete -c instinct-console -n '__instinct_console_is watch' -l freshness -d 'each node'"'"'s last active check: its age and verdict, then exit'
complete -c instinct-console -n '__instinct_console_is watch' -l approve -x -d 'carry out an open proposal (or all of them) through the actions, then exit'
complete -c instinct-console -n '__instinct_console_is watch' -l reject -x -d 'reject an open proposal (audited, with --reason): nothing runs, then exit'
complete -c instinct-console -n '__instinct_console_is watch' -l clear-breaker -d 'clear a tripped circuit breaker (audited): automation resumes'
complete -c instinct-console -n '__instinct_console_is watch' -l yes -d 'with --approve: do not ask before each plan'
complete -c instinct-console -n '__instinct_console_is watch' -l reason -x -d 'with --reject: why (required; it goes to the audit log)'
complete -c instinct-console -n '__instinct_console_is bundle' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is bundle' -l store -r -F -d 'history database (default ~/.local/state/instinct-console/history.sqlite)'
complete -c instinct-console -n '__instinct_console_is bundle' -l sweep -x -d 'sweep to take the evidence from (default: the node'"'"'s newest in which it did not pass, else its newest)'
complete -c instinct-console -n '__instinct_console_is bundle' -s o -l output -r -F -d 'archive path (default: <node>-evidence-<sweep>.tar.gz here)'
complete -c instinct-console -n '__instinct_console_is bundle' -l redact -d 'replace host names and IP addresses with placeholders'
complete -c instinct-console -n '__instinct_console_is bundle' -a '(__instinct_console_words node)'
complete -c instinct-console -n '__instinct_console_is completion' -s h -l help -d 'show this help message and exit'
complete -c instinct-console -n '__instinct_console_is completion' -a 'bash zsh fish'
complete -c instinct-console -n '__instinct_console_is help' -s h -l help -d 'show this help message and exit'
