#!/usr/bin/env bash
# The README's first command: install chunkscope with JupyterLab, then serve the tutorial
# notebooks (notebooks/) on 127.0.0.1 with `chunkscope lab`; its banner prints the URL to open,
# token included. Arguments go to `chunkscope lab` (e.g. --port 9000 --no-browser).
#
# Installs into the active virtualenv/conda env, else into the project's own .venv (made here;
# see scripts/_env.sh), so it works on a stock Debian/Ubuntu whose python3 refuses pip (PEP 668).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/_env.sh

use_env lab
say "chunkscope lab $*"
exec "$PY" -m chunkscope.cli lab "$@"
