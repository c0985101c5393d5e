#!/usr/bin/env bash
# Coverage-guided fuzzing of the input surfaces (docs/fuzzing.md): builds the libFuzzer targets
# of fuzz/ with clang, ASan and UBSan in build/fuzz, then runs each for SECONDS_PER_TARGET
# seconds, one process at a time, starting from the committed corpus and reproducers.
#
#   bash scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default: 15 s, every target)
#
# New corpus entries collect in build/fuzz/campaign/<target>/corpus (kept between runs, so a
# long campaign resumes); crash, timeout and out-of-memory inputs in .../findings. Exits 1 when
# any target found something. FUZZ_JOBS sets the build's parallelism (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-15}
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(fuzz_assembler fuzz_spec_toml fuzz_override fuzz_cli fuzz_model)
fi

# clang with libFuzzer's runtime, from Debian (install.sh installs the rest of the toolchain).
probe() {
  echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
    clang++ -x c++ -fsanitize=fuzzer -o /dev/null - >/dev/null 2>&1
}
if ! command -v clang++ >/dev/null 2>&1 || ! probe; then
  echo "fuzz.sh: installing clang and libFuzzer (Debian: clang libclang-rt-14-dev)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends clang libclang-rt-14-dev >/dev/null
  probe || { echo "fuzz.sh: clang cannot link -fsanitize=fuzzer" >&2; exit 2; }
fi

launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
# -O1 -g1: ASan's recommended level with line tables, half the compile time of -O2 -g.
cmake -S . -B build/fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DTRNSIM_FUZZ=ON \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
      -DTRNSIM_BUILD_TESTS=OFF -DTRNSIM_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null
start=$(date +%s)
cmake --build build/fuzz -j "${FUZZ_JOBS:-2}" --target "${targets[@]}"
echo "fuzz.sh: build took $(($(date +%s) - start)) s"

# Leaks are findings too, but only at exit of an input's run; abort so libFuzzer saves it.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
summary=()
for t in "${targets[@]}"; do
  work=build/fuzz/campaign/$t
  mkdir -p "$work/corpus" "$work/findings"
  before=$(find "$work/corpus" -type f | wc -l)
  # FUZZ_SEED fixes libFuzzer's random choices (CI: reproducible); 0 picks one at random.
  # A unit slower than 60 s is a hang: a valid 55-rank collective takes 6 s under ASan on an
  # idle core, and a shared host slows a low-priority campaign several times over.
  opts=(-max_total_time="$secs" -timeout=60 -rss_limit_mb=2048 -print_final_stats=1
        -seed="${FUZZ_SEED:-0}"
        -artifact_prefix="$work/findings/")
  if [[ -f fuzz/dict/$t.dict ]]; then opts+=(-dict="fuzz/dict/$t.dict"); fi
  mkdir -p "fuzz/regressions/$t"
  echo "== $t: ${secs} s"
  rc=0
  "build/fuzz/fuzz/$t" "${opts[@]}" "$work/corpus" "fuzz/corpus/$t" "fuzz/regressions/$t" \
    >"$work/log" 2>&1 || rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" | tail -1 | grep -o '[0-9]*$' || true)
  added=$(($(find "$work/corpus" -type f | wc -l) - before))
  if ((rc == 0)); then
    result=ok
  else
    status=1
    artifact=$(grep -o "Test unit written to [^ ]*" "$work/log" | tail -1 | cut -d' ' -f5 || true)
    result="FINDING (exit $rc) ${artifact:-see $work/log}"
    tail -n 40 "$work/log"
  fi
  summary+=("$(printf '%-16s %6s s  %10s execs  %5s new corpus entries  %s' \
    "$t" "$secs" "${execs:-?}" "$added" "$result")")
done
echo "== fuzz.sh summary"
printf '%s\n' "${summary[@]}"
exit $status
