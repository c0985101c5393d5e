#!/usr/bin/env bash
# Installs everything trnsim needs on a fresh machine of the project's kind (Debian, as root):
# the C++ libraries from Debian's packages, the pinned Python tools from PyPI, and the trnsim
# package itself (C++ core + extension + `trnsim` command), built with scikit-build-core.
set -euo pipefail
cd "$(dirname "$0")/.."

debs=(g++ ccache libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev libcli11-dev
      libtomlplusplus-dev libopenblas-dev clang-format clang-tidy)
missing=()
for p in "${debs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install.sh: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

python3 -m pip install -q --disable-pip-version-check -r requirements-dev.txt
# Objects cached outside the clone (~/.cache/ccache) are shared by every clone on this machine:
# paths are hashed relative to the clone, and the working directory is left out of the hash.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
echo "install.sh: building and installing the trnsim package"
python3 -m pip install -q --disable-pip-version-check .
# pyenv keeps its own shims: make the new `trnsim` command visible where pyenv is used.
if command -v pyenv >/dev/null 2>&1; then pyenv rehash || true; fi
echo "install.sh: done ($(python3 -m trnsim --version))"
