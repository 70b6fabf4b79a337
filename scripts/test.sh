#!/usr/bin/env bash
# The one test command (README, and what CI runs): install everything the tests
# need on a fresh Debian machine, then lint, type-check and run every test,
# browser and notebook tests included. Fails if any step fails.
#
#   bash scripts/test.sh            # everything
#   bash scripts/test.sh -m "not browser and not slow"   # extra args go to pytest
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"

# Debian packages for the browser tests: Chromium (Playwright cannot download its
# own browser here) and CJK fonts (the seed's examples are Japanese).
need_apt=()
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
dpkg -s fonts-noto-cjk >/dev/null 2>&1 || need_apt+=(fonts-noto-cjk)
if [ "${#need_apt[@]}" -gt 0 ] && ! command -v apt-get >/dev/null 2>&1; then
  echo "scripts/test.sh: no apt-get here; install ${need_apt[*]} yourself (browser tests need /usr/bin/chromium)" >&2
elif [ "${#need_apt[@]}" -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
      echo "scripts/test.sh: need ${need_apt[*]} from Debian but am not root and have no sudo" >&2
      exit 1
    fi
  fi
  echo "==> apt-get install ${need_apt[*]}"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi

echo "==> pip install -e .[test]"
"$PYTHON" -m pip install -q --disable-pip-version-check -e ".[test]"

echo "==> ruff check src tests"
"$PYTHON" -m ruff check src tests

echo "==> mypy src"
"$PYTHON" -m mypy src

echo "==> pytest"
mkdir -p test-artifacts
status=0
"$PYTHON" -m pytest "$@" || status=$?
if [ "$status" -eq 5 ]; then
  # exit 5 = no test collected: a suite that runs nothing must not pass
  echo "scripts/test.sh: pytest collected no tests" >&2
  exit 1
fi
exit "$status"
