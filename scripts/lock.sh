#!/usr/bin/env bash
# Refreshes constraints.txt, the lock that scripts/setup.sh (and so .ci/run) installs from: the newest
# releases that satisfy pyproject.toml's ranges, resolved in a fresh virtualenv, every package pinned.
# pyproject.toml keeps ranges for users who `pip install .`; CI and the README's commands run exactly
# what was tested. Review the diff, run `bash scripts/newest.sh` (the suite on those releases) or .ci/run,
# and commit constraints.txt with what the new releases changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$PY" -m venv "$work/venv"
# PIP_CONSTRAINT is cleared so an old lock in the environment cannot hold the resolution back.
PIP_CONSTRAINT="" "$work/venv/bin/pip" install -q --upgrade pip
PIP_CONSTRAINT="" "$work/venv/bin/pip" install -q '.[dev,bench,kube]'
{
  echo "# The lock: every package CI and scripts/setup.sh install, pinned (pip constraints)."
  echo "# Written by scripts/lock.sh on $(date -u +%Y-%m-%d) with $("$work/venv/bin/python" -V); do not edit by hand."
  "$work/venv/bin/pip" freeze --all --exclude instinct-console
} >constraints.txt
echo "constraints.txt: $(grep -vc '^#' constraints.txt) packages pinned"
