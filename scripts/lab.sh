#!/usr/bin/env bash
# The README's first command: install chunkscope with JupyterLab (and the CJK fonts notebook 01
# shows, with apt when there is one), then serve the tutorials on 127.0.0.1 with `chunkscope lab`:
# it serves a working copy of notebooks/ in my-notebooks/ (git ignores it; the committed tutorials
# stay as they are), and its banner prints the URL to open, token included. Arguments go to
# `chunkscope lab` (e.g. --port 9000 --no-browser).
#
# Installs into the active virtualenv/conda env, else into the project's own .venv (made here;
# see scripts/_env.sh), so it works on a stock Debian/Ubuntu whose python3 refuses pip (PEP 668).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/_env.sh

# CJK fonts: notebook 01's example stream is Japanese, and a stock Debian has no font for it.
# Nice to have, not needed: without apt (or root/sudo) the notebooks still run, showing boxes.
if command -v dpkg >/dev/null 2>&1 && dpkg -s fonts-noto-cjk >/dev/null 2>&1; then
  :
elif ! command -v apt-get >/dev/null 2>&1; then
  say "no apt-get here: install a CJK font (e.g. Noto Sans CJK) yourself, or notebook 01's Japanese shows as boxes"
elif ! (apt_install fonts-noto-cjk); then
  say "could not install fonts-noto-cjk (see above): notebook 01's Japanese shows as boxes until it is installed"
fi

use_env lab
say "chunkscope lab $*"
exec "$PY" -m chunkscope.cli lab "$@"
