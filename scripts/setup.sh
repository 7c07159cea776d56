#!/usr/bin/env bash
# Sets up everything instinct-console needs on a fresh Debian 12 machine: the Debian packages the
# tests drive for real (OpenSSH sshd, Slurm, munge, nftables, tmux; man-db, bash-completion, zsh and fish
# for the man page and the completion scripts) and a virtualenv at .venv with
# the package and its dev dependencies, at the versions constraints.txt pins. Idempotent; safe to run on
# every CI start.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PY=${PYTHON:-python3}

need=()
for p in openssh-server openssh-client nftables slurmctld slurmd slurm-client munge tmux iproute2 pdsh clustershell \
    man-db groff-base bash-completion zsh fish; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ] && [ "$(id -u)" = 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
[ "$(id -u)" = 0 ] && mkdir -p /run/sshd

[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
# Every package from the lock (constraints.txt, refreshed by scripts/lock.sh): CI runs what was tested,
# not whatever was released since. Through the environment, the lock also holds the build backend
# that pip installs in its isolated build environment.
export PIP_CONSTRAINT="$PWD/constraints.txt"
"$VENV/bin/pip" install -q --upgrade pip >/dev/null
"$VENV/bin/pip" install -q -e '.[dev,bench,kube]'
