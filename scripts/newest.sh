#!/usr/bin/env bash
# The suite against the newest releases, to see drift before it breaks CI: builds .venv-newest from
# whatever PyPI offers now within pyproject.toml's ranges (the lock is ignored), prints the packages that
# differ from constraints.txt, then runs pytest there with the arguments given (default: the whole suite
# as CI runs it). Green here means `bash scripts/lock.sh` can move the lock forward.
#
#   bash scripts/newest.sh                                   # the whole suite
#   bash scripts/newest.sh tests/integration/test_quiet_start.py   # one file
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=.venv-newest
rm -rf "$VENV"
"$PY" -m venv "$VENV"
PIP_CONSTRAINT="" "$VENV/bin/pip" install -q --upgrade pip
PIP_CONSTRAINT="" "$VENV/bin/pip" install -q --upgrade --upgrade-strategy eager -e '.[dev,bench,kube]'
echo "newer than the lock:"
"$VENV/bin/pip" freeze --all --exclude instinct-console | sort >"$VENV/freeze.txt"
grep -v '^#' constraints.txt | sort | comm -13 - "$VENV/freeze.txt" | sed 's/^/  /'
if [ $# -eq 0 ]; then
  set -- -q -p no:cacheprovider --fail-on-skip -n 2 --dist loadgroup
fi
exec "$VENV/bin/python" -m pytest "$@"
