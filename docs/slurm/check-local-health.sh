#!/bin/sh
# HealthCheckProgram= in slurm.conf (docs/operator-guide.md, section 7). Slurm kills it after 60 s and
# ignores its exit code, so it answers from the report check-local-periodic.sh keeps, and drains the
# node itself, with the console's tag, when that report is not a PASS or cannot be trusted (missing,
# older than --max-age: the periodic check stopped). It never resumes a node.
# Site settings:
CONSOLE=/opt/instinct-console/bin/instinct-console
CLUSTER=/shared/ic/cluster.toml
REPORTS=/var/lib/instinct-console

node=${SLURMD_NODENAME:-$(hostname -s)}
"$CONSOLE" check-local -i "$CLUSTER" --node "$node" --from-cache "$REPORTS/$node.json" --max-age 1800 >/dev/null 2>&1
status=$?
[ "$status" -eq 0 ] && exit 0
case $status in
  1) why="a check failed" ;;
  3) why="could not be checked" ;;
  *) why="exit status $status" ;;
esac
exec scontrol update NodeName="$node" State=DRAIN Reason="instinct-console: check-local: $why"
