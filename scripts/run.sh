#!/usr/bin/env bash
# scripts/run.sh - the main job: installs what is missing and builds
# (scripts/setup.sh, Python 3.11 only), then runs the main job with .venv's python:
#   python -m bench.bert_pretrain      once bench/bert_pretrain/__main__.py exists
#   python examples/train_small.py     until then
# Extra arguments are passed to the main job.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh --no-312

if [ -f bench/bert_pretrain/__main__.py ]; then
  echo "[run] python -m bench.bert_pretrain $*"
  exec .venv/bin/python -m bench.bert_pretrain "$@"
fi
echo "[run] python examples/train_small.py $*"
exec .venv/bin/python examples/train_small.py "$@"
