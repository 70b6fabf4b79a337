#!/usr/bin/env bash
# The README's main command as a script: install chunkscope with JupyterLab, then serve
# the tutorial notebooks on http://127.0.0.1:8888/lab (arguments go to `chunkscope lab`).
set -euo pipefail
cd "$(dirname "$0")/.."
"${PYTHON:-python3}" -m pip install -q --disable-pip-version-check -e ".[lab]"
exec chunkscope lab "$@"
