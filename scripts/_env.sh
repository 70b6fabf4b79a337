# Sourced by scripts/lab.sh and scripts/test.sh (from the repository root): picks the Python
# environment to install chunkscope into, so the README's commands work as written on a stock
# Debian/Ubuntu machine, where PEP 668 makes pip refuse to install into the system Python.
#
#   use_env EXTRA   installs chunkscope -e ".[EXTRA]" and sets PY to the environment's python
#
# - an active virtualenv ($VIRTUAL_ENV) or conda env ($CONDA_PREFIX) is used as it is;
# - otherwise the project's own .venv (made once with $PYTHON, default python3; on Debian this
#   needs the python3-venv package, which is installed with apt-get when missing) is used and
#   activated for everything the script starts.

MIN_PYTHON="3.11"  # pyproject.toml's requires-python

say() { echo "==> $*"; }
die() { echo "${0##*/}: $*" >&2; exit 1; }

python_ok() {  # $1 runs and is at least MIN_PYTHON
  "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1
}

as_root() {  # run a command as root: directly, or through sudo
  if [ "$(id -u)" = 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    return 1
  fi
}

apt_install() {  # Debian packages, non-interactively
  command -v apt-get >/dev/null 2>&1 || die "no apt-get here: install $* yourself"
  if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null 2>&1; then
    die "need the Debian package(s) $* but am not root and have no sudo: apt-get install $*"
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

make_project_venv() {  # .venv from $PYTHON (default python3)
  local base="${PYTHON:-python3}" version
  command -v "$base" >/dev/null 2>&1 \
    || die "no $base found: install Python $MIN_PYTHON or newer (Debian: apt-get install python3), or set PYTHON=/path/to/python3"
  python_ok "$base" \
    || die "$base is $("$base" --version 2>&1); chunkscope needs Python $MIN_PYTHON or newer: set PYTHON=/path/to/python3.11 (or newer)"
  version="$("$base" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  if ! "$base" -c 'import ensurepip, venv' >/dev/null 2>&1; then
    # Debian and Ubuntu ship venv's pip bootstrap (ensurepip) apart, in python3-venv
    case "$(readlink -f "$(command -v "$base")")" in
      /usr/bin/*)
        say "$base cannot make a virtual environment without Debian's python3-venv package: installing it with apt-get"
        apt_install python3-venv "python${version}-venv"
        ;;
      *) die "$base has no ensurepip, so it cannot make a virtual environment: set PYTHON to one that can" ;;
    esac
  fi
  rm -rf .venv
  if ! "$base" -m venv .venv; then
    rm -rf .venv
    die "$base -m venv .venv failed (see above)"
  fi
}

use_env() {  # $1: the extra to install (lab, test)
  local extra="$1" prefix stamp digest
  if [ -n "${VIRTUAL_ENV:-}" ]; then
    prefix="$VIRTUAL_ENV"
    say "using the active virtual environment $prefix"
  elif [ -n "${CONDA_PREFIX:-}" ]; then
    prefix="$CONDA_PREFIX"
    say "using the active conda environment $prefix"
  else
    prefix="$PWD/.venv"
    if ! python_ok .venv/bin/python || ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
      say "no virtualenv or conda env is active: making the project's own .venv (with ${PYTHON:-python3}) and installing into it"
      make_project_venv
    else
      say "no virtualenv or conda env is active: using the project's own .venv"
    fi
    export VIRTUAL_ENV="$prefix"
    export PATH="$prefix/bin:$PATH"
    unset PYTHONHOME
  fi
  PY="$prefix/bin/python"
  [ -x "$PY" ] || die "no python in $prefix (is that environment still there?)"
  python_ok "$PY" || die "$prefix has $("$PY" --version 2>&1); chunkscope needs Python $MIN_PYTHON or newer"
  say "$("$PY" --version 2>&1) at $PY"

  # the project's .venv is ours: skip pip when it already holds this pyproject.toml's EXTRA;
  # an environment of the user's is always brought up to date
  digest="$("$PY" -c 'import hashlib, sys; print(hashlib.sha256(open("pyproject.toml", "rb").read()).hexdigest(), sys.argv[1])' "$PWD")"
  stamp="$prefix/.chunkscope-installed-$extra"
  if [ "$prefix" = "$PWD/.venv" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ] \
    && "$PY" -c 'import chunkscope' >/dev/null 2>&1; then
    say ".venv already has chunkscope[$extra] for this pyproject.toml (pip install skipped)"
  else
    say "pip install -e \".[$extra]\" (the first time takes a few minutes)"
    rm -f "$stamp"
    "$PY" -m pip install -q --disable-pip-version-check -e ".[$extra]"
    if [ "$prefix" = "$PWD/.venv" ]; then echo "$digest" >"$stamp"; fi
  fi
}
