#!/bin/sh
# Prolog= in slurm.conf (docs/operator-guide.md, section 7). A non-zero exit drains the node and
# requeues the job, so the exit code is all it needs (the reason is Slurm's: "Prolog error"). It never
# calls scontrol nor touches a reason; a console or report it cannot run or read exits non-zero too
# (fails closed). It answers from the report
# check-local-periodic.sh keeps, judging only the job's GPUs ($SLURM_JOB_GPUS, when the job has any).
# Site settings:
CONSOLE=/opt/instinct-console/bin/instinct-console
CLUSTER=/shared/ic/cluster.toml
REPORTS=/var/lib/instinct-console

node=${SLURMD_NODENAME:-$(hostname -s)}
exec "$CONSOLE" check-local -i "$CLUSTER" --node "$node" --from-cache "$REPORTS/$node.json" --max-age 1800 \
  --gpus "${SLURM_JOB_GPUS:-}" >/dev/null 2>&1
