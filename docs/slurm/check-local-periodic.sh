#!/bin/sh
# Keeps this node's check-local report fresh for the HealthCheckProgram and the prolog
# (docs/operator-guide.md, section 7). Run it every 10 minutes: instinct-console-check.timer,
# or cron: */10 * * * * root /opt/instinct-console/slurm/check-local-periodic.sh
# It never calls scontrol: check-local-health.sh drains from this report, and treats a report that
# stopped being renewed as "could not be checked".
# Site settings:
CONSOLE=/opt/instinct-console/bin/instinct-console
CLUSTER=/shared/ic/cluster.toml
REPORTS=/var/lib/instinct-console
LEVEL=quick

node=${SLURMD_NODENAME:-$(hostname -s)}
mkdir -p "$REPORTS"
# The report is replaced whole when the check ends; a reader sees the old one or the new one.
exec "$CONSOLE" check-local -i "$CLUSTER" --node "$node" --probes "$LEVEL" --deadline 600 \
  --json "$REPORTS/$node.json" >/dev/null
