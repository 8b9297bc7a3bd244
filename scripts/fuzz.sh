#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with Clang (build-fuzz) and runs each for a
# bounded time on a copy of its checked-in corpus (docs/hardening.md):
#   bash scripts/fuzz.sh [SECONDS]   # each target for SECONDS, default 30
#   bash scripts/fuzz.sh --runs N    # each target for N executions (the long run of
#                                    # docs/hardening.md: --runs 10000000), one at a time
#   bash scripts/fuzz.sh --corpus    # rewrites tests/fuzz/corpus/ with fuzz_corpus_gen
# Exits non-zero when a target crashes, printing the reproducer's path; run the target on
# that file to see the failure again.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

targets=(fuzz_gossip_codec fuzz_store_codec fuzz_core fuzz_zmtp)
dir=build-fuzz

limit=(-max_total_time="${1:-30}")
what="for ${1:-30}s"
if [[ "${1:-}" == "--runs" ]]; then
  if [[ ! "${2:-}" =~ ^[1-9][0-9]*$ ]]; then
    echo "fuzz: --runs needs a positive number of executions, e.g. --runs 10000000" >&2
    exit 2
  fi
  limit=(-runs="$2")
  what="for $2 executions"
elif [[ -n "${1:-}" && "${1:-}" != --corpus && ! "${1:-}" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz: '$1' is not a number of seconds (usage: scripts/fuzz.sh [SECONDS | --runs N | --corpus])" >&2
  exit 2
fi

CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DGOSSIP_RDZV_FUZZ=ON \
  -DGOSSIP_RDZV_BUILD_TESTS=OFF -DGOSSIP_RDZV_WERROR=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" >/dev/null
cmake --build "$dir" -j2 --target "${targets[@]}" fuzz_corpus_gen

if [[ "${1:-}" == "--corpus" ]]; then
  rm -rf tests/fuzz/corpus
  "$dir/tests/fuzz/fuzz_corpus_gen" tests/fuzz/corpus
  echo "fuzz: corpus written to tests/fuzz/corpus/" >&2
  exit 0
fi

work="$dir/fuzz-run"
failed=0
for t in "${targets[@]}"; do
  rm -rf "${work:?}/$t"
  mkdir -p "$work/$t/corpus" "$work/$t/artifacts"
  cp tests/fuzz/corpus/"$t"/* "$work/$t/corpus/"
  echo "fuzz: $t $what" >&2
  if ! "$dir/tests/fuzz/$t" "${limit[@]}" -print_final_stats=1 \
      -artifact_prefix="$work/$t/artifacts/" "$work/$t/corpus" >"$work/$t/log.txt" 2>&1; then
    failed=1
    tail -n 40 "$work/$t/log.txt" >&2
    for f in "$work/$t"/artifacts/*; do
      [[ -e "$f" ]] && echo "fuzz: $t crashed; reproducer: $f (run: $dir/tests/fuzz/$t $f)" >&2
    done
  else
    grep -E '^#[0-9]+ *DONE' "$work/$t/log.txt" >&2 || tail -n 1 "$work/$t/log.txt" >&2
  fi
done
if [[ $failed -ne 0 ]]; then
  echo "fuzz: FAILED" >&2
  exit 1
fi
echo "fuzz: no crash in ${targets[*]}" >&2
