#!/usr/bin/env bash
# The test suite under sanitizers, in build trees of their own (CI runs both, .ci/run):
#   bash scripts/sanitize.sh address   # ASan + UBSan (build-asan): labels unit, sim, integration,
#                                      # store, cli; the first error stops the test that hit it
#   bash scripts/sanitize.sh thread    # TSan (build-tsan): labels integration, store
# Extra arguments go to ctest. Only the files those tests run are built (the executables and
# libraries their command lines and environments name). Trimmed to fit CI: simulator_test.large
# is left out, each simulator sweep runs its first GOSSIP_RDZV_SIM_SWEEP_RUNS runs (default 5
# here), and tests whose deadlines assume full speed get GOSSIP_RDZV_TEST_TIME_SCALE (default 4).
# TSan leaves out the three store tests that run torch or gloo's transport (see below).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

kind=${1:?usage: bash scripts/sanitize.sh address|thread [ctest arguments]}
shift
skip=''
case "$kind" in
  address)
    dir=build-asan
    labels='unit|sim|integration|store|cli'
    # Leak checking is off: Python tests (tests/CMakeLists.txt preloads the runtime into the
    # interpreter) would report the interpreter's own allocations.
    export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=0:verify_asan_link_order=0
    export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
    ;;
  thread)
    dir=build-tsan
    labels='integration|store'
    # Not under TSan: the tests whose processes run torch (test_torch_store, test_bench_store)
    # or gloo's TCP transport (gloo_mesh_test). Neither library is built with TSan, so their
    # own threads race in every report (docs/hardening.md); ASan+UBSan runs them.
    skip='|store\.test_torch_store|store\.test_bench_store|store\.gloo_mesh_test'
    # test_python_package and test_python_rounds leave out their torch steps (and say so).
    export GOSSIP_RDZV_TEST_NO_TORCH=1
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp"
    ;;
  *)
    echo "sanitize.sh: unknown kind '$kind' (address or thread)" >&2
    exit 2
    ;;
esac
export GOSSIP_RDZV_SIM_SWEEP_RUNS=${GOSSIP_RDZV_SIM_SWEEP_RUNS:-5}
export GOSSIP_RDZV_TEST_TIME_SCALE=${GOSSIP_RDZV_TEST_TIME_SCALE:-4}
select=(-L "$labels" -E "^(simulator_test\.large$skip)\$")

cmake -S . -B "$dir" -G Ninja -DGOSSIP_RDZV_WERROR=ON -DGOSSIP_RDZV_SANITIZE="$kind" >/dev/null
# What the selected tests run: a test's executable (before it is built, CTest knows only
# its name, which is its target's), and the build tree's files in its arguments and
# environment (the gossip-rdzv binary, the library, examples).
mapfile -t files < <(ctest --test-dir "$dir" "${select[@]}" --show-only=json-v1 | python3 -c '
import json, os, sys
build = os.path.realpath(sys.argv[1]) + os.sep
found = set()
for test in json.load(sys.stdin)["tests"]:
    # No command: its executable is not built yet; a gtest target is named as its test.
    if "command" not in test:
        found.add(test["name"].split(".")[0])
    words = list(test.get("command", []))
    for prop in test.get("properties", []):
        if prop["name"] == "ENVIRONMENT":
            words += [v.split("=", 1)[1] for v in prop["value"] if "=" in v]
    for word in words:
        for part in word.split():
            path = os.path.realpath(part)
            if path.startswith(build):
                found.add(os.path.relpath(path, build))
print("\n".join(sorted(found)))
' "$dir")
if [[ ${#files[@]} -eq 0 ]]; then
  echo "sanitize.sh: no test of labels $labels found in $dir" >&2
  exit 1
fi
cmake --build "$dir" -j2 --target "${files[@]}"
ctest --test-dir "$dir" --output-on-failure -j2 "${select[@]}" "$@"
