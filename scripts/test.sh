#!/usr/bin/env bash
# Runs every test: the C++ suites (Release build), the same suites under AddressSanitizer +
# UndefinedBehaviorSanitizer, and the Python tests against the installed package.
# Assumes scripts/install.sh has run (the README's test command runs both).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1  # as scripts/install.sh: clones share the cache

echo "== C++ tests (Release)"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j "$jobs"
ctest --test-dir build/release --output-on-failure -j "$jobs"

echo "== C++ tests (AddressSanitizer + UndefinedBehaviorSanitizer)"
# -O1 -g1 (ASan's recommended level, line tables only): half the compile time of -O2 -g, which
# keeps the whole CI run well inside its 90 minutes on two cores.
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRNSIM_SANITIZE=ON \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DTRNSIM_BUILD_BENCH=OFF >/dev/null
cmake --build build/asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build/asan --output-on-failure -j "$jobs"

echo "== Fuzzing: 15 s of each libFuzzer target (docs/fuzzing.md; the corpora also ran above)"
FUZZ_SEED=1 bash scripts/fuzz.sh 15

echo "== Python tests"
python3 -m pytest -q tests/python
