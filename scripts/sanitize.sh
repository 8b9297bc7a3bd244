#!/usr/bin/env bash
# The test suite under sanitizers, in build trees of their own:
#   bash scripts/sanitize.sh address   # ASan + UBSan (build-asan): labels unit, sim, integration,
#                                      # store, cli; the first error stops the test that hit it
#   bash scripts/sanitize.sh thread    # TSan (build-tsan): labels integration, store
# Extra arguments go to ctest. Trimmed to fit CI: simulator_test.large is left out and each
# simulator sweep runs its first GOSSIP_RDZV_SIM_SWEEP_RUNS runs (default 20 here).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

kind=${1:?usage: bash scripts/sanitize.sh address|thread [ctest arguments]}
shift
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
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp"
    ;;
  *)
    echo "sanitize.sh: unknown kind '$kind' (address or thread)" >&2
    exit 2
    ;;
esac
export GOSSIP_RDZV_SIM_SWEEP_RUNS=${GOSSIP_RDZV_SIM_SWEEP_RUNS:-20}

cmake -S . -B "$dir" -G Ninja -DGOSSIP_RDZV_WERROR=ON -DGOSSIP_RDZV_SANITIZE="$kind"
cmake --build "$dir" -j2
ctest --test-dir "$dir" --output-on-failure -j2 -L "$labels" -E 'simulator_test\.large' "$@"
