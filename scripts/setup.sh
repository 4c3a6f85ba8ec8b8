#!/usr/bin/env bash
# Create .venv/ in the repository root and install GeoQL into it.
#   scripts/setup.sh          everything the demo and the CPU default need
#   scripts/setup.sh --dev    the same plus the training stack and test tools
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# torch first and pinned: an unpinned torch (asked for by sentence-transformers,
# trl, ...) would pull a multi-GB CUDA build; 2.13.0 resolves to the CPU wheel.
.venv/bin/python -m pip install --quiet "torch==2.13.0"
extras="index,hf,ui"
if [[ "${1:-}" == "--dev" ]]; then extras="all"; fi
.venv/bin/python -m pip install --quiet -e ".[${extras}]"
echo "GeoQL installed in .venv/ (extras: ${extras})"
