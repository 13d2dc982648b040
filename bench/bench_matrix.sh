#!/usr/bin/env bash
# The bundled tasks x {good, sloppy, liar} through `synth bench` (run, export, no-cache
# rebuild, verify rebuilt + live), into one resumable results folder with summary.md and
# report.html. Long (the torch tasks download and build); not part of the test suite.
#
#   bench/bench_matrix.sh [RESULTS_DIR] [extra synth bench options, e.g. --jobs 2]
#   bench/bench_matrix.sh results --executor ray --address HEAD:6379
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench-results}
shift || true
PY=${PYTHON:-.venv/bin/python}
exec "$PY" -m synth bench tasks/*/ --agent good --agent sloppy --agent liar -o "$out" "$@"
