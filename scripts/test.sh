#!/usr/bin/env bash
# The README's test command, and what CI runs: install everything the tests need on a fresh
# Debian machine, then lint, type-check and run every test, browser and notebook tests
# included. Fails if any step fails, or if pytest collects no test.
#
#   bash scripts/test.sh                                  # everything
#   bash scripts/test.sh -m "not browser and not slow"    # extra arguments go to pytest
#
# Installs into the active virtualenv/conda env, else into the project's own .venv (made here;
# see scripts/_env.sh), so it works on a stock Debian/Ubuntu whose python3 refuses pip (PEP 668).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/_env.sh

# Debian packages for the browser tests: Chromium (Playwright cannot download its own
# browser here) and CJK fonts (the protocol's example stream is Japanese).
need_apt=()
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
dpkg -s fonts-noto-cjk >/dev/null 2>&1 || need_apt+=(fonts-noto-cjk)
if [ "${#need_apt[@]}" -gt 0 ] && ! command -v apt-get >/dev/null 2>&1; then
  echo "test.sh: no apt-get here; install ${need_apt[*]} yourself (the browser tests need /usr/bin/chromium)" >&2
elif [ "${#need_apt[@]}" -gt 0 ]; then
  say "apt-get install ${need_apt[*]} (for the browser tests)"
  apt_install "${need_apt[@]}"
fi

use_env test

say "ruff check src tests"
"$PY" -m ruff check src tests

say "mypy src"
"$PY" -m mypy src

say "pytest $* ($("$PY" --version 2>&1))"
mkdir -p test-artifacts
status=0
"$PY" -m pytest "$@" || status=$?
if [ "$status" -eq 5 ]; then
  # exit 5 = no test collected: a suite that runs nothing must not pass
  echo "test.sh: pytest collected no tests" >&2
  exit 1
fi
exit "$status"
