#!/bin/sh
# HealthCheckProgram= in slurm.conf (docs/operator-guide.md, section 7). Slurm kills it after 60 s and
# does nothing with its exit code, so it answers from the report check-local-periodic.sh keeps, and
# drains the node itself, with the console's tag, when that report is not a PASS or cannot be trusted
# (missing, older than --max-age: the periodic check stopped). Like NHC, it touches only a node whose
# reason is empty or the console's own ("instinct-console: ..."): another operator's drain and its
# reason are left exactly as they are. It never resumes a node.
# It fails closed: when scontrol cannot read or drain the node, it exits 2 with one line on standard
# output, which slurmd logs ("health_check failed: rc:2 output:instinct-console health check ...").
# It writes no intent row in the console's history database: that database is the console host's
# (owner-only, not on shared storage: SQLite's WAL cannot be shared across hosts), and this script must
# drain within Slurm's 60 s when the console host is down. The tagged reason, which slurmctld keeps with
# who set it and when, is the record; the line below in slurmd's log is the outcome; the console audits
# the drain ("node-drain") the first time it reads it (operator guide, section 7).
# Site settings (SLURM_CONF: slurmd does not tell its health check where slurm.conf is):
CONSOLE=/opt/instinct-console/bin/instinct-console
CLUSTER=/shared/ic/cluster.toml
REPORTS=/var/lib/instinct-console
SLURM_CONF=/etc/slurm/slurm.conf

export SLURM_CONF
TAG="instinct-console:"
node=${SLURMD_NODENAME:-$(hostname -s)}

# One line for slurmd's log, then the exit status.
say() {
  echo "instinct-console health check on $node: $2"
  exit "$1"
}

"$CONSOLE" check-local -i "$CLUSTER" --node "$node" --from-cache "$REPORTS/$node.json" --max-age 1800 >/dev/null 2>&1
status=$?
[ "$status" -eq 0 ] && exit 0
case $status in
  1) why="a check failed" ;;
  3) why="could not be checked" ;;
  *) why="exit status $status" ;;
esac

[ -r "$SLURM_CONF" ] || say 2 "$why, and it cannot drain: SLURM_CONF=$SLURM_CONF is not readable (set SLURM_CONF in $0)"
# A bound under Slurm's 60 s, so that a controller that does not answer still gets its line in the log.
shown=$(timeout 20 scontrol show node "$node" 2>&1)
status=$?
[ "$status" -eq 124 ] && say 2 "$why, and it cannot drain: scontrol show node did not answer in 20 s (SLURM_CONF=$SLURM_CONF)"
[ "$status" -eq 0 ] || say 2 "$why, and it cannot drain: scontrol show node: $(echo "$shown" | tail -n 1) (SLURM_CONF=$SLURM_CONF)"
# scontrol prints the reason on a line of its own, with who set it and when: Reason=<text> [<user>@<time>]
reason=$(echo "$shown" | sed -n 's/^ *Reason=//p' | head -n 1)
case $reason in
  "") ;;
  "$TAG"*) exit 0 ;; # already held by the console: its reason is kept
  *) say 1 "$why; not drained by the console: the node is held by another reason, which is kept: $reason" ;;
esac
done=$(timeout 20 scontrol update NodeName="$node" State=DRAIN Reason="$TAG check-local: $why" 2>&1) ||
  say 2 "$why, and scontrol could not drain it: $(echo "$done" | tail -n 1) (SLURM_CONF=$SLURM_CONF)"
say 0 "$why: drained ($TAG check-local: $why)"
