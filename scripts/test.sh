#!/usr/bin/env bash
# The test command (README's second one; .ci/run calls it): set up, then the static checks, then pytest
# with whatever arguments are given. Lint and types run here, before the tests, not inside a test: they
# fail fast and on their own line, and their minute no longer holds a pytest worker.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
fail=0
.venv/bin/ruff check src tests bench || fail=1
.venv/bin/ruff format --check -q src tests bench || { echo "ruff format: files above need formatting" >&2; fail=1; }
.venv/bin/mypy --no-error-summary || fail=1
if [ "$fail" -ne 0 ]; then
  echo "static checks failed: tests not run" >&2
  exit 1
fi
exec .venv/bin/python -m pytest "$@"
